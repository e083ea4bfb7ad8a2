/* test-async.c — policy `async` (stream-ordered pool) under the sim
 * backend's documented approximation (replay/backend-sim.c): the pool grows
 * by the request rounded up to 2 MiB, a freed block is reused by its own
 * stream first, and walk shows the pool's chunks and blocks. */
#include "config.h"

#include <errno.h>

#include "policy-test.h"

static void test_reuse_within_stream(void)
{
	struct fixture f = fixture_new("async", 64 * GiB);
	uint64_t a = xalloc(&f, 3 * MiB, 1), b, c;
	struct layout l;

	CHECK(pstats(&f).reserved == 4 * MiB && bstats(&f).alloc_calls == 1);
	CHECK(pstats(&f).allocated == 3 * MiB);
	xfree(&f, a, 1);
	CHECK(pstats(&f).allocated == 0 && pstats(&f).reserved == 4 * MiB);
	/* the same size again on the same stream: the freed block, no growth */
	b = xalloc(&f, 3 * MiB, 1);
	CHECK(b == a);
	CHECK(pstats(&f).reserved == 4 * MiB && bstats(&f).alloc_calls == 1);
	/* while it is live, another request grows the pool */
	c = xalloc(&f, 3 * MiB, 1);
	CHECK(c != b && pstats(&f).reserved == 8 * MiB);
	/* walk shows the pool: two 4 MiB chunks, each a 3 MiB block and 1 MiB free */
	l = walk_layout(&f, true);
	CHECK(l.nseg == 2 && l.seg_bytes == 8 * MiB && l.nblk == 4);
	CHECK(l.blk[0].allocated && l.blk[0].bytes == 3 * MiB && !l.blk[1].allocated);
	CHECK(pstats(&f).segments == 2 && pstats(&f).largest_free == 1 * MiB);
	xfree(&f, b, 1);
	xfree(&f, c, 1);
	/* empty_cache trims the pool */
	CHECK(f.p->ops->empty_cache(f.p) == 0);
	CHECK(pstats(&f).reserved == 0);
	CHECK(f.p->ops->free(f.p, a, 1) == -EINVAL); /* not live */
	CHECK((f.p->ops->flags & MT_POLICY_SIM_APPROX) != 0);
	fixture_free(&f);
}

/* Out of memory: the pool is trimmed and the request retried once. */
static void test_trim_on_oom(void)
{
	struct fixture f = fixture_new("async", 8 * MiB);
	uint64_t a = xalloc(&f, 3 * MiB, 1), b;

	xfree(&f, a, 1);
	/* 6 MiB on stream 2: the free 4 MiB chunk is too small; growing by
	 * 6 MiB exceeds 8 MiB; trimming frees the chunk; the retry grows */
	b = xalloc(&f, 6 * MiB, 2);
	CHECK(b != 0);
	CHECK(pstats(&f).reserved == 6 * MiB && pstats(&f).cache_flushes == 1);
	fixture_free(&f);
}

int main(void)
{
	TEST(test_reuse_within_stream);
	TEST(test_trim_on_oom);
	return check_done();
}
