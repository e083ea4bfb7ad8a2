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
 * request; 1 M requests plan in seconds (bench/replay). Planning stops
 * with -EINTR soon after the driver's interrupt flag is set.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrmap-private.h"
#include "policy-private.h"

extern const struct mt_policy_ops rp_policy_planned;

#define LEAF 32 /* requests per tree leaf */

struct planned {
	struct mt_policy base;
	struct mt_backend *backend;
	uint64_t align;
	uint64_t *offset; /* per request */
	uint64_t *size;   /* per request, rounded */
	uint64_t *bytes;  /* per request, as asked */
	size_t n;
	uint64_t arena_bytes, arena; /* arena: address, 0 = not held */
	struct rp_addrmap live;      /* address -> request index */
	uint64_t requested;
};

static int planned_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                          char *err, size_t errlen)
{
	uint64_t align = 512;
	const struct rp_param defs[] = { { "align", RP_PARAM_SIZE, &align } };
	int rc = rp_params_parse("planned", params, defs, 1, err, errlen);
	if (rc < 0)
		return rc;
	if (!align) {
		snprintf(err, errlen, "policy planned: align must be > 0");
		return -EINVAL;
	}
	struct planned *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->base.ops = &rp_policy_planned;
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
	size_t *by_start;     /* request indices sorted by start */
	size_t *pos;          /* request -> position in by_start */
	uint64_t *max_end;    /* segment tree over by_start: max end of placed ones */
	uint64_t *placed_end; /* by start position: end once placed, else 0 */
	size_t leaves;        /* tree leaves: a power of two, leaves * LEAF >= n */
	struct hit {
		uint64_t offset, end;
	} * hits, *tmp; /* overlapping placed (offset, offset + size); tmp: radix buffer */
	size_t nhits;
	size_t (*count)[257]; /* the hit sort's histograms, one per byte of an offset */
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

/* Sorts hits by offset: LSD radix sort, 8 bits a pass from the lowest bit
 * that varies, all passes' histograms counted in one sweep, passes whose
 * digit is the same for every hit skipped (a comparison sort costs several
 * times more). */
static void sort_hits(struct planner *pl)
{
	struct hit *a = pl->hits, *b = pl->tmp;
	size_t n = pl->nhits;
	uint64_t all_or = 0, all_and = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		all_or |= a[i].offset;
		all_and &= a[i].offset;
	}
	uint64_t vary = all_or ^ all_and;
	if (!vary)
		return;
	unsigned low = (unsigned)__builtin_ctzll(vary);
	unsigned digits = (64 - (unsigned)__builtin_clzll(vary) - low + 7) / 8;
	size_t(*count)[257] = pl->count;
	memset(count, 0, digits * sizeof(*count));
	for (size_t i = 0; i < n; i++) {
		uint64_t k = a[i].offset >> low;
		for (unsigned d = 0; d < digits; d++, k >>= 8)
			count[d][(k & 0xff) + 1]++;
	}
	for (unsigned d = 0; d < digits; d++) {
		unsigned shift = low + 8 * d;
		for (int x = 0; x < 256; x++)
			count[d][x + 1] += count[d][x];
		for (size_t i = 0; i < n; i++)
			b[count[d][(a[i].offset >> shift) & 0xff]++] = a[i];
		struct hit *t = a;
		a = b;
		b = t;
	}
	pl->hits = a;
	pl->tmp = b;
}

/* Collects placed requests in by_start[0, limit) whose end > s: a walk
 * of the max-end tree that enters only subtrees holding such a request;
 * a tree leaf stands for LEAF consecutive requests, scanned in a row. */
static void collect(struct planner *pl, size_t limit, uint64_t s)
{
	size_t stack[128], node_lo[128], depth = 0;
	stack[depth] = 1;
	node_lo[depth++] = 0;
	while (depth) {
		size_t node = stack[--depth], lo = node_lo[depth];
		if (lo >= limit || pl->max_end[node] <= s)
			continue;
		if (node >= pl->leaves) {
			size_t end = lo + LEAF < limit ? lo + LEAF : limit;
			for (size_t i = lo; i < end; i++) {
				size_t j = pl->by_start[i];
				if (pl->placed_end[i] > s) {
					pl->hits[pl->nhits].offset = pl->offset[j];
					pl->hits[pl->nhits++].end = pl->offset[j] + pl->size[j];
				}
			}
			continue;
		}
		/* a node at depth d covers (leaves >> d) * LEAF requests */
		size_t w = (pl->leaves >> (63 - __builtin_clzll(node))) * LEAF;
		stack[depth] = 2 * node + 1;
		node_lo[depth++] = lo + w / 2;
		stack[depth] = 2 * node;
		node_lo[depth++] = lo;
	}
}

/* Lowest offset for request q given the placed ones overlapping it in time. */
static void place(struct planner *pl, size_t q, uint64_t *offset)
{
	const struct mt_plan_request *r = &pl->reqs[q];
	/* placed j overlap q iff start_j < end_q && end_j > start_q */
	size_t n_lo = 0,
	       n_hi = pl->leaves * LEAF; /* binary search: first by_start with start >= end_q */
	while (n_lo < n_hi) {
		size_t mid = n_lo + (n_hi - n_lo) / 2;
		if (pl->by_start[mid] != SIZE_MAX && pl->reqs[pl->by_start[mid]].start < r->end)
			n_lo = mid + 1;
		else
			n_hi = mid;
	}
	pl->nhits = 0;
	collect(pl, n_lo, r->start);
	sort_hits(pl);
	uint64_t at = 0;
	for (size_t i = 0; i < pl->nhits; i++) {
		if (pl->hits[i].offset >= at + pl->size[q])
			break;
		if (pl->hits[i].end > at)
			at = pl->hits[i].end;
	}
	*offset = at;
}

static void mark_placed(struct planner *pl, size_t q)
{
	size_t node = pl->leaves + pl->pos[q] / LEAF;
	uint64_t e = pl->reqs[q].end;
	pl->placed_end[pl->pos[q]] = e;
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
	for (pl.leaves = 1; pl.leaves * LEAF < n; pl.leaves *= 2)
		;
	order = malloc((n ? n : 1) * sizeof(*order));
	pl.by_start = malloc(pl.leaves * LEAF * sizeof(size_t));
	pl.placed_end = calloc(pl.leaves * LEAF, sizeof(uint64_t));
	pl.pos = malloc((n ? n : 1) * sizeof(size_t));
	pl.max_end = calloc(2 * pl.leaves, sizeof(uint64_t));
	pl.hits = malloc((n ? n : 1) * sizeof(*pl.hits));
	pl.tmp = malloc((n ? n : 1) * sizeof(*pl.tmp));
	pl.count = malloc(8 * sizeof(*pl.count));
	if (!pl.hits || !pl.tmp || !pl.count || !pl.placed_end || !p->offset || !p->size ||
	    !p->bytes || !order || !pl.by_start || !pl.pos || !pl.max_end)
		goto out;
	pl.size = p->size;
	pl.offset = p->offset;
	/* by start, then by size descending (largest first, earlier first) */
	for (size_t i = 0; i < n; i++)
		order[i] = (struct sort_key){ reqs[i].start, 0, i };
	qsort(order, n, sizeof(*order), by_keys);
	for (size_t i = 0; i < pl.leaves * LEAF; i++)
		pl.by_start[i] = i < n ? order[i].index : SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		pl.pos[pl.by_start[i]] = i;
		p->bytes[i] = reqs[i].bytes;
		p->size[i] = rp_round_up(reqs[i].bytes ? reqs[i].bytes : 1, p->align);
		order[i] = (struct sort_key){ UINT64_MAX - p->size[i], reqs[i].start, i };
	}
	qsort(order, n, sizeof(*order), by_keys);
	for (size_t i = 0; i < n; i++) {
		size_t q = order[i].index;
		if (!(i & 1023) && p->base.interrupted && *p->base.interrupted) {
			rc = -EINTR; /* polled like the replay loop polls it */
			goto out;
		}
		place(&pl, q, &p->offset[q]);
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
	free(pl.placed_end);
	free(pl.hits);
	free(pl.tmp);
	free(pl.count);
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
	if (rp_addrmap_put(&p->live, *address, index) < 0)
		return -ENOMEM;
	p->base.allocated += p->size[index];
	p->requested += bytes;
	return 0;
}

static int planned_free(struct mt_policy *pol, uint64_t address, uint64_t stream)
{
	struct planned *p = (struct planned *)pol;
	uint64_t i;
	if (!rp_addrmap_remove(&p->live, address, &i))
		return -EINVAL;
	p->base.allocated -= p->size[i];
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
	const struct rp_addrmap_slot *x = a, *y = b;
	return (x->key > y->key) - (x->key < y->key);
}

static int planned_walk(struct mt_policy *pol, mt_policy_walk_fn fn, void *data)
{
	struct planned *p = (struct planned *)pol;
	if (!p->arena)
		return 0;
	struct rp_addrmap_slot *live = malloc((p->live.count + 1) * sizeof(*live));
	const struct rp_addrmap_slot *s;
	size_t k = 0;
	if (!live)
		return -ENOMEM;
	for (size_t i = 0; rp_addrmap_next(&p->live, &i, &s);)
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
	*st = (struct mt_policy_stats){ .allocated = p->base.allocated,
		                        .requested = p->requested,
		                        .reserved = p->arena ? p->arena_bytes : 0,
		                        .segments = p->arena ? 1 : 0 };
}

static void planned_destroy(struct mt_policy *pol)
{
	struct planned *p = (struct planned *)pol;
	if (p->arena)
		mt_backend_free(p->backend, p->arena);
	rp_addrmap_release(&p->live);
	free(p->offset);
	free(p->size);
	free(p->bytes);
	free(p);
}

const struct mt_policy_ops rp_policy_planned = {
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
