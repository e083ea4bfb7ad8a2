/* test-expandable.c — policy `expandable` (PyTorch expandable segments) on
 * hand-worked sequences derived from CUDACachingAllocator.cpp:
 * find_expandable_block, map_block, try_allocate_expandable_block,
 * unmap_block, release_blocks; pages are 20 MiB (kLargeBuffer) in the large
 * pool and 2 MiB (kSmallBuffer) in the small pool. */
#include "config.h"

#include <errno.h>

#include "policy-test.h"

#define CAP (64 * GiB)

/* Pages are mapped at the end of the segment as it grows, and new pages
 * merge with the free space before them, so blocks stay contiguous. */
static void test_growth(void)
{
	struct fixture f = fixture_new("expandable", CAP);
	uint64_t a = xalloc(&f, 4 * MiB, 1);
	uint64_t b = xalloc(&f, 4 * MiB, 1);
	uint64_t c;
	struct layout l;

	/* 4 MiB: no free block; a new segment maps one 20 MiB page; the block
	 * is split (remainder >= 512 B), so b follows a in the same page */
	CHECK(pstats(&f).reserved == 20 * MiB);
	CHECK(bstats(&f).alloc_calls == 1 && bstats(&f).map_calls == 1);
	CHECK(b == a + 4 * MiB);
	/* 20 MiB: the 12 MiB free tail is too small; the lowest place with room
	 * is that tail plus unmapped space: one more page is mapped, merged
	 * with the tail into 32 MiB, and c starts where the tail did */
	c = xalloc(&f, 20 * MiB, 1);
	CHECK(c == a + 8 * MiB);
	CHECK(pstats(&f).reserved == 40 * MiB && bstats(&f).map_calls == 2);
	CHECK(pstats(&f).segments == 1);
	l = walk_layout(&f, true);
	CHECK(l.nseg == 1 && l.seg[0].address == a && l.seg[0].bytes == 40 * MiB);
	CHECK(l.nblk == 4 && l.blk[3].bytes == 12 * MiB && !l.blk[3].allocated);

	/* b and c freed: one free block [a+4, a+40). empty_cache unmaps the
	 * whole pages inside it: page 1 only ([a+20, a+40)); [a+4, a+20) stays */
	xfree(&f, b, 1);
	xfree(&f, c, 1);
	CHECK(f.p->ops->empty_cache(f.p) == 0);
	CHECK(pstats(&f).reserved == 20 * MiB);
	CHECK(bstats(&f).unmap_calls == 1 && bstats(&f).free_calls == 1);
	l = walk_layout(&f, true);
	CHECK(l.nseg == 1 && l.seg[0].bytes == 20 * MiB && l.nblk == 2);
	/* a freed: the segment is one free page; empty_cache unmaps it and,
	 * nothing being mapped, gives the reservation back */
	xfree(&f, a, 1);
	CHECK(f.p->ops->empty_cache(f.p) == 0);
	CHECK(pstats(&f).reserved == 0 && pstats(&f).segments == 0);
	CHECK(bstats(&f).reserved == 0 && bstats(&f).unmap_calls == 2);
	CHECK(walk_layout(&f, true).nseg == 0);
	fixture_free(&f);
}

/* Pages unmapped in the middle of a segment are mapped again first: the
 * lowest place with room wins (Note [Expandable Segments]). */
static void test_refill_lowest_gap(void)
{
	struct fixture f = fixture_new("expandable", CAP);
	uint64_t a = xalloc(&f, 20 * MiB, 0); /* page 0, whole: not split */
	uint64_t b = xalloc(&f, 20 * MiB, 0); /* page 1 */
	uint64_t c = xalloc(&f, 20 * MiB, 0); /* page 2 */
	uint64_t d, e;

	CHECK(b == a + 20 * MiB && c == a + 40 * MiB);
	xfree(&f, b, 0);
	CHECK(f.p->ops->empty_cache(f.p) == 0); /* unmaps page 1: a hole between a and c */
	CHECK(pstats(&f).reserved == 40 * MiB);
	CHECK(walk_layout(&f, true).nseg == 2); /* two mapped runs */
	CHECK(pstats(&f).segments == 2);
	/* 30 MiB does not fit the 20 MiB hole: pages 3 and 4 at the end */
	d = xalloc(&f, 30 * MiB, 0);
	CHECK(d == a + 60 * MiB && pstats(&f).reserved == 80 * MiB);
	/* 15 MiB: d's 10 MiB remainder is too small; the hole is the lowest
	 * place with room, so page 1 is mapped again */
	e = xalloc(&f, 15 * MiB, 0);
	CHECK(e == a + 20 * MiB && pstats(&f).reserved == 100 * MiB);
	CHECK(pstats(&f).segments == 1);
	fixture_free(&f);
}

/* The small pool maps 2 MiB pages; streams get their own segments. */
static void test_small_and_streams(void)
{
	struct fixture f = fixture_new("expandable", CAP);
	uint64_t a = xalloc(&f, 1 * KiB, 1), b;

	CHECK(pstats(&f).reserved == 2 * MiB);
	b = xalloc(&f, 1 * KiB, 2);
	CHECK(b != a + 1 * KiB);
	CHECK(pstats(&f).reserved == 4 * MiB && pstats(&f).segments == 2);
	xfree(&f, a, 1);
	/* stream 1's free page is not used for stream 2 */
	CHECK(xalloc(&f, 4 * KiB, 2) == b + 1 * KiB);
	CHECK(pstats(&f).reserved == 4 * MiB);
	fixture_free(&f);
}

/* Requests growing by 1 MiB each iteration (the batch-size case of Note
 * [Expandable Segments]). caching: 30 MiB segment; 31 does not fit -> 32;
 * 32 reuses it; 33 -> 34; ... 39 -> 40: 30+32+34+36+38+40 = 210 MiB.
 * expandable: two 20 MiB pages hold 30 and every later size up to 40. */
static uint64_t growing_batches(const char *spec)
{
	struct fixture f = fixture_new(spec, CAP);
	uint64_t reserved;

	for (uint64_t i = 0; i < 10; i++) {
		uint64_t a = xalloc(&f, (30 + i) * MiB, 0);

		xfree(&f, a, 0);
	}
	reserved = bstats(&f).peak_reserved;
	CHECK(reserved == pstats(&f).reserved);
	fixture_free(&f);
	return reserved;
}

static void test_fragmenting_sequence(void)
{
	CHECK(growing_batches("caching") == 210 * MiB);
	CHECK(growing_batches("expandable") == 40 * MiB);
}

/* At the capacity, the OOM retry unmaps free pages of other streams. */
static void test_oom_retry(void)
{
	struct fixture f = fixture_new("expandable", 60 * MiB);
	uint64_t a = xalloc(&f, 4 * MiB, 1), b;

	xfree(&f, a, 1);
	/* stream 2, 50 MiB: its own segment needs 3 pages (60 MiB); the third
	 * cuMemCreate fails (20 + 60 > 60), the two new pages are released;
	 * release_cached_blocks unmaps stream 1's page (and frees its
	 * segment); the retry maps 3 pages */
	b = xalloc(&f, 50 * MiB, 2);
	CHECK(b != 0);
	CHECK(pstats(&f).reserved == 60 * MiB && pstats(&f).cache_flushes == 1);
	CHECK(pstats(&f).segments == 1);
	CHECK(f.p->ops->alloc(f.p, 20 * MiB, 2, 0, &a) == -ENOMEM);
	fixture_free(&f);
}

int main(void)
{
	TEST(test_growth);
	TEST(test_refill_lowest_gap);
	TEST(test_small_and_streams);
	TEST(test_fragmenting_sequence);
	TEST(test_oom_retry);
	return check_done();
}
