/* torch-blocks.c — the records of the PyTorch caching allocator engine
 * (block-pool-private.h): blocks and segments, the ordered sets of a pool,
 * and splitting and merging neighbours. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "block-pool-private.h"

/* ---- ordered sets ---- */

/* BlockComparatorAddress: (stream, address), with the address as in
 * rp_torch_cmp_size. */
int rp_torch_cmp_address(const struct rp_rb_node *a, const struct rp_rb_node *b)
{
	const struct torch_block *x = rp_torch_node_block(a), *y = rp_torch_node_block(b);

	return rp_cmp4(x->stream, y->stream, x->place, y->place, x->addr, y->addr, 0, 0);
}

/* ---- blocks and segments ---- */

/* Block records start on a cache line (rp_rb_record_new; see struct
 * torch_block); the pool's spare ones are used first. */
struct torch_block *rp_torch_block_new(struct torch_segment *seg, struct torch_pool *pool,
                                       uint64_t stream, uint64_t addr, uint64_t size)
{
	struct torch_block *b = pool->spare;

	if (b)
		pool->spare = b->next;
	else if (!(b = rp_rb_record_new(sizeof(*b))))
		return NULL;
	/* field by field: a compound literal zeroes the whole record first
	 * with a `rep stos`, whose start-up cost more than the stores (one
	 * block a split) */
	b->node = (struct rp_rb_node){ 0 };
	b->stream = stream;
	b->size = size;
	b->place = seg->place;
	b->addr = addr;
	b->prev = b->next = NULL;
	b->pool = pool;
	b->seg = seg;
	b->requested = 0;
	b->gc_count_base = 0;
	b->allocated = false;
	b->mapped = true;
	return b;
}

void rp_torch_block_splice(struct torch_block *b, struct torch_block *before,
                           struct torch_block *after)
{
	b->prev = before;
	b->next = after;
	if (before)
		before->next = b;
	else
		b->seg->head = b;
	if (after)
		after->prev = b;
}

void rp_torch_pool_insert_unmapped(struct torch_pool *pool, struct torch_block *b)
{
	rp_rb_insert(&pool->unmapped, &b->node, rp_torch_cmp_address);
}

static int cmp_recorded(const void *a, const void *b)
{
	const struct torch_recorded *x = a, *y = b;

	return rp_cmp4(x->bytes, y->bytes, x->order, y->order, 0, 0, 0, 0);
}

int rp_torch_alloc_place_segments(struct mt_policy *p, const struct mt_recorded_segment *segs,
                                  size_t n)
{
	struct torch_alloc *t = (struct torch_alloc *)p;
	struct torch_recorded *r = calloc(n, sizeof(*r));

	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		r[i] = (struct torch_recorded){ segs[i].bytes, segs[i].address, i, 0 };
	qsort(r, n, sizeof(*r), cmp_recorded);
	free(t->recorded);
	t->recorded = r;
	t->nrecorded = n;
	rp_addrmap_release(&t->recorded_sizes);
	for (size_t i = 0; i < n; i++)
		if (r[i].bytes && (i == 0 || r[i - 1].bytes != r[i].bytes) &&
		    rp_addrmap_put(&t->recorded_sizes, r[i].bytes, i) < 0)
			return -ENOMEM;
	return 0;
}

/* The place of a new segment of `bytes` (see rp_torch_cmp_size): that of
 * the recording's first driver allocation of that size not yet taken, else
 * below every place so far. */
static uint64_t segment_place(struct torch_alloc *t, uint64_t bytes)
{
	uint64_t place = t->lowest_place ? t->lowest_place - 1 : UINT64_MAX;
	uint64_t first;

	if (rp_addrmap_get(&t->recorded_sizes, bytes, &first)) {
		struct torch_recorded *r = &t->recorded[first];
		size_t i = first + r->taken;

		if (i < t->nrecorded && t->recorded[i].bytes == bytes && t->recorded[i].address) {
			r->taken++;
			place = t->recorded[i].address;
		}
	}
	if (!t->lowest_place || place < t->lowest_place)
		t->lowest_place = place;
	return place;
}

struct torch_block *rp_torch_segment_add(struct torch_alloc *t, struct torch_pool *pool,
                                         uint64_t stream, uint64_t addr, uint64_t bytes)
{
	struct torch_segment *s = calloc(1, sizeof(*s));
	struct torch_block *b;

	if (!s || rp_sizebins_prepare(&pool->blocks, stream) < 0) {
		free(s);
		return NULL;
	}
	s->place = segment_place(t, bytes);
	b = rp_torch_block_new(s, pool, stream, addr, bytes);
	if (!b) {
		free(s);
		return NULL;
	}
	s->pool = pool;
	s->stream = stream;
	s->addr = addr;
	s->size = bytes;
	s->head = b;
	s->prev_seg = t->segs_tail;
	s->next_seg = NULL;
	if (t->segs_tail)
		t->segs_tail->next_seg = s;
	else
		t->segs = s;
	t->segs_tail = s;
	t->nsegments++;
	return b;
}

void rp_torch_segment_unlink(struct torch_alloc *t, struct torch_segment *s)
{
	if (s->prev_seg)
		s->prev_seg->next_seg = s->next_seg;
	else
		t->segs = s->next_seg;
	if (s->next_seg)
		s->next_seg->prev_seg = s->prev_seg;
	else
		t->segs_tail = s->prev_seg;
	t->nsegments--;
}
