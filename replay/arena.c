/* arena.c — segments split into blocks with best- or first-fit free lists
 * (see arena-private.h). The split/merge scheme is the classic one of
 * PyTorch's CUDACachingAllocator and TensorFlow's BFC: blocks of a segment
 * form an address-ordered list, a freed block absorbs free neighbours. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arena-private.h"
#include "rbtree-aug-private.h"

struct fit_key {
	uint64_t stream;
	uint64_t bytes;
	uint64_t seq;
	uint64_t address;
};

#define BLOCK(n) rp_rb_entry(n, struct rp_arena_block, node)
#define SEGMENT(n) rp_rb_entry(n, struct rp_arena_segment, node)

/* Blocks are ordered by (segment creation, address), never by address
 * alone: the cuda backend's addresses differ from run to run and from the
 * sim backend's, and a replay must choose alike on both. */
static int pos_cmp(uint64_t seq_a, uint64_t addr_a, const struct rp_arena_block *b)
{
	return rp_cmp4(seq_a, b->seq, addr_a, b->address, 0, 0, 0, 0);
}

static int best_key_cmp(const void *key, const struct rp_rb_node *n)
{
	const struct fit_key *k = key;
	const struct rp_arena_block *b = BLOCK(n);
	return rp_cmp4(k->stream, b->stream, k->bytes, b->bytes, k->seq, b->seq, k->address,
	               b->address);
}

static int best_cmp(const struct rp_rb_node *a, const struct rp_rb_node *b)
{
	const struct rp_arena_block *x = BLOCK(a);
	struct fit_key k = { x->stream, x->bytes, x->seq, x->address };
	return best_key_cmp(&k, b);
}

static int first_cmp(const struct rp_rb_node *a, const struct rp_rb_node *b)
{
	return pos_cmp(BLOCK(a)->seq, BLOCK(a)->address, BLOCK(b));
}

static int segment_cmp(const struct rp_rb_node *a, const struct rp_rb_node *b)
{
	return rp_cmp4(SEGMENT(a)->seq, SEGMENT(b)->seq, 0, 0, 0, 0, 0, 0);
}

static uint64_t largest_below(const struct rp_rb_node *n)
{
	return n ? BLOCK(n)->largest : 0;
}

/* First fit's aggregate: the largest free block of n's subtree. */
static bool recount(struct rp_rb_node *n)
{
	struct rp_arena_block *b = BLOCK(n);
	uint64_t l = largest_below(n->child[0]), r = largest_below(n->child[1]);
	uint64_t m = b->bytes > l ? b->bytes : l;

	m = m > r ? m : r;
	if (m == b->largest)
		return false;
	b->largest = m;
	return true;
}

void rp_arena_init(struct rp_arena *a, enum rp_arena_fit fit, bool per_stream, uint64_t min_split)
{
	memset(a, 0, sizeof(*a));
	a->fit = fit;
	a->per_stream = per_stream && fit == RP_ARENA_BEST_FIT;
	a->min_split = min_split ? min_split : 1;
	rp_sizebins_init(&a->free_bins);
	rp_rb_init(&a->segments);
	rp_addrmap_init(&a->live);
	a->allocated = 0;
	a->reserved = 0;
	a->spare = NULL;
}

static void free_segment_records(struct rp_arena *a, struct rp_arena_segment *seg)
{
	struct rp_arena_block *b = seg->first;
	while (b) {
		struct rp_arena_block *next = b->next;
		b->next = a->spare;
		a->spare = b;
		b = next;
	}
	free(seg);
}

void rp_arena_release(struct rp_arena *a)
{
	struct rp_rb_node *n;
	while ((n = rp_rb_first(&a->segments))) {
		rp_rb_erase(&a->segments, n);
		free_segment_records(a, SEGMENT(n));
	}
	while (a->spare) {
		struct rp_arena_block *next = a->spare->next;
		free(a->spare);
		a->spare = next;
	}
	rp_addrmap_release(&a->live);
	rp_sizebins_release(&a->free_bins);
	free(a->ff_segments);
	free(a->ff_largest);
	a->ff_segments = NULL;
	a->ff_largest = NULL;
	a->ff_count = a->ff_cap = 0;
}

static struct rp_arena_block *new_block(struct rp_arena *a)
{
	struct rp_arena_block *b = a->spare;
	if (b) {
		a->spare = b->next;
		return b;
	}
	return rp_rb_record_new(sizeof(*b));
}

/* First fit: a free block of `bytes` came to be at or below n (it grew in
 * place, or is new), so the largest blocks from n up can only have grown
 * to its size: one load a level, no recount. */
static void raise_largest(struct rp_rb_node *n, uint64_t bytes)
{
	for (; n && BLOCK(n)->largest < bytes; n = n->parent)
		BLOCK(n)->largest = bytes;
}

/* First fit: seg's free blocks changed; its entry in the array follows. */
static void note_largest(struct rp_arena *a, const struct rp_arena_segment *seg)
{
	a->ff_largest[seg->index] = largest_below(seg->free.root);
}

static void insert_free(struct rp_arena *a, struct rp_arena_block *b)
{
	b->allocated = false;
	if (a->fit == RP_ARENA_BEST_FIT) {
		rp_sizebins_insert(&a->free_bins, &b->node, b->stream, b->bytes, best_cmp);
		return;
	}
	/* the path down raised first (one load a level): linking then finds
	 * the maxima above right and recounts no further than the parent */
	struct rp_rb_tree *t = &b->segment->free;
	struct rp_rb_node *parent, **link = rp_rb_slot(t, &b->node, first_cmp, &parent);
	b->largest = b->bytes;
	raise_largest(parent, b->bytes);
	rp_rb_link_aug(t, &b->node, parent, link, recount);
	note_largest(a, b->segment);
}

static void erase_free(struct rp_arena *a, struct rp_arena_block *b)
{
	if (a->fit == RP_ARENA_BEST_FIT) {
		rp_sizebins_erase(&a->free_bins, &b->node);
		return;
	}
	rp_rb_erase_aug(&b->segment->free, &b->node, recount);
	note_largest(a, b->segment);
}

/* Free block b leaves the free set and free block c, which sorts where b
 * did for first fit (they are address neighbours with nothing free between
 * them), comes in: first fit puts c in b's place in the tree, with no
 * descent or rebalancing. */
static void swap_free(struct rp_arena *a, struct rp_arena_block *b, struct rp_arena_block *c)
{
	if (a->fit == RP_ARENA_BEST_FIT) {
		erase_free(a, b);
		insert_free(a, c);
		return;
	}
	c->allocated = false;
	rp_rb_replace_aug(&b->segment->free, &b->node, &c->node, recount);
	note_largest(a, c->segment);
}

/* First fit: makes room for one more segment in the array. Returns 0 or
 * -ENOMEM. */
static int reserve_segment_slot(struct rp_arena *a)
{
	if (a->fit != RP_ARENA_FIRST_FIT || a->ff_count < a->ff_cap)
		return 0;
	size_t cap = a->ff_cap ? 2 * a->ff_cap : 16;
	struct rp_arena_segment **segs = realloc(a->ff_segments, cap * sizeof(*segs));
	if (!segs)
		return -ENOMEM;
	a->ff_segments = segs;
	uint64_t *largest = realloc(a->ff_largest, cap * sizeof(*largest));
	if (!largest)
		return -ENOMEM;
	a->ff_largest = largest;
	a->ff_cap = cap;
	return 0;
}

/* First fit: takes seg (no free block left in it) out of the array. */
static void drop_segment_slot(struct rp_arena *a, const struct rp_arena_segment *seg)
{
	for (size_t i = seg->index; i + 1 < a->ff_count; i++) {
		a->ff_segments[i] = a->ff_segments[i + 1];
		a->ff_largest[i] = a->ff_largest[i + 1];
		a->ff_segments[i]->index = i;
	}
	a->ff_count--;
}

/* Makes the best-fit bins of the stream that free blocks will carry (the
 * first fit's classes need nothing). */
static int prepare_stream(struct rp_arena *a, uint64_t stream)
{
	return a->fit == RP_ARENA_BEST_FIT ? rp_sizebins_prepare(&a->free_bins, stream) : 0;
}

int rp_arena_add_segment(struct rp_arena *a, uint64_t address, uint64_t bytes, uint64_t stream,
                         uint64_t tag)
{
	if (prepare_stream(a, a->per_stream ? stream : 0) < 0 || reserve_segment_slot(a) < 0)
		return -ENOMEM;
	struct rp_arena_segment *seg = malloc(sizeof(*seg));
	struct rp_arena_block *b = new_block(a);
	if (!seg || !b) {
		free(seg);
		free(b);
		return -ENOMEM;
	}
	*seg = (struct rp_arena_segment){ .address = address,
		                          .bytes = bytes,
		                          .stream = stream,
		                          .tag = tag,
		                          .seq = a->next_seq++,
		                          .first = b,
		                          .index = a->ff_count };
	*b = (struct rp_arena_block){ .address = address,
		                      .bytes = bytes,
		                      .stream = a->per_stream ? stream : 0,
		                      .seq = seg->seq,
		                      .segment = seg };
	rp_rb_insert(&a->segments, &seg->node, segment_cmp);
	if (a->fit == RP_ARENA_FIRST_FIT) /* creation order: the last */
		a->ff_segments[a->ff_count++] = seg;
	insert_free(a, b);
	a->reserved += bytes;
	return 0;
}

/* First fit: the lowest-placed free block (by segment creation, then
 * address) of at least bytes: the first segment that holds one, then in
 * its tree left while the left subtree holds one, else this block when it
 * fits, else right (where one then is). */
static struct rp_arena_block *first_fit(struct rp_arena *a, uint64_t bytes)
{
	size_t i = 0;
	while (i < a->ff_count && a->ff_largest[i] < bytes)
		i++;
	if (i == a->ff_count)
		return NULL;
	struct rp_rb_node *n = a->ff_segments[i]->free.root;
	for (;;) {
		if (largest_below(n->child[0]) >= bytes)
			n = n->child[0];
		else if (BLOCK(n)->bytes >= bytes)
			return BLOCK(n);
		else
			n = n->child[1];
	}
}

/* The free block of `stream` that the fit picks for bytes, or NULL. */
static struct rp_arena_block *find_fit(struct rp_arena *a, uint64_t bytes, uint64_t stream)
{
	if (a->fit == RP_ARENA_FIRST_FIT)
		return first_fit(a, bytes);
	struct fit_key k = { stream, bytes, 0, 0 };
	struct rp_rb_node *n =
	        rp_sizebins_lower_bound(&a->free_bins, stream, bytes, &k, best_key_cmp);
	return n && BLOCK(n)->stream == stream ? BLOCK(n) : NULL;
}

static int take(struct rp_arena *a, struct rp_arena_block *b, uint64_t bytes, uint64_t requested,
                uint64_t stream, uint64_t *address, uint64_t *granted)
{
	if (b->bytes - bytes >= a->min_split) {
		struct rp_arena_block *rest = new_block(a);
		if (!rest)
			return -ENOMEM;
		/* field by field: a compound literal would zero the record
		 * first with a `rep stos`, which costs more than the stores */
		rest->node = (struct rp_rb_node){ 0 };
		rest->stream = b->stream; /* first fit: b's largest, recounted in b's place */
		rest->bytes = b->bytes - bytes;
		rest->seq = b->seq;
		rest->address = b->address + bytes;
		rest->prev = b;
		rest->next = b->next;
		rest->segment = b->segment;
		rest->requested = 0;
		rest->allocated = false;
		swap_free(a, b, rest);
		if (b->next)
			b->next->prev = rest;
		b->next = rest;
		b->bytes = bytes;
	} else {
		erase_free(a, b);
	}
	int rc = rp_addrmap_put(&a->live, b->address, (uint64_t)(uintptr_t)b);
	if (rc < 0) {
		insert_free(a, b);
		return rc;
	}
	b->allocated = true;
	if (a->per_stream)
		b->stream = stream;
	b->requested = requested;
	a->allocated += b->bytes;
	a->requested += requested;
	*address = b->address;
	*granted = b->bytes;
	return 0;
}

int rp_arena_alloc(struct rp_arena *a, uint64_t bytes, uint64_t requested, uint64_t stream,
                   uint64_t *address, uint64_t *granted)
{
	struct rp_arena_block *b = find_fit(a, bytes, a->per_stream ? stream : 0);
	return b ? take(a, b, bytes, requested, stream, address, granted) : -ENOSPC;
}

int rp_arena_alloc_any(struct rp_arena *a, uint64_t bytes, uint64_t requested, uint64_t stream,
                       uint64_t *address, uint64_t *granted)
{
	/* each stream's fit, in stream order */
	for (unsigned r = 0; r < a->free_bins.n; r++) {
		struct rp_arena_block *b = find_fit(a, bytes, a->free_bins.sorted[r]->stream);
		if (b)
			return take(a, b, bytes, requested, stream, address, granted);
	}
	return -ENOSPC;
}

static void recycle(struct rp_arena *a, struct rp_arena_block *b)
{
	b->next = a->spare;
	a->spare = b;
}

int rp_arena_free(struct rp_arena *a, uint64_t address, uint64_t stream, uint64_t *bytes)
{
	uint64_t v;
	if (prepare_stream(a, a->per_stream ? stream : 0) < 0)
		return -ENOMEM;
	if (!rp_addrmap_remove(&a->live, address, &v))
		return -ENOENT;
	struct rp_arena_block *b = (struct rp_arena_block *)(uintptr_t)v;
	*bytes = b->bytes;
	a->allocated -= b->bytes;
	a->requested -= b->requested;
	if (a->per_stream)
		b->stream = stream;
	/* First fit keeps a free neighbour's place for the merged block
	 * (which sorts where that one did) and then raises the largest blocks
	 * above it to the merged size. b taking n's place starts with n's
	 * largest, which is right for b's subtree once raised to b's merged
	 * size (greater than n's). */
	bool first = a->fit == RP_ARENA_FIRST_FIT;
	struct rp_arena_block *p = b->prev, *n = b->next;
	bool pfree = p && !p->allocated, nfree = n && !n->allocated;
	if (pfree && !first)
		erase_free(a, p);
	if (nfree && first && !pfree) {
		b->allocated = false;
		b->largest = n->largest;
		rp_rb_replace_links(&n->segment->free, &n->node, &b->node);
	} else if (nfree) {
		erase_free(a, n);
	}
	if (pfree) {
		p->bytes += b->bytes;
		p->next = n;
		if (n)
			n->prev = p;
		if (a->per_stream)
			p->stream = b->stream;
		recycle(a, b);
		b = p;
	}
	if (nfree) {
		b->bytes += n->bytes;
		b->next = n->next;
		if (n->next)
			n->next->prev = b;
		recycle(a, n);
	}
	if (first && (pfree || nfree)) {
		raise_largest(&b->node, b->bytes);
		note_largest(a, b->segment);
	} else {
		insert_free(a, b);
	}
	return 0;
}

/* Whether a block of seg is allocated: a walk of its blocks, at a release
 * only, so that no allocation or free keeps a count in the segment. */
static bool segment_in_use(const struct rp_arena_segment *seg)
{
	for (const struct rp_arena_block *b = seg->first; b; b = b->next)
		if (b->allocated)
			return true;
	return false;
}

int rp_arena_release_segments(struct rp_arena *a, bool all, uint64_t keep_bytes,
                              rp_arena_release_fn fn, void *data)
{
	struct rp_rb_node *n = rp_rb_first(&a->segments);
	while (n && (all || a->reserved > keep_bytes)) {
		struct rp_arena_segment *seg = SEGMENT(n);
		n = rp_rb_next(n);
		if (!all && segment_in_use(seg))
			continue;
		int rc = fn(data, seg);
		if (rc < 0)
			return rc;
		for (struct rp_arena_block *b = seg->first; b; b = b->next) {
			if (b->allocated) {
				rp_addrmap_remove(&a->live, b->address, NULL);
				a->allocated -= b->bytes;
				a->requested -= b->requested;
			} else {
				erase_free(a, b);
			}
		}
		a->reserved -= seg->bytes;
		rp_rb_erase(&a->segments, &seg->node);
		if (a->fit == RP_ARENA_FIRST_FIT)
			drop_segment_slot(a, seg);
		free_segment_records(a, seg);
	}
	return 0;
}

int rp_arena_walk(struct rp_arena *a, mt_policy_walk_fn fn, void *data)
{
	for (struct rp_rb_node *n = rp_rb_first(&a->segments); n; n = rp_rb_next(n)) {
		const struct rp_arena_segment *seg = SEGMENT(n);
		struct mt_policy_block blk = { seg->address, seg->bytes, seg->stream, false };
		int rc = fn(data, true, &blk);
		for (const struct rp_arena_block *b = seg->first; !rc && b; b = b->next) {
			blk = (struct mt_policy_block){ b->address, b->bytes,
				                        a->per_stream ? b->stream : 0,
				                        b->allocated };
			rc = fn(data, false, &blk);
		}
		if (rc)
			return rc;
	}
	return 0;
}

uint64_t rp_arena_largest_free(const struct rp_arena *a)
{
	uint64_t best = 0;
	if (a->fit == RP_ARENA_FIRST_FIT) {
		for (size_t i = 0; i < a->ff_count; i++)
			best = a->ff_largest[i] > best ? a->ff_largest[i] : best;
		return best;
	}
	for (struct rp_rb_node *n = rp_rb_first(&a->segments); n; n = rp_rb_next(n))
		for (const struct rp_arena_block *b = SEGMENT(n)->first; b; b = b->next)
			if (!b->allocated && b->bytes > best)
				best = b->bytes;
	return best;
}
