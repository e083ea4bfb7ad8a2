/* test-stitch.c — policy `stitch` (GMLake-style stitching) on hand-worked
 * sequences: large requests round up to 2 MiB pages; best fit first, then
 * stitching of free blocks, then new pages only for what is missing. */
#include "config.h"

#include <errno.h>

#include "policy-test.h"

#define CAP (64 * GiB)

static void test_stitch_without_new_memory(void)
{
	struct fixture f = fixture_new("stitch", CAP);
	uint64_t a = xalloc(&f, 4 * MiB, 0);     /* 2 new pages */
	uint64_t b = xalloc(&f, 2 * MiB, 0);     /* 1 new page */
	uint64_t c = xalloc(&f, 3 * MiB + 1, 0); /* 2 new pages */
	uint64_t d, e, g;
	struct layout l;

	CHECK(pstats(&f).reserved == 10 * MiB && bstats(&f).alloc_calls == 5);
	CHECK(pstats(&f).allocated == 10 * MiB && pstats(&f).requested == 9 * MiB + 1);
	/* a and c free: two 2-page blocks, not adjacent (b lies between) */
	xfree(&f, a, 0);
	xfree(&f, c, 0);
	/* 8 MiB = 4 pages: no single free block fits; together they do: their
	 * pages are mapped into a new range, no new physical memory */
	d = xalloc(&f, 8 * MiB, 0);
	CHECK(d != a && d != c);
	CHECK(pstats(&f).reserved == 10 * MiB && bstats(&f).alloc_calls == 5);
	CHECK(bstats(&f).reserved == 10 * MiB);
	CHECK(pstats(&f).allocated == 10 * MiB);
	l = walk_layout(&f, true);
	CHECK(l.nseg == 2 && l.seg_bytes == 10 * MiB); /* b and the stitched block */

	/* everything free (1 + 4 pages); 12 MiB = 6 pages: both free blocks are
	 * stitched with one new page */
	xfree(&f, b, 0);
	xfree(&f, d, 0);
	e = xalloc(&f, 12 * MiB, 0);
	CHECK(pstats(&f).reserved == 12 * MiB && bstats(&f).alloc_calls == 6);
	xfree(&f, e, 0);
	/* best fit splits: 3 MiB takes 2 of the 6 pages, 4 stay free */
	g = xalloc(&f, 3 * MiB, 0);
	CHECK(pstats(&f).reserved == 12 * MiB && pstats(&f).allocated == 4 * MiB);
	CHECK(pstats(&f).largest_free == 8 * MiB);
	CHECK(g != 0);
	CHECK(f.p->ops->empty_cache(f.p) == 0);
	CHECK(pstats(&f).reserved == 4 * MiB && bstats(&f).reserved == 4 * MiB);
	fixture_free(&f);
}

/* Free blocks of one stream are not stitched for another; at the capacity
 * the other streams' free blocks are released and the request retried. */
static void test_streams_and_oom(void)
{
	struct fixture f = fixture_new("stitch", 10 * MiB);
	uint64_t a = xalloc(&f, 6 * MiB, 1), b;

	xfree(&f, a, 1);
	/* stream 2: 3 new pages; 6 + 6 > 10: the third page fails, the two
	 * new ones are given back, stream 1's block is released, retry */
	b = xalloc(&f, 6 * MiB, 2);
	CHECK(b != 0 && b != a);
	CHECK(pstats(&f).reserved == 6 * MiB && pstats(&f).cache_flushes == 1);
	CHECK(bstats(&f).reserved == 6 * MiB);
	fixture_free(&f);
}

/* Requests up to 1 MiB use the caching allocator's small pool. */
static void test_small(void)
{
	struct fixture f = fixture_new("stitch", CAP);
	uint64_t a = xalloc(&f, 1000, 0), b = xalloc(&f, 1000, 0);

	CHECK(b == a + 1024); /* 1000 B -> 1024 B blocks, split off one 2 MiB segment */
	CHECK(pstats(&f).reserved == 2 * MiB && pstats(&f).allocated == 2048);
	xfree(&f, a, 0);
	xfree(&f, b, 0);
	CHECK(pstats(&f).allocated == 0);
	fixture_free(&f);
}

int main(void)
{
	TEST(test_stitch_without_new_memory);
	TEST(test_streams_and_oom);
	TEST(test_small);
	return check_done();
}
