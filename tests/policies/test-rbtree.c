/* test-rbtree.c — the intrusive red-black tree against a brute-force model.
 *
 * Random inserts (with many duplicate keys) and erases; after each step the
 * red-black invariants hold (rp_rb_check), the in-order walk both ways equals
 * the model sorted by (key, insertion order) — equal keys stay in insertion
 * order because a new node goes after its equals — and lower_bound / floor /
 * find agree with a linear scan of the model for every probe key.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"
#include "rbtree-private.h"

#define N 600
#define KEYS 200 /* keys in [0, KEYS): ~3 nodes per key, so duplicates abound */

struct item {
	struct rp_rb_node node;
	int key;
	unsigned seq; /* insertion order, to check equal keys stay in order */
	bool in;
};

static struct rp_rb_tree tree = RP_RB_TREE_INIT;

static int cmp_items(const struct rp_rb_node *a, const struct rp_rb_node *b)
{
	int ka = rp_rb_entry(a, const struct item, node)->key;
	int kb = rp_rb_entry(b, const struct item, node)->key;

	return (ka > kb) - (ka < kb);
}

static int cmp_key(const void *key, const struct rp_rb_node *n)
{
	int k = *(const int *)key;
	int kn = rp_rb_entry(n, const struct item, node)->key;

	return (k > kn) - (k < kn);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static unsigned next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng >> 11);
}

/* true when a sorts before b in the model order (key, then insertion) */
static bool model_before(const struct item *a, const struct item *b)
{
	return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

static struct item items[N];

static void check_tree(const struct rp_rb_tree *t)
{
	const struct item *prev = NULL;
	const struct rp_rb_node *n;
	size_t live = 0, walked = 0, back = 0;

	CHECK(rp_rb_check(t, cmp_items) >= 1);
	for (size_t i = 0; i < N; i++)
		live += items[i].in;
	CHECK(t->count == live);
	for (n = rp_rb_first(t); n; n = rp_rb_next(n)) {
		const struct item *it = rp_rb_entry(n, const struct item, node);

		CHECK(it->in);
		if (prev)
			CHECK(model_before(prev, it));
		prev = it;
		walked++;
	}
	CHECK(walked == live);
	for (n = rp_rb_last(t); n; n = rp_rb_prev(n))
		back++;
	CHECK(back == live);

	for (int k = -1; k <= KEYS; k++) {
		const struct item *lb = NULL, *fl = NULL;
		const struct rp_rb_node *got;

		/* model: lower_bound = first (in order) with key >= k; floor = last with key <= k
		 */
		for (size_t i = 0; i < N; i++) {
			const struct item *it = &items[i];

			if (!it->in)
				continue;
			if (it->key >= k && (!lb || model_before(it, lb)))
				lb = it;
			if (it->key <= k && (!fl || model_before(fl, it)))
				fl = it;
		}
		got = rp_rb_lower_bound(t, &k, cmp_key);
		CHECK(got == (lb ? &lb->node : NULL));
		got = rp_rb_floor(t, &k, cmp_key);
		CHECK(got == (fl ? &fl->node : NULL));
		got = rp_rb_find(t, &k, cmp_key);
		CHECK(got == (lb && lb->key == k ? &lb->node : NULL));
	}
}

/* Random inserts and erases, checked as they go. */
static void test_random_operations(void)
{
	unsigned seq = 0;

	CHECK(rp_rb_first(&tree) == NULL && rp_rb_last(&tree) == NULL);
	check_tree(&tree);
	for (int round = 0; round < 4000 && !check_failed(); round++) {
		struct item *it = &items[next_rand() % N];

		if (it->in) {
			rp_rb_erase(&tree, &it->node);
			it->in = false;
		} else {
			it->key = (int)(next_rand() % KEYS);
			it->seq = seq++;
			rp_rb_insert(&tree, &it->node, cmp_items);
			it->in = true;
		}
		if (round % 37 == 0)
			check_tree(&tree);
		else
			CHECK(rp_rb_check(&tree, cmp_items) >= 1);
	}
}

/* Drain in tree order: erasing the first node repeatedly empties it. */
static void test_drain(void)
{
	while (tree.root) {
		struct rp_rb_node *n = rp_rb_first(&tree);

		rp_rb_erase(&tree, n);
		rp_rb_entry(n, struct item, node)->in = false;
		CHECK(rp_rb_check(&tree, cmp_items) >= 1);
	}
	CHECK(tree.count == 0);
	check_tree(&tree);
}

int main(void)
{
	TEST(test_random_operations);
	TEST(test_drain);
	return check_done();
}
