/* sizebins-private.h — the ordered set of free blocks behind the best-fit
 * policies (caching, expandable, bestfit, async's sim pool, stitch): blocks
 * ordered by (stream, size, then the owner's tie keys), kept in bins of one
 * stream and one size class.
 *
 * A bin is a small red-black tree (rbtree-private.h) in the full order, and
 * each stream has a bitmap of its non-empty bins, so the first block not
 * less than (stream, size, ...) lies in the request's own bin or is the
 * first block of the next non-empty bin of the stream, found by a bit scan:
 * a search descends a tree of a few blocks instead of one of all the free
 * blocks, which shortens the chain of dependent loads that dominated the
 * replay (bench/RESULTS.md). Classes are monotone in size (8 per power of
 * two), so the bins in class order, the streams in stream order and each
 * tree in order are the whole order, and every search answers what one
 * tree of all the blocks would.
 *
 * A stream's bins are allocated by rp_sizebins_prepare, which the owner
 * calls before the first block of a stream goes in (where it can still
 * fail cleanly); insert and erase then allocate nothing and cannot fail.
 * The set keeps its own tag in each node (struct rp_rb_node.tag).
 */
#ifndef MEMTRACE_SIZEBINS_PRIVATE_H
#define MEMTRACE_SIZEBINS_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "rbtree-private.h"

#define RP_SIZEBINS_CLASSES 512
#define RP_SIZEBINS_WORDS (RP_SIZEBINS_CLASSES / 64)
#define RP_SIZEBINS_CLASS_BITS 9

/* The bins of one stream. */
struct rp_sizebins_stream {
	uint64_t stream;
	unsigned id;                      /* index in by_id (stable), kept in the nodes' tags */
	unsigned rank;                    /* index in sorted (by stream) */
	uint64_t summary;                 /* bit w: used[w] has a bit set */
	uint64_t used[RP_SIZEBINS_WORDS]; /* bit c: bins[c] is not empty */
	struct rp_rb_tree bins[RP_SIZEBINS_CLASSES];
};

struct rp_sizebins {
	struct rp_sizebins_stream **by_id;  /* in order of preparation */
	struct rp_sizebins_stream **sorted; /* by stream */
	unsigned n, cap;
	size_t count; /* blocks in the set */
};

/* The size class of size: 8 classes per power of two, [2^e + k 2^(e-3),
 * 2^e + (k+1) 2^(e-3)), sizes below 8 a class each; monotone in size. */
static inline unsigned rp_sizebins_class(uint64_t size)
{
	unsigned e = 63u - (unsigned)__builtin_clzll(size | 1);

	return e < 3 ? (unsigned)size : e * 8 + (unsigned)((size >> (e - 3)) & 7);
}

/* Makes s empty with no streams. */
void rp_sizebins_init(struct rp_sizebins *s);
/* Frees the bins (the blocks are the owner's); s is empty afterwards. */
void rp_sizebins_release(struct rp_sizebins *s);

/* The bins of stream, or NULL when it was never prepared (a linear search:
 * streams are few). */
static inline struct rp_sizebins_stream *rp_sizebins_find(const struct rp_sizebins *s,
                                                          uint64_t stream)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->sorted[i]->stream == stream)
			return s->sorted[i];
	return NULL;
}

/* Makes the bins of `stream`, which has none. Returns 0 or -ENOMEM. */
int rp_sizebins_add_stream(struct rp_sizebins *s, uint64_t stream);

/* Makes the bins of `stream` if it has none (inline: owners call it on
 * every free). Returns 0 or -ENOMEM. */
static inline int rp_sizebins_prepare(struct rp_sizebins *s, uint64_t stream)
{
	return rp_sizebins_find(s, stream) ? 0 : rp_sizebins_add_stream(s, stream);
}

/* The number of the stream of n, a block in s: its streams are numbered
 * 0, 1, ... in the order they were prepared. */
static inline unsigned rp_sizebins_stream_number(const struct rp_rb_node *n)
{
	return n->tag >> RP_SIZEBINS_CLASS_BITS;
}

/* Inserts n, a block of (stream, size) whose stream was prepared, in order
 * by cmp (which must order by stream, then size, first), after its
 * equals. */
static inline void rp_sizebins_insert(struct rp_sizebins *s, struct rp_rb_node *n, uint64_t stream,
                                      uint64_t size, rp_rb_cmp_fn cmp)
{
	struct rp_sizebins_stream *g = rp_sizebins_find(s, stream);
	unsigned c = rp_sizebins_class(size);

	n->tag = g->id << RP_SIZEBINS_CLASS_BITS | c;
	rp_rb_insert(&g->bins[c], n, cmp);
	g->used[c / 64] |= 1ull << (c % 64);
	g->summary |= 1ull << (c / 64);
	s->count++;
}

/* Removes n, which must be in s. */
static inline void rp_sizebins_erase(struct rp_sizebins *s, struct rp_rb_node *n)
{
	struct rp_sizebins_stream *g = s->by_id[n->tag >> RP_SIZEBINS_CLASS_BITS];
	unsigned c = n->tag & (RP_SIZEBINS_CLASSES - 1);

	rp_rb_erase(&g->bins[c], n);
	if (!g->bins[c].root) {
		g->used[c / 64] &= ~(1ull << (c % 64));
		if (!g->used[c / 64])
			g->summary &= ~(1ull << (c / 64));
	}
	s->count--;
}

/* The first block of g's bins from class c on (c may be
 * RP_SIZEBINS_CLASSES), or NULL. */
static inline struct rp_rb_node *rp_sizebins_first_from(const struct rp_sizebins_stream *g,
                                                        unsigned c)
{
	unsigned w = c / 64;
	uint64_t bits;

	if (c >= RP_SIZEBINS_CLASSES)
		return NULL;
	bits = g->used[w] & (~0ull << (c % 64));
	if (!bits) {
		uint64_t words = w + 1 < RP_SIZEBINS_WORDS ? g->summary & (~0ull << (w + 1)) : 0;

		if (!words)
			return NULL;
		w = (unsigned)__builtin_ctzll(words);
		bits = g->used[w];
	}
	return rp_rb_first(&g->bins[w * 64 + (unsigned)__builtin_ctzll(bits)]);
}

/* The first block of the streams from rank r on, or NULL. */
struct rp_rb_node *rp_sizebins_first_of_rank(const struct rp_sizebins *s, unsigned r);
/* The rank of the first stream above `stream` (s->n when none). */
unsigned rp_sizebins_rank_above(const struct rp_sizebins *s, uint64_t stream);

/* The first block not less than key (cmp(key, block) <= 0), where key is
 * of (stream, size), or NULL. */
static inline struct rp_rb_node *rp_sizebins_lower_bound(const struct rp_sizebins *s,
                                                         uint64_t stream, uint64_t size,
                                                         const void *key, rp_rb_key_fn cmp)
{
	struct rp_sizebins_stream *g = rp_sizebins_find(s, stream);
	struct rp_rb_node *n;
	unsigned c;

	if (!g)
		return rp_sizebins_first_of_rank(s, rp_sizebins_rank_above(s, stream));
	c = rp_sizebins_class(size);
	n = rp_rb_lower_bound(&g->bins[c], key, cmp);
	if (!n)
		n = rp_sizebins_first_from(g, c + 1);
	return n ? n : rp_sizebins_first_of_rank(s, g->rank + 1);
}

/* The last block not greater than key (cmp(key, block) >= 0), where key is
 * of (stream, size), or NULL. */
struct rp_rb_node *rp_sizebins_floor(const struct rp_sizebins *s, uint64_t stream, uint64_t size,
                                     const void *key, rp_rb_key_fn cmp);

/* The largest block of the stream of rank r (sorted[r]), or NULL when it
 * has none. */
struct rp_rb_node *rp_sizebins_last_of_rank(const struct rp_sizebins *s, unsigned r);

/* Smallest / largest block, or NULL when s is empty. */
struct rp_rb_node *rp_sizebins_first(const struct rp_sizebins *s);
struct rp_rb_node *rp_sizebins_last(const struct rp_sizebins *s);

/* The block after / before n (in s) in order, or NULL at the end. */
struct rp_rb_node *rp_sizebins_next(const struct rp_sizebins *s, const struct rp_rb_node *n);
struct rp_rb_node *rp_sizebins_prev(const struct rp_sizebins *s, const struct rp_rb_node *n);

/* Checks every bin's tree (rp_rb_check with cmp), the tags, the bitmaps and
 * the count (for tests): 0, or -1 when something is broken. */
int rp_sizebins_check(const struct rp_sizebins *s, rp_rb_cmp_fn cmp);

#endif /* MEMTRACE_SIZEBINS_PRIVATE_H */
