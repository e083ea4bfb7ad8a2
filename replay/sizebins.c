/* sizebins.c — free blocks in bins by stream and size class (see
 * sizebins-private.h): the streams' bins, walking across bins and streams,
 * and the check for tests. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "sizebins-private.h"

void rp_sizebins_init(struct rp_sizebins *s)
{
	*s = (struct rp_sizebins){ 0 };
}

void rp_sizebins_release(struct rp_sizebins *s)
{
	for (unsigned i = 0; i < s->n; i++)
		free(s->by_id[i]);
	free(s->by_id);
	free(s->sorted);
	rp_sizebins_init(s);
}

int rp_sizebins_add_stream(struct rp_sizebins *s, uint64_t stream)
{
	struct rp_sizebins_stream *g;
	unsigned r;

	if (s->n == s->cap) {
		unsigned cap = s->cap ? 2 * s->cap : 2;
		struct rp_sizebins_stream **by_id = realloc(s->by_id, cap * sizeof(*by_id));

		if (!by_id)
			return -ENOMEM;
		s->by_id = by_id;
		struct rp_sizebins_stream **sorted = realloc(s->sorted, cap * sizeof(*sorted));
		if (!sorted)
			return -ENOMEM;
		s->sorted = sorted;
		s->cap = cap;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->stream = stream;
	g->id = s->n;
	s->by_id[s->n] = g;
	r = rp_sizebins_rank_above(s, stream);
	for (unsigned i = s->n; i > r; i--) {
		s->sorted[i] = s->sorted[i - 1];
		s->sorted[i]->rank = i;
	}
	s->sorted[r] = g;
	g->rank = r;
	s->n++;
	return 0;
}

unsigned rp_sizebins_rank_above(const struct rp_sizebins *s, uint64_t stream)
{
	unsigned r = 0;

	while (r < s->n && s->sorted[r]->stream <= stream)
		r++;
	return r;
}

struct rp_rb_node *rp_sizebins_first_of_rank(const struct rp_sizebins *s, unsigned r)
{
	for (; r < s->n; r++) {
		struct rp_rb_node *n = rp_sizebins_first_from(s->sorted[r], 0);

		if (n)
			return n;
	}
	return NULL;
}

/* The last block of g's bins up to class c (c < 0: none), or NULL. */
static struct rp_rb_node *last_upto(const struct rp_sizebins_stream *g, int c)
{
	for (; c >= 0; c--) {
		unsigned w = (unsigned)c / 64;
		uint64_t bits = g->used[w] & (~0ull >> (63 - (unsigned)c % 64));

		if (bits)
			return rp_rb_last(&g->bins[w * 64 + 63 - (unsigned)__builtin_clzll(bits)]);
		c = (int)(w * 64); /* the loop's c-- moves to the word below */
	}
	return NULL;
}

/* The last block of the streams from rank r down (r < 0: none), or NULL. */
static struct rp_rb_node *last_of_rank(const struct rp_sizebins *s, int r)
{
	for (; r >= 0; r--) {
		struct rp_rb_node *n = last_upto(s->sorted[r], RP_SIZEBINS_CLASSES - 1);

		if (n)
			return n;
	}
	return NULL;
}

struct rp_rb_node *rp_sizebins_floor(const struct rp_sizebins *s, uint64_t stream, uint64_t size,
                                     const void *key, rp_rb_key_fn cmp)
{
	struct rp_sizebins_stream *g = rp_sizebins_find(s, stream);
	struct rp_rb_node *n;
	unsigned c;

	if (!g)
		return last_of_rank(s, (int)rp_sizebins_rank_above(s, stream) - 1);
	c = rp_sizebins_class(size);
	n = rp_rb_floor(&g->bins[c], key, cmp);
	if (!n)
		n = last_upto(g, (int)c - 1);
	return n ? n : last_of_rank(s, (int)g->rank - 1);
}

struct rp_rb_node *rp_sizebins_last_of_rank(const struct rp_sizebins *s, unsigned r)
{
	return last_upto(s->sorted[r], RP_SIZEBINS_CLASSES - 1);
}

struct rp_rb_node *rp_sizebins_first(const struct rp_sizebins *s)
{
	return rp_sizebins_first_of_rank(s, 0);
}

struct rp_rb_node *rp_sizebins_last(const struct rp_sizebins *s)
{
	return last_of_rank(s, (int)s->n - 1);
}

struct rp_rb_node *rp_sizebins_next(const struct rp_sizebins *s, const struct rp_rb_node *n)
{
	const struct rp_sizebins_stream *g = s->by_id[n->tag >> RP_SIZEBINS_CLASS_BITS];
	struct rp_rb_node *m = rp_rb_next(n);

	if (!m)
		m = rp_sizebins_first_from(g, (n->tag & (RP_SIZEBINS_CLASSES - 1)) + 1);
	return m ? m : rp_sizebins_first_of_rank(s, g->rank + 1);
}

struct rp_rb_node *rp_sizebins_prev(const struct rp_sizebins *s, const struct rp_rb_node *n)
{
	const struct rp_sizebins_stream *g = s->by_id[n->tag >> RP_SIZEBINS_CLASS_BITS];
	struct rp_rb_node *m = rp_rb_prev(n);

	if (!m)
		m = last_upto(g, (int)(n->tag & (RP_SIZEBINS_CLASSES - 1)) - 1);
	return m ? m : last_of_rank(s, (int)g->rank - 1);
}

/* Checks one stream's bins; adds its blocks to *count; *prev: the last
 * block seen so far (the order must hold across bins and streams). */
static int check_stream(const struct rp_sizebins *s, const struct rp_sizebins_stream *g, unsigned r,
                        rp_rb_cmp_fn cmp, const struct rp_rb_node **prev, size_t *count)
{
	uint64_t summary = 0;

	if (g->rank != r || g->id >= s->n || s->by_id[g->id] != g)
		return -1;
	for (unsigned c = 0; c < RP_SIZEBINS_CLASSES; c++) {
		const struct rp_rb_tree *t = &g->bins[c];
		bool used = (g->used[c / 64] >> (c % 64)) & 1;

		if (used != (t->root != NULL) || rp_rb_check(t, cmp) < 0)
			return -1;
		if (!used)
			continue;
		summary |= 1ull << (c / 64);
		if (*prev && cmp(*prev, rp_rb_first(t)) > 0)
			return -1;
		for (const struct rp_rb_node *n = rp_rb_first(t); n; n = rp_rb_next(n))
			if (n->tag != (g->id << RP_SIZEBINS_CLASS_BITS | c))
				return -1;
		*prev = rp_rb_last(t);
		*count += t->count;
	}
	return summary == g->summary ? 0 : -1;
}

int rp_sizebins_check(const struct rp_sizebins *s, rp_rb_cmp_fn cmp)
{
	const struct rp_rb_node *prev = NULL;
	size_t count = 0;

	for (unsigned r = 0; r < s->n; r++) {
		if (r > 0 && s->sorted[r - 1]->stream >= s->sorted[r]->stream)
			return -1;
		if (check_stream(s, s->sorted[r], r, cmp, &prev, &count) < 0)
			return -1;
	}
	return count == s->count ? 0 : -1;
}
