/* planned.c — offline placement with full knowledge of lifetimes: what a
 * static memory planner reaches on this request stream.
 *
 * Models: greedy-by-size offset assignment, the heuristic of TensorFlow
 * Lite's arena planner and of Pisarchyk & Lee, "Efficient Memory
 * Management for Deep Neural Net Inference" (2020): requests sorted by size
 * (largest first, earlier start first among equals), each placed at the
 * lowest offset where it overlaps no already placed request in both time
 * and address. The whole plan lives in one arena taken with a single
 * cuMemAlloc of the planned size at the first allocation, so peak reserved
 * is the arena size. Parameters: align=SIZE (offset and size granule,
 * default 512 B).
 *
 * Speed: placed requests are indexed by a max-end segment tree over the
 * requests sorted by start, so finding those that overlap a request in time
 * costs O(log n) per overlapping one rather than a scan of every placed
 * request; 1 M requests plan in seconds (bench/replay).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "addrmap-private.h"
#include "policy-private.h"

extern const struct mt_policy_ops mt_policy_planned;

struct planned {
	struct mt_policy base;
	struct mt_backend *backend;
	uint64_t align;
	uint64_t *offset; /* per request */
	uint64_t *size;   /* per request, rounded */
	uint64_t *bytes;  /* per request, as asked */
	size_t n;
	uint64_t arena_bytes, arena; /* arena: address, 0 = not held */
	struct mt_addrmap live;      /* address -> request index */
	uint64_t allocated, requested;
};

static int planned_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                          char *err, size_t errlen)
{
	uint64_t align = 512;
	const struct mt_param defs[] = { { "align", MT_PARAM_SIZE, &align } };
	int rc = mt_params_parse("planned", params, defs, 1, err, errlen);
	if (rc < 0)
		return rc;
	if (!align) {
		snprintf(err, errlen, "policy planned: align must be > 0");
		return -EINVAL;
	}
	struct planned *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->base.ops = &mt_policy_planned;
	p->backend = b;
	p->align = align;
	*out = &p->base;
	return 0;
}

/* The planner's working state. */
struct planner {
	const struct mt_plan_request *reqs;
	const uint64_t *size;
	uint64_t *offset;
	size_t *by_start;  /* request indices sorted by start */
	size_t *pos;       /* request -> position in by_start */
	uint64_t *max_end; /* segment tree over by_start: max end of placed ones */
	size_t leaves;     /* power of two >= n */
	struct {
		uint64_t offset, end;
	} * hits; /* overlapping placed (offset, offset+size) */
	size_t nhits, hits_cap;
};

/* Sort keys: (key1, key2, index) compared in that order. */
struct sort_key {
	uint64_t k1, k2;
	size_t index;
};

static int by_keys(const void *a, const void *b)
{
	const struct sort_key *x = a, *y = b;
	if (x->k1 != y->k1)
		return x->k1 < y->k1 ? -1 : 1;
	if (x->k2 != y->k2)
		return x->k2 < y->k2 ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

static int by_offset(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Collects placed requests in by_start[lo, hi) ∩ [0, limit) whose end > s. */
static int collect(struct planner *pl, size_t node, size_t lo, size_t hi, size_t limit, uint64_t s)
{
	if (lo >= limit || pl->max_end[node] <= s)
		return 0;
	if (hi - lo == 1) {
		size_t j = pl->by_start[lo];
		if (pl->nhits == pl->hits_cap) {
			size_t cap = pl->hits_cap ? pl->hits_cap * 2 : 256;
			void *h = realloc(pl->hits, cap * sizeof(*pl->hits));
			if (!h)
				return -ENOMEM;
			pl->hits = h;
			pl->hits_cap = cap;
		}
		pl->hits[pl->nhits].offset = pl->offset[j];
		pl->hits[pl->nhits++].end = pl->offset[j] + pl->size[j];
		return 0;
	}
	size_t mid = lo + (hi - lo) / 2;
	int rc = collect(pl, 2 * node, lo, mid, limit, s);
	return rc ? rc : collect(pl, 2 * node + 1, mid, hi, limit, s);
}

/* Lowest offset for request q given the placed ones overlapping it in time. */
static int place(struct planner *pl, size_t q, uint64_t *offset)
{
	const struct mt_plan_request *r = &pl->reqs[q];
	/* placed j overlap q iff start_j < end_q && end_j > start_q */
	size_t n_lo = 0, n_hi = pl->leaves; /* binary search: first by_start with start >= end_q */
	while (n_lo < n_hi) {
		size_t mid = n_lo + (n_hi - n_lo) / 2;
		if (pl->by_start[mid] != SIZE_MAX && pl->reqs[pl->by_start[mid]].start < r->end)
			n_lo = mid + 1;
		else
			n_hi = mid;
	}
	pl->nhits = 0;
	int rc = collect(pl, 1, 0, pl->leaves, n_lo, r->start);
	if (rc < 0)
		return rc;
	qsort(pl->hits, pl->nhits, sizeof(*pl->hits), by_offset);
	uint64_t at = 0;
	for (size_t i = 0; i < pl->nhits; i++) {
		if (pl->hits[i].offset >= at + pl->size[q])
			break;
		if (pl->hits[i].end > at)
			at = pl->hits[i].end;
	}
	*offset = at;
	return 0;
}

static void mark_placed(struct planner *pl, size_t q)
{
	size_t node = pl->leaves + pl->pos[q];
	uint64_t e = pl->reqs[q].end;
	for (; node >= 1 && pl->max_end[node] < e; node /= 2)
		pl->max_end[node] = e;
}

static int planned_plan(struct mt_policy *pol, const struct mt_plan_request *reqs, size_t n)
{
	struct planned *p = (struct planned *)pol;
	struct planner pl = { .reqs = reqs };
	struct sort_key *order = NULL;
	int rc = -ENOMEM;
	free(p->offset);
	free(p->size);
	free(p->bytes);
	p->n = n;
	p->arena_bytes = 0;
	p->offset = calloc(n ? n : 1, sizeof(uint64_t));
	p->size = malloc((n ? n : 1) * sizeof(uint64_t));
	p->bytes = malloc((n ? n : 1) * sizeof(uint64_t));
	for (pl.leaves = 1; pl.leaves < n; pl.leaves *= 2)
		;
	order = malloc((n ? n : 1) * sizeof(*order));
	pl.by_start = malloc(pl.leaves * sizeof(size_t));
	pl.pos = malloc((n ? n : 1) * sizeof(size_t));
	pl.max_end = calloc(2 * pl.leaves, sizeof(uint64_t));
	if (!p->offset || !p->size || !p->bytes || !order || !pl.by_start || !pl.pos || !pl.max_end)
		goto out;
	pl.size = p->size;
	pl.offset = p->offset;
	/* by start, then by size descending (largest first, earlier first) */
	for (size_t i = 0; i < n; i++)
		order[i] = (struct sort_key){ reqs[i].start, 0, i };
	qsort(order, n, sizeof(*order), by_keys);
	for (size_t i = 0; i < pl.leaves; i++)
		pl.by_start[i] = i < n ? order[i].index : SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		pl.pos[pl.by_start[i]] = i;
		p->bytes[i] = reqs[i].bytes;
		p->size[i] = mt_round_up(reqs[i].bytes ? reqs[i].bytes : 1, p->align);
		order[i] = (struct sort_key){ UINT64_MAX - p->size[i], reqs[i].start, i };
	}
	qsort(order, n, sizeof(*order), by_keys);
	for (size_t i = 0; i < n; i++) {
		size_t q = order[i].index;
		if ((rc = place(&pl, q, &p->offset[q])) < 0)
			goto out;
		mark_placed(&pl, q);
		if (p->offset[q] + p->size[q] > p->arena_bytes)
			p->arena_bytes = p->offset[q] + p->size[q];
	}
	rc = 0;
out:
	free(order);
	free(pl.by_start);
	free(pl.pos);
	free(pl.max_end);
	free(pl.hits);
	return rc;
}

static int planned_alloc(struct mt_policy *pol, uint64_t bytes, uint64_t stream, size_t index,
                         uint64_t *address)
{
	struct planned *p = (struct planned *)pol;
	if (index >= p->n)
		return -EINVAL;
	if (!p->arena) {
		int rc = mt_backend_alloc(p->backend, p->arena_bytes, &p->arena);
		if (rc < 0) {
			p->arena = 0;
			return rc;
		}
	}
	*address = p->arena + p->offset[index];
	if (mt_addrmap_put(&p->live, *address, index) < 0)
		return -ENOMEM;
	p->allocated += p->size[index];
	p->requested += bytes;
	return 0;
}

static int planned_free(struct mt_policy *pol, uint64_t address, uint64_t stream)
{
	struct planned *p = (struct planned *)pol;
	uint64_t i;
	if (!mt_addrmap_remove(&p->live, address, &i))
		return -EINVAL;
	p->allocated -= p->size[i];
	p->requested -= p->bytes[i];
	return 0;
}

static int planned_empty_cache(struct mt_policy *pol)
{
	struct planned *p = (struct planned *)pol;
	if (!p->arena || p->live.count)
		return 0;
	int rc = mt_backend_free(p->backend, p->arena);
	if (rc == 0)
		p->arena = 0;
	return rc;
}

static int by_address(const void *a, const void *b)
{
	const struct mt_addrmap_slot *x = a, *y = b;
	return (x->key > y->key) - (x->key < y->key);
}

static int planned_walk(struct mt_policy *pol, mt_policy_walk_fn fn, void *data)
{
	struct planned *p = (struct planned *)pol;
	if (!p->arena)
		return 0;
	struct mt_addrmap_slot *live = malloc((p->live.count + 1) * sizeof(*live));
	const struct mt_addrmap_slot *s;
	size_t k = 0;
	if (!live)
		return -ENOMEM;
	for (size_t i = 0; mt_addrmap_next(&p->live, &i, &s);)
		live[k++] = *s;
	qsort(live, k, sizeof(*live), by_address);
	struct mt_policy_block blk = { p->arena, p->arena_bytes, 0, false };
	int rc = fn(data, true, &blk);
	uint64_t at = p->arena, end = p->arena + p->arena_bytes;
	for (size_t i = 0; !rc && i <= k; i++) {
		uint64_t next = i < k ? live[i].key : end;
		if (next > at) {
			blk = (struct mt_policy_block){ at, next - at, 0, false };
			if ((rc = fn(data, false, &blk)))
				break;
		}
		if (i < k) {
			blk = (struct mt_policy_block){ next, p->size[live[i].value], 0, true };
			rc = fn(data, false, &blk);
			at = next + p->size[live[i].value];
		}
	}
	free(live);
	return rc;
}

static void planned_stats(struct mt_policy *pol, struct mt_policy_stats *st)
{
	struct planned *p = (struct planned *)pol;
	*st = (struct mt_policy_stats){ .allocated = p->allocated,
		                        .requested = p->requested,
		                        .reserved = p->arena ? p->arena_bytes : 0,
		                        .segments = p->arena ? 1 : 0 };
}

static void planned_destroy(struct mt_policy *pol)
{
	struct planned *p = (struct planned *)pol;
	if (p->arena)
		mt_backend_free(p->backend, p->arena);
	mt_addrmap_release(&p->live);
	free(p->offset);
	free(p->size);
	free(p->bytes);
	free(p);
}

const struct mt_policy_ops mt_policy_planned = {
	.name = "planned",
	.summary = "offline greedy-by-size placement with every lifetime known (a static planner)",
	.flags = MT_POLICY_OFFLINE,
	.create = planned_create,
	.plan = planned_plan,
	.alloc = planned_alloc,
	.free = planned_free,
	.empty_cache = planned_empty_cache,
	.walk = planned_walk,
	.stats = planned_stats,
	.destroy = planned_destroy,
};
