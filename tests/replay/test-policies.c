/* test-policies.c — the registry and spec parsing, and hand-worked
 * sequences for native, bestfit, firstfit, buddy and planned on the sim
 * backend: rounding, segment sizes, split and merge, best vs first fit,
 * free-cache-and-retry on OOM. Expected values are worked out by hand in
 * the comments. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "memtrace-replay.h"

static struct mt_backend *backend;

static struct mt_policy *make(const char *spec, uint64_t capacity)
{
	char err[256];
	struct mt_policy *p = NULL;
	mt_backend_destroy(backend);
	CHECK(mt_backend_create(&backend, MT_BACKEND_SIM, 0, capacity, err, sizeof(err)) == 0);
	int rc = mt_policy_create(&p, spec, backend, err, sizeof(err));
	CHECKF(rc == 0, "%s: %s", spec, err);
	REQUIRE(rc == 0);
	return p;
}

static uint64_t reserved(void)
{
	struct mt_backend_stats st;
	mt_backend_get_stats(backend, &st);
	return st.reserved;
}

static struct mt_policy_stats stats(struct mt_policy *p)
{
	struct mt_policy_stats st;
	p->ops->stats(p, &st);
	return st;
}

static uint64_t alloc(struct mt_policy *p, uint64_t bytes)
{
	uint64_t a = 0;
	CHECK(p->ops->alloc(p, bytes, 0, 0, &a) == 0);
	return a;
}

static void test_registry(void)
{
	const struct mt_policy_ops *const *list = mt_policy_list();
	const char *mine[] = { "native", "bestfit", "firstfit", "buddy", "planned" };
	size_t n = 0;
	for (; list[n]; n++) {
		CHECK(list[n]->name && list[n]->summary && list[n]->create && list[n]->alloc &&
		      list[n]->free && list[n]->empty_cache && list[n]->walk && list[n]->stats &&
		      list[n]->destroy);
		CHECK(!(list[n]->flags & MT_POLICY_OFFLINE) || list[n]->plan);
		CHECK(mt_policy_find(list[n]->name) == list[n]);
		for (size_t j = 0; j < n; j++)
			CHECK(strcmp(list[j]->name, list[n]->name) != 0);
	}
	CHECK(n >= 5);
	for (size_t i = 0; i < 5; i++)
		CHECK(mt_policy_find(mine[i]) != NULL);
	CHECK(mt_policy_find("nosuch") == NULL);

	char err[256];
	struct mt_policy *p = NULL;
	CHECK(mt_backend_create(&backend, MT_BACKEND_SIM, 0, 1ull << 30, err, sizeof(err)) == 0);
	CHECK(mt_policy_create(&p, "nosuch", backend, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "nosuch") && strstr(err, "native") && strstr(err, "planned"));
	CHECK(mt_policy_create(&p, "bestfit:bogus=1", backend, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "bogus") && strstr(err, "segment"));
	CHECK(mt_policy_create(&p, "bestfit:round=abc", backend, err, sizeof(err)) == -EINVAL);
	CHECK(mt_policy_create(&p, "bestfit:round", backend, err, sizeof(err)) == -EINVAL);
	CHECK(mt_policy_create(&p, "native:x=1", backend, err, sizeof(err)) == -EINVAL);
	CHECK(mt_policy_create(&p, ":", backend, err, sizeof(err)) == -EINVAL);
	CHECK(p == NULL);
	CHECK(mt_policy_create(&p, "bestfit:segment=8MiB,round=1KiB", backend, err, sizeof(err)) ==
	      0);
	/* round=1KiB: 1000 B -> 1 KiB; segment=8 MiB */
	alloc(p, 1000);
	CHECK(stats(p).allocated == 1024 && stats(p).requested == 1000);
	CHECK(reserved() == 8ull << 20);
	mt_policy_destroy(p);
	CHECK(reserved() == 0);
	mt_policy_destroy(NULL);
}

static void test_native(void)
{
	struct mt_policy *p = make("native", 10 * MiB);
	uint64_t a = alloc(p, 1000), b = alloc(p, 3 * MiB);
	CHECK(reserved() == 3 * MiB + 1000);
	uint64_t c;
	CHECK(p->ops->alloc(p, 7 * MiB, 0, 0, &c) == -ENOMEM);
	CHECK(p->ops->free(p, a, 0) == 0);
	CHECK(p->ops->free(p, a, 0) == -EINVAL);
	CHECK(reserved() == 3 * MiB && stats(p).segments == 1);
	CHECK(p->ops->free(p, b, 0) == 0);
	CHECK(reserved() == 0);
	mt_policy_destroy(p);
}

/* One 8 MiB segment: A 2 MiB @0, B @2, C @3, D @4 (1 MiB each), E 3 MiB @5.
 * Free A (hole of 2 MiB at 0) and C (hole of 1 MiB at 3). A 1 MiB request
 * goes to offset 0 under first fit and 3 under best fit. */
static void fit(const char *spec, uint64_t expect_offset)
{
	struct mt_policy *p = make(spec, 64 * MiB);
	uint64_t a = alloc(p, 2 * MiB);
	alloc(p, MiB);
	uint64_t c = alloc(p, MiB);
	alloc(p, MiB);
	alloc(p, 3 * MiB);
	CHECK(reserved() == 8 * MiB);
	CHECK(p->ops->free(p, a, 0) == 0);
	CHECK(p->ops->free(p, c, 0) == 0);
	CHECK(stats(p).largest_free == 2 * MiB);
	uint64_t x = alloc(p, MiB);
	CHECK(x == a + expect_offset);
	CHECK(reserved() == 8 * MiB && stats(p).segments == 1);
	mt_policy_destroy(p);
}

static void test_firstfit(void)
{
	fit("firstfit:segment=8MiB", 0);
}

static void test_bestfit(void)
{
	fit("bestfit:segment=8MiB", 3 * MiB);
}

static void test_fit_segments_and_retry(void)
{
	/* default: each segment is its request rounded up to 2 MiB */
	struct mt_policy *p = make("bestfit", 6 * MiB);
	uint64_t a = alloc(p, 1000);
	CHECK(stats(p).allocated == 1024 && reserved() == 2 * MiB);
	uint64_t b = alloc(p, 3 * MiB);
	CHECK(reserved() == 6 * MiB && stats(p).segments == 2);
	/* merge: freeing a leaves its whole 2 MiB segment free */
	CHECK(p->ops->free(p, a, 0) == 0);
	CHECK(stats(p).largest_free == 2 * MiB);
	CHECK(p->ops->free(p, b, 0) == 0);
	/* 5 MiB needs a 6 MiB segment: 6 + 6 > 6, so the cache is freed and
	 * the allocation retried */
	alloc(p, 5 * MiB);
	CHECK(stats(p).cache_flushes == 1 && reserved() == 6 * MiB && stats(p).segments == 1);
	uint64_t c;
	CHECK(p->ops->alloc(p, 2 * MiB, 0, 0, &c) == -ENOMEM); /* 1 MiB free, no room to grow */
	mt_policy_destroy(p);
	CHECK(reserved() == 0);
}

static void test_buddy(void)
{
	struct mt_policy *p = make("buddy", 16 * MiB);
	/* 3000 B -> 4 KiB block, split from a new 2 MiB segment; the next
	 * 3000 B request takes its buddy */
	uint64_t a = alloc(p, 3000), b = alloc(p, 3000);
	CHECK(b == a + 4096);
	CHECK(stats(p).allocated == 8192 && reserved() == 2 * MiB);
	/* 3 MiB -> a 4 MiB segment of its own */
	uint64_t c = alloc(p, 3 * MiB);
	CHECK(reserved() == 6 * MiB && stats(p).allocated == 8192 + 4 * MiB);
	/* 600 KiB -> 1 MiB block from the first segment */
	uint64_t d = alloc(p, 600 * 1024);
	CHECK(d == a + MiB);
	CHECK(p->ops->free(p, a, 0) == 0);
	CHECK(p->ops->free(p, d, 0) == 0);
	CHECK(stats(p).largest_free == MiB);
	CHECK(p->ops->free(p, b, 0) == 0); /* merges back to one free 2 MiB block */
	CHECK(stats(p).largest_free == 2 * MiB);
	CHECK(p->ops->empty_cache(p) == 0);
	CHECK(reserved() == 4 * MiB && stats(p).segments == 1);
	CHECK(p->ops->free(p, c, 0) == 0);
	CHECK(p->ops->free(p, c, 0) == -EINVAL);
	/* 9 MiB -> 16 MiB segment: 4 + 16 > 16, retried after freeing the cache */
	alloc(p, 9 * MiB);
	CHECK(reserved() == 16 * MiB && stats(p).cache_flushes == 1);
	mt_policy_destroy(p);
	CHECK(reserved() == 0);
}

static void test_planned(void)
{
	/* positions: A 4 MiB [0,2), B 2 MiB [1,4), C 4 MiB [3,5). Greedy by size:
	 * A at 0; C at 0 (no time overlap with A); B overlaps both: at 4 MiB.
	 * Arena 6 MiB = the lower bound. */
	const struct mt_plan_request reqs[] = {
		{ 0, 2, 4 * MiB },
		{ 1, 4, 2 * MiB },
		{ 3, 5, 4 * MiB },
		{ 6, UINT32_MAX, 1000 }, /* never freed: 1 KiB after rounding */
	};
	struct mt_policy *p = make("planned", 64 * MiB);
	CHECK(p->ops->plan(p, reqs, 4) == 0);
	uint64_t a, b, c, d;
	CHECK(p->ops->alloc(p, 4 * MiB, 0, 0, &a) == 0);
	CHECK(reserved() == 6 * MiB);
	CHECK(p->ops->alloc(p, 2 * MiB, 0, 1, &b) == 0);
	CHECK(b == a + 4 * MiB);
	CHECK(p->ops->free(p, a, 0) == 0);
	CHECK(p->ops->alloc(p, 4 * MiB, 0, 2, &c) == 0);
	CHECK(c == a);
	CHECK(p->ops->free(p, b, 0) == 0);
	CHECK(p->ops->free(p, c, 0) == 0);
	CHECK(p->ops->alloc(p, 1000, 0, 3, &d) == 0);
	CHECK(d == a && stats(p).allocated == 512 * 2 && stats(p).requested == 1000);
	CHECK(p->ops->alloc(p, 1, 0, 4, &d) == -EINVAL); /* not in the plan */
	CHECK(reserved() == 6 * MiB);
	mt_policy_destroy(p);
	/* interrupted (SIGINT): planning stops and says so */
	volatile int interrupted = 1;
	p = make("planned", 64 * MiB);
	p->interrupted = &interrupted;
	CHECK(p->ops->plan(p, reqs, 4) == -EINTR);
	interrupted = 0;
	CHECK(p->ops->plan(p, reqs, 4) == 0);
	mt_policy_destroy(p);
	/* the arena does not fit: every allocation is an OOM */
	p = make("planned", 4 * MiB);
	CHECK(p->ops->plan(p, reqs, 4) == 0);
	CHECK(p->ops->alloc(p, 4 * MiB, 0, 0, &a) == -ENOMEM);
	mt_policy_destroy(p);
}

int main(void)
{
	TEST(test_registry);
	TEST(test_native);
	TEST(test_firstfit);
	TEST(test_bestfit);
	TEST(test_fit_segments_and_retry);
	TEST(test_buddy);
	TEST(test_planned);
	mt_backend_destroy(backend);
	return check_done();
}
