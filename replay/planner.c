/* planner.c — greedy-by-size offset planning over a segment tree of
 * coalesced address sets (planner-private.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
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
};

/* One thread's placing: its scratch for the queries, and what it defers.
 * Two threads place at once only requests on one side each of a leaf
 * boundary; the nodes over both sides (the common ancestors of the two
 * leaves at the boundary: `shared`, and those above it) are then the only
 * ones both reach, and only to add to their sub sets, which they do here,
 * level by level, for the nodes to take between two segments. */
struct placer {
	struct planner *pl;
	const uint32_t *order;
	uint64_t *offset;
	struct rp_span_view *view;
	size_t nview, view_cap;
	struct rp_timed_view timed[2]; /* a query's leaves covered in part */
	size_t ntimed;
	size_t shared;                /* 0: defer nothing */
	struct rp_span_set defer[64]; /* by level (node 1: 0): sub set additions deferred */
	uint64_t arena;               /* the end of its highest placement */
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
 * the request of rank r; key and tmp are scratch of n. Returns 0, -ENOMEM
 * or -EINTR (radix_sort). */
static int rank_requests(struct planner *pl, size_t n, uint32_t **order, uint32_t **tmp,
                         uint64_t *key, volatile int *interrupted)
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
	/* starts counted by position, in buckets of 2^shift positions (at
	 * most 2n + 2 buckets): before[b] starts lie in the buckets below b,
	 * and those of bucket b are the ranks [before[b], before[b + 1]) */
	uint32_t last = n ? reqs[(*order)[n - 1]].start : 0;
	unsigned shift = 0;
	while ((last >> shift) > 2 * n)
		shift++;
	size_t buckets = ((size_t)last >> shift) + 2;
	uint32_t *before = calloc(buckets, sizeof(uint32_t));
	if (!before)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		before[(reqs[i].start >> shift) + 1]++;
	for (size_t b = 1; b < buckets; b++)
		before[b] += before[b - 1];
	for (size_t j = 0; j < n; j++) {
		uint32_t end = reqs[j].end;
		size_t b = end >> shift, r = n;
		if (b + 1 < buckets)
			for (r = before[b]; r < before[b + 1] && reqs[(*order)[r]].start < end; r++)
				;
		pl->past[j] = r == n ? (uint32_t)(pl->leaves * LEAF) : (uint32_t)r;
	}
	free(before);
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
static int add_up(struct placer *w, size_t v, uint64_t lo, uint64_t hi)
{
	for (; v >= 1; v /= 2) {
		struct rp_span_set *set = &w->pl->node[v].sub;
		unsigned level = 63 - (unsigned)__builtin_clzll(v);
		unsigned top = w->shared ? 63 - (unsigned)__builtin_clzll(w->shared) : 0;
		if (w->shared && level <= top && w->shared >> (top - level) == v)
			set = &w->defer[level]; /* v is shared or above it */
		int rc = rp_span_set_add(set, lo, hi);
		if (rc <= 0)
			return rc;
	}
	return 0;
}

/* Records the request of ranks [f, p) as placed at [lo, hi). */
static int mark_placed(struct placer *w, uint32_t f, uint32_t p, uint64_t lo, uint64_t hi)
{
	struct planner *pl = w->pl;
	struct extent e = extent_of(f, p);
	int rc = 0;
	/* the whole leaves [a, b): their canonical nodes, bottom up */
	for (size_t l = e.a + pl->leaves, r = e.b + pl->leaves; rc >= 0 && l < r; l /= 2, r /= 2) {
		if ((l & 1) && (rc = rp_span_set_add(&pl->node[l].full, lo, hi)) >= 0)
			rc = add_up(w, l++, lo, hi);
		if (rc >= 0 && (r & 1) && (rc = rp_span_set_add(&pl->node[--r].full, lo, hi)) >= 0)
			rc = add_up(w, r, lo, hi);
	}
	size_t ends[2] = { e.fl, e.pl };
	for (int k = 0; rc >= 0 && k < 1 + (e.pl != e.fl); k++) {
		if (whole(&e, ends[k]))
			continue;
		rp_timed_insert(&pl->part[pl->part_at[ends[k]]],
		                pl->part_end[ends[k]]++ - pl->part_at[ends[k]],
		                &(struct rp_timed_span){ lo, hi, f, p });
		rc = add_up(w, pl->leaves + ends[k], lo, hi);
	}
	return rc < 0 ? rc : 0;
}

static int add_view(struct placer *w, const struct rp_span_set *s)
{
	if (!s->len)
		return 0;
	if (w->nview == w->view_cap &&
	    mt_array_grow((void **)&w->view, &w->view_cap, w->nview, sizeof(*w->view)) < 0)
		return -ENOMEM;
	w->view[w->nview++] = (struct rp_span_view){ s->span, s->len, 0 };
	return 0;
}

/* The lowest offset where a request of ranks [f, p) and this size fits:
 * the views of every node its ranks meet (sub where it covers the node's
 * leaves whole, full where only in part) and the partial requests of the
 * leaves it covers in part (those live over [f, p) count). */
static int lowest_offset(struct placer *w, uint32_t f, uint32_t p, uint64_t size, uint64_t *offset)
{
	struct planner *pl = w->pl;
	struct extent e = extent_of(f, p);
	size_t ends[2] = { e.fl, e.pl };
	int rc = 0;
	w->nview = 0;
	w->ntimed = 0;
	/* the whole leaves [a, b): their canonical nodes */
	for (size_t l = e.a + pl->leaves, r = e.b + pl->leaves; rc == 0 && l < r; l /= 2, r /= 2) {
		if (l & 1)
			rc = add_view(w, &pl->node[l++].sub);
		if (rc == 0 && (r & 1))
			rc = add_view(w, &pl->node[--r].sub);
	}
	/* the nodes over leaf fl or pl not inside [a, b), each once */
	for (int k = 0; rc == 0 && k < 1 + (e.pl != e.fl); k++) {
		size_t x = ends[k];
		if (!whole(&e, x) && pl->part_end[x] > pl->part_at[x])
			w->timed[w->ntimed++] =
			        (struct rp_timed_view){ &pl->part[pl->part_at[x]],
				                        pl->part_end[x] - pl->part_at[x], 0, f, p };
		for (unsigned d = 0; rc == 0 && (pl->leaves >> d) >= 1; d++) {
			size_t lo = x >> d << d, v = (pl->leaves + x) >> d;
			if (k == 1 && e.fl >> d == x >> d)
				break; /* on fl's way up too */
			if (lo < e.a || lo + ((size_t)1 << d) > e.b)
				rc = add_view(w, &pl->node[v].full);
		}
	}
	if (rc == 0)
		*offset = rp_span_lowest_gap(w->view, w->nview, w->timed, w->ntimed, size);
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
}

/* Places request q at the lowest offset it fits. */
static int place(struct placer *w, uint32_t q)
{
	struct planner *pl = w->pl;
	uint32_t f = pl->first[q], p = pl->past[q];
	uint64_t at = 0, size = size_of(pl, q);
	int rc = lowest_offset(w, f, p, size, &at);
	if (rc == 0)
		rc = mark_placed(w, f, p, at, at + size);
	w->offset[q] = at;
	if (at + size > w->arena)
		w->arena = at + size;
	return rc;
}

enum side { LEFT, RIGHT, BOTH }; /* the halves of the ranks a request meets */

/* The two threads' segment of the size order: between two requests that
 * meet both halves, each places the requests of its half. */
struct crew {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned given, done; /* segments handed to the right half's thread, and done */
	bool quit;
	size_t from, to; /* the segment */
	const uint8_t *side;
	volatile int *interrupted;
	uint64_t *placed; /* the left half's thread keeps it */
	struct placer right;
	int right_rc;
};

/* Places the requests of this side in the crew's segment. */
static int place_side(struct crew *c, struct placer *w, enum side side)
{
	for (size_t i = c->from; i < c->to; i++) {
		if (!(i & 1023)) {
			if (side == LEFT && c->placed)
				__atomic_store_n(c->placed, i, __ATOMIC_RELAXED);
			if (stopped(c->interrupted))
				return -EINTR; /* polled like the replay loop polls it */
		}
		int rc = c->side[i] == side ? place(w, w->order[i]) : 0;
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void *right_half(void *arg)
{
	struct crew *c = arg;
	pthread_mutex_lock(&c->lock);
	for (unsigned seen = 0;;) {
		while (c->given == seen && !c->quit)
			pthread_cond_wait(&c->cond, &c->lock);
		if (c->given == seen)
			break;
		seen = c->given;
		pthread_mutex_unlock(&c->lock);
		int rc = place_side(c, &c->right, RIGHT);
		pthread_mutex_lock(&c->lock);
		c->right_rc = rc;
		c->done = seen;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Adds w's deferred additions to the sub sets of the shared node and those
 * above it. */
static int take_deferred(struct placer *w)
{
	for (size_t v = w->shared; v >= 1; v /= 2) {
		struct rp_span_set *d = &w->defer[63 - __builtin_clzll(v)];
		for (uint32_t i = 0; i < d->len; i++)
			if (rp_span_set_add(&w->pl->node[v].sub, d->span[i].lo, d->span[i].hi) < 0)
				return -ENOMEM;
		d->len = 0;
	}
	return 0;
}

static void release_deferred(struct placer *w)
{
	for (size_t i = 0; i < 64; i++)
		rp_span_set_release(&w->defer[i]);
}

/* Places every request in order: segment by segment, those left and right
 * of the leaf boundary nearest the middle rank on two threads (this one
 * and one started here), each request over the boundary between two
 * segments, on this thread alone. Returns 0, a negative errno, or 1 when
 * no thread could be started (nothing placed). */
static int place_all(struct planner *pl, size_t n, struct placer *left, uint8_t *side,
                     volatile int *interrupted, uint64_t *placed)
{
	size_t half = n / 2 / LEAF ? n / 2 / LEAF : 1; /* the boundary: before leaf half */
	size_t shared = pl->leaves + half - 1, right = pl->leaves + half;
	struct crew c = { .side = side, .interrupted = interrupted, .placed = placed };
	pthread_t t;
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t q = left->order[i];
		struct extent e = extent_of(pl->first[q], pl->past[q]);
		side[i] = e.pl < half ? LEFT : e.fl >= half ? RIGHT : BOTH;
	}
	while (shared != right) { /* their common ancestor */
		shared /= 2;
		right /= 2;
	}
	c.right = (struct placer){
		.pl = pl, .order = left->order, .offset = left->offset, .shared = shared
	};
	left->shared = shared;
	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.cond, NULL);
	if (pthread_create(&t, NULL, right_half, &c) != 0) {
		left->shared = 0;
		rc = 1; /* nothing placed: the caller places all on one thread */
		goto out;
	}
	for (size_t i = 0; rc == 0 && i < n;) {
		size_t j = i;
		while (j < n && side[j] != BOTH)
			j++;
		pthread_mutex_lock(&c.lock);
		c.from = i;
		c.to = j;
		c.given++;
		pthread_cond_broadcast(&c.cond);
		pthread_mutex_unlock(&c.lock);
		rc = place_side(&c, left, LEFT);
		pthread_mutex_lock(&c.lock);
		while (c.done != c.given)
			pthread_cond_wait(&c.cond, &c.lock);
		pthread_mutex_unlock(&c.lock);
		if (rc == 0)
			rc = c.right_rc;
		if (rc == 0 && (rc = take_deferred(left)) == 0)
			rc = take_deferred(&c.right);
		if (rc == 0 && j < n) {
			left->shared = 0;
			rc = place(left, left->order[j]);
			left->shared = shared;
		}
		i = j + 1;
	}
	pthread_mutex_lock(&c.lock);
	c.quit = true;
	pthread_cond_broadcast(&c.cond);
	pthread_mutex_unlock(&c.lock);
	pthread_join(t, NULL);
	if (c.right.arena > left->arena)
		left->arena = c.right.arena;
out:
	free(c.right.view);
	release_deferred(&c.right);
	pthread_cond_destroy(&c.cond);
	pthread_mutex_destroy(&c.lock);
	return rc;
}

int rp_plan_greedy_by_size(const struct mt_plan_request *reqs, size_t n, uint64_t align,
                           volatile int *interrupted, uint64_t *placed, uint64_t *offset,
                           uint64_t *arena)
{
	struct planner pl = { .reqs = reqs, .align = align };
	size_t cap = n ? n : 1;
	struct placer w = { .pl = &pl, .offset = offset };
	uint8_t *side = NULL; /* per position in the size order */
	uint32_t *order = malloc(cap * sizeof(uint32_t)), *tmp = malloc(cap * sizeof(uint32_t));
	uint64_t *key = calloc(cap, sizeof(uint64_t)); /* calloc: gcc 12 sees no write when n = 0 */
	int rc = -ENOMEM;
	*arena = 0;
	for (pl.leaves = 1; pl.leaves * LEAF < n; pl.leaves *= 2)
		;
	pl.first = malloc(cap * sizeof(uint32_t));
	pl.past = malloc(cap * sizeof(uint32_t));
	pl.node = calloc(2 * pl.leaves, sizeof(*pl.node));
	if (!order || !tmp || !key || !pl.first || !pl.past || !pl.node)
		goto out;
	if ((rc = rank_requests(&pl, n, &order, &tmp, key, interrupted)) < 0)
		goto out;
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
	w.order = order;
	if (!(side = malloc(cap))) {
		rc = -ENOMEM;
		goto out;
	}
	rc = pl.leaves >= 2 ? place_all(&pl, n, &w, side, interrupted, placed) : 1;
	if (rc == 1) { /* one leaf, or no second thread: all on this one */
		struct crew c = {
			.to = n, .side = side, .interrupted = interrupted, .placed = placed
		};
		memset(side, LEFT, n);
		rc = place_side(&c, &w, LEFT);
	}
	if (rc < 0)
		goto out;
	*arena = w.arena;
	if (placed)
		__atomic_store_n(placed, n, __ATOMIC_RELAXED);
out:
	free(w.view);
	free(side);
	release_deferred(&w);
	release(&pl);
	free(order);
	free(tmp);
	free(key);
	return rc;
}
