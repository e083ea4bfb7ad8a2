/* span-set.c — coalesced address-range sets and the lowest common gap
 * (span-set-private.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "span-set-private.h"

/* First index in [from, len) whose span ends above x (len when none). */
static size_t first_ending_above(const struct rp_span *span, size_t from, size_t len, uint64_t x)
{
	while (from < len) {
		size_t mid = from + (len - from) / 2;
		if (span[mid].hi <= x)
			from = mid + 1;
		else
			len = mid;
	}
	return from;
}

/* first_ending_above from a cursor that usually sits near the answer:
 * steps of 1, 2, 4... from it, then a binary search inside the last step. */
static size_t gallop_ending_above(const struct rp_span *span, size_t from, size_t len, uint64_t x)
{
	size_t step = 1, lo = from;
	while (from < len && span[from].hi <= x) {
		lo = from + 1;
		from = from + step < len ? from + step : len;
		step *= 2;
	}
	return first_ending_above(span, lo, from, x);
}

/* Doubles the capacity from 2 (not mt_array_grow's 64: most of the
 * planner's sets hold a span or two, and there are a million of them). */
static int grow(struct rp_span_set *s)
{
	uint32_t cap = s->cap ? 2 * s->cap : 2;
	struct rp_span *grown = realloc(s->span, cap * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	s->span = grown;
	s->cap = cap;
	return 0;
}

int rp_span_set_add(struct rp_span_set *s, uint64_t lo, uint64_t hi)
{
	/* spans [i, j) overlap or touch [lo, hi): they become one */
	size_t i = first_ending_above(s->span, 0, s->len, lo - (lo > 0)); /* hi >= lo */
	if (i < s->len && s->span[i].lo <= lo && s->span[i].hi >= hi)
		return 0; /* held already: no second search */
	size_t j = i, n = s->len;
	while (j < n) {
		size_t mid = j + (n - j) / 2;
		if (s->span[mid].lo <= hi)
			j = mid + 1;
		else
			n = mid;
	}
	if (j > i) {
		if (s->span[i].lo < lo)
			lo = s->span[i].lo;
		if (s->span[j - 1].hi > hi)
			hi = s->span[j - 1].hi;
		s->span[i] = (struct rp_span){ lo, hi };
		memmove(&s->span[i + 1], &s->span[j], (s->len - j) * sizeof(*s->span));
		s->len -= (uint32_t)(j - i - 1);
		return 1;
	}
	if (s->len == s->cap && grow(s) < 0)
		return -ENOMEM;
	memmove(&s->span[i + 1], &s->span[i], (s->len - i) * sizeof(*s->span));
	s->span[i] = (struct rp_span){ lo, hi };
	s->len++;
	return 1;
}

void rp_span_set_release(struct rp_span_set *s)
{
	free(s->span);
	*s = (struct rp_span_set){ 0 };
}

void rp_timed_insert(struct rp_timed_span *list, size_t len, const struct rp_timed_span *e)
{
	size_t a = 0, b = len;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (list[mid].lo <= e->lo)
			a = mid + 1;
		else
			b = mid;
	}
	memmove(&list[a + 1], &list[a], (len - a) * sizeof(*list));
	list[a] = *e;
}

/* Moves v's cursor past the spans below x + size that do not matter at x
 * (over other times, or ending by x); the span it stops at, if any, meets
 * [x, x + size) when its lo is below x + size. */
static void skip_timed(struct rp_timed_view *v, uint64_t x, uint64_t size)
{
	for (; v->at < v->len; v->at++) {
		const struct rp_timed_span *e = &v->span[v->at];
		if (e->lo >= x + size || (e->hi > x && e->first < v->past && e->past > v->first))
			return;
	}
}

/* Moves at past every span of set view v that meets [at, at + size);
 * whether there was one. */
static bool pass_set(struct rp_span_view *v, uint64_t *at, uint64_t size)
{
	bool moved = false;
	for (;;) {
		v->at = gallop_ending_above(v->span, v->at, v->len, *at);
		if (v->at == v->len || v->span[v->at].lo >= *at + size)
			return moved;
		*at = v->span[v->at++].hi;
		moved = true;
	}
}

/* The same for timed view v. */
static bool pass_timed(struct rp_timed_view *v, uint64_t *at, uint64_t size)
{
	bool moved = false;
	for (;;) {
		skip_timed(v, *at, size);
		if (v->at == v->len || v->span[v->at].lo >= *at + size)
			return moved;
		*at = v->span[v->at++].hi;
		moved = true;
	}
}

uint64_t rp_span_lowest_gap(struct rp_span_view *views, size_t k, struct rp_timed_view *timed,
                            size_t kt, uint64_t size)
{
	uint64_t at = 0;
	size_t all = k + kt, clear = 0, i = 0; /* clear: views in a row free over [at, at + size) */
	while (clear < all) {
		bool moved = i < k ? pass_set(&views[i], &at, size)
		                   : pass_timed(&timed[i - k], &at, size);
		clear = moved ? 1 : clear + 1; /* this one is free at the new at */
		i = i + 1 < all ? i + 1 : 0;
	}
	return at;
}
