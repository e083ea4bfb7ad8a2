/* planner.c — greedy-by-size offset planning over a segment tree of
 * coalesced address sets (planner-private.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-common.h"
#include "planner-private.h"
#include "policy-private.h"
#include "span-set-private.h"

#define LEAF 256 /* start ranks per tree leaf */

struct node {
	struct rp_span_set full; /* placed requests covering this node, not its parent */
	struct rp_span_set sub;  /* placed requests meeting this node's subtree */
};

struct planner {
	const struct mt_plan_request *reqs;
	uint64_t align;
	uint32_t *first, *past; /* per request: its ranks [first, past) */
	size_t leaves;          /* a power of two, leaves * LEAF >= n */
	struct node *node;      /* heap order: node 1 the root, leaf k is node leaves + k */
	uint32_t
	        *part_at; /* leaf k's room for partial requests: part[part_at[k], part_at[k + 1]) */
	uint32_t *part_end;         /* leaf k's placed ones so far: part[part_at[k], part_end[k]) */
	struct rp_timed_span *part; /* placed requests covering part of a leaf: by leaf, by lo */
	struct rp_span_view *view;
	size_t nview, view_cap;
	struct rp_timed_view timed[2]; /* a query's leaves covered in part */
	size_t ntimed;
};

/* Where request ranks [f, p) lie in the tree: leaves [fl, pl] touched,
 * [a, b) of them covered whole (none when a == b). */
struct extent {
	size_t fl, pl, a, b;
};

static struct extent extent_of(uint32_t f, uint32_t p)
{
	struct extent e = { f / LEAF, (p - 1) / LEAF, 0, 0 };
	e.a = e.fl + (f % LEAF != 0);
	e.b = e.pl + 1 - (p % LEAF != 0); /* one past the last whole leaf */
	if (e.b <= e.a)
		e.b = e.a; /* none */
	return e;
}

static bool whole(const struct extent *e, size_t leaf)
{
	return leaf >= e->a && leaf < e->b;
}

static uint64_t size_of(const struct planner *pl, size_t j)
{
	uint64_t bytes = pl->reqs[j].bytes;
	return rp_round_up(bytes ? bytes : 1, pl->align);
}

static bool stopped(volatile int *interrupted)
{
	return interrupted && *interrupted;
}

/* Stable LSD radix sort of idx[0..n) by key[idx[i]], 8 bits a pass,
 * skipping digits that are the same in every key; *idx and *tmp may be
 * swapped (the sorted order is in *idx on return). Returns 0, or -EINTR
 * between two passes once *interrupted is set. */
static int radix_sort(uint32_t **idx, uint32_t **tmp, size_t n, const uint64_t *key,
                      volatile int *interrupted)
{
	static const unsigned digits = 8;
	size_t count[8][257];
	uint64_t all_or = 0, all_and = UINT64_MAX;
	uint32_t *a = *idx, *b = *tmp;
	for (size_t i = 0; i < n; i++) {
		all_or |= key[a[i]];
		all_and &= key[a[i]];
	}
	uint64_t vary = all_or ^ all_and;
	memset(count, 0, sizeof(count));
	for (size_t i = 0; vary && i < n; i++) {
		uint64_t k = key[a[i]];
		for (unsigned d = 0; d < digits; d++, k >>= 8)
			count[d][(k & 0xff) + 1]++;
	}
	for (unsigned d = 0; d < digits; d++) {
		unsigned shift = 8 * d;
		if (!((vary >> shift) & 0xff))
			continue;
		if (stopped(interrupted))
			break;
		for (int x = 0; x < 256; x++)
			count[d][x + 1] += count[d][x];
		for (size_t i = 0; i < n; i++)
			b[count[d][(key[a[i]] >> shift) & 0xff]++] = a[i];
		uint32_t *t = a;
		a = b;
		b = t;
	}
	*idx = a;
	*tmp = b;
	return stopped(interrupted) ? -EINTR : 0;
}

/* Ranks: first[j] the rank of j's start among all starts (ties by index),
 * past[j] the number of starts before j's end, or leaves * LEAF when that is
 * all n of them (the ranks past n hold no start, so covering them changes
 * no overlap and lets the request cover its last leaf whole). order[r] is
 * the request of rank r; key, tmp and tmp2 are scratch of n. Returns 0 or
 * -EINTR (radix_sort). */
static int rank_requests(struct planner *pl, size_t n, uint32_t **order, uint32_t **tmp,
                         uint32_t **tmp2, uint64_t *key, volatile int *interrupted)
{
	const struct mt_plan_request *reqs = pl->reqs;
	bool sorted = true;
	for (size_t i = 0; i < n; i++) {
		(*order)[i] = (uint32_t)i;
		key[i] = reqs[i].start;
		sorted &= i == 0 || reqs[i - 1].start <= reqs[i].start;
	}
	if (!sorted && radix_sort(order, tmp, n, key, interrupted) < 0)
		return -EINTR;
	for (size_t r = 0; r < n; r++)
		pl->first[(*order)[r]] = (uint32_t)r;
	size_t m = 0; /* requests that end, sorted by end below */
	for (size_t i = 0; i < n; i++) {
		key[i] = reqs[i].end;
		if (reqs[i].end != UINT32_MAX)
			(*tmp)[m++] = (uint32_t)i;
		else
			pl->past[i] = (uint32_t)n;
	}
	if (radix_sort(tmp, tmp2, m, key, interrupted) < 0)
		return -EINTR;
	size_t r = 0;
	for (size_t i = 0; i < m; i++) {
		uint32_t j = (*tmp)[i];
		while (r < n && reqs[(*order)[r]].start < reqs[j].end)
			r++;
		pl->past[j] = (uint32_t)r;
	}
	for (size_t i = 0; i < n; i++)
		if (pl->past[i] == n)
			pl->past[i] = (uint32_t)(pl->leaves * LEAF);
	return 0;
}

/* Makes room, leaf by leaf, for the requests that cover the leaf only in
 * part (at most two leaves a request); they are listed as they are placed. */
static int room_for_partial(struct planner *pl, size_t n)
{
	pl->part_at = calloc(pl->leaves + 1, sizeof(uint32_t));
	pl->part_end = malloc(pl->leaves * sizeof(uint32_t));
	if (!pl->part_at || !pl->part_end)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++) {
		struct extent e = extent_of(pl->first[j], pl->past[j]);
		pl->part_at[e.fl + 1] += !whole(&e, e.fl);
		pl->part_at[e.pl + 1] += e.pl != e.fl && !whole(&e, e.pl);
	}
	for (size_t k = 0; k < pl->leaves; k++) {
		pl->part_at[k + 1] += pl->part_at[k];
		pl->part_end[k] = pl->part_at[k];
	}
	size_t total = pl->part_at[pl->leaves];
	pl->part = malloc((total ? total : 1) * sizeof(*pl->part));
	return pl->part ? 0 : -ENOMEM;
}

/* Adds [lo, hi) to the sub set of node v and of its ancestors, stopping at
 * the first that already holds it (its ancestors hold all it holds). */
static int add_up(struct planner *pl, size_t v, uint64_t lo, uint64_t hi)
{
	for (; v >= 1; v /= 2) {
		int rc = rp_span_set_add(&pl->node[v].sub, lo, hi);
		if (rc <= 0)
			return rc;
	}
	return 0;
}

/* Records the request of ranks [f, p) as placed at [lo, hi). */
static int mark_placed(struct planner *pl, uint32_t f, uint32_t p, uint64_t lo, uint64_t hi)
{
	struct extent e = extent_of(f, p);
	int rc = 0;
	/* the whole leaves [a, b): their canonical nodes, bottom up */
	for (size_t l = e.a + pl->leaves, r = e.b + pl->leaves; rc >= 0 && l < r; l /= 2, r /= 2) {
		if ((l & 1) && (rc = rp_span_set_add(&pl->node[l].full, lo, hi)) >= 0)
			rc = add_up(pl, l++, lo, hi);
		if (rc >= 0 && (r & 1) && (rc = rp_span_set_add(&pl->node[--r].full, lo, hi)) >= 0)
			rc = add_up(pl, r, lo, hi);
	}
	size_t ends[2] = { e.fl, e.pl };
	for (int k = 0; rc >= 0 && k < 1 + (e.pl != e.fl); k++) {
		if (whole(&e, ends[k]))
			continue;
		rp_timed_insert(&pl->part[pl->part_at[ends[k]]],
		                pl->part_end[ends[k]]++ - pl->part_at[ends[k]],
		                &(struct rp_timed_span){ lo, hi, f, p });
		rc = add_up(pl, pl->leaves + ends[k], lo, hi);
	}
	return rc < 0 ? rc : 0;
}

static int add_view(struct planner *pl, const struct rp_span_set *s)
{
	if (!s->len)
		return 0;
	if (pl->nview == pl->view_cap &&
	    mt_array_grow((void **)&pl->view, &pl->view_cap, pl->nview, sizeof(*pl->view)) < 0)
		return -ENOMEM;
	pl->view[pl->nview++] = (struct rp_span_view){ s->span, s->len, 0 };
	return 0;
}

/* The lowest offset where a request of ranks [f, p) and this size fits:
 * the views of every node its ranks meet (sub where it covers the node's
 * leaves whole, full where only in part) and the partial requests of the
 * leaves it covers in part (those live over [f, p) count). */
static int lowest_offset(struct planner *pl, uint32_t f, uint32_t p, uint64_t size,
                         uint64_t *offset)
{
	struct extent e = extent_of(f, p);
	size_t ends[2] = { e.fl, e.pl };
	int rc = 0;
	pl->nview = 0;
	pl->ntimed = 0;
	/* the whole leaves [a, b): their canonical nodes */
	for (size_t l = e.a + pl->leaves, r = e.b + pl->leaves; rc == 0 && l < r; l /= 2, r /= 2) {
		if (l & 1)
			rc = add_view(pl, &pl->node[l++].sub);
		if (rc == 0 && (r & 1))
			rc = add_view(pl, &pl->node[--r].sub);
	}
	/* the nodes over leaf fl or pl not inside [a, b), each once */
	for (int k = 0; rc == 0 && k < 1 + (e.pl != e.fl); k++) {
		size_t x = ends[k];
		if (!whole(&e, x) && pl->part_end[x] > pl->part_at[x])
			pl->timed[pl->ntimed++] =
			        (struct rp_timed_view){ &pl->part[pl->part_at[x]],
				                        pl->part_end[x] - pl->part_at[x], 0, f, p };
		for (unsigned d = 0; rc == 0 && (pl->leaves >> d) >= 1; d++) {
			size_t lo = x >> d << d, v = (pl->leaves + x) >> d;
			if (k == 1 && e.fl >> d == x >> d)
				break; /* on fl's way up too */
			if (lo < e.a || lo + ((size_t)1 << d) > e.b)
				rc = add_view(pl, &pl->node[v].full);
		}
	}
	if (rc == 0)
		*offset = rp_span_lowest_gap(pl->view, pl->nview, pl->timed, pl->ntimed, size);
	return rc;
}

static void release(struct planner *pl)
{
	for (size_t v = 1; pl->node && v < 2 * pl->leaves; v++) {
		rp_span_set_release(&pl->node[v].full);
		rp_span_set_release(&pl->node[v].sub);
	}
	free(pl->node);
	free(pl->first);
	free(pl->past);
	free(pl->part_at);
	free(pl->part_end);
	free(pl->part);
	free(pl->view);
}

int rp_plan_greedy_by_size(const struct mt_plan_request *reqs, size_t n, uint64_t align,
                           volatile int *interrupted, uint64_t *placed, uint64_t *offset,
                           uint64_t *arena)
{
	struct planner pl = { .reqs = reqs, .align = align };
	size_t cap = n ? n : 1;
	uint32_t *order = malloc(cap * sizeof(uint32_t)), *tmp = malloc(cap * sizeof(uint32_t));
	uint32_t *tmp2 = malloc(cap * sizeof(uint32_t));
	uint64_t *key = calloc(cap, sizeof(uint64_t)); /* calloc: gcc 12 sees no write when n = 0 */
	int rc = -ENOMEM;
	*arena = 0;
	for (pl.leaves = 1; pl.leaves * LEAF < n; pl.leaves *= 2)
		;
	pl.first = malloc(cap * sizeof(uint32_t));
	pl.past = malloc(cap * sizeof(uint32_t));
	pl.node = calloc(2 * pl.leaves, sizeof(*pl.node));
	if (!order || !tmp || !tmp2 || !key || !pl.first || !pl.past || !pl.node)
		goto out;
	if ((rc = rank_requests(&pl, n, &order, &tmp, &tmp2, key, interrupted)) < 0)
		goto out;
	free(tmp2);
	tmp2 = NULL;
	/* largest first; stable over the start order: earlier start first */
	for (size_t i = 0; i < n; i++)
		key[i] = UINT64_MAX - size_of(&pl, i);
	if ((rc = radix_sort(&order, &tmp, n, key, interrupted)) < 0)
		goto out;
	free(key);
	key = NULL;
	free(tmp);
	tmp = NULL;
	if ((rc = room_for_partial(&pl, n)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint32_t q = order[i], f = pl.first[q], p = pl.past[q];
		uint64_t at = 0, size = size_of(&pl, q);
		if (!(i & 1023)) {
			if (placed)
				__atomic_store_n(placed, i, __ATOMIC_RELAXED);
			if (stopped(interrupted)) {
				rc = -EINTR; /* polled like the replay loop polls it */
				goto out;
			}
		}
		if ((rc = lowest_offset(&pl, f, p, size, &at)) < 0 ||
		    (rc = mark_placed(&pl, f, p, at, at + size)) < 0)
			goto out;
		offset[q] = at;
		if (at + size > *arena)
			*arena = at + size;
	}
	if (placed)
		__atomic_store_n(placed, n, __ATOMIC_RELAXED);
	rc = 0;
out:
	release(&pl);
	free(order);
	free(tmp);
	free(tmp2);
	free(key);
	return rc;
}
