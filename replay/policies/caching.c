/* caching.c — policy `caching`: PyTorch's CUDA caching allocator.
 *
 * Models DeviceCachingAllocator of c10/cuda/CUDACachingAllocator.cpp as in
 * PyTorch 2.5–2.11 (read at pytorch/pytorch commit 001074d2 and checked
 * against the later AcceleratorAllocatorConfig split; the logic below is
 * unchanged across those versions), with the configuration of
 * c10/cuda/CUDAAllocatorConfig.cpp / c10/core/AllocatorConfig.cpp.
 *
 * What it does, as PyTorch does:
 * - round_size: requests below 512 B become 512 B, others round up to 512 B,
 *   or, with roundup_power2_divisions=N, to the next of N equal divisions
 *   between two powers of two (when size > 512 * N).
 * - two pools: requests of at most 1 MiB (after rounding) in the small pool,
 *   the rest in the large pool; each pool keeps its free blocks of every
 *   stream in one set ordered by (stream, size, address) — the address taken
 *   as (segment creation number, address), see cmp_place.
 * - segment size (get_allocation_size): 2 MiB for small requests, 20 MiB for
 *   requests under 10 MiB, otherwise the request rounded up to 2 MiB; one
 *   mt_backend_alloc (cudaMalloc) per segment.
 * - get_free_block: the first free block at or after (stream, size, 0); a
 *   block of another stream is never used; with max_split_size, a request
 *   below it never takes a block at or above it, and a request at or above
 *   it takes a block only if smaller than size + max_non_split_rounding_size
 *   (20 MiB).
 * - should_split: small pool: remainder >= 512 B; large pool: request below
 *   max_split_size and remainder > 1 MiB (expandable: remainder >= 512 B in
 *   both pools). The allocated part is the front of the block.
 * - free: the block merges with free neighbours of its segment and returns
 *   to its pool; segments are kept (reserved memory does not shrink).
 * - out of memory: garbage collection when enabled; cudaMalloc; on failure
 *   release_available_cached_blocks (free the smallest oversize block that
 *   covers the request, or oversize blocks from the largest down) and retry;
 *   then release_cached_blocks (empty_cache: free every unsplit free block
 *   of every stream and pool) and retry; then OOM (-ENOMEM).
 * - garbage_collection_threshold: PyTorch applies it only under a memory
 *   fraction; here the fraction is the backend's capacity. When reserved
 *   exceeds threshold * capacity, before a cudaMalloc, passes over the
 *   unsplit free large blocks free each one at least as old as their
 *   average age (age: get_free_block calls on the pool since it was freed)
 *   until what was freed covers the excess.
 * - stats: allocated = rounded block sizes handed out, requested = asked
 *   sizes, reserved = segment bytes (total_allocated_memory).
 *
 * Parameters: max_split_size (size, > 20 MiB; default unlimited),
 * max_non_split_rounding_size (size, default 20 MiB),
 * roundup_power2_divisions (a power of two, one value for every size; 0 or 1
 * = off), garbage_collection_threshold (0 < x < 1; default off).
 *
 * Checked against PyTorch 2.11 on an H100: on the GPT-2, ResNet-50 and BERT
 * sample traces the peak reserved equals torch.cuda.max_memory_reserved()
 * (tests/policies/test-fidelity.c).
 *
 * Left out: recordStream/cross-stream events (a trace replays each free as
 * completed), CUDA graph private pools and mempools, IPC, the per-interval
 * list form of roundup_power2_divisions, free-memory callbacks, pinned host
 * memory, and lock release around cudaMalloc.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block-pool-private.h"
#include "policy-private.h"

/* ---- ordered sets ---- */

static int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

static const struct torch_block *node_block(const struct mt_rb_node *n)
{
	return mt_rb_entry(n, const struct torch_block, node);
}

/* PyTorch orders blocks by raw device pointers. Here a block's "address"
 * in an order is (segment creation number, address): the same order as the
 * pointers wherever the driver hands out increasing addresses (the sim
 * backend always does), and one that does not depend on where a backend
 * happens to place segments, so sim and cuda replays choose alike. */
static int cmp_place(const struct torch_block *x, const struct torch_block *y)
{
	int c = cmp_u64(x->seq, y->seq);

	return c ? c : cmp_u64(x->addr, y->addr);
}

/* BlockComparatorSize: (stream, size, address). */
static int cmp_size(const struct mt_rb_node *a, const struct mt_rb_node *b)
{
	const struct torch_block *x = node_block(a), *y = node_block(b);
	int c = cmp_u64(x->stream, y->stream);

	if (!c)
		c = cmp_u64(x->size, y->size);
	return c ? c : cmp_place(x, y);
}

/* BlockComparatorAddress: (stream, address). */
int mt_torch_cmp_address(const struct mt_rb_node *a, const struct mt_rb_node *b)
{
	const struct torch_block *x = node_block(a), *y = node_block(b);
	int c = cmp_u64(x->stream, y->stream);

	return c ? c : cmp_place(x, y);
}

/* Searches by a key block (only its stream, size and address are set). */
static int key_size(const void *key, const struct mt_rb_node *n)
{
	return cmp_size(&((const struct torch_block *)key)->node, n);
}

static struct torch_block *blk(struct mt_rb_node *n)
{
	return n ? mt_rb_entry(n, struct torch_block, node) : NULL;
}

/* ---- blocks and segments ---- */

/* Block records start on a cache line (see struct torch_block). */
#define BLOCK_ALIGN 64
#define BLOCK_BYTES ((sizeof(struct torch_block) + BLOCK_ALIGN - 1) / BLOCK_ALIGN * BLOCK_ALIGN)

struct torch_block *mt_torch_block_new(struct torch_segment *seg, struct torch_pool *pool,
                                       uint64_t stream, uint64_t addr, uint64_t size)
{
	struct torch_block *b = pool->spare;

	if (b)
		pool->spare = b->next;
	else if (!(b = aligned_alloc(BLOCK_ALIGN, BLOCK_BYTES)))
		return NULL;
	memset(b, 0, sizeof(*b));
	b->seg = seg;
	b->seq = seg->seq;
	b->pool = pool;
	b->stream = stream;
	b->addr = addr;
	b->size = size;
	b->mapped = true;
	return b;
}

void mt_torch_block_recycle(struct torch_block *b)
{
	b->next = b->pool->spare;
	b->pool->spare = b;
}

void mt_torch_block_splice(struct torch_block *b, struct torch_block *before,
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

void mt_torch_pool_insert_free(struct torch_pool *pool, struct torch_block *b)
{
	b->gc_count_base = pool->get_free_blocks_call_count;
	mt_rb_insert(&pool->blocks, &b->node, cmp_size);
}

void mt_torch_pool_insert_unmapped(struct torch_pool *pool, struct torch_block *b)
{
	mt_rb_insert(&pool->unmapped, &b->node, mt_torch_cmp_address);
}

static bool is_split(const struct torch_block *b)
{
	return b->prev || b->next;
}

uint64_t mt_torch_try_merge(struct torch_block *dst, struct torch_block *src)
{
	uint64_t subsumed;

	if (!src || src->allocated || dst->mapped != src->mapped)
		return 0;
	if (dst->prev == src) { /* [src dst] */
		dst->addr = src->addr;
		dst->prev = src->prev;
		if (dst->prev)
			dst->prev->next = dst;
		else
			dst->seg->head = dst;
	} else { /* [dst src] */
		dst->next = src->next;
		if (dst->next)
			dst->next->prev = dst;
	}
	subsumed = src->size;
	dst->size += subsumed;
	mt_rb_erase(src->mapped ? &src->pool->blocks : &src->pool->unmapped, &src->node);
	mt_torch_block_recycle(src);
	return subsumed;
}

struct torch_segment *mt_torch_segment_new(struct torch_alloc *t)
{
	struct torch_segment *s = calloc(1, sizeof(*s));

	if (s)
		s->seq = t->next_seq++;
	return s;
}

void mt_torch_segment_link(struct torch_alloc *t, struct torch_segment *s)
{
	s->prev_seg = t->segs_tail;
	s->next_seg = NULL;
	if (t->segs_tail)
		t->segs_tail->next_seg = s;
	else
		t->segs = s;
	t->segs_tail = s;
	t->nsegments++;
}

void mt_torch_segment_unlink(struct torch_alloc *t, struct torch_segment *s)
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

/* ---- sizes ---- */

static unsigned log2_floor(uint64_t x)
{
	return 63u - (unsigned)__builtin_clzll(x);
}

/* roundup_power2_next_division */
static uint64_t round_power2_division(uint64_t size, unsigned divisions)
{
	uint64_t floor2, step, down;

	if ((size & (size - 1)) == 0)
		return size;
	floor2 = 1ull << log2_floor(size);
	step = floor2 >> log2_floor(divisions);
	if (step == 0)
		return floor2 << 1;
	down = size & ~(step - 1);
	return down == size ? size : down + step;
}

static uint64_t round_size(const struct torch_alloc *t, uint64_t size)
{
	unsigned d = t->opt.roundup_power2_divisions;

	if (size < TORCH_MIN_BLOCK_SIZE)
		return TORCH_MIN_BLOCK_SIZE;
	if (d > 1 && size > TORCH_MIN_BLOCK_SIZE * d)
		return round_power2_division(size, d);
	return TORCH_MIN_BLOCK_SIZE * ((size + TORCH_MIN_BLOCK_SIZE - 1) / TORCH_MIN_BLOCK_SIZE);
}

static uint64_t allocation_size(uint64_t size)
{
	if (size <= TORCH_SMALL_SIZE)
		return TORCH_SMALL_BUFFER;
	if (size < TORCH_MIN_LARGE_ALLOC)
		return TORCH_LARGE_BUFFER;
	return TORCH_ROUND_LARGE * ((size + TORCH_ROUND_LARGE - 1) / TORCH_ROUND_LARGE);
}

static bool should_split(const struct torch_alloc *t, const struct torch_block *b, uint64_t size)
{
	uint64_t remaining = b->size - size;

	if (b->pool->is_small || t->opt.expandable)
		return remaining >= TORCH_MIN_BLOCK_SIZE;
	return size < t->opt.max_split_size && remaining > TORCH_SMALL_SIZE;
}

static bool gc_enabled(const struct torch_alloc *t)
{
	return t->opt.gc_threshold > 0.0;
}

/* ---- finding and placing blocks ---- */

/* What a free block can grow to: itself plus unmapped space right after. */
static uint64_t expandable_size(const struct torch_block *b)
{
	return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
}

static struct torch_block *get_free_block(struct torch_alloc *t, struct torch_pool *pool,
                                          uint64_t stream, uint64_t size)
{
	struct torch_block key = { .stream = stream, .size = size, .addr = 0 };
	struct torch_block *b;

	if (gc_enabled(t))
		pool->get_free_blocks_call_count++;
	b = blk(mt_rb_lower_bound(&pool->blocks, &key, key_size));
	if (!b || b->stream != stream)
		return NULL;
	if (b->seg->expandable) {
		/* best fit by the size a block can expand to */
		struct torch_block *n = blk(mt_rb_next(&b->node));

		while (n && n->stream == stream && expandable_size(n) < expandable_size(b)) {
			b = n;
			n = blk(mt_rb_next(&b->node));
		}
	}
	if (size < t->opt.max_split_size && b->size >= t->opt.max_split_size)
		return NULL;
	if (size >= t->opt.max_split_size && b->size >= size + t->opt.max_non_split_rounding)
		return NULL;
	mt_rb_erase(&pool->blocks, &b->node);
	return b;
}

/* release_block: cudaFree of an unsplit free block (its whole segment). */
static int release_block(struct torch_alloc *t, struct torch_block *b)
{
	struct torch_segment *s = b->seg;
	int rc = mt_backend_free(t->b, s->addr);

	if (rc < 0)
		return rc;
	t->reserved -= b->size;
	mt_rb_erase(&b->pool->blocks, &b->node);
	mt_torch_segment_unlink(t, s);
	free(s);
	mt_torch_block_recycle(b);
	return 0;
}

/* alloc_block for cudaMalloc'd segments: 1 done, 0 out of memory, <0 error. */
static int alloc_segment(struct torch_alloc *t, struct torch_pool *pool, uint64_t stream,
                         uint64_t alloc_size, struct torch_block **out)
{
	struct torch_segment *s;
	struct torch_block *b;
	uint64_t addr;
	int rc;

	rc = mt_backend_alloc(t->b, alloc_size, &addr);
	if (rc == -ENOMEM)
		return 0;
	if (rc < 0)
		return rc;
	s = mt_torch_segment_new(t);
	b = s ? mt_torch_block_new(s, pool, stream, addr, alloc_size) : NULL;
	if (!b) {
		free(s);
		mt_backend_free(t->b, addr);
		return -ENOMEM;
	}
	s->pool = pool;
	s->stream = stream;
	s->addr = addr;
	s->size = alloc_size;
	s->head = b;
	mt_torch_segment_link(t, s);
	t->reserved += alloc_size;
	*out = b;
	return 1;
}

static int alloc_block(struct torch_alloc *t, struct torch_pool *pool, uint64_t stream,
                       uint64_t size, struct torch_block **out)
{
	if (t->opt.expandable)
		return mt_torch_expandable_allocate(t, pool, stream, size, out);
	return alloc_segment(t, pool, stream, allocation_size(size), out);
}

static int64_t gc_count(const struct torch_block *b)
{
	return b->pool->get_free_blocks_call_count - b->gc_count_base;
}

/* garbage_collect_cached_blocks */
static int garbage_collect(struct torch_alloc *t)
{
	uint64_t threshold = (uint64_t)(t->opt.gc_threshold * (double)t->allowed_max);
	uint64_t target, reclaimed = 0;
	int64_t total_age = 0, count = 0;
	bool freed = true;

	if (t->reserved <= threshold)
		return 0;
	target = t->reserved - threshold;
	for (struct mt_rb_node *n = mt_rb_first(&t->large.blocks); n; n = mt_rb_next(n)) {
		const struct torch_block *b = node_block(n);

		if (!is_split(b) && !b->seg->expandable) {
			total_age += gc_count(b);
			count++;
		}
	}
	while (reclaimed < target && freed && count > 0) {
		double age_threshold = (double)total_age / (double)count;
		struct mt_rb_node *n = mt_rb_first(&t->large.blocks);

		freed = false;
		while (n) {
			struct torch_block *b = blk(n);
			int rc;

			n = mt_rb_next(n);
			if (is_split(b) || b->seg->expandable ||
			    (double)gc_count(b) < age_threshold)
				continue;
			freed = true;
			reclaimed += b->size;
			total_age -= gc_count(b);
			count--;
			rc = release_block(t, b);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/* release_available_cached_blocks: 1 when it freed enough, 0 when not, <0 error. */
static int release_available(struct torch_alloc *t, struct torch_pool *pool, uint64_t stream,
                             uint64_t size)
{
	uint64_t max_split = t->opt.max_split_size;
	struct torch_block key = { .stream = stream, .size = size < max_split ? max_split : size };
	struct mt_rb_node *n;
	uint64_t released = 0;

	/* PyTorch would hand expandable blocks to release_block, which refuses
	 * them; its expandable mode relies on release_cached_blocks instead. */
	if (max_split == UINT64_MAX || t->opt.expandable)
		return 0;
	n = mt_rb_lower_bound(&pool->blocks, &key, key_size);
	if (n && node_block(n)->stream == stream) {
		int rc = release_block(t, blk(n));

		return rc < 0 ? rc : 1;
	}
	/* no single block is large enough: free oversize blocks, largest first */
	n = n ? mt_rb_prev(n) : mt_rb_last(&pool->blocks);
	while (n && released < key.size && node_block(n)->size >= max_split &&
	       node_block(n)->stream == stream) {
		struct mt_rb_node *prev = mt_rb_prev(n);
		int rc;

		released += node_block(n)->size;
		rc = release_block(t, blk(n));
		if (rc < 0)
			return rc;
		n = prev;
	}
	return released >= key.size;
}

/* release_blocks: frees every unsplit free block of the pool (all streams);
 * expandable blocks give back their whole free pages instead. */
static int release_blocks(struct torch_alloc *t, struct torch_pool *pool)
{
	struct torch_block **to_unmap = NULL;
	size_t n_unmap = 0, cap = 0;
	struct mt_rb_node *n = mt_rb_first(&pool->blocks);
	int rc = 0;

	while (n) {
		struct torch_block *b = blk(n);

		n = mt_rb_next(n);
		if (b->seg->expandable) {
			if (n_unmap == cap) {
				struct torch_block **v;

				cap = cap ? 2 * cap : 16;
				v = realloc(to_unmap, cap * sizeof(*v));
				if (!v) {
					rc = -ENOMEM;
					goto out;
				}
				to_unmap = v;
			}
			to_unmap[n_unmap++] = b;
		} else if (!is_split(b)) {
			rc = release_block(t, b);
			if (rc < 0)
				goto out;
		}
	}
	for (size_t i = 0; i < n_unmap; i++) {
		struct torch_block *b = to_unmap[i];

		rc = mt_torch_expandable_unmap_block(t, b);
		if (rc < 0)
			goto out;
		if (!is_split(b) && !b->mapped) {
			rc = mt_torch_expandable_release(t, b);
			if (rc < 0)
				goto out;
		}
	}
out:
	free(to_unmap);
	return rc;
}

/* release_cached_blocks */
static int release_cached_blocks(struct torch_alloc *t)
{
	int rc = release_blocks(t, &t->large);

	return rc < 0 ? rc : release_blocks(t, &t->small);
}

/* free_block: b (not allocated) merges with free neighbours and returns
 * to its pool. */
static void free_block(struct torch_alloc *t, struct torch_block *b)
{
	mt_torch_try_merge(b, b->prev);
	mt_torch_try_merge(b, b->next);
	mt_torch_pool_insert_free(b->pool, b);
}

/* alloc_found_block: hands out the front `size` bytes of b (split when
 * asked), b having been taken out of its pool. */
static struct torch_block *alloc_found_block(struct torch_alloc *t, struct torch_block *b,
                                             uint64_t size, uint64_t orig, bool split)
{
	if (split) {
		struct torch_block *rest = b;

		b = mt_torch_block_new(rest->seg, rest->pool, rest->stream, rest->addr, size);
		if (!b) {
			mt_torch_pool_insert_free(rest->pool, rest);
			return NULL;
		}
		mt_torch_block_splice(b, rest->prev, rest);
		rest->addr += size;
		rest->size -= size;
		mt_torch_pool_insert_free(rest->pool, rest);
	}
	if (mt_addrmap_put(&t->active, b->addr, (uint64_t)(uintptr_t)b) < 0) {
		free_block(t, b);
		return NULL;
	}
	b->allocated = true;
	b->requested = orig;
	t->base.allocated += b->size;
	t->requested += orig;
	return b;
}

int mt_torch_alloc_alloc(struct mt_policy *p, uint64_t bytes, uint64_t stream, size_t request_index,
                         uint64_t *address)
{
	struct torch_alloc *t = (struct torch_alloc *)p;
	uint64_t orig = bytes ? bytes : 1;
	uint64_t size = round_size(t, orig);
	struct torch_pool *pool = size <= TORCH_SMALL_SIZE ? &t->small : &t->large;
	struct torch_block *b = get_free_block(t, pool, stream, size);
	int rc;

	if (!b) {
		if (gc_enabled(t)) {
			rc = garbage_collect(t);
			if (rc < 0)
				return rc;
		}
		rc = alloc_block(t, pool, stream, size, &b);
		if (rc == 0) {
			rc = release_available(t, pool, stream, size);
			if (rc > 0)
				rc = alloc_block(t, pool, stream, size, &b);
		}
		if (rc == 0) {
			t->cache_flushes++;
			rc = release_cached_blocks(t);
			if (rc == 0)
				rc = alloc_block(t, pool, stream, size, &b);
		}
		if (rc < 0)
			return rc;
		if (rc == 0)
			return -ENOMEM;
	}
	b = alloc_found_block(t, b, size, orig, should_split(t, b, size));
	if (!b)
		return -ENOMEM;
	*address = b->addr;
	return 0;
}

int mt_torch_alloc_free(struct mt_policy *p, uint64_t address, uint64_t stream)
{
	struct torch_alloc *t = (struct torch_alloc *)p;
	struct torch_block *b;
	uint64_t v;

	if (!mt_addrmap_remove(&t->active, address, &v))
		return -EINVAL;
	b = (struct torch_block *)(uintptr_t)v;
	b->allocated = false;
	t->base.allocated -= b->size;
	t->requested -= b->requested;
	b->requested = 0;
	free_block(t, b);
	return 0;
}

int mt_torch_alloc_empty_cache(struct mt_policy *p)
{
	return release_cached_blocks((struct torch_alloc *)p);
}

static int emit(mt_policy_walk_fn fn, void *data, bool is_segment, uint64_t addr, uint64_t bytes,
                uint64_t stream, bool allocated)
{
	struct mt_policy_block pb = {
		.address = addr, .bytes = bytes, .stream = stream, .allocated = allocated
	};

	return fn(data, is_segment, &pb);
}

/* Walks a segment; an expandable one shows as one segment per run of
 * mapped blocks (as PyTorch's snapshot does). */
static int walk_segment(const struct torch_segment *s, mt_policy_walk_fn fn, void *data)
{
	const struct torch_block *b = s->head;

	while (b) {
		const struct torch_block *run = b;
		uint64_t bytes = 0;
		int rc;

		if (!b->mapped) {
			b = b->next;
			continue;
		}
		for (; b && b->mapped; b = b->next)
			bytes += b->size;
		rc = emit(fn, data, true, run->addr, bytes, s->stream, false);
		for (b = run; !rc && b && b->mapped; b = b->next)
			rc = emit(fn, data, false, b->addr, b->size, b->stream, b->allocated);
		if (rc)
			return rc;
	}
	return 0;
}

int mt_torch_alloc_walk(struct mt_policy *p, mt_policy_walk_fn fn, void *data)
{
	struct torch_alloc *t = (struct torch_alloc *)p;

	for (const struct torch_segment *s = t->segs; s; s = s->next_seg) {
		int rc = walk_segment(s, fn, data);

		if (rc)
			return rc;
	}
	return 0;
}

/* Largest free block of a pool: the last block of each stream's run. */
static uint64_t pool_largest_free(const struct torch_pool *pool)
{
	struct mt_rb_node *n = mt_rb_last(&pool->blocks);
	uint64_t largest = 0;

	while (n) {
		const struct torch_block *b = node_block(n);
		struct torch_block key = { .stream = b->stream };

		if (b->size > largest)
			largest = b->size;
		n = mt_rb_lower_bound(&pool->blocks, &key, key_size);
		n = n ? mt_rb_prev(n) : NULL;
	}
	return largest;
}

/* Expandable segments show as their runs of mapped blocks (walk_segment). */
static uint64_t mapped_runs(const struct torch_alloc *t)
{
	uint64_t runs = 0;

	for (const struct torch_segment *s = t->segs; s; s = s->next_seg)
		for (const struct torch_block *b = s->head; b; b = b->next)
			runs += b->mapped && (!b->prev || !b->prev->mapped);
	return runs;
}

void mt_torch_alloc_stats(struct mt_policy *p, struct mt_policy_stats *st)
{
	struct torch_alloc *t = (struct torch_alloc *)p;
	uint64_t small = pool_largest_free(&t->small), large = pool_largest_free(&t->large);

	st->allocated = t->base.allocated;
	st->requested = t->requested;
	st->reserved = t->reserved;
	st->segments = t->opt.expandable ? mapped_runs(t) : t->nsegments;
	st->largest_free = small > large ? small : large;
	st->cache_flushes = t->cache_flushes;
}

void mt_torch_alloc_destroy(struct mt_policy *p)
{
	struct torch_alloc *t = (struct torch_alloc *)p;
	struct torch_segment *s, *next;

	if (!t)
		return;
	for (s = t->segs; s; s = next) {
		struct torch_block *b = s->head, *bn;

		next = s->next_seg;
		if (s->expandable)
			mt_torch_expandable_destroy_segment(t, s);
		else
			mt_backend_free(t->b, s->addr);
		for (; b; b = bn) {
			bn = b->next;
			free(b);
		}
		free(s->handles);
		free(s);
	}
	for (int i = 0; i < 2; i++) {
		struct torch_pool *pool = i ? &t->large : &t->small;

		while (pool->spare) {
			struct torch_block *b = pool->spare;

			pool->spare = b->next;
			free(b);
		}
	}
	mt_addrmap_release(&t->active);
	free(t);
}

int mt_torch_alloc_create(struct torch_alloc **out, const struct mt_policy_ops *ops,
                          struct mt_backend *b, const struct torch_options *opt)
{
	struct torch_alloc *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->base.ops = ops;
	t->b = b;
	t->opt = *opt;
	t->small.is_small = true;
	t->allowed_max = mt_backend_capacity(b);
	*out = t;
	return 0;
}

/* ---- parameters ---- */

int mt_torch_options_parse(struct torch_options *o, const char *policy, const char *params,
                           bool expandable, char *err, size_t errlen)
{
	uint64_t divisions = 0;
	const struct mt_param defs[] = {
		{ "max_split_size", MT_PARAM_SIZE, &o->max_split_size },
		{ "max_non_split_rounding_size", MT_PARAM_SIZE, &o->max_non_split_rounding },
		{ "roundup_power2_divisions", MT_PARAM_UINT, &divisions },
		{ "garbage_collection_threshold", MT_PARAM_DOUBLE, &o->gc_threshold },
		{ "large_segment_size", MT_PARAM_SIZE, &o->large_segment },
		{ "va_size", MT_PARAM_SIZE, &o->va_size },
	};
	int rc;

	*o = (struct torch_options){
		.max_split_size = UINT64_MAX,
		.max_non_split_rounding = TORCH_LARGE_BUFFER,
		.expandable = expandable,
		.large_segment = TORCH_LARGE_BUFFER,
	};
	/* the last two only for expandable */
	rc = mt_params_parse(policy, params, defs, expandable ? 6 : 4, err, errlen);
	if (rc < 0)
		return rc;
	if (o->max_split_size <= TORCH_LARGE_BUFFER) {
		snprintf(err, errlen, "policy %s: max_split_size must be > 20MiB (as in PyTorch)",
		         policy);
		return -EINVAL;
	}
	if (divisions > 1024 || (divisions & (divisions - 1))) {
		snprintf(err, errlen,
		         "policy %s: roundup_power2_divisions must be 0 or a power of two", policy);
		return -EINVAL;
	}
	o->roundup_power2_divisions = (unsigned)divisions;
	if (o->gc_threshold < 0.0 || o->gc_threshold >= 1.0) {
		snprintf(err, errlen, "policy %s: garbage_collection_threshold must be in (0, 1)",
		         policy);
		return -EINVAL;
	}
	if (!o->large_segment || o->large_segment % (2ull << 20) || o->va_size % (2ull << 20)) {
		snprintf(err, errlen,
		         "policy %s: large_segment_size and va_size must be multiples of 2MiB",
		         policy);
		return -EINVAL;
	}
	return 0;
}

/* ---- the policy ---- */

static int caching_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                          char *err, size_t errlen);

const struct mt_policy_ops mt_policy_caching = {
	.name = "caching",
	.summary = "PyTorch CUDACachingAllocator (cudaMalloc segments, best fit, split/merge)",
	.flags = 0,
	.create = caching_create,
	.alloc = mt_torch_alloc_alloc,
	.free = mt_torch_alloc_free,
	.empty_cache = mt_torch_alloc_empty_cache,
	.walk = mt_torch_alloc_walk,
	.stats = mt_torch_alloc_stats,
	.destroy = mt_torch_alloc_destroy,
};

static int caching_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                          char *err, size_t errlen)
{
	struct torch_options o;
	struct torch_alloc *t;
	int rc = mt_torch_options_parse(&o, "caching", params, false, err, errlen);

	if (rc < 0)
		return rc;
	rc = mt_torch_alloc_create(&t, &mt_policy_caching, b, &o);
	if (rc < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	*out = (struct mt_policy *)t;
	return 0;
}
