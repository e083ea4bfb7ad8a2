/* test-planner.c — the offline planner (planner.c) and its span sets
 * (span-set.c). The planner must place every request exactly where the
 * plain greedy-by-size does: each request, largest first (earlier start,
 * then lower index, among equals), at the lowest offset where it meets no
 * placed request that is live at the same time, found by sorting every such
 * request by offset (the `planned` policy before the segment tree). Random
 * request sets of several shapes are planned both ways and compared request
 * by request. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-common.h"
#include "planner-private.h"
#include "span-set-private.h"
#include "tap.h"

static struct mt_rng rng; /* seeded in main */

static uint64_t next(void)
{
	return mt_rng_next(&rng);
}

/* ---- span sets ---------------------------------------------------------- */

static void test_span_add(void)
{
	struct rp_span_set s = { 0 };
	CHECK(rp_span_set_add(&s, 10, 20) == 1);
	CHECK(rp_span_set_add(&s, 30, 40) == 1);
	CHECK(rp_span_set_add(&s, 12, 18) == 0); /* inside */
	CHECK(rp_span_set_add(&s, 30, 40) == 0);
	CHECK(s.len == 2);
	CHECK(rp_span_set_add(&s, 20, 25) == 1); /* touches [10, 20): merged */
	CHECK(s.len == 2 && s.span[0].lo == 10 && s.span[0].hi == 25);
	CHECK(rp_span_set_add(&s, 0, 5) == 1);
	CHECK(s.len == 3 && s.span[0].lo == 0 && s.span[0].hi == 5);
	CHECK(rp_span_set_add(&s, 4, 31) == 1); /* joins all three */
	CHECKF(s.len == 1 && s.span[0].lo == 0 && s.span[0].hi == 40, "len %u", s.len);
	rp_span_set_release(&s);
	CHECK(s.len == 0 && !s.span);
}

/* Random adds against a bitmap of the union. */
static void test_span_add_random(void)
{
	enum { RANGE = 512 };
	for (int round = 0; round < 200; round++) {
		struct rp_span_set s = { 0 };
		bool bit[RANGE] = { false };
		for (int i = 0; i < 40; i++) {
			uint64_t lo = next() % (RANGE - 1), hi = lo + 1 + next() % 16;
			if (hi > RANGE)
				hi = RANGE;
			bool covered = true;
			for (uint64_t x = lo; x < hi; x++) {
				covered &= bit[x];
				bit[x] = true;
			}
			CHECK(rp_span_set_add(&s, lo, hi) == (covered ? 0 : 1));
		}
		/* the spans are the runs of the bitmap, in order, none touching */
		uint32_t k = 0;
		for (uint64_t x = 0; x < RANGE;) {
			if (!bit[x]) {
				x++;
				continue;
			}
			uint64_t y = x;
			while (y < RANGE && bit[y])
				y++;
			CHECK(k < s.len && s.span[k].lo == x && s.span[k].hi == y);
			k++;
			x = y;
		}
		CHECK(k == s.len);
		rp_span_set_release(&s);
		if (check_failed())
			return;
	}
}

/* Up to 4 sets and 2 timed lists (random spans inserted one by one,
 * overlapping in a list, busy over random times of which those meeting
 * [10, 20) count) against a bitmap of what is busy. */
static void test_lowest_gap(void)
{
	enum { RANGE = 600 };
	for (int round = 0; round < 300; round++) {
		struct rp_span_set set[4] = { { 0 } };
		struct rp_span_view view[4];
		struct rp_timed_span list[2][12];
		struct rp_timed_view timed[2];
		bool busy[RANGE + 64] = { false };
		size_t k = next() % 5, kt = next() % 3;
		for (size_t v = 0; v < k; v++) {
			for (int i = 0; i < 12; i++) {
				uint64_t lo = next() % 500, hi = lo + 1 + next() % 30;
				rp_span_set_add(&set[v], lo, hi);
				for (uint64_t x = lo; x < hi; x++)
					busy[x] = true;
			}
			view[v] = (struct rp_span_view){ set[v].span, set[v].len, 0 };
		}
		for (size_t v = 0; v < kt; v++) {
			for (int i = 0; i < 12; i++) {
				uint64_t lo = next() % 500, hi = lo + 1 + next() % 30;
				uint32_t first = (uint32_t)(next() % 30),
				         past = first + 1 + next() % 10;
				rp_timed_insert(list[v], (size_t)i,
				                &(struct rp_timed_span){ lo, hi, first, past });
				for (uint64_t x = lo; first < 20 && past > 10 && x < hi; x++)
					busy[x] = true;
			}
			for (int i = 1; i < 12; i++)
				CHECK(list[v][i - 1].lo <= list[v][i].lo);
			timed[v] = (struct rp_timed_view){ list[v], 12, 0, 10, 20 };
		}
		uint64_t size = 1 + next() % 40, want = 0;
		for (uint64_t x = 0;; x++) { /* first x with [x, x + size) free */
			bool free = true;
			for (uint64_t y = x; free && y < x + size && y < RANGE; y++)
				free = !busy[y];
			if (free) {
				want = x;
				break;
			}
		}
		uint64_t got = rp_span_lowest_gap(view, k, timed, kt, size);
		CHECKF(got == want, "round %d: got %llu, want %llu", round, (unsigned long long)got,
		       (unsigned long long)want);
		for (size_t v = 0; v < 4; v++)
			rp_span_set_release(&set[v]);
		if (check_failed())
			return;
	}
	CHECK(rp_span_lowest_gap(NULL, 0, NULL, 0, 100) == 0);
}

/* ---- the planner against the plain greedy -------------------------------- */

struct order_key {
	uint64_t size;
	uint32_t start;
	size_t index;
};

static int by_size_desc(const void *a, const void *b)
{
	const struct order_key *x = a, *y = b;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

struct hit {
	uint64_t lo, hi;
};

static int by_lo(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

static uint64_t round_up(uint64_t bytes, uint64_t align)
{
	return ((bytes ? bytes : 1) + align - 1) / align * align;
}

/* The greedy as the policy did it before: O(n^2), obviously right. */
static uint64_t plan_plainly(const struct mt_plan_request *r, size_t n, uint64_t align,
                             uint64_t *offset)
{
	struct order_key *key = malloc(n * sizeof(*key));
	struct hit *hit = malloc(n * sizeof(*hit));
	bool *placed = calloc(n, sizeof(bool));
	uint64_t arena = 0;
	REQUIRE(key && hit && placed);
	for (size_t i = 0; i < n; i++)
		key[i] = (struct order_key){ round_up(r[i].bytes, align), r[i].start, i };
	qsort(key, n, sizeof(*key), by_size_desc);
	for (size_t i = 0; i < n; i++) {
		size_t q = key[i].index, nhit = 0;
		uint64_t size = key[i].size, at = 0;
		for (size_t j = 0; j < n; j++)
			if (placed[j] && r[j].start < r[q].end && r[q].start < r[j].end)
				hit[nhit++] =
				        (struct hit){ offset[j],
					              offset[j] + round_up(r[j].bytes, align) };
		qsort(hit, nhit, sizeof(*hit), by_lo);
		for (size_t h = 0; h < nhit && hit[h].lo < at + size; h++)
			if (hit[h].hi > at)
				at = hit[h].hi;
		offset[q] = at;
		placed[q] = true;
		if (at + size > arena)
			arena = at + size;
	}
	free(key);
	free(hit);
	free(placed);
	return arena;
}

/* n requests over 2n positions, each alloc before its free, positions
 * `spread` apart; lifetimes of about `life` of those steps (some never
 * freed); sizes from `nsizes` values (few values: many ties). shuffled:
 * request indices not in start order. */
static struct mt_plan_request *make(size_t n, uint64_t life, unsigned nsizes, bool shuffled,
                                    uint32_t spread)
{
	struct mt_plan_request *r = malloc(n * sizeof(*r));
	REQUIRE(r);
	for (size_t i = 0; i < n; i++) {
		uint32_t start = (uint32_t)(2 * i * spread);
		uint32_t len = (uint32_t)(1 + next() % (2 * life * spread));
		uint64_t bytes = 512 * (1 + next() % nsizes) - next() % 3 * 100;
		r[i] = (struct mt_plan_request){ start, next() % 16 ? start + len : UINT32_MAX,
			                         next() % 50 ? bytes : 0 };
		if (i && next() % 8 == 0)
			r[i].start = r[i - 1].start; /* equal starts: ties by index */
	}
	for (size_t i = n; shuffled && i > 1; i--) {
		size_t j = next() % i;
		struct mt_plan_request t = r[i - 1];
		r[i - 1] = r[j];
		r[j] = t;
	}
	return r;
}

static void check_plan(size_t n, uint64_t life, unsigned nsizes, bool shuffled, uint64_t align,
                       uint32_t spread)
{
	struct mt_plan_request *r = make(n, life, nsizes, shuffled, spread);
	uint64_t *want =
	        calloc(n ? n : 1,
	               sizeof(*want)); /* calloc: GCC -O3 cannot see plan_plainly fill it first */
	uint64_t *got = malloc((n ? n : 1) * sizeof(*got));
	uint64_t arena = 1, placed = UINT64_MAX;
	REQUIRE(want && got);
	uint64_t want_arena = plan_plainly(r, n, align, want);
	CHECK(rp_plan_greedy_by_size(r, n, align, NULL, &placed, got, &arena) == 0);
	CHECKF(placed == n, "placed %llu of %zu", (unsigned long long)placed, n);
	CHECKF(arena == want_arena, "n %zu life %llu: arena %llu, want %llu", n,
	       (unsigned long long)life, (unsigned long long)arena, (unsigned long long)want_arena);
	size_t wrong = 0;
	for (size_t i = 0; i < n; i++)
		wrong += got[i] != want[i];
	CHECKF(wrong == 0, "n %zu life %llu sizes %u: %zu of the offsets differ", n,
	       (unsigned long long)life, nsizes, wrong);
	free(r);
	free(want);
	free(got);
}

static void test_plan_matches_greedy(void)
{
	const uint64_t lives[] = { 1, 3, 20, 100, 2000 };
	const unsigned sizes[] = { 1, 4, 300 };
	check_plan(0, 1, 1, false, 512, 1);
	check_plan(1, 1, 1, false, 512, 1);
	for (size_t l = 0; l < sizeof(lives) / sizeof(*lives); l++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++)
			for (size_t n = 31; n < 1500; n = n * 3 + 7)
				check_plan(n, lives[l], sizes[s], (n + l) % 2, s == 1 ? 1 : 512, 1);
	/* trees of several levels above the leaves */
	check_plan(6000, 100, 300, false, 512, 1);
	check_plan(6000, 700, 4, true, 512, 1);
	/* positions far apart (the starts counted several positions a bucket),
	 * up to near 2^32 */
	check_plan(3000, 50, 300, true, 512, 3);
	check_plan(3000, 50, 300, false, 512, 600000);
}

static void test_plan_interrupted(void)
{
	struct mt_plan_request *r = make(5000, 50, 10, false, 1);
	uint64_t *off = malloc(5000 * sizeof(*off)), arena;
	volatile int stop = 1;
	REQUIRE(off);
	CHECK(rp_plan_greedy_by_size(r, 5000, 512, &stop, NULL, off, &arena) == -EINTR);
	free(r);
	free(off);
}

int main(void)
{
	mt_rng_seed(&rng, 1);
	TEST(test_span_add);
	TEST(test_span_add_random);
	TEST(test_lowest_gap);
	TEST(test_plan_matches_greedy);
	TEST(test_plan_interrupted);
	return check_done();
}
