/* block-pool.c — the PyTorch CUDA caching allocator engine shared by the
 * `caching` and `expandable` policies (and `stitch`'s small requests): the
 * DeviceCachingAllocator of c10/cuda/CUDACachingAllocator.cpp as
 * replay/policies/caching.c describes it — rounding, the two pools, best
 * fit, split and merge, the OOM retry ladder, garbage collection, walk and
 * stats — over cudaMalloc'd segments, or expandable segments
 * (expandable-segment.c) when the options ask for them. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "block-pool-private.h"
#include "policy-private.h"

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
	struct torch_key key = { .stream = stream, .size = size };
	struct torch_block *b;

	if (gc_enabled(t))
		pool->get_free_blocks_call_count++;
	b = rp_torch_block_of(
	        rp_sizebins_lower_bound(&pool->blocks, stream, size, &key, rp_torch_key_size));
	if (!b || b->stream != stream)
		return NULL;
	if (t->opt.expandable) { /* (every segment is then expandable) */
		/* best fit by the size a block can expand to. The blocks after
		 * b in order are no smaller than b, so one can expand to less
		 * only when b has unmapped space after it (the last mapped
		 * block of its segment): else the next block is not looked at */
		struct torch_block *n;

		while (expandable_size(b) > b->size &&
		       (n = rp_torch_block_of(rp_sizebins_next(&pool->blocks, &b->node))) &&
		       n->stream == stream && expandable_size(n) < expandable_size(b))
			b = n;
	}
	if (size < t->opt.max_split_size && b->size >= t->opt.max_split_size)
		return NULL;
	if (size >= t->opt.max_split_size && b->size >= size + t->opt.max_non_split_rounding)
		return NULL;
	rp_sizebins_erase(&pool->blocks, &b->node);
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
	rp_sizebins_erase(&b->pool->blocks, &b->node);
	rp_torch_segment_unlink(t, s);
	free(s);
	rp_torch_block_recycle(b);
	return 0;
}

/* alloc_block for cudaMalloc'd segments: 1 done, 0 out of memory, <0 error. */
static int alloc_segment(struct torch_alloc *t, struct torch_pool *pool, uint64_t stream,
                         uint64_t alloc_size, struct torch_block **out)
{
	struct torch_block *b;
	uint64_t addr;
	int rc;

	rc = mt_backend_alloc(t->b, alloc_size, &addr);
	if (rc == -ENOMEM)
		return 0;
	if (rc < 0)
		return rc;
	b = rp_torch_segment_add(t, pool, stream, addr, alloc_size);
	if (!b) {
		mt_backend_free(t->b, addr);
		return -ENOMEM;
	}
	t->reserved += alloc_size;
	*out = b;
	return 1;
}

static int alloc_block(struct torch_alloc *t, struct torch_pool *pool, uint64_t stream,
                       uint64_t size, struct torch_block **out)
{
	if (t->opt.expandable)
		return rp_torch_expandable_allocate(t, pool, stream, size, out);
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
	for (struct rp_rb_node *n = rp_sizebins_first(&t->large.blocks); n;
	     n = rp_sizebins_next(&t->large.blocks, n)) {
		const struct torch_block *b = rp_torch_node_block(n);

		if (!rp_torch_is_split(b) && !b->seg->expandable) {
			total_age += gc_count(b);
			count++;
		}
	}
	while (reclaimed < target && freed && count > 0) {
		double age_threshold = (double)total_age / (double)count;
		struct rp_rb_node *n = rp_sizebins_first(&t->large.blocks);

		freed = false;
		while (n) {
			struct torch_block *b = rp_torch_block_of(n);
			int rc;

			n = rp_sizebins_next(&t->large.blocks, n);
			if (rp_torch_is_split(b) || b->seg->expandable ||
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
	struct torch_key key = { .stream = stream, .size = size < max_split ? max_split : size };
	struct rp_rb_node *n;
	uint64_t released = 0;

	/* PyTorch would hand expandable blocks to release_block, which refuses
	 * them; its expandable mode relies on release_cached_blocks instead. */
	if (max_split == UINT64_MAX || t->opt.expandable)
		return 0;
	n = rp_sizebins_lower_bound(&pool->blocks, stream, key.size, &key, rp_torch_key_size);
	if (n && rp_torch_node_block(n)->stream == stream) {
		int rc = release_block(t, rp_torch_block_of(n));

		return rc < 0 ? rc : 1;
	}
	/* no single block is large enough: free oversize blocks, largest first */
	n = n ? rp_sizebins_prev(&pool->blocks, n) : rp_sizebins_last(&pool->blocks);
	while (n && released < key.size && rp_torch_node_block(n)->size >= max_split &&
	       rp_torch_node_block(n)->stream == stream) {
		struct rp_rb_node *prev = rp_sizebins_prev(&pool->blocks, n);
		int rc;

		released += rp_torch_node_block(n)->size;
		rc = release_block(t, rp_torch_block_of(n));
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
	struct rp_rb_node *n = rp_sizebins_first(&pool->blocks);
	int rc = 0;

	while (n) {
		struct torch_block *b = rp_torch_block_of(n);

		n = rp_sizebins_next(&pool->blocks, n);
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
		} else if (!rp_torch_is_split(b)) {
			rc = release_block(t, b);
			if (rc < 0)
				goto out;
		}
	}
	for (size_t i = 0; i < n_unmap; i++) {
		struct torch_block *b = to_unmap[i];

		rc = rp_torch_expandable_unmap_block(t, b);
		if (rc < 0)
			goto out;
		if (!rp_torch_is_split(b) && !b->mapped) {
			rc = rp_torch_expandable_release(t, b);
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
	rp_torch_try_merge(b, b->prev);
	rp_torch_try_merge(b, b->next);
	rp_torch_pool_insert_free(b->pool, b);
}

/* alloc_found_block: hands out the front `size` bytes of b (split when
 * asked), b having been taken out of its pool. */
static struct torch_block *alloc_found_block(struct torch_alloc *t, struct torch_block *b,
                                             uint64_t size, uint64_t orig, bool split)
{
	if (split) {
		struct torch_block *rest = b;

		b = rp_torch_block_new(rest->seg, rest->pool, rest->stream, rest->addr, size);
		if (!b) {
			rp_torch_pool_insert_free(rest->pool, rest);
			return NULL;
		}
		rp_torch_block_splice(b, rest->prev, rest);
		rest->addr += size;
		rest->size -= size;
		rp_torch_pool_insert_free(rest->pool, rest);
	}
	if (rp_addrmap_put(&t->active, b->addr, (uint64_t)(uintptr_t)b) < 0) {
		free_block(t, b);
		return NULL;
	}
	b->allocated = true;
	b->requested = orig;
	t->base.allocated += b->size;
	t->requested += orig;
	return b;
}

int rp_torch_alloc_alloc(struct mt_policy *p, uint64_t bytes, uint64_t stream, size_t request_index,
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

int rp_torch_alloc_free(struct mt_policy *p, uint64_t address, uint64_t stream)
{
	struct torch_alloc *t = (struct torch_alloc *)p;
	struct torch_block *b;
	uint64_t v;

	if (!rp_addrmap_remove(&t->active, address, &v))
		return -EINVAL;
	b = (struct torch_block *)(uintptr_t)v;
	b->allocated = false;
	t->base.allocated -= b->size;
	t->requested -= b->requested;
	b->requested = 0;
	free_block(t, b);
	return 0;
}

int rp_torch_alloc_empty_cache(struct mt_policy *p)
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

int rp_torch_alloc_walk(struct mt_policy *p, mt_policy_walk_fn fn, void *data)
{
	struct torch_alloc *t = (struct torch_alloc *)p;

	for (const struct torch_segment *s = t->segs; s; s = s->next_seg) {
		int rc = walk_segment(s, fn, data);

		if (rc)
			return rc;
	}
	return 0;
}

/* Largest free block of a pool: the largest of some stream. */
static uint64_t pool_largest_free(const struct torch_pool *pool)
{
	uint64_t largest = 0;

	for (unsigned r = 0; r < pool->blocks.n; r++) {
		struct rp_rb_node *n = rp_sizebins_last_of_rank(&pool->blocks, r);

		if (n && rp_torch_node_block(n)->size > largest)
			largest = rp_torch_node_block(n)->size;
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

void rp_torch_alloc_stats(struct mt_policy *p, struct mt_policy_stats *st)
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

void rp_torch_alloc_destroy(struct mt_policy *p)
{
	struct torch_alloc *t = (struct torch_alloc *)p;
	struct torch_segment *s, *next;

	if (!t)
		return;
	free(t->recorded);
	rp_addrmap_release(&t->recorded_sizes);
	for (s = t->segs; s; s = next) {
		struct torch_block *b = s->head, *bn;

		next = s->next_seg;
		if (s->expandable)
			rp_torch_expandable_destroy_segment(t, s);
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
		rp_sizebins_release(&pool->blocks);
	}
	rp_addrmap_release(&t->active);
	free(t);
}

/* ---- parameters ---- */

/* Fills o with PyTorch's defaults, then applies params. Returns 0 or
 * -EINVAL with a message naming policy in err. */
static int options_parse(struct torch_options *o, const char *policy, const char *params,
                         bool expandable, char *err, size_t errlen)
{
	uint64_t divisions = 0;
	const struct rp_param defs[] = {
		{ "max_split_size", RP_PARAM_SIZE, &o->max_split_size },
		{ "max_non_split_rounding_size", RP_PARAM_SIZE, &o->max_non_split_rounding },
		{ "roundup_power2_divisions", RP_PARAM_UINT, &divisions },
		{ "garbage_collection_threshold", RP_PARAM_DOUBLE, &o->gc_threshold },
		{ "large_segment_size", RP_PARAM_SIZE, &o->large_segment },
		{ "va_size", RP_PARAM_SIZE, &o->va_size },
	};
	int rc;

	*o = (struct torch_options){
		.max_split_size = UINT64_MAX,
		.max_non_split_rounding = TORCH_LARGE_BUFFER,
		.expandable = expandable,
		.large_segment = TORCH_LARGE_BUFFER,
	};
	/* the last two only for expandable */
	rc = rp_params_parse(policy, params, defs, expandable ? 6 : 4, err, errlen);
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

int rp_torch_alloc_create(struct mt_policy **out, const struct mt_policy_ops *ops,
                          struct mt_backend *b, const char *params, bool expandable, char *err,
                          size_t errlen)
{
	uint64_t granularity = mt_backend_granularity(b);
	struct torch_options o;
	struct torch_alloc *t;
	int rc = options_parse(&o, ops->name, params, expandable, err, errlen);

	if (rc < 0)
		return rc;
	if (expandable && (granularity == 0 || o.large_segment % granularity ||
	                   TORCH_SMALL_BUFFER % granularity)) {
		snprintf(err, errlen, "page sizes are not multiples of the backend's granularity");
		return -ENOTSUP;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->base.ops = ops;
	t->b = b;
	t->opt = o;
	t->small.is_small = true;
	t->allowed_max = mt_backend_capacity(b);
	*out = &t->base;
	return 0;
}
