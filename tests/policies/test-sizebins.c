/* test-sizebins.c — the binned free-block set against one red-black tree of
 * the same blocks.
 *
 * Random inserts and erases of blocks (stream, size, id) over four streams
 * (prepared in a scrambled order, one of them UINT64_MAX) and sizes spread
 * over many powers of two with many repeats. After each step the set's
 * invariants hold (rp_sizebins_check), its walk both ways visits the tree's
 * blocks in the tree's order, and lower_bound / floor agree with the tree
 * for probe keys of every stream, prepared or not.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "rbtree-private.h"
#include "sizebins-private.h"
#include "tap.h"

#define N 500

struct item {
	struct rp_rb_node node; /* in the set */
	struct rp_rb_node ref;  /* in the reference tree */
	uint64_t stream, size, id;
	bool in;
};

struct key {
	uint64_t stream, size, id;
};

static const uint64_t streams[] = { 7, 0, UINT64_MAX, 3 };

static struct item items[N];
static struct rp_sizebins set;
static struct rp_rb_tree ref = RP_RB_TREE_INIT;

static int key_cmp(const struct key *k, const struct item *it)
{
	return rp_cmp4(k->stream, it->stream, k->size, it->size, k->id, it->id, 0, 0);
}

static int cmp_node(const struct rp_rb_node *a, const struct rp_rb_node *b)
{
	const struct item *x = rp_rb_entry(a, const struct item, node);
	struct key k = { x->stream, x->size, x->id };

	return key_cmp(&k, rp_rb_entry(b, const struct item, node));
}

static int cmp_ref(const struct rp_rb_node *a, const struct rp_rb_node *b)
{
	const struct item *x = rp_rb_entry(a, const struct item, ref);
	struct key k = { x->stream, x->size, x->id };

	return key_cmp(&k, rp_rb_entry(b, const struct item, ref));
}

static int key_node(const void *key, const struct rp_rb_node *n)
{
	return key_cmp(key, rp_rb_entry(n, const struct item, node));
}

static int key_ref(const void *key, const struct rp_rb_node *n)
{
	return key_cmp(key, rp_rb_entry(n, const struct item, ref));
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Sizes from 0 to about 2^40, log-spread, a third of them from a few
 * values (repeats as in real pools). */
static uint64_t random_size(void)
{
	static const uint64_t common[] = { 512, 4096, 2 << 20, 20 << 20, 5 };
	uint64_t r = next_rand();

	if (r % 3 == 0)
		return common[(r >> 8) % 5];
	return (next_rand() & ((1ull << (r >> 16) % 41) - 1)) + (r >> 60);
}

static struct item *of_node(const struct rp_rb_node *n)
{
	return n ? rp_rb_entry(n, struct item, node) : NULL;
}

static struct item *of_ref(const struct rp_rb_node *n)
{
	return n ? rp_rb_entry(n, struct item, ref) : NULL;
}

static bool walks_agree(void)
{
	const struct rp_rb_node *a = rp_sizebins_first(&set), *b = rp_rb_first(&ref);

	for (; a && b; a = rp_sizebins_next(&set, a), b = rp_rb_next(b))
		if (of_node(a) != of_ref(b))
			return false;
	if (a || b)
		return false;
	a = rp_sizebins_last(&set);
	b = rp_rb_last(&ref);
	for (; a && b; a = rp_sizebins_prev(&set, a), b = rp_rb_prev(b))
		if (of_node(a) != of_ref(b))
			return false;
	return !a && !b;
}

static bool searches_agree(void)
{
	static const uint64_t probe_streams[] = { 0, 1, 3, 7, 8, UINT64_MAX };

	for (int i = 0; i < 40; i++) {
		struct key k = { probe_streams[next_rand() % 6], random_size(), next_rand() % N };

		if (i % 4 == 0)
			k.id = 0;
		if (of_node(rp_sizebins_lower_bound(&set, k.stream, k.size, &k, key_node)) !=
		    of_ref(rp_rb_lower_bound(&ref, &k, key_ref)))
			return false;
		if (of_node(rp_sizebins_floor(&set, k.stream, k.size, &k, key_node)) !=
		    of_ref(rp_rb_floor(&ref, &k, key_ref)))
			return false;
	}
	return true;
}

static void random_steps(void)
{
	int bad_check = 0, bad_walk = 0, bad_search = 0;

	for (int step = 0; step < 6000; step++) {
		struct item *it = &items[next_rand() % N];

		if (it->in) {
			rp_sizebins_erase(&set, &it->node);
			rp_rb_erase(&ref, &it->ref);
			it->in = false;
		} else {
			it->stream = streams[next_rand() % 4];
			it->size = random_size();
			REQUIRE(rp_sizebins_prepare(&set, it->stream) == 0);
			rp_sizebins_insert(&set, &it->node, it->stream, it->size, cmp_node);
			rp_rb_insert(&ref, &it->ref, cmp_ref);
			it->in = true;
		}
		bad_check += rp_sizebins_check(&set, cmp_node) < 0 || set.count != ref.count;
		if (step % 10 == 0) {
			bad_walk += !walks_agree();
			bad_search += !searches_agree();
		}
	}
	CHECKF(bad_check == 0, "%d steps broke the set's invariants", bad_check);
	CHECKF(bad_walk == 0, "%d walks differ from the tree's", bad_walk);
	CHECKF(bad_search == 0, "%d searches differ from the tree's", bad_search);
	CHECK(set.n == 4);
	for (unsigned r = 1; r < set.n; r++)
		CHECK(set.sorted[r - 1]->stream < set.sorted[r]->stream);
}

static void empty_set(void)
{
	struct key k = { 3, 100, 0 };

	for (int i = 0; i < N; i++)
		if (items[i].in) {
			rp_sizebins_erase(&set, &items[i].node);
			items[i].in = false;
		}
	CHECK(set.count == 0);
	CHECK(rp_sizebins_check(&set, cmp_node) == 0);
	CHECK(rp_sizebins_first(&set) == NULL);
	CHECK(rp_sizebins_last(&set) == NULL);
	CHECK(rp_sizebins_lower_bound(&set, k.stream, k.size, &k, key_node) == NULL);
	CHECK(rp_sizebins_floor(&set, k.stream, k.size, &k, key_node) == NULL);
}

int main(void)
{
	for (uint64_t i = 0; i < N; i++)
		items[i].id = i;
	rp_sizebins_init(&set);
	TEST(random_steps);
	TEST(empty_set);
	rp_sizebins_release(&set);
	return check_done();
}
