/* test-backend.c — the sim backend and the bookkeeping every backend
 * shares: capacity, counters, VMM argument checks, the stream-ordered pool
 * approximation (hand-worked), release of everything on destroy, and the
 * address hash map behind them against a brute-force model. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "addrmap-private.h"
#include "tap.h"
#include "memtrace-replay.h"

static struct mt_backend *sim(uint64_t capacity)
{
	struct mt_backend *b = NULL;
	char err[256];
	int rc = mt_backend_create(&b, MT_BACKEND_SIM, 0, capacity, err, sizeof(err));
	REQUIRE(rc == 0);
	return b;
}

static void test_create(void)
{
	struct mt_backend *b = NULL;
	char err[256] = "";
	CHECK(mt_backend_create(&b, MT_BACKEND_SIM, 0, 0, err, sizeof(err)) == -EINVAL);
	CHECK(b == NULL && err[0]);
	b = sim(10 * MiB);
	CHECK(mt_backend_kind(b) == MT_BACKEND_SIM);
	CHECK(!strcmp(mt_backend_name(b), "sim"));
	CHECK(mt_backend_capacity(b) == 10 * MiB);
	CHECK(mt_backend_granularity(b) == 2 * MiB);
	mt_backend_destroy(b);
	mt_backend_destroy(NULL);
}

static void test_plain(void)
{
	struct mt_backend *b = sim(10 * MiB);
	struct mt_backend_stats st;
	uint64_t a1, a2, a3;
	CHECK(mt_backend_alloc(b, 4 * MiB, &a1) == 0);
	CHECK(mt_backend_alloc(b, 1000, &a2) == 0);
	CHECK(a1 % 256 == 0 && a2 % 256 == 0);
	CHECK(a2 >= a1 + 4 * MiB || a1 >= a2 + 1000);        /* disjoint */
	CHECK(mt_backend_alloc(b, 6 * MiB, &a3) == -ENOMEM); /* 4 MiB + 1000 + 6 MiB > 10 MiB */
	CHECK(mt_backend_message(b)[0] != '\0');
	CHECK(mt_backend_alloc(b, 0, &a3) == -EINVAL);
	mt_backend_get_stats(b, &st);
	CHECK(st.reserved == 4 * MiB + 1000);
	CHECK(st.alloc_calls == 2);
	CHECK(mt_backend_free(b, a1) == 0);
	CHECK(mt_backend_free(b, a1) == -EINVAL); /* double free */
	CHECK(mt_backend_alloc(b, 6 * MiB, &a3) == 0);
	mt_backend_get_stats(b, &st);
	CHECK(st.reserved == 6 * MiB + 1000);
	CHECK(st.peak_reserved == 6 * MiB + 1000);
	CHECK(st.free_calls == 1);
	uint64_t fr, tot;
	CHECK(mt_backend_mem_info(b, &fr, &tot) == 0);
	CHECK(tot == 10 * MiB && fr == 4 * MiB - 1000);
	mt_backend_destroy(b); /* still holds a2 and a3: released (ASan would see a leak) */
}

static void test_vmm(void)
{
	struct mt_backend *b = sim(10 * MiB);
	struct mt_backend_stats st;
	uint64_t va, h1, h2, h3;
	CHECK(mt_backend_va_reserve(b, 3 * MiB, &va) == -EINVAL);
	CHECK(mt_backend_va_reserve(b, 8 * MiB, &va) == 0);
	CHECK(va % (2 * MiB) == 0);
	CHECK(mt_backend_mem_create(b, 2 * MiB, &h1) == 0);
	CHECK(mt_backend_mem_create(b, 2 * MiB, &h2) == 0);
	CHECK(h1 != h2);
	CHECK(mt_backend_mem_create(b, 8 * MiB, &h3) == -ENOMEM); /* 4 + 8 > 10 */
	CHECK(mt_backend_map(b, va, 2 * MiB, h1) == 0);
	CHECK(mt_backend_map(b, va, 2 * MiB, h2) == -EINVAL);           /* already mapped */
	CHECK(mt_backend_map(b, va + 2 * MiB, 4 * MiB, h2) == -EINVAL); /* size differs */
	CHECK(mt_backend_map(b, va + 2 * MiB, 2 * MiB, h2) == 0);
	mt_backend_get_stats(b, &st);
	CHECK(st.reserved == 4 * MiB && st.map_calls == 2 && st.alloc_calls == 2);
	CHECK(mt_backend_unmap(b, va, 2 * MiB) == 0);
	CHECK(mt_backend_unmap(b, va, 2 * MiB) == -EINVAL);
	CHECK(mt_backend_mem_release(b, h1) == 0);
	CHECK(mt_backend_mem_release(b, h1) == -EINVAL);
	CHECK(mt_backend_va_free(b, va, 4 * MiB) == -EINVAL); /* wrong size */
	mt_backend_get_stats(b, &st);
	CHECK(st.reserved == 2 * MiB && st.unmap_calls == 1 && st.free_calls == 1);
	mt_backend_destroy(b); /* h2 still mapped at va + 2 MiB, va still reserved */
}

/* Ranged maps and unmaps: n calls each, whole mappings only, across the
 * 1 GiB chunks of the table of mapped pages. */
static void test_vmm_pages(void)
{
	struct mt_backend *b = sim(64 * MiB);
	struct mt_backend_stats st;
	uint64_t va, h[6], big;
	/* a reservation crossing a 1 GiB line: four pages before it, four after */
	CHECK(mt_backend_va_reserve(b, 2048 * MiB, &va) == 0);
	va = (va / (1024 * MiB) + 1) * 1024 * MiB - 8 * MiB;
	for (int i = 0; i < 6; i++)
		CHECK(mt_backend_mem_create(b, 2 * MiB, &h[i]) == 0);
	CHECK(mt_backend_mem_create(b, 4 * MiB, &big) == 0);
	CHECK(mt_backend_map_pages(b, va, 2 * MiB, h, 6) == 0); /* 4 before, 2 after the line */
	CHECK(mt_backend_map_pages(b, va + 10 * MiB, 2 * MiB, h, 2) == -EINVAL); /* 12 MiB mapped */
	CHECK(mt_backend_map(b, va + 12 * MiB, 4 * MiB, big) == 0);
	mt_backend_get_stats(b, &st);
	CHECK(st.map_calls == 7);
	CHECK(mt_backend_unmap(b, va + 12 * MiB, 2 * MiB) == -EINVAL);          /* half a mapping */
	CHECK(mt_backend_unmap_pages(b, va + 10 * MiB, 2 * MiB, 2) == -EINVAL); /* ends inside */
	CHECK(mt_backend_unmap_pages(b, va + 2 * MiB, 2 * MiB, 3) ==
	      0);                                                    /* the middle, over the line */
	CHECK(mt_backend_unmap_pages(b, va, 2 * MiB, 2) == -EINVAL); /* the second is gone */
	CHECK(mt_backend_unmap(b, va, 2 * MiB) == 0);
	mt_backend_get_stats(b, &st);
	CHECK(st.unmap_calls == 4);
	/* pages unmapped are free to map again, with another handle */
	CHECK(mt_backend_map_pages(b, va + 2 * MiB, 2 * MiB, h + 1, 2) == 0);
	CHECK(mt_backend_map_pages(b, va + 6 * MiB, 2 * MiB, h, 2) == -EINVAL); /* +8 is mapped */
	CHECK(mt_backend_unmap_pages(b, va + 2 * MiB, 2 * MiB, 2) == 0);
	CHECK(mt_backend_unmap_pages(b, va + 2 * MiB, 2 * MiB, 2) == -EINVAL);
	mt_backend_get_stats(b, &st);
	CHECK(st.map_calls == 9 && st.unmap_calls == 6);
	CHECK(mt_backend_map_pages(b, va, 2 * MiB, h, 0) == -EINVAL);
	CHECK(mt_backend_unmap_pages(b, va + 8 * MiB, 2 * MiB, 0) == -EINVAL);
	mt_backend_destroy(b); /* pages at +8, +10 MiB and the 4 MiB mapping still mapped */
}

static void test_pool(void)
{
	struct mt_backend *b = sim(10 * MiB);
	struct mt_backend_stats st;
	uint64_t a, c, d, e, x;
	/* stream 1: A takes 1.75 MiB of a new 2 MiB chunk, 0.25 MiB stays free */
	CHECK(mt_backend_pool_alloc(b, 7 * MiB / 4, 1, &a) == 0);
	/* stream 2: B takes 1 MiB of a second chunk, 1 MiB free on stream 2 */
	CHECK(mt_backend_pool_alloc(b, 1 * MiB, 2, &c) == 0);
	mt_backend_get_stats(b, &st);
	CHECK(st.reserved == 4 * MiB && st.alloc_calls == 2);
	/* stream 2 asks 0.25 MiB: its own stream's free block wins over the
	 * exact-size block freed on stream 1 */
	CHECK(mt_backend_pool_alloc(b, MiB / 4, 2, &d) == 0);
	CHECK(d == c + MiB);
	/* stream 3 has nothing of its own: opportunistic reuse, no growth */
	CHECK(mt_backend_pool_alloc(b, MiB / 4, 3, &e) == 0);
	CHECK(e == a + 7 * MiB / 4);
	mt_backend_get_stats(b, &st);
	CHECK(st.reserved == 4 * MiB && st.alloc_calls == 2);
	/* 7 MiB would grow by 8 MiB: over the capacity */
	CHECK(mt_backend_pool_alloc(b, 7 * MiB, 1, &x) == -ENOMEM);
	CHECK(mt_backend_pool_free(b, a, 1) == 0);
	CHECK(mt_backend_pool_free(b, a, 1) == -EINVAL);
	CHECK(mt_backend_pool_free(b, e, 3) == 0); /* chunk 1 now wholly free */
	CHECK(mt_backend_pool_trim(b, 0) == 0);
	mt_backend_get_stats(b, &st);
	CHECK(st.reserved == 2 * MiB && st.free_calls == 1);
	CHECK(mt_backend_pool_alloc(b, 9 * MiB, 1, &x) == -ENOMEM); /* 2 + 10 > 10 */
	CHECK(mt_backend_pool_alloc(b, 5 * MiB, 1, &x) == 0);       /* 2 + 6 */
	mt_backend_get_stats(b, &st);
	CHECK(st.reserved == 8 * MiB && st.peak_reserved == 8 * MiB);
	mt_backend_destroy(b); /* live pool blocks released */
}

static void test_addrmap(void)
{
	enum { KEYS = 5000 };
	static uint64_t model[KEYS]; /* value + 1, 0 = absent */
	struct rp_addrmap m;
	size_t count = 0;
	rp_addrmap_init(&m);
	srand(7);
	for (int step = 0; step < 200000; step++) {
		uint64_t k = (uint64_t)(rand() % KEYS);
		uint64_t key = (k + 1) << 12; /* page-aligned keys, like addresses */
		uint64_t v;
		if (rand() % 3) {
			CHECK(rp_addrmap_put(&m, key, (uint64_t)step) == 0);
			count += !model[k];
			model[k] = (uint64_t)step + 1;
		} else {
			bool had = rp_addrmap_remove(&m, key, &v);
			CHECK(had == (model[k] != 0));
			CHECK(!had || v + 1 == model[k]);
			count -= had;
			model[k] = 0;
		}
	}
	CHECK(m.count == count);
	for (uint64_t k = 0; k < KEYS; k++) {
		uint64_t v = 0;
		bool has = rp_addrmap_get(&m, (k + 1) << 12, &v);
		CHECK(has == (model[k] != 0));
		CHECK(!has || v + 1 == model[k]);
	}
	size_t seen = 0;
	const struct rp_addrmap_slot *s;
	for (size_t i = 0; rp_addrmap_next(&m, &i, &s);)
		seen++;
	CHECK(seen == count);
	rp_addrmap_release(&m);
}

int main(void)
{
	TEST(test_create);
	TEST(test_plain);
	TEST(test_vmm);
	TEST(test_vmm_pages);
	TEST(test_pool);
	TEST(test_addrmap);
	return check_done();
}
