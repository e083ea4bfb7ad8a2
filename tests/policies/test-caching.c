/* test-caching.c — policy `caching` (PyTorch CUDACachingAllocator) on
 * hand-worked sequences. Every expected figure below is derived in the
 * comments from c10/cuda/CUDACachingAllocator.cpp (round_size,
 * get_allocation_size, get_free_block, should_split, free_block,
 * release_available_cached_blocks, release_cached_blocks,
 * garbage_collect_cached_blocks), not from running the model. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "policy-test.h"

#define CAP (64 * GiB)

/* round_size: < 512 -> 512, else up to a multiple of 512. Small pool for
 * rounded sizes <= 1 MiB (2 MiB segments); large: < 10 MiB -> 20 MiB
 * segment, else the rounded size up to 2 MiB. One fresh policy per request
 * so reserved shows the segment size. */
static void test_rounding_and_segments(void)
{
	static const struct {
		uint64_t request, allocated, segment;
	} cases[] = {
		{ 1, 512, 2 * MiB },                          /* minimum block */
		{ 512, 512, 2 * MiB },                        /* already a multiple */
		{ 513, 1024, 2 * MiB },                       /* up to 512 */
		{ 1 * MiB, 1 * MiB, 2 * MiB },                /* largest small request */
		{ 1 * MiB + 1, 1 * MiB + 512, 20 * MiB },     /* large pool, 20 MiB segment */
		{ 10 * MiB - 513, 10 * MiB - 512, 20 * MiB }, /* still < kMinLargeAlloc */
		{ 10 * MiB - 1, 10 * MiB, 10 * MiB },         /* rounds to 10 MiB: own segment */
		/* segment rounded to 2 MiB; the rest (1 MiB - 512) is not > 1 MiB,
		 * so the block is not split: allocated is the whole segment */
		{ 11 * MiB + 1, 12 * MiB, 12 * MiB },
		{ 100 * MiB, 100 * MiB, 100 * MiB }, /* exact multiple of 2 MiB */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fixture f = fixture_new("caching", CAP);
		uint64_t a = xalloc(&f, cases[i].request, 7);
		struct mt_policy_stats st = pstats(&f);
		struct layout l = walk_layout(&f, true);

		CHECK(st.allocated == cases[i].allocated);
		CHECK(st.requested == cases[i].request);
		CHECK(st.reserved == cases[i].segment);
		CHECK(st.segments == 1);
		CHECK(bstats(&f).reserved == cases[i].segment);
		/* the block is the front of the segment */
		CHECK(l.nseg == 1 && l.seg[0].address == a && l.blk[0].allocated);
		CHECK(l.seg_bytes == st.reserved);
		fixture_free(&f);
	}
}

/* roundup_power2_divisions=4: sizes above 512 * 4 = 2048 B round up to the
 * next quarter between two powers of two; powers of two stay. */
static void test_power2_divisions(void)
{
	static const struct {
		uint64_t request, allocated;
	} cases[] = {
		{ 1200, 1536 },                       /* 1200 <= 2048: plain 512 rounding */
		{ 5000, 5120 },                       /* 4096 + k*1024 -> 5120 */
		{ 4096, 4096 },                       /* power of two */
		{ 3 * MiB + 1, 3 * MiB + 512 * KiB }, /* 2 MiB + k*512 KiB -> 3.5 MiB */
		{ 5 * MiB, 5 * MiB },                 /* on a division: 4 MiB + 1 MiB */
		{ 5 * MiB + 1, 6 * MiB },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fixture f = fixture_new("caching:roundup_power2_divisions=4", CAP);

		xalloc(&f, cases[i].request, 0);
		CHECK(pstats(&f).allocated == cases[i].allocated);
		fixture_free(&f);
	}
}

/* Three 4 MiB blocks split off one 20 MiB segment; frees merge with free
 * neighbours only; best fit picks the smallest block that fits; reserved
 * never shrinks until empty_cache. */
static void test_split_merge(void)
{
	struct fixture f = fixture_new("caching", CAP);
	uint64_t a = xalloc(&f, 4 * MiB, 1);
	uint64_t b = xalloc(&f, 4 * MiB, 1);
	uint64_t c = xalloc(&f, 4 * MiB, 1);
	struct layout l;
	uint64_t d;

	/* 4 MiB < 10 MiB: one 20 MiB segment; each request takes the front of
	 * the free tail (remaining 16, 12, 8 MiB > 1 MiB: split) */
	CHECK(b == a + 4 * MiB && c == a + 8 * MiB);
	CHECK(pstats(&f).reserved == 20 * MiB && pstats(&f).segments == 1);
	l = walk_layout(&f, true);
	CHECK(l.nblk == 4 && l.blk[3].address == a + 12 * MiB && l.blk[3].bytes == 8 * MiB &&
	      !l.blk[3].allocated);

	/* b freed between two live blocks: no merge */
	xfree(&f, b, 1);
	l = walk_layout(&f, true);
	CHECK(l.nblk == 4 && !l.blk[1].allocated && l.blk[1].bytes == 4 * MiB);

	/* free blocks of 4 MiB (at a+4) and 8 MiB (a+12): an 8 MiB request takes
	 * the 8 MiB one (best fit by size), a 3 MiB request the 4 MiB one and
	 * does not split it (remainder 1 MiB is not > kSmallSize) */
	d = xalloc(&f, 8 * MiB, 1);
	CHECK(d == a + 12 * MiB);
	xfree(&f, d, 1);
	d = xalloc(&f, 3 * MiB, 1);
	CHECK(d == a + 4 * MiB);
	CHECK(pstats(&f).allocated == 12 * MiB); /* a, c and the unsplit 4 MiB block */
	CHECK(pstats(&f).requested == 11 * MiB);
	xfree(&f, d, 1);

	/* c merges with b (before) and the 8 MiB tail (after): one 16 MiB block */
	xfree(&f, c, 1);
	l = walk_layout(&f, true);
	CHECK(l.nblk == 2 && l.blk[1].address == a + 4 * MiB && l.blk[1].bytes == 16 * MiB);
	xfree(&f, a, 1);
	l = walk_layout(&f, true);
	CHECK(l.nblk == 1 && l.blk[0].bytes == 20 * MiB && !l.blk[0].allocated);
	CHECK(pstats(&f).reserved == 20 * MiB && pstats(&f).allocated == 0);
	CHECK(pstats(&f).largest_free == 20 * MiB);

	CHECK(f.p->ops->empty_cache(f.p) == 0);
	CHECK(pstats(&f).reserved == 0 && pstats(&f).segments == 0);
	CHECK(bstats(&f).reserved == 0 && bstats(&f).free_calls == 1);
	fixture_free(&f);
}

/* Small pool: 2 MiB segments, blocks split whenever 512 B remain. */
static void test_small_pool(void)
{
	struct fixture f = fixture_new("caching", CAP);
	uint64_t a = xalloc(&f, 700 * KiB, 0);
	uint64_t b = xalloc(&f, 700 * KiB, 0);
	uint64_t c = xalloc(&f, 700 * KiB, 0);

	/* 700 KiB is a multiple of 512: two fit in 2 MiB (648 KiB left), the
	 * third needs a second small segment */
	CHECK(b == a + 700 * KiB);
	CHECK(c != a + 1400 * KiB);
	CHECK(pstats(&f).reserved == 4 * MiB && pstats(&f).segments == 2);
	/* a 600 KiB request fits the 648 KiB remainder of the first segment
	 * (best fit: smaller than the second segment's 1348 KiB) */
	CHECK(xalloc(&f, 600 * KiB, 0) == a + 1400 * KiB);
	fixture_free(&f);
}

/* Free blocks of one size order by address (BlockComparatorSize), and with
 * no recording of where cudaMalloc placed them (tests/replay/test-driver.c
 * has one) each new segment is placed below the earlier ones: of two freed
 * 30 MiB segments a 30 MiB request takes the newer, and a 12 MiB request
 * (split: 18 MiB > 1 MiB remain) the front of the newer as well. */
static void test_newest_segment_first(void)
{
	struct fixture f = fixture_new("caching", CAP);
	uint64_t a = xalloc(&f, 30 * MiB, 0);
	uint64_t b = xalloc(&f, 30 * MiB, 0);

	CHECK(pstats(&f).segments == 2);
	xfree(&f, a, 0);
	xfree(&f, b, 0);
	CHECK(xalloc(&f, 30 * MiB, 0) == b);
	xfree(&f, b, 0);
	CHECK(xalloc(&f, 12 * MiB, 0) == b);
	CHECK(xalloc(&f, 30 * MiB, 0) == a);
	CHECK(pstats(&f).segments == 2);
	fixture_free(&f);
}

/* A block freed on stream 1 is never handed to stream 2. */
static void test_streams(void)
{
	struct fixture f = fixture_new("caching", CAP);
	uint64_t a = xalloc(&f, 4 * MiB, 1), b, c;

	xfree(&f, a, 1);
	b = xalloc(&f, 4 * MiB, 2);
	CHECK(b != a);
	CHECK(pstats(&f).reserved == 40 * MiB && pstats(&f).segments == 2);
	c = xalloc(&f, 4 * MiB, 1);
	CHECK(c == a);
	CHECK(pstats(&f).reserved == 40 * MiB);
	fixture_free(&f);
}

/* max_split_size=64MiB: blocks >= 64 MiB are not split and serve requests
 * below 64 MiB never; requests >= 64 MiB take them only when the block is
 * smaller than request + 20 MiB (max_non_split_rounding_size). */
static void test_max_split_size(void)
{
	struct fixture f = fixture_new("caching:max_split_size=64MiB", CAP);
	uint64_t a = xalloc(&f, 100 * MiB, 0), b;

	xfree(&f, a, 0);
	/* 30 MiB < 64 MiB: the cached 100 MiB block is oversize, refused */
	b = xalloc(&f, 30 * MiB, 0);
	CHECK(b != a && pstats(&f).reserved == 130 * MiB);
	xfree(&f, b, 0);
	/* 90 MiB >= 64 MiB and 100 < 90 + 20: reused whole (no split: the
	 * request is not below max_split_size), allocated counts the block */
	b = xalloc(&f, 90 * MiB, 0);
	CHECK(b == a);
	CHECK(pstats(&f).allocated == 100 * MiB && pstats(&f).requested == 90 * MiB);
	CHECK(walk_layout(&f, true).nblk == 2); /* two segments, one block each */
	xfree(&f, b, 0);
	/* 70 MiB: 100 >= 70 + 20, refused; the 30 MiB block is too small */
	b = xalloc(&f, 70 * MiB, 0);
	CHECK(b != a && pstats(&f).reserved == 200 * MiB);
	fixture_free(&f);

	{
		char err[256] = "";
		struct mt_policy *p = NULL;
		struct mt_backend *bk = NULL;

		CHECK(mt_backend_create(&bk, MT_BACKEND_SIM, 0, CAP, err, sizeof(err)) == 0);
		/* PyTorch refuses max_split_size_mb <= 20 */
		CHECK(mt_policy_create(&p, "caching:max_split_size=20MiB", bk, err, sizeof(err)) ==
		      -EINVAL);
		CHECK(mt_policy_create(&p, "caching:roundup_power2_divisions=3", bk, err,
		                       sizeof(err)) == -EINVAL);
		CHECK(mt_policy_create(&p, "caching:garbage_collection_threshold=1.5", bk, err,
		                       sizeof(err)) == -EINVAL);
		CHECK(mt_policy_create(&p, "caching:va_size=1GiB", bk, err, sizeof(err)) ==
		      -EINVAL);
		CHECK(p == NULL);
		mt_backend_destroy(bk);
	}
}

/* Out of memory at the capacity: cached blocks are released and the
 * allocation retried, as malloc's ladder does. */
static void test_oom_retry(void)
{
	struct fixture f = fixture_new("caching", 64 * MiB);
	uint64_t a = xalloc(&f, 30 * MiB, 0), b, c;

	xfree(&f, a, 0);
	/* 40 MiB: the cached 30 MiB block is too small; cudaMalloc(40 MiB)
	 * fails (30 + 40 > 64); no max_split_size, so
	 * release_available_cached_blocks does nothing; release_cached_blocks
	 * frees the 30 MiB segment; the retry succeeds */
	b = xalloc(&f, 40 * MiB, 0);
	CHECK(b != 0);
	CHECK(pstats(&f).reserved == 40 * MiB && pstats(&f).cache_flushes == 1);
	CHECK(bstats(&f).free_calls == 1);
	/* 30 MiB more cannot fit beside the live 40 MiB: a real OOM */
	CHECK(f.p->ops->alloc(f.p, 30 * MiB, 0, 0, &c) == -ENOMEM);
	CHECK(pstats(&f).reserved == 40 * MiB && pstats(&f).allocated == 40 * MiB);
	fixture_free(&f);

	/* with max_split_size, release_available_cached_blocks frees just the
	 * oversize block that covers the request (lower_bound of
	 * max(request, max_split_size)) and the cache is not flushed */
	f = fixture_new("caching:max_split_size=64MiB", 200 * MiB);
	a = xalloc(&f, 100 * MiB, 0);
	xfree(&f, a, 0);
	b = xalloc(&f, 30 * MiB, 0); /* new 30 MiB segment: 130 MiB reserved */
	c = xalloc(&f, 80 * MiB, 0); /* 100 >= 80 + 20: not reused; 210 > 200 */
	CHECK(c != 0 && b != 0);
	CHECK(pstats(&f).reserved == 110 * MiB && pstats(&f).cache_flushes == 0);
	CHECK(pstats(&f).segments == 2);
	fixture_free(&f);

	/* no single oversize block covers the request: oversize blocks are
	 * freed from the largest down until they add up to it */
	f = fixture_new("caching:max_split_size=64MiB", 300 * MiB);
	a = xalloc(&f, 100 * MiB, 0);
	b = xalloc(&f, 80 * MiB, 0);
	xfree(&f, a, 0);
	xfree(&f, b, 0);
	c = xalloc(&f, 30 * MiB, 0); /* oversize blocks refused: new segment, 210 MiB */
	/* 150 MiB: 210 + 150 > 300; lower_bound(150) finds nothing, so from the
	 * largest: 100 MiB (100 < 150, go on), 80 MiB (180 >= 150, stop) */
	CHECK(xalloc(&f, 150 * MiB, 0) != 0);
	CHECK(pstats(&f).reserved == 180 * MiB && pstats(&f).cache_flushes == 0);
	CHECK(bstats(&f).free_calls == 2 && c != 0);
	fixture_free(&f);
}

/* garbage_collection_threshold=0.5 on a 100 MiB device: threshold 50 MiB.
 * Ages count get_free_block calls on the large pool since a block was
 * freed. */
static void test_garbage_collection(void)
{
	struct fixture f = fixture_new("caching:garbage_collection_threshold=0.5", 100 * MiB);
	uint64_t a, b, c;

	a = xalloc(&f, 30 * MiB, 0); /* call 1; reserved 30 (no GC: 30 <= 50) */
	xfree(&f, a, 0);             /* A cached at count 1 */
	b = xalloc(&f, 40 * MiB, 0); /* call 2; 30 < 40; reserved 70 */
	xfree(&f, b, 0);             /* B cached at count 2 */
	/* call 3: nothing fits 50 MiB; 70 > 50, target 20 MiB; ages A = 2,
	 * B = 1, average 1.5: A (30 MiB) goes, enough; then 40 + 50 = 90 fits */
	c = xalloc(&f, 50 * MiB, 0);
	CHECK(c != 0);
	CHECK(pstats(&f).reserved == 90 * MiB && pstats(&f).cache_flushes == 0);
	CHECK(bstats(&f).free_calls == 1);
	/* B survived: a 40 MiB request reuses it without a new segment */
	CHECK(xalloc(&f, 40 * MiB, 0) == b);
	fixture_free(&f);

	/* without the option the same sequence flushes the whole cache (OOM at
	 * 120 > 100) and keeps only the new segment */
	f = fixture_new("caching", 100 * MiB);
	a = xalloc(&f, 30 * MiB, 0);
	xfree(&f, a, 0);
	b = xalloc(&f, 40 * MiB, 0);
	xfree(&f, b, 0);
	CHECK(xalloc(&f, 50 * MiB, 0) != 0);
	CHECK(pstats(&f).reserved == 50 * MiB && pstats(&f).cache_flushes == 1);
	fixture_free(&f);
}

int main(void)
{
	TEST(test_rounding_and_segments);
	TEST(test_power2_divisions);
	TEST(test_split_merge);
	TEST(test_small_pool);
	TEST(test_newest_segment_first);
	TEST(test_streams);
	TEST(test_max_split_size);
	TEST(test_oom_retry);
	TEST(test_garbage_collection);
	return check_done();
}
