/* test-invariants.c — the one suite of invariants every registered policy
 * keeps (the list comes from mt_policy_list, so a policy added later is
 * covered; offline ones get their plan first). Each policy replays, event by
 * event on the sim backend, random request streams: three of
 * tests/replay/synth-stream.h (log-uniform sizes, three streams, reuse
 * delays, some never freed) and one with repeats of a few common sizes
 * (exact reuse), each once with room to spare and once at a capacity below
 * the lower bound, where requests fail (-ENOMEM) and the OOM paths run.
 * After each of the first events and every 61st after, walk and stats must
 * agree with what the test holds live:
 * - segments are disjoint, add up to the policy's reserved bytes, which are
 *   the backend's; blocks tile nothing outside their segment, in increasing
 *   address order without overlap;
 * - every live request has an allocated block starting at its address and
 *   holding its bytes, and there are no other allocated blocks;
 * - requested == the live bytes, allocated >= requested, reserved >=
 *   allocated, the allocated counter the driver follows equals stats',
 *   segments == the segments walk shows, the backend holds at most the
 *   capacity.
 * With room: no OOM; once everything is freed allocated and requested are
 * 0 and empty_cache returns reserved (policy and backend) to 0. Tight: some
 * OOM, and destroying the policy with blocks live gives everything back. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-replay.h"
#include "request-stream-private.h"
#include "synth-stream.h"
#include "tap.h"

#define EVERY_EVENT 2000 /* check after each of the first events, then every 61st */

/* ---- the streams ---- */

/* A stream of `allocs` allocations drawn as real traces look: a third of
 * them one of a few common sizes, the rest log-uniform up to 64 MiB, on
 * three streams, at most max_live live, each live one freed with
 * probability 48% before each allocation. */
static int repeats_stream(uint64_t seed, size_t allocs, size_t max_live, struct mt_event **out,
                          size_t *n_out)
{
	static const uint64_t common[] = { 4 * MiB, 512, 3 * MiB + 4096, 16 * MiB, 800 * KiB };
	struct mt_event *ev = calloc(2 * allocs, sizeof(*ev));
	size_t *live = malloc(max_live * sizeof(*live)), nlive = 0, n = 0;
	uint64_t st = seed, addr = 0x10000;

	if (!ev || !live) {
		free(ev);
		free(live);
		return -1;
	}
	for (size_t i = 0; i < allocs; i++) {
		while (nlive == max_live || (nlive > 0 && synth_rand(&st) % 100 < 48)) {
			size_t k = synth_rand(&st) % nlive;

			ev[n] = ev[live[k]];
			ev[n].kind = MT_EVENT_FREE;
			ev[n].ts = n;
			n++;
			live[k] = live[--nlive];
		}
		uint64_t r = synth_rand(&st), bytes;

		if (r % 3 == 0)
			bytes = common[(r >> 8) % 5];
		else
			bytes = 1 + synth_rand(&st) % (1ull << (1 + (r >> 16) % 26));
		ev[n] = (struct mt_event){
			.kind = MT_EVENT_ALLOC, .ts = n, .process = 1, .device = 1
		};
		ev[n].alloc.address = addr;
		ev[n].alloc.bytes = bytes;
		ev[n].alloc.stream = synth_rand(&st) % 3;
		ev[n].alloc.layer = MT_LAYER_REQUEST;
		addr += bytes + 4096;
		live[nlive++] = n++;
	}
	free(live);
	*out = ev;
	*n_out = n;
	return 0;
}

#define STREAMS 4
static struct mt_request_stream *streams[STREAMS];

static void make_streams(void)
{
	char err[256];

	for (size_t i = 0; i < STREAMS; i++) {
		uint64_t seed = i + 1;
		struct mt_event *ev;
		size_t n;

		if (i < 3)
			REQUIRE(synth_stream(seed, 3000, 60 * seed, seed == 2 ? 1 * MiB : 64 * MiB,
			                     &ev, &n) == 0);
		else
			REQUIRE(repeats_stream(seed, 6000, 400, &ev, &n) == 0);
		REQUIRE(mt_request_stream_from_events(&streams[i], ev, n, MT_LAYER_REQUEST, err,
		                                      sizeof(err)) == 0);
		free(ev);
		REQUIRE(streams[i]->peak_live > 8 * MiB);
	}
}

/* ---- the state against what the test holds ---- */

struct span {
	uint64_t address, bytes;
};

static int by_address(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return (x->address > y->address) - (x->address < y->address);
}

struct walk {
	struct span *seg, *alloc; /* segments; allocated blocks */
	size_t nseg, nalloc, segcap, alloccap;
	uint64_t seg_bytes;
	uint64_t next; /* where the current segment's next block may start */
	int bad;       /* blocks outside their segment or out of order */
};

static void push(struct span **v, size_t *n, size_t *cap, struct span s)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 256;
		*v = realloc(*v, *cap * sizeof(**v));
		REQUIRE(*v);
	}
	(*v)[(*n)++] = s;
}

static int collect(void *data, bool is_segment, const struct mt_policy_block *b)
{
	struct walk *w = data;
	struct span s = { b->address, b->bytes };

	if (is_segment) {
		push(&w->seg, &w->nseg, &w->segcap, s);
		w->seg_bytes += b->bytes;
		w->next = b->address;
		return 0;
	}
	if (!w->nseg || b->address < w->next ||
	    b->address + b->bytes > w->seg[w->nseg - 1].address + w->seg[w->nseg - 1].bytes)
		w->bad++;
	w->next = b->address + b->bytes;
	if (b->allocated)
		push(&w->alloc, &w->nalloc, &w->alloccap, s);
	return 0;
}

static int overlaps(struct span *v, size_t n)
{
	int bad = 0;

	if (n > 1)
		qsort(v, n, sizeof(*v), by_address);
	for (size_t i = 1; i < n; i++)
		bad += v[i - 1].address + v[i - 1].bytes > v[i].address;
	return bad;
}

static const struct span *find(const struct span *v, size_t n, uint64_t address)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid].address < address)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].address == address ? &v[lo] : NULL;
}

/* One replay in progress. */
struct run {
	const char *name;
	const struct mt_request_stream *s;
	uint64_t capacity;
	struct mt_backend *b;
	struct mt_policy *p;
	struct span *slot; /* per slot: the live request's address (0: none) and bytes */
	uint64_t *stream;  /* per slot: the live request's stream */
	struct span *live;
	uint64_t live_bytes, ooms;
};

static void check_state(struct run *r, size_t event)
{
	struct walk w = { 0 };
	struct mt_policy_stats st;
	struct mt_backend_stats bs;
	size_t nlive = 0;
	int bad;

	for (size_t q = 0; q < r->s->slots; q++)
		if (r->slot[q].address)
			r->live[nlive++] = r->slot[q];
	CHECK(r->p->ops->walk(r->p, collect, &w) == 0);
	r->p->ops->stats(r->p, &st);
	mt_backend_get_stats(r->b, &bs);
	bad = w.bad + overlaps(w.seg, w.nseg) + overlaps(w.alloc, w.nalloc) +
	      overlaps(r->live, nlive);
	CHECKF(bad == 0, "%s after event %zu: %d blocks or segments out of place", r->name, event,
	       bad);
	CHECKF(w.nalloc == nlive, "%s after event %zu: %zu allocated blocks, %zu live", r->name,
	       event, w.nalloc, nlive);
	for (size_t i = 0; i < nlive; i++) {
		const struct span *b = find(w.alloc, w.nalloc, r->live[i].address);

		CHECKF(b && b->bytes >= r->live[i].bytes,
		       "%s after event %zu: no block of %llu bytes at 0x%llx", r->name, event,
		       (unsigned long long)r->live[i].bytes,
		       (unsigned long long)r->live[i].address);
	}
	CHECKF(st.requested == r->live_bytes, "%s after event %zu: requested %llu, live %llu",
	       r->name, event, (unsigned long long)st.requested, (unsigned long long)r->live_bytes);
	CHECK(st.allocated >= st.requested);
	CHECK(st.reserved >= st.allocated);
	CHECKF(r->p->allocated == st.allocated, "%s: allocated counter %llu, stats %llu", r->name,
	       (unsigned long long)r->p->allocated, (unsigned long long)st.allocated);
	CHECKF(st.segments == w.nseg, "%s: %llu segments, walk shows %zu", r->name,
	       (unsigned long long)st.segments, w.nseg);
	CHECKF(w.seg_bytes == st.reserved && st.reserved == bs.reserved,
	       "%s after event %zu: segments %llu, reserved %llu, backend %llu", r->name, event,
	       (unsigned long long)w.seg_bytes, (unsigned long long)st.reserved,
	       (unsigned long long)bs.reserved);
	CHECK(bs.reserved <= r->capacity);
	free(w.seg);
	free(w.alloc);
}

static void step(struct run *r, const struct rp_step *st)
{
	struct span *q = &r->slot[st->slot];
	int rc;

	if (!RP_STEP_IS_FREE(st->code)) {
		rc = r->p->ops->alloc(r->p, st->bytes, st->stream, RP_STEP_REQUEST(st->code),
		                      &q->address);
		CHECKF(rc == 0 || rc == -ENOMEM, "%s: alloc error %d: %s", r->name, rc,
		       mt_backend_message(r->b));
		if (rc == 0)
			r->live_bytes += st->bytes;
		else
			q->address = 0;
		q->bytes = st->bytes;
		r->stream[st->slot] = st->stream;
		r->ooms += rc == -ENOMEM;
	} else if (q->address) {
		CHECK(r->p->ops->free(r->p, q->address, st->stream) == 0);
		q->address = 0;
		r->live_bytes -= st->bytes;
	}
}

static void run(const struct mt_policy_ops *ops, const struct mt_request_stream *s,
                uint64_t capacity)
{
	struct run r = { .name = ops->name, .s = s, .capacity = capacity };
	bool tight = capacity < UINT64_MAX / 2;
	char err[256];
	struct mt_policy_stats st;

	REQUIRE(mt_backend_create(&r.b, MT_BACKEND_SIM, 0, capacity, err, sizeof(err)) == 0);
	REQUIRE(mt_policy_create(&r.p, ops->name, r.b, err, sizeof(err)) == 0);
	if (ops->flags & MT_POLICY_OFFLINE) {
		struct mt_plan_request *lifetimes;

		REQUIRE(rp_request_stream_lifetimes(s, NULL, &lifetimes, err, sizeof(err)) == 0);
		CHECK(ops->plan(r.p, lifetimes, s->requests) == 0);
		free(lifetimes);
	}
	r.slot = calloc(s->slots, sizeof(*r.slot));
	r.stream = calloc(s->slots, sizeof(*r.stream));
	r.live = malloc(s->slots * sizeof(*r.live));
	REQUIRE(r.slot && r.stream && r.live);
	for (size_t i = 0; i < s->nevents && !check_failed(); i++) {
		step(&r, &s->steps[i]);
		if (i < EVERY_EVENT || i % 61 == 0 || i + 1 == s->nevents)
			check_state(&r, i);
	}
	CHECKF(tight ? r.ooms > 0 : r.ooms == 0, "%s: %llu OOMs at capacity %llu", ops->name,
	       (unsigned long long)r.ooms, (unsigned long long)capacity);
	if (tight) {
		/* destroyed with blocks live: everything goes back */
		mt_policy_destroy(r.p);
	} else {
		for (size_t q = 0; q < s->slots; q++)
			if (r.slot[q].address)
				CHECK(ops->free(r.p, r.slot[q].address, r.stream[q]) == 0);
		memset(r.slot, 0, s->slots * sizeof(*r.slot));
		r.live_bytes = 0;
		check_state(&r, s->nevents);
		ops->stats(r.p, &st);
		CHECK(st.allocated == 0 && st.requested == 0);
		CHECK(ops->empty_cache(r.p) == 0);
		ops->stats(r.p, &st);
		CHECK(st.reserved == 0);
		mt_policy_destroy(r.p);
	}
	struct mt_backend_stats bs;

	mt_backend_get_stats(r.b, &bs);
	CHECKF(bs.reserved == 0, "%s: the backend holds %llu bytes after destroy", ops->name,
	       (unsigned long long)bs.reserved);
	mt_backend_destroy(r.b);
	free(r.slot);
	free(r.stream);
	free(r.live);
}

static const struct mt_policy_ops *policy;

static void every_stream(void)
{
	for (size_t i = 0; i < STREAMS && !check_failed(); i++) {
		uint64_t peak = streams[i]->peak_live;

		run(policy, streams[i], UINT64_MAX / 2);
		/* tight: below the lower bound, so every policy meets OOMs */
		run(policy, streams[i], (peak - peak / 10) & ~(2 * MiB - 1));
	}
}

int main(void)
{
	size_t n = 0;

	make_streams();
	for (const struct mt_policy_ops *const *p = mt_policy_list(); *p; p++, n++) {
		policy = *p;
		check_run(policy->name, every_stream);
	}
	CHECK(n >= 10);
	for (size_t i = 0; i < STREAMS; i++)
		mt_request_stream_free(streams[i]);
	return check_done();
}
