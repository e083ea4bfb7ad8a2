/* expandable.c — policy `expandable`: PyTorch's caching allocator with
 * expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True).
 *
 * Models ExpandableSegment and DeviceCachingAllocator's find_expandable_block,
 * map_block, try_allocate_expandable_block, unmap_block and
 * release_expandable_segment of c10/cuda/CUDACachingAllocator.cpp (PyTorch
 * 2.5–2.11, read at pytorch/pytorch commit 001074d2; large_segment_size
 * became a config option, default 20 MiB, with AcceleratorAllocatorConfig).
 * Everything else — rounding, pools, best fit, split/merge, the OOM retry —
 * is the caching allocator's own code in caching.c (block-pool-private.h).
 *
 * - One expandable segment per (stream, pool) while it has address space: a
 *   VA reservation of 9/8 of the device (mt_backend_va_reserve), physical
 *   memory mapped on demand in pages of segment_size: 2 MiB (kSmallBuffer)
 *   for the small pool and 20 MiB (kLargeBuffer, large_segment_size) for the
 *   large pool, each page one mt_backend_mem_create + mt_backend_map. (The
 *   pages are not the driver's 2 MiB granularity for the large pool: PyTorch
 *   maps 20 MiB handles to limit map calls, so reserved grows by 20 MiB.)
 * - A request no free block fits is placed at the lowest address of the
 *   stream's segments where free and unmapped space together fit it
 *   (usually the end of the mapped part), and the missing pages are mapped;
 *   new mapped space merges with free neighbours.
 * - Best fit counts a free block followed by unmapped space at the size it
 *   can grow to; blocks split whenever the rest is >= 512 B.
 * - empty_cache and the OOM retry (release_cached_blocks) unmap every whole
 *   free page (mt_backend_unmap + mt_backend_mem_release); a segment left
 *   with nothing mapped gives its reservation back (mt_backend_va_free).
 * - reserved = mapped pages; walk and `segments` show each run of mapped
 *   blocks as one segment, as PyTorch's snapshot does.
 *
 * Parameters: those of `caching` (max_split_size, max_non_split_rounding_size,
 * roundup_power2_divisions, garbage_collection_threshold — garbage collection
 * never frees expandable blocks, as in PyTorch where they are always split),
 * large_segment_size (default 20MiB, a multiple of 2MiB), va_size (the
 * reservation; default 9/8 of the backend capacity, at most 9/8 TiB).
 *
 * Checked against PyTorch 2.11 (expandable_segments:True) on an H100: on the
 * GPT-2, ResNet-50 and BERT sample traces the peak reserved equals
 * torch.cuda.max_memory_reserved() (tests/policies/test-fidelity.c).
 *
 * Left out: what `caching` leaves out; peer mappings and IPC sharing; the
 * stream synchronisation before unmapping; release_available_cached_blocks
 * (PyTorch's version cannot release expandable blocks, so it is skipped).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "block-pool-private.h"

#define VA_CAP (1ull << 40) /* capacity taken for the reservation size at most */

/* Searches the unmapped blocks by a key block (stream and address set). */
static int key_address(const void *key, const struct mt_rb_node *n)
{
	return mt_torch_cmp_address(&((const struct torch_block *)key)->node, n);
}

static bool allocatable(const struct torch_block *b)
{
	return b && !b->allocated;
}

/* Free and unmapped space from b onwards covers size. */
static bool has_room(const struct torch_block *b, uint64_t size)
{
	uint64_t bytes = 0;

	for (; bytes < size && allocatable(b); b = b->next)
		bytes += b->size;
	return bytes >= size;
}

/* segment_size_: kSmallBuffer for the small pool, large_segment_size else. */
static uint64_t page_size(const struct torch_alloc *t, const struct torch_pool *pool)
{
	return pool->is_small ? TORCH_SMALL_BUFFER : t->opt.large_segment;
}

static uint64_t reservation_size(const struct torch_alloc *t, uint64_t page)
{
	uint64_t total = mt_backend_capacity(t->b), bytes;

	if (t->opt.va_size)
		bytes = t->opt.va_size;
	else
		bytes = (total > VA_CAP ? VA_CAP : total) / 8 * 9;
	return (bytes + page - 1) / page * page;
}

static int new_segment(struct torch_alloc *t, struct torch_pool *pool, uint64_t stream,
                       struct torch_block **out)
{
	uint64_t page = page_size(t, pool);
	uint64_t bytes = reservation_size(t, page), va;
	struct torch_segment *s;
	struct torch_block *b;
	int rc = mt_backend_va_reserve(t->b, bytes, &va);

	if (rc < 0)
		return rc;
	s = mt_torch_segment_new(t);
	b = s ? mt_torch_block_new(s, pool, stream, va, bytes) : NULL;
	if (!b) {
		free(s);
		mt_backend_va_free(t->b, va, bytes);
		return -ENOMEM;
	}
	s->pool = pool;
	s->stream = stream;
	s->addr = va;
	s->size = bytes;
	s->expandable = true;
	s->page = page;
	s->head = b;
	b->mapped = false;
	mt_torch_pool_insert_unmapped(pool, b);
	mt_torch_segment_link(t, s);
	*out = b;
	return 0;
}

/* find_expandable_block: the lowest place in the stream's segments where
 * free and unmapped space fit size, else a new segment. */
static int find_expandable_block(struct torch_alloc *t, struct torch_pool *pool, uint64_t stream,
                                 uint64_t size, struct torch_block **out)
{
	struct torch_block key = { .stream = stream, .addr = 0 };
	struct mt_rb_node *n = mt_rb_lower_bound(&pool->unmapped, &key, key_address);

	for (; n; n = mt_rb_next(n)) {
		struct torch_block *c = mt_rb_entry(n, struct torch_block, node);

		if (c->stream != stream)
			break;
		if (allocatable(c->prev))
			c = c->prev;
		if (has_room(c, size)) {
			*out = c;
			return 0;
		}
	}
	return new_segment(t, pool, stream, out);
}

static int grow_handles(struct torch_segment *s, size_t end)
{
	if (end > s->handles_cap) {
		size_t cap = s->handles_cap ? s->handles_cap : 16;
		uint64_t *v;

		while (cap < end)
			cap *= 2;
		v = realloc(s->handles, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (size_t i = s->handles_cap; i < cap; i++)
			v[i] = 0;
		s->handles = v;
		s->handles_cap = cap;
	}
	if (end > s->nhandles)
		s->nhandles = end;
	return 0;
}

static void trim_handles(struct torch_segment *s)
{
	while (s->nhandles && !s->handles[s->nhandles - 1])
		s->nhandles--;
}

/* Unmaps and releases pages [begin, end) that are mapped. */
static int unmap_pages(struct torch_alloc *t, struct torch_segment *s, size_t begin, size_t end)
{
	for (size_t i = begin; i < end; i++) {
		int rc;

		if (!s->handles[i])
			continue;
		rc = mt_backend_unmap(t->b, s->addr + i * s->page, s->page);
		if (rc == 0)
			rc = mt_backend_mem_release(t->b, s->handles[i]);
		if (rc < 0)
			return rc;
		s->handles[i] = 0;
	}
	trim_handles(s);
	return 0;
}

/* ExpandableSegment::map: creates and maps the pages covering
 * [addr, addr + size); returns the bytes mapped (whole pages), 0 when the
 * backend is out of memory (nothing is left mapped), or a negative errno. */
static int64_t map_pages(struct torch_alloc *t, struct torch_segment *s, uint64_t addr,
                         uint64_t size)
{
	size_t begin = (addr - s->addr) / s->page;
	size_t end = (addr + size - s->addr + s->page - 1) / s->page;
	int rc = grow_handles(s, end);

	for (size_t i = begin; rc == 0 && i < end; i++) {
		rc = mt_backend_mem_create(t->b, s->page, &s->handles[i]);
		if (rc < 0) {
			/* give back the pages this call created */
			for (size_t j = begin; j < i; j++) {
				mt_backend_mem_release(t->b, s->handles[j]);
				s->handles[j] = 0;
			}
			s->handles[i] = 0;
			trim_handles(s);
			return rc == -ENOMEM ? 0 : rc;
		}
	}
	for (size_t i = begin; rc == 0 && i < end; i++)
		rc = mt_backend_map(t->b, s->addr + i * s->page, s->page, s->handles[i]);
	if (rc < 0)
		return rc;
	return (int64_t)((end - begin) * s->page);
}

/* map_block: maps the front `size` bytes (to whole pages) of unmapped block
 * b, which then merges with free neighbours and joins the free blocks.
 * Returns 1, 0 (out of memory) or a negative errno. */
static int map_block(struct torch_alloc *t, struct torch_block *b, uint64_t size)
{
	struct torch_pool *pool = b->pool;
	int64_t mapped = map_pages(t, b->seg, b->addr, size);

	if (mapped <= 0)
		return (int)mapped;
	mt_rb_erase(&pool->unmapped, &b->node);
	b->mapped = true;
	if ((uint64_t)mapped < b->size) {
		struct torch_block *rest =
		        mt_torch_block_new(b->seg, pool, b->stream, b->addr + (uint64_t)mapped,
		                           b->size - (uint64_t)mapped);

		if (!rest)
			return -ENOMEM;
		rest->mapped = false;
		mt_torch_block_splice(rest, b, b->next);
		mt_torch_pool_insert_unmapped(pool, rest);
		b->size = (uint64_t)mapped;
	}
	mt_torch_try_merge(b, b->prev);
	mt_torch_try_merge(b, b->next);
	mt_torch_pool_insert_free(pool, b);
	t->reserved += (uint64_t)mapped;
	return 1;
}

int mt_torch_expandable_allocate(struct torch_alloc *t, struct torch_pool *pool, uint64_t stream,
                                 uint64_t size, struct torch_block **out)
{
	uint64_t page = page_size(t, pool);
	struct torch_block *c;
	int rc;

	if (size > reservation_size(t, page))
		return 0; /* larger than a whole reservation: cannot be placed */
	rc = find_expandable_block(t, pool, stream, size, &c);
	if (rc < 0)
		return rc;
	if (!c->mapped) {
		rc = map_block(t, c, c->size < size ? c->size : size);
		if (rc <= 0)
			return rc;
	}
	while (c->size < size) {
		/* invariant: free -> unmapped -> ... */
		struct torch_block *n = c->next;
		uint64_t remaining = size - c->size;

		if (!n || n->mapped || n->allocated)
			return -EFAULT;
		rc = map_block(t, n, remaining < n->size ? remaining : n->size);
		if (rc <= 0)
			return rc;
		c = n;
	}
	mt_rb_erase(&pool->blocks, &c->node);
	*out = c;
	return 1;
}

int mt_torch_expandable_unmap_block(struct torch_alloc *t, struct torch_block *b)
{
	struct torch_segment *s = b->seg;
	struct torch_pool *pool = b->pool;
	size_t begin = (b->addr - s->addr + s->page - 1) / s->page;
	size_t end = (b->addr + b->size - s->addr) / s->page;
	uint64_t start, bytes, before, after;
	int rc;

	if (begin >= end)
		return 0;
	rc = unmap_pages(t, s, begin, end);
	if (rc < 0)
		return rc;
	mt_rb_erase(&pool->blocks, &b->node);
	start = s->addr + begin * s->page;
	bytes = (end - begin) * s->page;
	before = start - b->addr;
	after = b->size - before - bytes;
	if (before) {
		struct torch_block *f = mt_torch_block_new(s, pool, b->stream, b->addr, before);

		if (!f)
			return -ENOMEM;
		mt_torch_block_splice(f, b->prev, b);
		mt_torch_pool_insert_free(pool, f);
	}
	if (after) {
		struct torch_block *f =
		        mt_torch_block_new(s, pool, b->stream, start + bytes, after);

		if (!f)
			return -ENOMEM;
		mt_torch_block_splice(f, b, b->next);
		mt_torch_pool_insert_free(pool, f);
	}
	b->addr = start;
	b->size = bytes;
	b->mapped = false;
	mt_torch_try_merge(b, b->prev);
	mt_torch_try_merge(b, b->next);
	mt_torch_pool_insert_unmapped(pool, b);
	t->reserved -= bytes;
	return 0;
}

int mt_torch_expandable_release(struct torch_alloc *t, struct torch_block *b)
{
	struct torch_segment *s = b->seg;
	int rc = mt_backend_va_free(t->b, s->addr, s->size);

	if (rc < 0)
		return rc;
	mt_rb_erase(&b->pool->unmapped, &b->node);
	mt_torch_segment_unlink(t, s);
	free(s->handles);
	free(s);
	mt_torch_block_recycle(b);
	return 0;
}

void mt_torch_expandable_destroy_segment(struct torch_alloc *t, struct torch_segment *s)
{
	unmap_pages(t, s, 0, s->nhandles);
	mt_backend_va_free(t->b, s->addr, s->size);
}

static int expandable_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                             char *err, size_t errlen);

const struct mt_policy_ops mt_policy_expandable = {
	.name = "expandable",
	.summary = "PyTorch caching allocator with expandable segments (VMM pages on demand)",
	.flags = MT_POLICY_NEEDS_VMM,
	.create = expandable_create,
	.alloc = mt_torch_alloc_alloc,
	.free = mt_torch_alloc_free,
	.empty_cache = mt_torch_alloc_empty_cache,
	.walk = mt_torch_alloc_walk,
	.stats = mt_torch_alloc_stats,
	.destroy = mt_torch_alloc_destroy,
};

static int expandable_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                             char *err, size_t errlen)
{
	struct torch_options o;
	struct torch_alloc *t;
	int rc = mt_torch_options_parse(&o, "expandable", params, true, err, errlen);

	if (rc < 0)
		return rc;
	if (mt_backend_granularity(b) == 0 || o.large_segment % mt_backend_granularity(b) ||
	    TORCH_SMALL_BUFFER % mt_backend_granularity(b)) {
		snprintf(err, errlen, "page sizes are not multiples of the backend's granularity");
		return -ENOTSUP;
	}
	rc = mt_torch_alloc_create(&t, &mt_policy_expandable, b, &o);
	if (rc < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	*out = (struct mt_policy *)t;
	return 0;
}
