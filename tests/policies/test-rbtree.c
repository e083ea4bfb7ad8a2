/* test-rbtree.c — the intrusive red-black tree against a brute-force model.
 *
 * Random inserts (with many duplicate keys) and erases; after each step the
 * red-black invariants hold (rp_rb_check), the in-order walk both ways equals
 * the model sorted by (key, insertion order) — equal keys stay in insertion
 * order because a new node goes after its equals — and lower_bound / floor /
 * find agree with a linear scan of the model for every probe key. The same
 * with an augmented tree (each node keeping the largest weight of its
 * subtree): inserts, erases, replacements in place and weights changed in
 * place, after which every node's aggregate equals its subtree's maximum.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "memtrace-common.h"
#include "rbtree-aug-private.h"
#include "tap.h"

#define N 600
#define KEYS 200 /* keys in [0, KEYS): ~3 nodes per key, so duplicates abound */

struct item {
	struct rp_rb_node node;
	int key;
	unsigned seq; /* insertion order, to check equal keys stay in order */
	bool in;
	unsigned weight, largest; /* augmented tree: own value, subtree's max */
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

static struct mt_rng rng; /* seeded in main */

static unsigned next_rand(void)
{
	return (unsigned)(mt_rng_next(&rng) >> 11);
}

/* true when a sorts before b in the model order (key, then insertion) */
static bool model_before(const struct item *a, const struct item *b)
{
	return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

static struct item items[N];

static struct item *item_of(struct rp_rb_node *n)
{
	return rp_rb_entry(n, struct item, node);
}

static unsigned largest_of(struct rp_rb_node *n)
{
	return n ? item_of(n)->largest : 0;
}

static bool recount(struct rp_rb_node *n)
{
	unsigned m = item_of(n)->weight, l = largest_of(n->child[0]), r = largest_of(n->child[1]);

	m = m > l ? m : l;
	m = m > r ? m : r;
	if (m == item_of(n)->largest)
		return false;
	item_of(n)->largest = m;
	return true;
}

/* The subtree's largest weight, counted afresh; a node whose kept
 * aggregate differs from it fails the check. */
static unsigned check_largest(struct rp_rb_node *n)
{
	unsigned m, l, r;

	if (!n)
		return 0;
	l = check_largest(n->child[0]);
	r = check_largest(n->child[1]);
	m = item_of(n)->weight;
	m = m > l ? m : l;
	m = m > r ? m : r;
	CHECKF(item_of(n)->largest == m, "key %d keeps %u, its subtree's largest is %u",
	       item_of(n)->key, item_of(n)->largest, m);
	return m;
}

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

/* An augmented tree through random inserts, erases, replacements and
 * weights changed in place; then drained. */
static void test_augmented(void)
{
	static struct item spare; /* out of the tree: replaces one in it */
	struct rp_rb_tree t = RP_RB_TREE_INIT;
	unsigned seq = 0;

	for (size_t i = 0; i < N; i++)
		items[i].in = false;
	for (int round = 0; round < 4000 && !check_failed(); round++) {
		size_t k = next_rand() % N;
		struct item *it = &items[k];
		unsigned what = next_rand() % 4;

		if (!it->in) {
			it->key = (int)(next_rand() % KEYS);
			it->seq = seq++;
			it->weight = next_rand() % 1000;
			rp_rb_insert_aug(&t, &it->node, cmp_items, recount);
			it->in = true;
		} else if (what == 0) {
			rp_rb_erase_aug(&t, &it->node, recount);
			it->in = false;
		} else if (what == 1) {
			it->weight = next_rand() % 1000;
			rp_rb_propagate(&it->node, recount);
		} else {
			/* the spare takes its place, with its key and order */
			spare = *it;
			spare.weight = next_rand() % 1000;
			rp_rb_replace_aug(&t, &it->node, &spare.node, recount);
			*it = spare;
			rp_rb_replace_aug(&t, &spare.node, &it->node, recount);
		}
		CHECK(rp_rb_check(&t, cmp_items) >= 1);
		if (round % 37 == 0) {
			check_tree(&t);
			check_largest(t.root);
		}
	}
	check_tree(&t);
	check_largest(t.root);
	while (t.root && !check_failed()) {
		struct rp_rb_node *n = t.root;

		rp_rb_erase_aug(&t, n, recount);
		item_of(n)->in = false;
		check_largest(t.root);
	}
	CHECK(t.count == 0);
}

int main(void)
{
	mt_rng_seed(&rng, 1);
	TEST(test_random_operations);
	TEST(test_drain);
	TEST(test_augmented);
	return check_done();
}
