/* rbtree-private.h — an intrusive red-black tree, the ordered set behind the
 * replay policies' free lists: each bin of the best fits' size-class bins
 * (sizebins-private.h, lower_bound by (stream, size, address)), first fit's
 * size classes (by address), bfc's bins, segments in creation order.
 *
 * The caller embeds a struct rp_rb_node in its own record and gives the
 * order as a comparator on nodes; rp_rb_entry() recovers the record. The
 * tree allocates nothing, so insert and erase cannot fail. Nodes comparing
 * equal are allowed: a new node goes after its equals. Insert, erase and
 * lower_bound are O(log n); next/prev are amortised O(1).
 *
 * A tree may be augmented, each record keeping an aggregate of its subtree
 * (first fit: the largest free block in it), through the operations of
 * rbtree-aug-private.h.
 */
#ifndef MEMTRACE_RBTREE_PRIVATE_H
#define MEMTRACE_RBTREE_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct rp_rb_node {
	struct rp_rb_node *parent;
	struct rp_rb_node *child[2]; /* [0] left (smaller), [1] right (larger) */
	bool red;
	uint32_t tag; /* the owner's (rp_sizebins: its bin); the tree leaves it alone */
};

struct rp_rb_tree {
	struct rp_rb_node *root;
	size_t count;
};

/* Order between two nodes: negative, zero or positive as a < b, a == b, a > b. */
typedef int (*rp_rb_cmp_fn)(const struct rp_rb_node *a, const struct rp_rb_node *b);
/* Order between a search key and a node, same sign convention (key vs node). */
typedef int (*rp_rb_key_fn)(const void *key, const struct rp_rb_node *n);

/* The record that holds node `ptr` as its member `member`. */
#define rp_rb_entry(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#define RP_RB_TREE_INIT                                                                            \
	{                                                                                          \
		NULL, 0                                                                            \
	}

/* The order of two keys of up to four 64-bit words, compared word by word
 * (pass 0, 0 for words a key lacks): negative, zero or positive. The first
 * two words decide almost always, and then without a branch that depends
 * on the keys: a descent's comparisons on varied keys (two streams taking
 * turns, sizes all over) would mispredict at every level otherwise. */
static inline int rp_cmp4(uint64_t a0, uint64_t b0, uint64_t a1, uint64_t b1, uint64_t a2,
                          uint64_t b2, uint64_t a3, uint64_t b3)
{
	unsigned __int128 ah = (unsigned __int128)a0 << 64 | a1,
	                  bh = (unsigned __int128)b0 << 64 | b1;
	unsigned __int128 al = (unsigned __int128)a2 << 64 | a3,
	                  bl = (unsigned __int128)b2 << 64 | b3;
	if (__builtin_expect(ah != bh, 1))
		return (ah > bh) - (ah < bh);
	return (al > bl) - (al < bl);
}

/* A zeroed record of `bytes` for a node of a tree, on a cache line of its
 * own (64-byte aligned, its size rounded up), so that a record whose node
 * and ordering keys come first gives one line a step of a descent (plain
 * malloc's 16-byte alignment splits that over two lines three times in
 * four). NULL when out of memory; free() releases it. */
static inline void *rp_rb_record_new(size_t bytes)
{
	void *r = aligned_alloc(64, (bytes + 63) / 64 * 64);

	return r ? memset(r, 0, bytes) : NULL;
}

/* Makes t empty (it holds no nodes; nothing is freed). */
void rp_rb_init(struct rp_rb_tree *t);

/* Links n as *link, a NULL child slot of parent found by a descent (or
 * &t->root with parent NULL), and rebalances. For the inline functions
 * below; callers use rp_rb_insert. */
void rp_rb_link(struct rp_rb_tree *t, struct rp_rb_node *n, struct rp_rb_node *parent,
                struct rp_rb_node **link);

/* The NULL child slot where n goes in order by cmp (after the nodes equal
 * to it), and its parent in *parent. Inline (as are the insertions and
 * searches below) so a constant comparator is inlined too: the policies'
 * hot paths are these descents. */
static inline struct rp_rb_node **rp_rb_slot(struct rp_rb_tree *t, const struct rp_rb_node *n,
                                             rp_rb_cmp_fn cmp, struct rp_rb_node **parent)
{
	struct rp_rb_node **link = &t->root;

	*parent = NULL;
	while (*link) {
		*parent = *link;
		link = &(*parent)->child[cmp(n, *parent) < 0 ? 0 : 1];
	}
	return link;
}

/* Inserts n (not in any tree) in order by cmp, after the nodes equal to it.
 * A node alone in its tree (most nodes of the size-class bins) goes in and
 * out without a call or a rebalancing. */
static inline void rp_rb_insert(struct rp_rb_tree *t, struct rp_rb_node *n, rp_rb_cmp_fn cmp)
{
	if (!t->root) {
		*n = (struct rp_rb_node){ .tag = n->tag };
		t->root = n;
		t->count = 1;
		return;
	}
	struct rp_rb_node *parent, **link = rp_rb_slot(t, n, cmp, &parent);

	rp_rb_link(t, n, parent, link);
}

/* rp_rb_erase of a node with a parent or a child. */
void rp_rb_erase_linked(struct rp_rb_tree *t, struct rp_rb_node *n);

/* Removes n, which must be in t. n's fields are undefined afterwards. */
static inline void rp_rb_erase(struct rp_rb_tree *t, struct rp_rb_node *n)
{
	if (!((uintptr_t)n->parent | (uintptr_t)n->child[0] | (uintptr_t)n->child[1])) {
		t->root = NULL; /* n was alone */
		t->count = 0;
		return;
	}
	rp_rb_erase_linked(t, n);
}

/* Smallest / largest node, or NULL when t is empty. */
struct rp_rb_node *rp_rb_first(const struct rp_rb_tree *t);
struct rp_rb_node *rp_rb_last(const struct rp_rb_tree *t);

/* In-order successor / predecessor of n, or NULL at the end. */
struct rp_rb_node *rp_rb_next(const struct rp_rb_node *n);
struct rp_rb_node *rp_rb_prev(const struct rp_rb_node *n);

/* a when pick, else b, without a branch (a descent's turns are not
 * predictable). */
static inline struct rp_rb_node *rp_rb_pick(bool pick, struct rp_rb_node *a, struct rp_rb_node *b)
{
	uintptr_t mask = -(uintptr_t)pick;
	return (struct rp_rb_node *)(((uintptr_t)a & mask) | ((uintptr_t)b & ~mask));
}

/* The first node not less than key (cmp(key, node) <= 0), or NULL. */
static inline struct rp_rb_node *rp_rb_lower_bound(const struct rp_rb_tree *t, const void *key,
                                                   rp_rb_key_fn cmp)
{
	struct rp_rb_node *n = t->root, *best = NULL;

	while (n) {
		bool left = cmp(key, n) <= 0;
		best = rp_rb_pick(left, n, best);
		n = n->child[!left];
	}
	return best;
}

/* The last node not greater than key (cmp(key, node) >= 0), or NULL. */
static inline struct rp_rb_node *rp_rb_floor(const struct rp_rb_tree *t, const void *key,
                                             rp_rb_key_fn cmp)
{
	struct rp_rb_node *n = t->root, *best = NULL;

	while (n) {
		bool right = cmp(key, n) >= 0;
		best = rp_rb_pick(right, n, best);
		n = n->child[right];
	}
	return best;
}

/* The first node equal to key, or NULL. */
static inline struct rp_rb_node *rp_rb_find(const struct rp_rb_tree *t, const void *key,
                                            rp_rb_key_fn cmp)
{
	struct rp_rb_node *n = rp_rb_lower_bound(t, key, cmp);

	return n && cmp(key, n) == 0 ? n : NULL;
}

/* Checks the red-black invariants and parent links (for tests): returns the
 * black height (>= 1), or -1 when broken or when the order by cmp is not
 * respected. */
int rp_rb_check(const struct rp_rb_tree *t, rp_rb_cmp_fn cmp);

#endif /* MEMTRACE_RBTREE_PRIVATE_H */
