/* test-bfc.c — policy `bfc` (TensorFlow BFCAllocator) on hand-worked
 * sequences derived from bfc_allocator.cc: RoundedBytes (256 B),
 * BinNumForSize (bin = floor(log2(size / 256)), at most 20), FindChunkPtr
 * (smallest fitting chunk from the request's bin up; split when the chunk is
 * >= 2x the request or the rest >= 128 MiB), TryToCoalesce, Extend (region
 * size starts at 2 MiB and doubles) and DeallocateFreeRegions. */
#include "config.h"

#include <errno.h>

#include "policy-test.h"

static void test_bins_split_coalesce(void)
{
	struct fixture f = fixture_new("bfc", 1 * GiB);
	uint64_t a, b, c, d, e;
	struct layout l;

	/* 1000 B -> 1024; no chunk: Extend takes a 2 MiB region (next: 4 MiB);
	 * 2 MiB >= 2 * 1024: split, a is the front */
	a = xalloc(&f, 1000, 0);
	CHECK(pstats(&f).allocated == 1024 && pstats(&f).requested == 1000);
	CHECK(pstats(&f).reserved == 2 * MiB && pstats(&f).segments == 1);
	/* 3 MiB: bin 13 holds only the 2 MiB - 1 KiB rest; Extend: a 4 MiB
	 * region (next: 8 MiB); 4 < 2 * 3 and 1 MiB < 128 MiB: not split */
	b = xalloc(&f, 3 * MiB, 0);
	CHECK(pstats(&f).reserved == 6 * MiB);
	CHECK(pstats(&f).allocated == 1024 + 4 * MiB);
	/* 20 MiB: the region size doubles 8 -> 16 -> 32 MiB to cover it (and
	 * is not doubled again); 32 < 40 and 12 < 128: whole chunk */
	c = xalloc(&f, 20 * MiB, 0);
	CHECK(pstats(&f).reserved == 38 * MiB && pstats(&f).segments == 3);
	CHECK(pstats(&f).allocated == 1024 + 36 * MiB);
	/* 1 MiB: bin 12 has the 2 MiB - 1 KiB rest of the first region; not
	 * >= 2 MiB: taken whole */
	d = xalloc(&f, 1 * MiB, 0);
	CHECK(d == a + 1024);
	CHECK(pstats(&f).allocated == 38 * MiB);
	CHECK(b != 0 && c != 0);

	/* a freed: its neighbour d is in use, no coalescing; d freed: it
	 * absorbs nothing after it and is absorbed by a: one 2 MiB chunk */
	xfree(&f, a, 0);
	l = walk_layout(&f, true);
	CHECK(l.nblk == 4);
	xfree(&f, d, 0);
	l = walk_layout(&f, true);
	CHECK(l.nblk == 3 && l.seg_bytes == 38 * MiB);
	CHECK(pstats(&f).largest_free == 2 * MiB);

	/* best fit in bins: a 1.5 MiB request takes the 2 MiB chunk and
	 * splits nothing (2 < 3) */
	e = xalloc(&f, 1536 * KiB, 0);
	CHECK(e == a && pstats(&f).allocated == 38 * MiB);
	xfree(&f, e, 0);

	/* empty_cache gives back the wholly free region */
	CHECK(f.p->ops->empty_cache(f.p) == 0);
	CHECK(pstats(&f).reserved == 36 * MiB && bstats(&f).free_calls == 1);

	/* region size is 32 MiB now: 40 MiB doubles it to 64 (not split:
	 * 64 < 80); then 10 MiB gets a 64 MiB region (size then 128 MiB), split */
	xalloc(&f, 40 * MiB, 0);
	CHECK(pstats(&f).reserved == 100 * MiB);
	xalloc(&f, 10 * MiB, 0);
	CHECK(pstats(&f).reserved == 164 * MiB);
	CHECK(pstats(&f).allocated == 36 * MiB + 64 * MiB + 10 * MiB);
	fixture_free(&f);
}

/* At the limit, wholly free regions are given back and Extend retried. */
static void test_garbage_collection(void)
{
	const char *specs[] = { "bfc", "bfc:garbage_collection=0" };

	for (int i = 0; i < 2; i++) {
		struct fixture f = fixture_new(specs[i], 8 * MiB);
		uint64_t a = xalloc(&f, 1 * MiB, 0); /* 2 MiB region, split */
		uint64_t b = xalloc(&f, 1 * MiB, 0); /* the 1 MiB rest */
		uint64_t c;
		int rc;

		CHECK(b == a + 1 * MiB && pstats(&f).reserved == 2 * MiB);
		xfree(&f, a, 0);
		xfree(&f, b, 0);
		/* 7 MiB > 8 - 2 available: Extend fails; the free 2 MiB region
		 * goes; Extend: 4 -> 8 MiB region */
		rc = f.p->ops->alloc(f.p, 7 * MiB, 0, 0, &c);
		if (i == 0) {
			CHECK(rc == 0);
			CHECK(pstats(&f).reserved == 8 * MiB && pstats(&f).cache_flushes == 1);
		} else {
			CHECK(rc == -ENOMEM);
			CHECK(pstats(&f).reserved == 2 * MiB);
		}
		fixture_free(&f);
	}
}

int main(void)
{
	TEST(test_bins_split_coalesce);
	TEST(test_garbage_collection);
	return check_done();
}
