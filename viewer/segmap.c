/* segmap.c — segment maps at a moment (struct mt_segmap, built by
 * analyze): the recorded allocator's segments (driver-layer allocations)
 * with the request blocks inside them, or a policy's segments and blocks
 * as `memtrace replay` (mt_replay_run, under sim) holds them once every
 * event up to that moment is replayed, walked there.
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

struct walk_state {
	struct mt_segmap *m;
	uint64_t at;
	int rc;
};

static int on_walk(void *data, bool is_segment, const struct mt_policy_block *blk)
{
	struct walk_state *w = data;

	w->rc = is_segment ? mt_segmap_add_segment(w->m, blk->address, blk->bytes)
	                   : mt_segmap_add_block(w->m, blk->address, blk->bytes, blk->allocated);
	return w->rc;
}

/* The replay's observer: once every event at or before `at` is replayed,
 * walks the policy into the map and stops the replay. */
static int at_moment(void *data, const struct mt_replay_moment *m, struct mt_policy *p)
{
	struct walk_state *w = data;

	if (m->next_ts <= w->at)
		return 0;
	if (!p->ops->walk)
		return -ENOTSUP;
	p->ops->walk(p, on_walk, w);
	return w->rc < 0 ? w->rc : 1;
}

int vw_segmap_policy(const struct vw_trace *t, const char *spec, uint64_t at, uint64_t budget,
                     struct mt_segmap *m, char *err, size_t errlen)
{
	struct walk_state w = { .m = m, .at = at };
	struct mt_replay_options opt = {
		.policy = spec,
		.backend = MT_BACKEND_SIM,
		.device = t->device,
		.observe = at_moment,
		.observe_data = &w,
	};
	struct mt_request_stream *s = NULL;
	struct mt_replay_result res;
	uint64_t requests, needs;
	char need[200];
	int rc;

	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", spec);
	m->at = at;
	rc = mt_request_stream_load(&s, t->r, t->device, err, errlen);
	if (rc == 0 && vw_plan_over_budget(s, spec, budget, &requests, &needs)) {
		vw_plan_need_text(requests, needs, budget, need, sizeof(need));
		rc = vw_fail(err, errlen, -EFBIG,
		             "%s at a moment: %s (MEMTRACE_PLAN_BUDGET=none lifts it)", spec, need);
	} else if (rc == 0) {
		rc = mt_replay_run(s, &opt, &res, err, errlen);
		mt_replay_result_release(&res);
	}
	if (rc == -ENOTSUP)
		rc = vw_fail(err, errlen, rc, "policy %s cannot list its segments", spec);
	if (rc == 0)
		mt_segmap_finish(m);
	else
		mt_segmap_release(m);
	mt_request_stream_free(s);
	return rc;
}
