/* rbtree.c — intrusive red-black tree (see rbtree-private.h): the plain
 * tree's copy of the algorithm of rbtree-aug-private.h, and walking and
 * checking a tree. */
#include "config.h"

#include "rbtree-aug-private.h"

void rp_rb_init(struct rp_rb_tree *t)
{
	t->root = NULL;
	t->count = 0;
}

void rp_rb_link(struct rp_rb_tree *t, struct rp_rb_node *n, struct rp_rb_node *parent,
                struct rp_rb_node **link)
{
	rb_link_node(t, n, parent, link, NULL);
}

void rp_rb_erase_linked(struct rp_rb_tree *t, struct rp_rb_node *z)
{
	rb_erase_node(t, z, NULL);
}

struct rp_rb_node *rp_rb_first(const struct rp_rb_tree *t)
{
	return rb_leftmost(t->root);
}

struct rp_rb_node *rp_rb_last(const struct rp_rb_tree *t)
{
	return rb_rightmost(t->root);
}

/* In-order neighbour of n in direction dir (1 = next, 0 = previous). */
static struct rp_rb_node *step(const struct rp_rb_node *n, int dir)
{
	if (n->child[dir]) {
		struct rp_rb_node *c = n->child[dir];

		return dir ? rb_leftmost(c) : rb_rightmost(c);
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
	if (n->red && (rb_is_red(n->child[0]) || rb_is_red(n->child[1])))
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

	if (rb_is_red(t->root))
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
