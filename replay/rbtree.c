/* rbtree.c — intrusive red-black tree (see rbtree-private.h).
 *
 * The classic algorithm (Cormen et al., "Introduction to Algorithms", ch. 13)
 * with NULL leaves and the mirror cases folded into one by indexing the
 * children with a direction (0 = left, 1 = right).
 */
#include "config.h"

#include "rbtree-private.h"

static bool is_red(const struct rp_rb_node *n)
{
	return n && n->red;
}

static void replace_child(struct rp_rb_tree *t, struct rp_rb_node *parent, struct rp_rb_node *old,
                          struct rp_rb_node *new)
{
	if (!parent)
		t->root = new;
	else if (parent->child[0] == old)
		parent->child[0] = new;
	else
		parent->child[1] = new;
}

/* The functions below take the aggregate's recomputation (NULL in a plain
 * tree) and are inlined into a plain and an augmented copy, so that the
 * plain trees pay nothing for the augmented ones. */
#define RB_INLINE static inline __attribute__((always_inline))

/* Rotates x down towards direction dir: dir 0 = left rotation (x's right
 * child takes its place), dir 1 = right rotation. The rotated pair's
 * subtree holds the same nodes, so only x's and then y's aggregates
 * change. */
RB_INLINE void rotate(struct rp_rb_tree *t, struct rp_rb_node *x, int dir, rp_rb_aug_fn aug)
{
	struct rp_rb_node *y = x->child[1 - dir];

	x->child[1 - dir] = y->child[dir];
	if (y->child[dir])
		y->child[dir]->parent = x;
	y->parent = x->parent;
	replace_child(t, x->parent, x, y);
	y->child[dir] = x;
	x->parent = y;
	if (aug) {
		aug(x);
		aug(y);
	}
}

void rp_rb_init(struct rp_rb_tree *t)
{
	t->root = NULL;
	t->count = 0;
}

RB_INLINE void insert_fixup(struct rp_rb_tree *t, struct rp_rb_node *z, rp_rb_aug_fn aug)
{
	struct rp_rb_node *p;

	while ((p = z->parent) && p->red) {
		struct rp_rb_node *g = p->parent; /* exists: a red node is never the root */
		int d = p == g->child[0] ? 0 : 1;
		struct rp_rb_node *u = g->child[1 - d];

		if (is_red(u)) {
			p->red = false;
			u->red = false;
			g->red = true;
			z = g;
			continue;
		}
		if (z == p->child[1 - d]) {
			rotate(t, p, d, aug);
			z = p;
			p = z->parent;
		}
		p->red = false;
		g->red = true;
		rotate(t, g, 1 - d, aug);
	}
	t->root->red = false;
}

RB_INLINE void link_node(struct rp_rb_tree *t, struct rp_rb_node *n, struct rp_rb_node *parent,
                         struct rp_rb_node **link, rp_rb_aug_fn aug)
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
	insert_fixup(t, n, aug);
}

void rp_rb_link(struct rp_rb_tree *t, struct rp_rb_node *n, struct rp_rb_node *parent,
                struct rp_rb_node **link)
{
	link_node(t, n, parent, link, NULL);
}

void rp_rb_link_aug(struct rp_rb_tree *t, struct rp_rb_node *n, struct rp_rb_node *parent,
                    struct rp_rb_node **link, rp_rb_aug_fn aug)
{
	link_node(t, n, parent, link, aug);
}

static void transplant(struct rp_rb_tree *t, struct rp_rb_node *u, struct rp_rb_node *v)
{
	replace_child(t, u->parent, u, v);
	if (v)
		v->parent = u->parent;
}

/* x (possibly NULL) carries an extra black; xp is its parent. */
RB_INLINE void erase_fixup(struct rp_rb_tree *t, struct rp_rb_node *x, struct rp_rb_node *xp,
                           rp_rb_aug_fn aug)
{
	while (x != t->root && !is_red(x)) {
		int d = x == xp->child[0] ? 0 : 1;
		struct rp_rb_node *w = xp->child[1 - d]; /* non-NULL: its side is black-heavier */

		if (w->red) {
			w->red = false;
			xp->red = true;
			rotate(t, xp, d, aug);
			w = xp->child[1 - d];
		}
		if (!is_red(w->child[0]) && !is_red(w->child[1])) {
			w->red = true;
			x = xp;
			xp = x->parent;
			continue;
		}
		if (!is_red(w->child[1 - d])) {
			w->child[d]->red = false;
			w->red = true;
			rotate(t, w, 1 - d, aug);
			w = xp->child[1 - d];
		}
		w->red = xp->red;
		xp->red = false;
		w->child[1 - d]->red = false;
		rotate(t, xp, d, aug);
		x = t->root;
	}
	if (x)
		x->red = false;
}

static struct rp_rb_node *leftmost(struct rp_rb_node *n)
{
	while (n && n->child[0])
		n = n->child[0];
	return n;
}

static struct rp_rb_node *rightmost(struct rp_rb_node *n)
{
	while (n && n->child[1])
		n = n->child[1];
	return n;
}

RB_INLINE void erase_node(struct rp_rb_tree *t, struct rp_rb_node *z, rp_rb_aug_fn aug)
{
	struct rp_rb_node *x, *xp, *moved = NULL;
	bool removed_red;

	if (!z->child[0] || !z->child[1]) {
		x = z->child[0] ? z->child[0] : z->child[1];
		xp = z->parent;
		removed_red = z->red;
		transplant(t, z, x);
	} else {
		struct rp_rb_node *y = leftmost(z->child[1]);

		removed_red = y->red;
		x = y->child[1];
		if (y->parent == z) {
			xp = y;
		} else {
			xp = y->parent;
			transplant(t, y, x);
			y->child[1] = z->child[1];
			y->child[1]->parent = y;
		}
		transplant(t, z, y);
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
		erase_fixup(t, x, xp, aug);
}

void rp_rb_erase_linked(struct rp_rb_tree *t, struct rp_rb_node *z)
{
	erase_node(t, z, NULL);
}

void rp_rb_erase_aug(struct rp_rb_tree *t, struct rp_rb_node *z, rp_rb_aug_fn aug)
{
	erase_node(t, z, aug);
}

void rp_rb_replace_aug(struct rp_rb_tree *t, struct rp_rb_node *old, struct rp_rb_node *n,
                       rp_rb_aug_fn aug)
{
	n->parent = old->parent;
	n->child[0] = old->child[0];
	n->child[1] = old->child[1];
	n->red = old->red;
	replace_child(t, old->parent, old, n);
	for (int d = 0; d < 2; d++)
		if (n->child[d])
			n->child[d]->parent = n;
	aug(n);
	rp_rb_propagate(n->parent, aug);
}

struct rp_rb_node *rp_rb_first(const struct rp_rb_tree *t)
{
	return leftmost(t->root);
}

struct rp_rb_node *rp_rb_last(const struct rp_rb_tree *t)
{
	return rightmost(t->root);
}

/* In-order neighbour of n in direction dir (1 = next, 0 = previous). */
static struct rp_rb_node *step(const struct rp_rb_node *n, int dir)
{
	if (n->child[dir]) {
		struct rp_rb_node *c = n->child[dir];

		return dir ? leftmost(c) : rightmost(c);
	}
	while (n->parent && n == n->parent->child[dir])
		n = n->parent;
	return n->parent;
}

struct rp_rb_node *rp_rb_next(const struct rp_rb_node *n)
{
	return step(n, 1);
}

struct rp_rb_node *rp_rb_prev(const struct rp_rb_node *n)
{
	return step(n, 0);
}

/* Black height of the subtree at n, or -1 when an invariant is broken. */
static int check_subtree(const struct rp_rb_node *n, const struct rp_rb_node *parent)
{
	int hl, hr;

	if (!n)
		return 1;
	if (n->parent != parent)
		return -1;
	if (n->red && (is_red(n->child[0]) || is_red(n->child[1])))
		return -1;
	hl = check_subtree(n->child[0], n);
	hr = check_subtree(n->child[1], n);
	if (hl < 0 || hl != hr)
		return -1;
	return hl + (n->red ? 0 : 1);
}

int rp_rb_check(const struct rp_rb_tree *t, rp_rb_cmp_fn cmp)
{
	const struct rp_rb_node *n, *prev = NULL;
	size_t count = 0;

	if (is_red(t->root))
		return -1;
	for (n = rp_rb_first(t); n; prev = n, n = rp_rb_next(n)) {
		if (prev && cmp(prev, n) > 0)
			return -1;
		count++;
	}
	if (count != t->count)
		return -1;
	return check_subtree(t->root, NULL);
}
