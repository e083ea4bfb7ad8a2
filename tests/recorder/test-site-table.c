/* test-site-table.c — the call-site table shared by the native stacks and
 * the PyTorch bridge (recorder/site-table.c): what it finds, what it keeps
 * (nothing for id 0, a stack longer than a slot, or past 3/4 full), and
 * readers that find without a lock while one adder fills the table: a
 * stack is either not found or found with its own id, never another's.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "site-table-private.h"
#include "tap.h"

#define READERS 3

/* A stack of N words made from NUMBER, distinct for distinct (number, n). */
static size_t stack_of(uint32_t number, size_t n, uintptr_t *key)
{
	for (size_t i = 0; i < n; i++)
		key[i] = (uintptr_t)number * 1000003u + i * 7919u + 1;
	return n;
}

static uint32_t find(const struct rec_site_table *t, const uintptr_t *key, size_t n)
{
	return rec_site_find(t, rec_site_hash(key, n), key, n);
}

static void add(struct rec_site_table *t, const uintptr_t *key, size_t n, uint32_t id)
{
	rec_site_add(t, rec_site_hash(key, n), key, n, id);
}

static void test_find_and_add(void)
{
	struct rec_site_table t = { 0 };
	uintptr_t a[REC_SITE_KEYS], b[REC_SITE_KEYS];

	stack_of(1, 10, a);
	memcpy(b, a, sizeof(a));
	CHECK(find(&t, a, 10) == 0);
	add(&t, a, 10, 7);
	CHECK(find(&t, a, 10) == 7);
	/* a prefix, or one word changed, is another stack */
	CHECK(find(&t, a, 9) == 0);
	b[4]++;
	CHECK(find(&t, b, 10) == 0);
	add(&t, b, 10, 8);
	CHECK(find(&t, b, 10) == 8 && find(&t, a, 10) == 7);
	CHECK(t.used == 2);
	/* nothing is kept for id 0 (interning failed) or a stack too long */
	add(&t, a, 9, 0);
	CHECK(find(&t, a, 9) == 0 && t.used == 2);
	stack_of(2, REC_SITE_KEYS, a);
	add(&t, a, REC_SITE_KEYS, 9);
	CHECK(find(&t, a, REC_SITE_KEYS) == 9);
	CHECK(rec_site_hash(a, 0) != 0);
	free(t.slots);
}

static void test_three_quarters(void)
{
	struct rec_site_table t = { 0 };
	const uint32_t limit = REC_SITE_SLOTS * 3 / 4;
	uintptr_t key[4];
	uint32_t missing = 0;

	for (uint32_t i = 1; i <= limit + 10; i++)
		add(&t, key, stack_of(i, 4, key), i);
	CHECK(t.used == limit);
	for (uint32_t i = 1; i <= limit; i++)
		if (find(&t, key, stack_of(i, 4, key)) != i)
			missing++;
	CHECKF(missing == 0, "%u of the first %u stacks not found", missing, limit);
	/* the ones past 3/4 were not kept */
	CHECK(find(&t, key, stack_of(limit + 1, 4, key)) == 0);
	free(t.slots);
}

struct shared {
	struct rec_site_table table;
	atomic_uint added; /* stacks 1..added are in the table */
	atomic_bool done;
	atomic_uint wrong; /* a wrong id, or none for a stack added before */
	atomic_uint found; /* stacks found in the pass after the adder ended */
};

static void *reader(void *arg)
{
	struct shared *s = arg;
	uintptr_t key[REC_SITE_KEYS];
	uint32_t probe = 1;

	while (!atomic_load(&s->done)) {
		uint32_t added = atomic_load(&s->added);
		size_t n = 1 + probe % REC_SITE_KEYS;
		uint32_t id = find(&s->table, key, stack_of(probe, n, key));
		if (id && id != probe)
			atomic_fetch_add(&s->wrong, 1);
		if (probe <= added && id != probe)
			atomic_fetch_add(&s->wrong, 1); /* added before we looked */
		probe = probe % 3000 + 1;
	}
	/* afterwards every stack is there, with its id */
	for (probe = 1; probe <= 3000; probe++) {
		size_t n = 1 + probe % REC_SITE_KEYS;
		if (find(&s->table, key, stack_of(probe, n, key)) == probe)
			atomic_fetch_add(&s->found, 1);
	}
	return NULL;
}

static void test_readers_without_lock(void)
{
	struct shared *s = calloc(1, sizeof(*s));
	pthread_t readers[READERS];
	uintptr_t key[REC_SITE_KEYS];

	REQUIRE(s != NULL);
	for (int i = 0; i < READERS; i++)
		pthread_create(&readers[i], NULL, reader, s);
	for (uint32_t i = 1; i <= 3000; i++) {
		add(&s->table, key, stack_of(i, 1 + i % REC_SITE_KEYS, key), i);
		atomic_store(&s->added, i);
	}
	atomic_store(&s->done, true);
	for (int i = 0; i < READERS; i++)
		pthread_join(readers[i], NULL);
	CHECKF(atomic_load(&s->wrong) == 0, "%u wrong answers", atomic_load(&s->wrong));
	CHECKF(atomic_load(&s->found) == READERS * 3000, "%u found afterwards",
	       atomic_load(&s->found));
	free(s->table.slots);
	free(s);
}

int main(void)
{
	TEST(test_find_and_add);
	TEST(test_three_quarters);
	TEST(test_readers_without_lock);
	return check_done();
}
