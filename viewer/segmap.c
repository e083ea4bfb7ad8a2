/* segmap.c — segment maps at a moment (struct mt_segmap, built by
 * analyze): the recorded allocator's segments (driver-layer allocations)
 * with the request blocks inside them, or a policy's segments and blocks after replaying the
 * trace's requests under the sim backend up to that moment and walking the policy (the same policy
 * code as `memtrace replay`; frees at a moment go before allocations at
 * it, and a request the policy cannot place is skipped as the replay
 * driver does).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viewer-private.h"

int vw_segmap_recorded(const struct vw_trace *t, uint64_t at, struct mt_segmap *m, char *err,
                       size_t errlen)
{
	bool layered = t->layer == MT_LAYER_REQUEST && t->nseg > 0;

	if (mt_segmap_recorded(m, layered ? t->seg : NULL, t->nseg, t->req, t->nreq, at) < 0)
		return vw_fail(err, errlen, -ENOMEM, "out of memory");
	return 0;
}

/* ---- a policy replayed to a moment ---- */

struct op {
	uint64_t ts;
	size_t idx;
	int is_alloc; /* frees first at equal times */
};

static int by_time(const void *a, const void *b)
{
	const struct op *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->is_alloc != y->is_alloc)
		return x->is_alloc - y->is_alloc;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

struct walk_state {
	struct mt_segmap *m;
	int rc;
};

static int on_walk(void *data, bool is_segment, const struct mt_policy_block *blk)
{
	struct walk_state *w = data;

	w->rc = is_segment ? mt_segmap_add_segment(w->m, blk->address, blk->bytes)
	                   : mt_segmap_add_block(w->m, blk->address, blk->bytes, blk->allocated);
	return w->rc;
}

static bool replayed(const struct mt_lifetime *l)
{
	return !(l->flags & MT_LIFETIME_NO_ALLOC) && l->bytes;
}

static int plan(struct mt_policy *p, const struct vw_trace *t, size_t *request_index)
{
	struct mt_plan_request *reqs = malloc((t->nreq ? t->nreq : 1) * sizeof(*reqs));
	size_t i, k = 0;
	int rc;

	if (!reqs)
		return -ENOMEM;
	for (i = 0; i < t->nreq; i++) {
		const struct mt_lifetime *l = &t->req[i];

		if (!replayed(l))
			continue;
		request_index[i] = k;
		reqs[k++] = (struct mt_plan_request){
			.start = l->start,
			.end = l->end == UINT64_MAX ? UINT64_MAX : l->end + l->reuse_delay,
			.bytes = l->bytes,
			.stream = l->stream,
		};
	}
	rc = p->ops->plan(p, reqs, k);
	free(reqs);
	return rc;
}

/* addr[] of a request not placed (not yet, failed, or freed) */
#define NOWHERE UINT64_MAX

static int drive(struct mt_policy *p, const struct vw_trace *t, uint64_t at, uint64_t *addr,
                 size_t *request_index, char *err, size_t errlen)
{
	struct op *ops = malloc((2 * t->nreq + 1) * sizeof(*ops));
	size_t i, n = 0;
	int rc = 0;

	if (!ops)
		return vw_fail(err, errlen, -ENOMEM, "out of memory");
	for (i = 0; i < t->nreq; i++)
		addr[i] = NOWHERE;
	for (i = 0; i < t->nreq; i++) {
		if (!replayed(&t->req[i]))
			continue;
		ops[n++] = (struct op){ t->req[i].start, i, 1 };
		if (t->req[i].end != UINT64_MAX)
			ops[n++] = (struct op){ t->req[i].end, i, 0 };
	}
	qsort(ops, n, sizeof(*ops), by_time);
	for (i = 0; i < n && ops[i].ts <= at && rc == 0; i++) {
		const struct mt_lifetime *l = &t->req[ops[i].idx];

		if (ops[i].is_alloc) {
			rc = p->ops->alloc(p, l->bytes, l->stream, request_index[ops[i].idx],
			                   &addr[ops[i].idx]);
			if (rc == -ENOMEM) {
				addr[ops[i].idx] = NOWHERE;
				rc = 0;
			}
		} else if (addr[ops[i].idx] != NOWHERE) {
			rc = p->ops->free(p, addr[ops[i].idx], l->stream);
			addr[ops[i].idx] = NOWHERE;
		}
	}
	free(ops);
	if (rc < 0)
		return vw_fail(err, errlen, rc, "policy %s failed during replay", p->ops->name);
	return 0;
}

int vw_segmap_policy(const struct vw_trace *t, const char *spec, uint64_t at, struct mt_segmap *m,
                     char *err, size_t errlen)
{
	struct mt_backend *b = NULL;
	struct mt_policy *p = NULL;
	struct walk_state w = { .m = m };
	uint64_t *addr = calloc(t->nreq + 1, sizeof(*addr));
	size_t *request_index = calloc(t->nreq + 1, sizeof(*request_index));
	int rc;

	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", spec);
	m->at = at;
	if (!addr || !request_index) {
		rc = vw_fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	rc = mt_backend_create(&b, MT_BACKEND_SIM, 0, UINT64_MAX / 2, err, errlen);
	if (rc < 0)
		goto out;
	rc = mt_policy_create(&p, spec, b, err, errlen);
	if (rc < 0)
		goto out;
	if (!p->ops->walk || (p->ops->flags & MT_POLICY_OFFLINE && !p->ops->plan)) {
		rc = vw_fail(err, errlen, -ENOTSUP, "policy %s cannot list its segments", spec);
		goto out;
	}
	if (p->ops->flags & MT_POLICY_OFFLINE) {
		rc = plan(p, t, request_index);
		if (rc < 0) {
			rc = vw_fail(err, errlen, rc, "policy %s could not plan the trace", spec);
			goto out;
		}
	}
	rc = drive(p, t, at, addr, request_index, err, errlen);
	if (rc == 0) {
		p->ops->walk(p, on_walk, &w);
		rc = w.rc < 0 ? vw_fail(err, errlen, w.rc, "out of memory") : 0;
	}
	if (rc == 0)
		mt_segmap_finish(m);
out:
	if (rc < 0)
		mt_segmap_release(m);
	mt_policy_destroy(p);
	mt_backend_destroy(b);
	free(addr);
	free(request_index);
	return rc;
}
