/* rbtree-aug-private.h — the red-black tree's algorithm (rbtree.c's) as
 * inline functions over an aggregate, and the augmented tree's operations
 * built from them (see rbtree-private.h).
 *
 * The classic algorithm (Cormen et al., "Introduction to Algorithms", ch.
 * 13) with NULL leaves and the mirror cases folded into one by indexing the
 * children with a direction (0 = left, 1 = right). Each function takes the
 * aggregate's recomputation, NULL in a plain tree: rbtree.c makes the plain
 * tree's copy, and an owner of an augmented tree that includes this header
 * gets its own, with its recomputation inlined into the rotations (first
 * fit recounts at every rotation and every level an erase goes up; through
 * a pointer that was a call each).
 *
 * An augmented tree's owner keeps in each record an aggregate of the
 * record's subtree (first fit: the largest free block in it); aug
 * recomputes n's aggregate from n's own value and its children's
 * aggregates, and returns whether it changed. The _aug operations keep
 * every aggregate right through links, erases and rotations in O(log n)
 * recomputations.
 */
#ifndef MEMTRACE_RBTREE_AUG_PRIVATE_H
#define MEMTRACE_RBTREE_AUG_PRIVATE_H

#include "rbtree-private.h"

typedef bool (*rp_rb_aug_fn)(struct rp_rb_node *n);

/* After n's own value changed in place (its order unchanged): recomputes
 * the aggregates from n up, stopping where one stays the same (those above
 * it stay too). n may be NULL. */
static inline void rp_rb_propagate(struct rp_rb_node *n, rp_rb_aug_fn aug)
{
	while (n && aug(n))
		n = n->parent;
}

static inline bool rb_is_red(const struct rp_rb_node *n)
{
	return n && n->red;
}

static inline void rb_replace_child(struct rp_rb_tree *t, struct rp_rb_node *parent,
                                    struct rp_rb_node *old, struct rp_rb_node *new)
{
	if (!parent)
		t->root = new;
	else if (parent->child[0] == old)
		parent->child[0] = new;
	else
		parent->child[1] = new;
}

/* The functions below take the aggregate's recomputation (NULL in a plain
 * tree) and are always inlined: each copy is made for one recomputation,
 * so the plain tree pays nothing for the augmented ones. */
#define RP_RB_INLINE static inline __attribute__((always_inline))

/* Rotates x down towards direction dir: dir 0 = left rotation (x's right
 * child takes its place), dir 1 = right rotation. The rotated pair's
 * subtree holds the same nodes, so only x's and then y's aggregates
 * change. */
RP_RB_INLINE void rb_rotate(struct rp_rb_tree *t, struct rp_rb_node *x, int dir, rp_rb_aug_fn aug)
{
	struct rp_rb_node *y = x->child[1 - dir];

	x->child[1 - dir] = y->child[dir];
	if (y->child[dir])
		y->child[dir]->parent = x;
	y->parent = x->parent;
	rb_replace_child(t, x->parent, x, y);
	y->child[dir] = x;
	x->parent = y;
	if (aug) {
		aug(x);
		aug(y);
	}
}

RP_RB_INLINE void rb_insert_fixup(struct rp_rb_tree *t, struct rp_rb_node *z, rp_rb_aug_fn aug)
{
	struct rp_rb_node *p;

	while ((p = z->parent) && p->red) {
		struct rp_rb_node *g = p->parent; /* exists: a red node is never the root */
		int d = p == g->child[0] ? 0 : 1;
		struct rp_rb_node *u = g->child[1 - d];

		if (rb_is_red(u)) {
			p->red = false;
			u->red = false;
			g->red = true;
			z = g;
			continue;
		}
		if (z == p->child[1 - d]) {
			rb_rotate(t, p, d, aug);
			z = p;
			p = z->parent;
		}
		p->red = false;
		g->red = true;
		rb_rotate(t, g, 1 - d, aug);
	}
	t->root->red = false;
}

RP_RB_INLINE void rb_link_node(struct rp_rb_tree *t, struct rp_rb_node *n,
                               struct rp_rb_node *parent, struct rp_rb_node **link,
                               rp_rb_aug_fn aug)
{
	n->parent = parent;
	n->child[0] = n->child[1] = NULL;
	n->red = true;
	*link = n;
	t->count++;
	if (aug) {
		aug(n);
		rp_rb_propagate(parent, aug);
	}
	rb_insert_fixup(t, n, aug);
}

static inline void rb_transplant(struct rp_rb_tree *t, struct rp_rb_node *u, struct rp_rb_node *v)
{
	rb_replace_child(t, u->parent, u, v);
	if (v)
		v->parent = u->parent;
}

/* x (possibly NULL) carries an extra black; xp is its parent. */
RP_RB_INLINE void rb_erase_fixup(struct rp_rb_tree *t, struct rp_rb_node *x, struct rp_rb_node *xp,
                                 rp_rb_aug_fn aug)
{
	while (x != t->root && !rb_is_red(x)) {
		int d = x == xp->child[0] ? 0 : 1;
		struct rp_rb_node *w = xp->child[1 - d]; /* non-NULL: its side is black-heavier */

		if (w->red) {
			w->red = false;
			xp->red = true;
			rb_rotate(t, xp, d, aug);
			w = xp->child[1 - d];
		}
		if (!rb_is_red(w->child[0]) && !rb_is_red(w->child[1])) {
			w->red = true;
			x = xp;
			xp = x->parent;
			continue;
		}
		if (!rb_is_red(w->child[1 - d])) {
			w->child[d]->red = false;
			w->red = true;
			rb_rotate(t, w, 1 - d, aug);
			w = xp->child[1 - d];
		}
		w->red = xp->red;
		xp->red = false;
		w->child[1 - d]->red = false;
		rb_rotate(t, xp, d, aug);
		x = t->root;
	}
	if (x)
		x->red = false;
}

static inline struct rp_rb_node *rb_leftmost(struct rp_rb_node *n)
{
	while (n && n->child[0])
		n = n->child[0];
	return n;
}

static inline struct rp_rb_node *rb_rightmost(struct rp_rb_node *n)
{
	while (n && n->child[1])
		n = n->child[1];
	return n;
}

RP_RB_INLINE void rb_erase_node(struct rp_rb_tree *t, struct rp_rb_node *z, rp_rb_aug_fn aug)
{
	struct rp_rb_node *x, *xp, *moved = NULL;
	bool removed_red;

	if (!z->child[0] || !z->child[1]) {
		x = z->child[0] ? z->child[0] : z->child[1];
		xp = z->parent;
		removed_red = z->red;
		rb_transplant(t, z, x);
	} else {
		struct rp_rb_node *y = rb_leftmost(z->child[1]);

		removed_red = y->red;
		x = y->child[1];
		if (y->parent == z) {
			xp = y;
		} else {
			xp = y->parent;
			rb_transplant(t, y, x);
			y->child[1] = z->child[1];
			y->child[1]->parent = y;
		}
		rb_transplant(t, z, y);
		y->child[0] = z->child[0];
		y->child[0]->parent = y;
		y->red = z->red;
		moved = y;
	}
	t->count--;
	/* every subtree that changed lies on the path from xp up: from where
	 * the removed or moved node was, through where the moved one (z's
	 * successor, when z had two children) went, whose subtree is new and
	 * is counted whatever happened below it */
	if (aug) {
		struct rp_rb_node *p = xp;
		while (p && p != moved && aug(p))
			p = p->parent;
		if (moved) {
			aug(moved);
			rp_rb_propagate(moved->parent, aug);
		}
	}
	if (!removed_red)
		rb_erase_fixup(t, x, xp, aug);
}

/* rp_rb_link, rp_rb_insert and rp_rb_erase of an augmented tree. */
static inline void rp_rb_link_aug(struct rp_rb_tree *t, struct rp_rb_node *n,
                                  struct rp_rb_node *parent, struct rp_rb_node **link,
                                  rp_rb_aug_fn aug)
{
	rb_link_node(t, n, parent, link, aug);
}

static inline void rp_rb_insert_aug(struct rp_rb_tree *t, struct rp_rb_node *n, rp_rb_cmp_fn cmp,
                                    rp_rb_aug_fn aug)
{
	struct rp_rb_node *parent, **link = rp_rb_slot(t, n, cmp, &parent);

	rp_rb_link_aug(t, n, parent, link, aug);
}

static inline void rp_rb_erase_aug(struct rp_rb_tree *t, struct rp_rb_node *z, rp_rb_aug_fn aug)
{
	rb_erase_node(t, z, aug);
}

/* Puts n (in no tree) in old's place and takes old out, with no
 * rebalancing and no aggregate recomputed: n must sort where old did
 * (between old's neighbours). n's tag is left alone. */
static inline void rp_rb_replace_links(struct rp_rb_tree *t, struct rp_rb_node *old,
                                       struct rp_rb_node *n)
{
	n->parent = old->parent;
	n->child[0] = old->child[0];
	n->child[1] = old->child[1];
	n->red = old->red;
	rb_replace_child(t, old->parent, old, n);
	for (int d = 0; d < 2; d++)
		if (n->child[d])
			n->child[d]->parent = n;
}

/* rp_rb_replace_links in an augmented tree, recomputing the aggregates
 * from n up. */
static inline void rp_rb_replace_aug(struct rp_rb_tree *t, struct rp_rb_node *old,
                                     struct rp_rb_node *n, rp_rb_aug_fn aug)
{
	rp_rb_replace_links(t, old, n);
	aug(n);
	rp_rb_propagate(n->parent, aug);
}

#endif /* MEMTRACE_RBTREE_AUG_PRIVATE_H */
