/* expandable-segment.c — PyTorch's ExpandableSegment for the caching
 * allocator engine (block-pool.c): one VA reservation per (stream, pool)
 * with physical pages mapped on demand, and find_expandable_block,
 * map_block, try_allocate_expandable_block, unmap_block and
 * release_expandable_segment of DeviceCachingAllocator, as
 * replay/policies/expandable.c describes them. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "block-pool-private.h"

#define VA_CAP (1ull << 40) /* capacity taken for the reservation size at most */

/* Searches the unmapped blocks by a key block (stream and address set). */
static int key_address(const void *key, const struct rp_rb_node *n)
{
	return rp_torch_cmp_address(&((const struct torch_block *)key)->node, n);
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
	struct torch_block *b;
	int rc = mt_backend_va_reserve(t->b, bytes, &va);

	if (rc < 0)
		return rc;
	b = rp_torch_segment_add(t, pool, stream, va, bytes);
	if (!b) {
		mt_backend_va_free(t->b, va, bytes);
		return -ENOMEM;
	}
	b->seg->expandable = true;
	b->seg->page = page;
	b->mapped = false;
	rp_torch_pool_insert_unmapped(pool, b);
	*out = b;
	return 0;
}

/* find_expandable_block: the lowest place in the stream's segments where
 * free and unmapped space fit size, else a new segment. */
static int find_expandable_block(struct torch_alloc *t, struct torch_pool *pool, uint64_t stream,
                                 uint64_t size, struct torch_block **out)
{
	struct torch_block key = { .stream = stream, .addr = 0 };
	struct rp_rb_node *n = rp_rb_lower_bound(&pool->unmapped, &key, key_address);

	for (; n; n = rp_rb_next(n)) {
		struct torch_block *c = rp_rb_entry(n, struct torch_block, node);

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
	rp_rb_erase(&pool->unmapped, &b->node);
	b->mapped = true;
	if ((uint64_t)mapped < b->size) {
		struct torch_block *rest =
		        rp_torch_block_new(b->seg, pool, b->stream, b->addr + (uint64_t)mapped,
		                           b->size - (uint64_t)mapped);

		if (!rest)
			return -ENOMEM;
		rest->mapped = false;
		rp_torch_block_splice(rest, b, b->next);
		rp_torch_pool_insert_unmapped(pool, rest);
		b->size = (uint64_t)mapped;
	}
	rp_torch_try_merge(b, b->prev);
	rp_torch_try_merge(b, b->next);
	rp_torch_pool_insert_free(pool, b);
	t->reserved += (uint64_t)mapped;
	return 1;
}

int rp_torch_expandable_allocate(struct torch_alloc *t, struct torch_pool *pool, uint64_t stream,
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
	rp_sizebins_erase(&pool->blocks, &c->node);
	*out = c;
	return 1;
}

int rp_torch_expandable_unmap_block(struct torch_alloc *t, struct torch_block *b)
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
	rp_sizebins_erase(&pool->blocks, &b->node);
	start = s->addr + begin * s->page;
	bytes = (end - begin) * s->page;
	before = start - b->addr;
	after = b->size - before - bytes;
	if (before) {
		struct torch_block *f = rp_torch_block_new(s, pool, b->stream, b->addr, before);

		if (!f)
			return -ENOMEM;
		rp_torch_block_splice(f, b->prev, b);
		rp_torch_pool_insert_free(pool, f);
	}
	if (after) {
		struct torch_block *f =
		        rp_torch_block_new(s, pool, b->stream, start + bytes, after);

		if (!f)
			return -ENOMEM;
		rp_torch_block_splice(f, b, b->next);
		rp_torch_pool_insert_free(pool, f);
	}
	b->addr = start;
	b->size = bytes;
	b->mapped = false;
	rp_torch_try_merge(b, b->prev);
	rp_torch_try_merge(b, b->next);
	rp_torch_pool_insert_unmapped(pool, b);
	t->reserved -= bytes;
	return 0;
}

int rp_torch_expandable_release(struct torch_alloc *t, struct torch_block *b)
{
	struct torch_segment *s = b->seg;
	int rc = mt_backend_va_free(t->b, s->addr, s->size);

	if (rc < 0)
		return rc;
	rp_rb_erase(&b->pool->unmapped, &b->node);
	rp_torch_segment_unlink(t, s);
	free(s->handles);
	free(s);
	rp_torch_block_recycle(b);
	return 0;
}

void rp_torch_expandable_destroy_segment(struct torch_alloc *t, struct torch_segment *s)
{
	unmap_pages(t, s, 0, s->nhandles);
	mt_backend_va_free(t->b, s->addr, s->size);
}
