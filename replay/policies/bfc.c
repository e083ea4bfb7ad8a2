/* bfc.c — policy `bfc`: TensorFlow's best-fit-with-coalescing allocator.
 *
 * Models tsl::BFCAllocator of tensorflow/tsl/framework/bfc_allocator.cc
 * (read at tensorflow/tensorflow commit 10ae7c03, TensorFlow 2.12–2.15; the
 * file now lives in XLA as xla/tsl/framework/bfc_allocator.cc), as
 * TensorFlow's GPU device uses it:
 * - requests round up to 256 B (kMinAllocationSize);
 * - 21 bins; bin i holds free chunks of [256 << i, 256 << (i + 1)) bytes, the
 *   last one everything larger; each bin is ordered by (size, address);
 * - FindChunkPtr: from the request's bin upwards, the first (smallest, then
 *   lowest) free chunk that fits; it is split when it is at least twice the
 *   request or the rest is at least 128 MiB (fragmentation_fraction * limit
 *   when set); the request takes the front;
 * - free coalesces with the free neighbours of its region;
 * - Extend, when no chunk fits: a new region (one mt_backend_alloc) of the
 *   current region size, which starts at 2 MiB (allow_growth) and doubles
 *   until it covers the request, or after each region taken at that size;
 *   bounded by the memory limit (the backend's capacity); on a failed
 *   allocation it backs off by 10% steps once in its life;
 * - when Extend fails and garbage_collection is on (TensorFlow's GPU default,
 *   TF_ENABLE_GPU_GARBAGE_COLLECTION), wholly free regions are given back
 *   and Extend retried;
 * - regions are never coalesced (the GPU sub-allocator does not support it).
 *
 * Parameters: allow_growth (1, default: regions start at 2 MiB and double;
 * 0: the first region is the whole capacity), garbage_collection (1,
 * default), fragmentation_fraction (0, default: 128 MiB threshold).
 * empty_cache gives back wholly free regions (BFC has no such call; this is
 * what its garbage collection does).
 *
 * Left out: streams (TensorFlow orders a device's work on one compute
 * stream, so every stream shares one pool here), timestamped chunks
 * (freed_by_count), the retry-with-wait of AllocateRawInternalWithRetry, and
 * memory-map dumps.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "addrmap-private.h"
#include "policy-private.h"
#include "rbtree-private.h"

#define MIN_ALLOCATION 256ull /* kMinAllocationSize */
#define NUM_BINS 21           /* kNumBins */

extern const struct mt_policy_ops rp_policy_bfc;

struct region;

struct chunk {
	struct rp_rb_node node;    /* in its bin while free */
	uint64_t size, seq, addr;  /* its order in a bin; seq: its region's */
	struct chunk *prev, *next; /* neighbours in the region */
	struct region *region;
	uint64_t requested;
	bool in_use;
};

struct region {
	struct region *prev_region, *next_region;
	struct chunk *head;
	uint64_t addr, size;
	uint64_t seq; /* creation number */
};

struct bfc {
	struct mt_policy base;
	struct mt_backend *b;
	struct rp_rb_tree bins[NUM_BINS];
	struct rp_addrmap live; /* address -> struct chunk * */
	struct region *regions;
	uint64_t memory_limit;
	uint64_t total_region_allocated;
	uint64_t curr_region_allocation;
	uint64_t max_internal_fragmentation;
	bool started_backpedal;
	bool garbage_collection;
	uint64_t nregions, next_seq, requested, cache_flushes;
};

static uint64_t rounded_bytes(uint64_t bytes)
{
	return rp_round_up(bytes, MIN_ALLOCATION);
}

static int bin_for_size(uint64_t bytes)
{
	uint64_t v = (bytes < MIN_ALLOCATION ? MIN_ALLOCATION : bytes) >> 8;
	int b = 63 - __builtin_clzll(v);

	return b < NUM_BINS - 1 ? b : NUM_BINS - 1;
}

static const struct chunk *node_chunk(const struct rp_rb_node *n)
{
	return rp_rb_entry(n, const struct chunk, node);
}

/* ChunkComparator: (size, address), where the address is taken as
 * (region creation number, address) so the order does not depend on where
 * the backend places regions (it is the pointer order when regions get
 * increasing addresses, as under sim): sim and cuda replays choose alike. */
static int cmp_chunk(const struct rp_rb_node *a, const struct rp_rb_node *b)
{
	const struct chunk *x = node_chunk(a), *y = node_chunk(b);

	return rp_cmp4(x->size, y->size, x->seq, y->seq, x->addr, y->addr, 0, 0);
}

static int key_size(const void *key, const struct rp_rb_node *n)
{
	return rp_cmp4(*(const uint64_t *)key, node_chunk(n)->size, 0, 0, 0, 0, 0, 0);
}

static void bin_insert(struct bfc *p, struct chunk *c)
{
	rp_rb_insert(&p->bins[bin_for_size(c->size)], &c->node, cmp_chunk);
}

static void bin_remove(struct bfc *p, struct chunk *c)
{
	rp_rb_erase(&p->bins[bin_for_size(c->size)], &c->node);
}

/* Merge: c2 (right after c1) joins c1. */
static void merge(struct chunk *c1, struct chunk *c2)
{
	c1->next = c2->next;
	if (c1->next)
		c1->next->prev = c1;
	c1->size += c2->size;
	free(c2);
}

/* TryToCoalesce: c (free, in no bin) absorbs a free next and is absorbed by
 * a free prev; returns the surviving chunk. */
static struct chunk *coalesce(struct bfc *p, struct chunk *c)
{
	if (c->next && !c->next->in_use) {
		bin_remove(p, c->next);
		merge(c, c->next);
	}
	if (c->prev && !c->prev->in_use) {
		struct chunk *prev = c->prev;

		bin_remove(p, prev);
		merge(prev, c);
		c = prev;
	}
	return c;
}

static void region_unlink(struct bfc *p, struct region *r)
{
	if (r->prev_region)
		r->prev_region->next_region = r->next_region;
	else
		p->regions = r->next_region;
	if (r->next_region)
		r->next_region->prev_region = r->prev_region;
	p->nregions--;
}

/* Extend: a new region covering rounded bytes. 1 done, 0 no memory, <0 error. */
static int extend(struct bfc *p, uint64_t rounded)
{
	uint64_t available =
	        (p->memory_limit - p->total_region_allocated) / MIN_ALLOCATION * MIN_ALLOCATION;
	bool increased = false;
	uint64_t bytes, addr;
	struct region *r;
	struct chunk *c;
	int rc;

	if (rounded > available)
		return 0;
	while (rounded > p->curr_region_allocation) {
		p->curr_region_allocation *= 2;
		increased = true;
	}
	bytes = p->curr_region_allocation < available ? p->curr_region_allocation : available;
	rc = mt_backend_alloc(p->b, bytes, &addr);
	if (rc == -ENOMEM && !p->started_backpedal) {
		p->started_backpedal = true; /* only once */
		while (rc == -ENOMEM) {
			bytes = rounded_bytes((uint64_t)((double)bytes * 0.9));
			if (bytes < rounded)
				break;
			rc = mt_backend_alloc(p->b, bytes, &addr);
		}
	}
	if (rc == -ENOMEM)
		return 0;
	if (rc < 0)
		return rc;
	if (!increased)
		p->curr_region_allocation *= 2;
	r = calloc(1, sizeof(*r));
	c = r ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		free(r);
		mt_backend_free(p->b, addr);
		return -ENOMEM;
	}
	r->addr = c->addr = addr;
	r->seq = c->seq = p->next_seq++;
	r->size = c->size = bytes;
	r->head = c;
	c->region = r;
	r->next_region = p->regions;
	if (p->regions)
		p->regions->prev_region = r;
	p->regions = r;
	p->nregions++;
	p->total_region_allocated += bytes;
	bin_insert(p, c);
	return 1;
}

static struct chunk *find_chunk(struct bfc *p, uint64_t rounded, uint64_t requested)
{
	for (int bin = bin_for_size(rounded); bin < NUM_BINS; bin++) {
		struct rp_rb_node *n = rp_rb_lower_bound(&p->bins[bin], &rounded, key_size);
		struct chunk *c;

		if (!n)
			continue;
		c = rp_rb_entry(n, struct chunk, node);
		bin_remove(p, c);
		if (c->size >= rounded * 2 || c->size - rounded >= p->max_internal_fragmentation) {
			struct chunk *rest = calloc(1, sizeof(*rest));

			if (!rest) {
				bin_insert(p, c);
				return NULL;
			}
			rest->region = c->region;
			rest->seq = c->seq;
			rest->addr = c->addr + rounded;
			rest->size = c->size - rounded;
			rest->prev = c;
			rest->next = c->next;
			if (c->next)
				c->next->prev = rest;
			c->next = rest;
			c->size = rounded;
			bin_insert(p, rest);
		}
		c->in_use = true;
		c->requested = requested;
		return c;
	}
	return NULL;
}

/* Gives back the regions with no chunk in use; returns the bytes freed or a
 * negative errno. */
static int64_t free_regions(struct bfc *p)
{
	struct region *r = p->regions, *next;
	int64_t freed = 0;

	for (; r; r = next) {
		int rc;

		next = r->next_region;
		if (r->head->in_use || r->head->next) /* a free region is one free chunk */
			continue;
		rc = mt_backend_free(p->b, r->addr);
		if (rc < 0)
			return rc;
		bin_remove(p, r->head);
		free(r->head);
		region_unlink(p, r);
		p->total_region_allocated -= r->size;
		freed += (int64_t)r->size;
		free(r);
	}
	return freed;
}

/* DeallocateFreeRegions: 1 when regions were freed and may help. */
static int deallocate_free_regions(struct bfc *p, uint64_t rounded)
{
	uint64_t free_bytes = 0;
	int64_t rc;

	if (!p->garbage_collection)
		return 0;
	for (struct region *r = p->regions; r; r = r->next_region)
		if (!r->head->in_use && !r->head->next)
			free_bytes += r->size;
	if (free_bytes == 0 || rounded > p->memory_limit - p->total_region_allocated + free_bytes)
		return 0;
	p->cache_flushes++;
	rc = free_regions(p);
	return rc < 0 ? (int)rc : 1;
}

static int bfc_alloc(struct mt_policy *pol, uint64_t bytes, uint64_t stream, size_t index,
                     uint64_t *address)
{
	struct bfc *p = (struct bfc *)pol;
	uint64_t rounded = rounded_bytes(bytes ? bytes : 1);
	struct chunk *c = find_chunk(p, rounded, bytes);
	int rc = 0;

	if (!c) {
		rc = extend(p, rounded);
		if (rc == 0) {
			rc = deallocate_free_regions(p, rounded);
			if (rc > 0)
				rc = extend(p, rounded);
		}
		if (rc < 0)
			return rc;
		c = rc ? find_chunk(p, rounded, bytes) : NULL;
		if (!c)
			return -ENOMEM;
	}
	if (rp_addrmap_put(&p->live, c->addr, (uint64_t)(uintptr_t)c) < 0) {
		c->in_use = false;
		bin_insert(p, coalesce(p, c));
		return -ENOMEM;
	}
	p->base.allocated += c->size;
	p->requested += c->requested;
	*address = c->addr;
	return 0;
}

static int bfc_free(struct mt_policy *pol, uint64_t address, uint64_t stream)
{
	struct bfc *p = (struct bfc *)pol;
	struct chunk *c;
	uint64_t v;

	if (!rp_addrmap_remove(&p->live, address, &v))
		return -EINVAL;
	c = (struct chunk *)(uintptr_t)v;
	c->in_use = false;
	p->base.allocated -= c->size;
	p->requested -= c->requested;
	bin_insert(p, coalesce(p, c));
	return 0;
}

static int bfc_empty_cache(struct mt_policy *pol)
{
	int64_t rc = free_regions((struct bfc *)pol);

	return rc < 0 ? (int)rc : 0;
}

static int bfc_walk(struct mt_policy *pol, mt_policy_walk_fn fn, void *data)
{
	struct bfc *p = (struct bfc *)pol;

	for (const struct region *r = p->regions; r; r = r->next_region) {
		struct mt_policy_block blk = { r->addr, r->size, 0, false };
		int rc = fn(data, true, &blk);

		for (const struct chunk *c = r->head; !rc && c; c = c->next) {
			blk = (struct mt_policy_block){ c->addr, c->size, 0, c->in_use };
			rc = fn(data, false, &blk);
		}
		if (rc)
			return rc;
	}
	return 0;
}

static void bfc_stats(struct mt_policy *pol, struct mt_policy_stats *st)
{
	struct bfc *p = (struct bfc *)pol;

	st->allocated = p->base.allocated;
	st->requested = p->requested;
	st->reserved = p->total_region_allocated;
	st->segments = p->nregions;
	st->largest_free = 0;
	for (int i = NUM_BINS - 1; i >= 0; i--) {
		struct rp_rb_node *n = rp_rb_last(&p->bins[i]);

		if (n) {
			st->largest_free = node_chunk(n)->size;
			break;
		}
	}
	st->cache_flushes = p->cache_flushes;
}

static void bfc_destroy(struct mt_policy *pol)
{
	struct bfc *p = (struct bfc *)pol;
	struct region *r, *next;

	if (!p)
		return;
	for (r = p->regions; r; r = next) {
		struct chunk *c = r->head, *cn;

		next = r->next_region;
		mt_backend_free(p->b, r->addr);
		for (; c; c = cn) {
			cn = c->next;
			free(c);
		}
		free(r);
	}
	rp_addrmap_release(&p->live);
	free(p);
}

static int bfc_create(struct mt_policy **out, struct mt_backend *b, const char *params, char *err,
                      size_t errlen)
{
	uint64_t allow_growth = 1, garbage_collection = 1;
	double fragmentation_fraction = 0.0;
	const struct rp_param defs[] = {
		{ "allow_growth", RP_PARAM_UINT, &allow_growth },
		{ "garbage_collection", RP_PARAM_UINT, &garbage_collection },
		{ "fragmentation_fraction", RP_PARAM_DOUBLE, &fragmentation_fraction },
	};
	struct bfc *p;
	int rc = rp_params_parse("bfc", params, defs, sizeof(defs) / sizeof(defs[0]), err, errlen);
	uint64_t limit = mt_backend_capacity(b);

	if (rc < 0)
		return rc;
	if (allow_growth > 1 || garbage_collection > 1 || fragmentation_fraction < 0.0 ||
	    fragmentation_fraction >= 1.0) {
		snprintf(err, errlen,
		         "policy bfc: allow_growth and garbage_collection are 0 or 1, "
		         "fragmentation_fraction in [0, 1)");
		return -EINVAL;
	}
	if (!allow_growth && limit > (1ull << 40)) {
		snprintf(err, errlen,
		         "policy bfc: allow_growth=0 takes the whole device: give a capacity");
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->base.ops = &rp_policy_bfc;
	p->b = b;
	p->memory_limit = limit;
	p->curr_region_allocation =
	        rounded_bytes(allow_growth ? (limit < (2ull << 20) ? limit : 2ull << 20) : limit);
	p->garbage_collection = garbage_collection;
	p->max_internal_fragmentation = fragmentation_fraction > 0.0
	                                        ? (uint64_t)(fragmentation_fraction * (double)limit)
	                                        : 128ull << 20;
	*out = &p->base;
	return 0;
}

const struct mt_policy_ops rp_policy_bfc = {
	.name = "bfc",
	.summary = "TensorFlow BFC allocator (256 B rounding, power-of-two bins, doubling regions)",
	.flags = 0,
	.create = bfc_create,
	.alloc = bfc_alloc,
	.free = bfc_free,
	.empty_cache = bfc_empty_cache,
	.walk = bfc_walk,
	.stats = bfc_stats,
	.destroy = bfc_destroy,
};
