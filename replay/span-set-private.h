/* span-set-private.h — a set of address ranges kept as sorted, disjoint,
 * coalesced spans [lo, hi), and the search the offline planner makes over
 * several such sets at once: the lowest offset where a block of a given
 * size fits without touching any of them.
 *
 * Spans that overlap or touch are merged on insertion, so a set holds as
 * many spans as its union has runs (requests packed side by side in address
 * cost one span, however many there are). A set is a sorted array: lookup
 * is a binary search, insertion moves the spans after it.
 */
#ifndef MEMTRACE_SPAN_SET_PRIVATE_H
#define MEMTRACE_SPAN_SET_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

struct rp_span {
	uint64_t lo, hi; /* [lo, hi), lo < hi */
};

struct rp_span_set {
	struct rp_span *span; /* sorted by lo, disjoint, never touching */
	uint32_t len, cap;
};

/* Adds [lo, hi) (lo < hi) to the union. Returns 1 when the union grew, 0
 * when it already held the whole range (nothing changed), -ENOMEM. */
int rp_span_set_add(struct rp_span_set *s, uint64_t lo, uint64_t hi);

/* Frees the spans; the set is empty and usable again. */
void rp_span_set_release(struct rp_span_set *s);

/* One set as the search reads it: its spans and a cursor the search moves. */
struct rp_span_view {
	const struct rp_span *span;
	size_t len;
	size_t at; /* first span that may end above the search's offset; 0 on entry */
};

/* A span busy over a range of times [first, past): one of a list sorted by
 * lo whose spans may overlap (the planner's requests that cover part of a
 * leaf). */
struct rp_timed_span {
	uint64_t lo, hi;
	uint32_t first, past;
};

/* Inserts e into list[0..len) (room for len + 1), keeping it sorted by
 * lo. */
void rp_timed_insert(struct rp_timed_span *list, size_t len, const struct rp_timed_span *e);

/* Such a list as the search reads it: only its spans busy at some time in
 * [first, past) count. */
struct rp_timed_view {
	const struct rp_timed_span *span;
	size_t len;
	size_t at; /* first span that may still matter; 0 on entry */
	uint32_t first, past;
};

/* The lowest offset x such that [x, x + size) meets no span of any of the
 * k views and of the kt timed views (their union): 0 or the end of one of
 * their spans. Each view's cursor only moves forward (from where it was
 * left: 0 on first use): a set's by steps of 1, 2, 4... from where it
 * stood, a timed list's one span at a time; the views are visited in turn
 * until k + kt in a row have nothing in [x, x + size). */
uint64_t rp_span_lowest_gap(struct rp_span_view *views, size_t k, struct rp_timed_view *timed,
                            size_t kt, uint64_t size);

#endif /* MEMTRACE_SPAN_SET_PRIVATE_H */
