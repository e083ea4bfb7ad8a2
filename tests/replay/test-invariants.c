/* test-invariants.c — invariants of EVERY registered policy (the list comes
 * from mt_policy_list, so policies added later are covered) over random
 * request streams, replayed step by step on the sim backend:
 * - the addresses handed out for live requests never overlap;
 * - walk: segments are disjoint, blocks lie inside their segment in
 *   increasing address order without overlap, and every live request lies
 *   inside an allocated block;
 * - stats: requested == the live requested bytes, allocated >= requested,
 *   reserved >= allocated, backend reserved >= policy reserved;
 * - once everything is freed allocated is 0, and empty_cache returns
 *   reserved (policy and backend) to 0;
 * once with room to spare and once at a capacity tight enough for OOMs
 * (which must leave the policy consistent). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "memtrace-replay.h"
#include "request-stream-private.h"
#include "synth-stream.h"

struct span {
	uint64_t address, bytes;
};

static int by_address(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return (x->address > y->address) - (x->address < y->address);
}

struct walk_state {
	const char *policy;
	struct span *live; /* sorted by address */
	size_t nlive;
	struct span seg;
	uint64_t last_end; /* end of the previous block in this segment */
	uint64_t prev_seg_end;
	size_t covered; /* live requests found inside allocated blocks */
	int bad;
};

static int walk_fn(void *data, bool is_segment, const struct mt_policy_block *blk)
{
	struct walk_state *w = data;
	if (is_segment) {
		w->seg = (struct span){ blk->address, blk->bytes };
		w->last_end = blk->address;
		return 0;
	}
	if (blk->address < w->last_end || blk->address + blk->bytes > w->seg.address + w->seg.bytes)
		w->bad++;
	w->last_end = blk->address + blk->bytes;
	if (!blk->allocated)
		return 0;
	/* live requests starting inside this block must end inside it */
	size_t lo = 0, hi = w->nlive;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (w->live[mid].address < blk->address)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < w->nlive && w->live[lo].address < blk->address + blk->bytes; lo++) {
		if (w->live[lo].address + w->live[lo].bytes > blk->address + blk->bytes)
			w->bad++;
		w->covered++;
	}
	return 0;
}

static int seg_fn(void *data, bool is_segment, const struct mt_policy_block *blk)
{
	struct span **out = data;
	if (is_segment)
		*(*out)++ = (struct span){ blk->address, blk->bytes };
	return 0;
}

static void check_walk(struct mt_policy *p, const char *name, struct span *live, size_t nlive)
{
	qsort(live, nlive, sizeof(*live), by_address);
	for (size_t i = 1; i < nlive; i++)
		CHECK(live[i - 1].address + live[i - 1].bytes <= live[i].address);
	struct walk_state w = { .policy = name, .live = live, .nlive = nlive };
	CHECK(p->ops->walk(p, walk_fn, &w) == 0);
	CHECK(w.bad == 0);
	CHECK(w.covered == nlive);
	struct mt_policy_stats st;
	p->ops->stats(p, &st);
	struct span *segs = malloc((st.segments + 1) * sizeof(*segs)), *end = segs;
	if (!segs)
		return;
	CHECK(p->ops->walk(p, seg_fn, &end) == 0);
	size_t n = (size_t)(end - segs);
	qsort(segs, n, sizeof(*segs), by_address);
	for (size_t i = 1; i < n; i++)
		CHECK(segs[i - 1].address + segs[i - 1].bytes <= segs[i].address);
	free(segs);
	if (w.bad || w.covered != nlive)
		fprintf(stderr, "  (policy %s)\n", name);
}

static void run_policy(const struct mt_policy_ops *ops, const struct mt_request_stream *s,
                       uint64_t capacity)
{
	struct mt_backend *b = NULL;
	struct mt_policy *p = NULL;
	char err[256];
	CHECK(mt_backend_create(&b, MT_BACKEND_SIM, 0, capacity, err, sizeof(err)) == 0);
	int rc = mt_policy_create(&p, ops->name, b, err, sizeof(err));
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "%s: %s\n", ops->name, err);
		mt_backend_destroy(b);
		return;
	}
	if (ops->flags & MT_POLICY_OFFLINE)
		CHECK(mt_request_stream_plan(s, p) == 0);
	uint64_t *addr = calloc(s->requests, sizeof(*addr));
	struct span *live = malloc(s->requests * sizeof(*live));
	uint64_t live_bytes = 0, ooms = 0;
	int errors = 0, failures_before = failures;
	for (size_t i = 0; i < s->nevents && errors < 5; i++) {
		uint32_t c = s->events[i], q = MT_EVENT_REQUEST(c);
		uint64_t stream = s->streams[s->stream[q]];
		if (!MT_EVENT_IS_FREE(c)) {
			rc = ops->alloc(p, s->bytes[q], stream, q, &addr[q]);
			if (rc == -ENOMEM) {
				addr[q] = 0;
				ooms++;
			} else if (rc < 0) {
				errors++;
				fprintf(stderr, "%s: alloc error %d: %s\n", ops->name, rc,
				        mt_backend_message(b));
			} else {
				live_bytes += s->bytes[q];
			}
		} else if (addr[q]) {
			if (ops->free(p, addr[q], stream) < 0)
				errors++;
			addr[q] = 0;
			live_bytes -= s->bytes[q];
		}
		if (i % 211 == 0 || i + 1 == s->nevents) {
			struct mt_policy_stats st;
			struct mt_backend_stats bs;
			ops->stats(p, &st);
			mt_backend_get_stats(b, &bs);
			CHECK(st.requested == live_bytes);
			CHECK(st.allocated >= st.requested);
			CHECK(st.reserved >= st.allocated);
			CHECK(bs.reserved >= st.reserved);
			CHECK(bs.reserved <= capacity);
			size_t nlive = 0;
			for (size_t r = 0; r < s->requests; r++)
				if (addr[r])
					live[nlive++] =
					        (struct span){ addr[r],
						               s->bytes[r] ? s->bytes[r] : 1 };
			check_walk(p, ops->name, live, nlive);
		}
	}
	CHECK(errors == 0);
	/* free what is left (never-freed requests), then empty the cache */
	for (size_t r = 0; r < s->requests; r++)
		if (addr[r])
			CHECK(ops->free(p, addr[r], s->streams[s->stream[r]]) == 0);
	struct mt_policy_stats st;
	struct mt_backend_stats bs;
	ops->stats(p, &st);
	CHECK(st.allocated == 0 && st.requested == 0);
	CHECK(ops->empty_cache(p) == 0);
	ops->stats(p, &st);
	mt_backend_get_stats(b, &bs);
	CHECK(st.reserved == 0);
	CHECK(bs.reserved == 0);
	if (capacity < UINT64_MAX / 2)
		CHECK(ooms > 0); /* the tight run did exercise the OOM path */
	if (failures > failures_before)
		fprintf(stderr, "  after policy %s (capacity %llu)\n", ops->name,
		        (unsigned long long)capacity);
	mt_policy_destroy(p);
	mt_backend_destroy(b);
	free(addr);
	free(live);
}

int main(void)
{
	const struct mt_policy_ops *const *list = mt_policy_list();
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct mt_event *ev;
		size_t n;
		struct mt_request_stream *s;
		char err[256];
		if (synth_stream(seed, 3000, 60 * seed, (seed == 2 ? 1ull << 20 : 64ull << 20), &ev,
		                 &n) < 0)
			return 1;
		CHECK(mt_request_stream_from_events(&s, ev, n, MT_LAYER_REQUEST, err,
		                                    sizeof(err)) == 0);
		free(ev);
		CHECK(s->peak_live > (8ull << 20));
		for (size_t i = 0; list[i]; i++) {
			run_policy(list[i], s, UINT64_MAX / 2);
			/* tight: below the lower bound, so every policy meets OOMs */
			uint64_t cap = (s->peak_live - s->peak_live / 10) & ~((2ull << 20) - 1);
			run_policy(list[i], s, cap);
		}
		mt_request_stream_free(s);
	}
	return failures ? 1 : 0;
}
