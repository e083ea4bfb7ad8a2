/* buddy.c — a binary buddy allocator over power-of-two device segments.
 *
 * Models: the buddy system (Knowlton 1965; Knuth, TAOCP vol. 1, 2.5,
 * Algorithm R/S), as used by GPU runtimes that carve power-of-two arenas.
 * A request is rounded up to a power of two of at least min_block bytes;
 * when no free block of that order or above exists, the policy takes a new
 * segment with one cuMemAlloc of max(segment, the rounded request) bytes —
 * power-of-two segments from 2 MiB up to as large as a request needs. A
 * block splits in halves down to the order requested; a freed block merges
 * with its buddy (same size, address differing in that one bit relative to
 * the segment base) as long as the buddy is free. Segments are kept until
 * empty_cache; on OOM the policy frees its wholly free segments and retries
 * once. Parameters: min_block=SIZE (default 512 B), segment=SIZE (smallest
 * segment, default 2 MiB); both rounded up to powers of two.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "addrmap-private.h"
#include "policy-private.h"

extern const struct mt_policy_ops rp_policy_buddy;

#define ORDERS 64

struct buddy_segment {
	uint64_t address;
	unsigned order;
	struct buddy_segment *next;
};

struct block {
	uint64_t address;
	uint64_t requested; /* allocated: bytes asked */
	struct buddy_segment *segment;
	struct block *prev, *next; /* free list of its order (free) / spare list */
	unsigned order;            /* size = 1 << order */
	bool free;
};

struct buddy {
	struct mt_policy base;
	struct mt_backend *backend;
	unsigned min_order, segment_order;
	struct block *free_list[ORDERS];
	struct rp_addrmap blocks; /* address -> block (free and allocated) */
	struct buddy_segment *segments;
	struct block *spare;
	uint64_t requested, reserved, nsegments, flushes;
};

static unsigned log2_ceil(uint64_t x)
{
	unsigned k = 0;
	while (k < 63 && (1ull << k) < x)
		k++;
	return k;
}

static int buddy_create(struct mt_policy **out, struct mt_backend *b, const char *params, char *err,
                        size_t errlen)
{
	uint64_t min_block = 512, segment = 2ull << 20;
	const struct rp_param defs[] = {
		{ "min_block", RP_PARAM_SIZE, &min_block },
		{ "segment", RP_PARAM_SIZE, &segment },
	};
	int rc = rp_params_parse("buddy", params, defs, 2, err, errlen);
	if (rc < 0)
		return rc;
	if (!min_block || segment < min_block || log2_ceil(segment) > 48) {
		snprintf(err, errlen, "policy buddy: need 0 < min_block <= segment <= 256 TiB");
		return -EINVAL;
	}
	struct buddy *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->base.ops = &rp_policy_buddy;
	p->backend = b;
	p->min_order = log2_ceil(min_block);
	p->segment_order = log2_ceil(segment);
	*out = &p->base;
	return 0;
}

static void list_push(struct buddy *p, struct block *k)
{
	k->free = true;
	k->prev = NULL;
	k->next = p->free_list[k->order];
	if (k->next)
		k->next->prev = k;
	p->free_list[k->order] = k;
}

static void list_remove(struct buddy *p, struct block *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		p->free_list[k->order] = k->next;
	if (k->next)
		k->next->prev = k->prev;
	k->free = false;
}

static struct block *new_block(struct buddy *p, uint64_t address, unsigned order,
                               struct buddy_segment *seg)
{
	struct block *k = p->spare;
	if (k)
		p->spare = k->next;
	else if (!(k = malloc(sizeof(*k))))
		return NULL;
	*k = (struct block){ .address = address, .segment = seg, .order = order };
	if (rp_addrmap_put(&p->blocks, address, (uint64_t)(uintptr_t)k) < 0) {
		free(k);
		return NULL;
	}
	return k;
}

static void drop_block(struct buddy *p, struct block *k)
{
	rp_addrmap_remove(&p->blocks, k->address, NULL);
	k->next = p->spare;
	p->spare = k;
}

static struct block *lookup(struct buddy *p, uint64_t address)
{
	uint64_t v;
	return rp_addrmap_get(&p->blocks, address, &v) ? (struct block *)(uintptr_t)v : NULL;
}

/* Gives back wholly free segments (all when `all`). */
static int release_segments(struct buddy *p, bool all)
{
	struct buddy_segment **link = &p->segments;
	while (*link) {
		struct buddy_segment *seg = *link;
		struct block *k = lookup(p, seg->address);
		if (!all && !(k && k->free && k->order == seg->order)) {
			link = &seg->next;
			continue;
		}
		int rc = mt_backend_free(p->backend, seg->address);
		if (rc < 0)
			return rc;
		if (k && k->free && k->order == seg->order) {
			list_remove(p, k);
			drop_block(p, k);
		}
		p->reserved -= 1ull << seg->order;
		p->nsegments--;
		*link = seg->next;
		free(seg);
	}
	return 0;
}

static int buddy_empty_cache(struct mt_policy *pol)
{
	return release_segments((struct buddy *)pol, false);
}

static int add_segment(struct buddy *p, unsigned order)
{
	uint64_t address;
	int rc = mt_backend_alloc(p->backend, 1ull << order, &address);
	if (rc == -ENOMEM && p->reserved > p->base.allocated) {
		p->flushes++;
		if ((rc = release_segments(p, false)) < 0)
			return rc;
		rc = mt_backend_alloc(p->backend, 1ull << order, &address);
	}
	if (rc < 0)
		return rc;
	struct buddy_segment *seg = malloc(sizeof(*seg));
	struct block *k = seg ? new_block(p, address, order, seg) : NULL;
	if (!k) {
		free(seg);
		mt_backend_free(p->backend, address);
		return -ENOMEM;
	}
	*seg = (struct buddy_segment){ address, order, p->segments };
	p->segments = seg;
	p->reserved += 1ull << order;
	p->nsegments++;
	list_push(p, k);
	return 0;
}

static int buddy_alloc(struct mt_policy *pol, uint64_t bytes, uint64_t stream, size_t index,
                       uint64_t *address)
{
	struct buddy *p = (struct buddy *)pol;
	unsigned want = log2_ceil(bytes ? bytes : 1), j;
	if (want < p->min_order)
		want = p->min_order;
	if (want > 48)
		return -ENOMEM;
	for (j = want; j < ORDERS && !p->free_list[j]; j++)
		;
	if (j == ORDERS) {
		j = want > p->segment_order ? want : p->segment_order;
		int rc = add_segment(p, j);
		if (rc < 0)
			return rc;
	}
	struct block *k = p->free_list[j];
	list_remove(p, k);
	while (k->order > want) {
		k->order--;
		struct block *half =
		        new_block(p, k->address + (1ull << k->order), k->order, k->segment);
		if (!half) {
			k->order++;
			list_push(p, k);
			return -ENOMEM;
		}
		list_push(p, half);
	}
	k->requested = bytes;
	p->base.allocated += 1ull << k->order;
	p->requested += bytes;
	*address = k->address;
	return 0;
}

static int buddy_free(struct mt_policy *pol, uint64_t address, uint64_t stream)
{
	struct buddy *p = (struct buddy *)pol;
	struct block *k = lookup(p, address);
	if (!k || k->free)
		return -EINVAL;
	p->base.allocated -= 1ull << k->order;
	p->requested -= k->requested;
	uint64_t base = k->segment->address;
	while (k->order < k->segment->order) {
		uint64_t buddy_addr = base + ((k->address - base) ^ (1ull << k->order));
		struct block *b = lookup(p, buddy_addr);
		if (!b || !b->free || b->order != k->order)
			break;
		list_remove(p, b);
		if (b->address < k->address) {
			struct block *t = k;
			k = b;
			b = t;
		}
		drop_block(p, b);
		k->order++;
	}
	list_push(p, k);
	return 0;
}

static int buddy_walk(struct mt_policy *pol, mt_policy_walk_fn fn, void *data)
{
	struct buddy *p = (struct buddy *)pol;
	for (struct buddy_segment *seg = p->segments; seg; seg = seg->next) {
		struct mt_policy_block blk = { seg->address, 1ull << seg->order, 0, false };
		int rc = fn(data, true, &blk);
		uint64_t end = seg->address + (1ull << seg->order);
		for (uint64_t a = seg->address; !rc && a < end;) {
			struct block *k = lookup(p, a);
			if (!k)
				return -EIO; /* broken tiling: tests catch it */
			blk = (struct mt_policy_block){ a, 1ull << k->order, 0, !k->free };
			rc = fn(data, false, &blk);
			a += 1ull << k->order;
		}
		if (rc)
			return rc;
	}
	return 0;
}

static void buddy_stats(struct mt_policy *pol, struct mt_policy_stats *st)
{
	struct buddy *p = (struct buddy *)pol;
	uint64_t largest = 0;
	for (unsigned j = 0; j < ORDERS; j++)
		if (p->free_list[j])
			largest = 1ull << j;
	*st = (struct mt_policy_stats){ .allocated = p->base.allocated,
		                        .requested = p->requested,
		                        .reserved = p->reserved,
		                        .segments = p->nsegments,
		                        .largest_free = largest,
		                        .cache_flushes = p->flushes };
}

static void buddy_destroy(struct mt_policy *pol)
{
	struct buddy *p = (struct buddy *)pol;
	const struct rp_addrmap_slot *s;
	release_segments(p, true);
	while (p->segments) { /* only after a backend error */
		struct buddy_segment *n = p->segments->next;
		free(p->segments);
		p->segments = n;
	}
	for (size_t i = 0; rp_addrmap_next(&p->blocks, &i, &s);)
		free((struct block *)(uintptr_t)s->value);
	while (p->spare) {
		struct block *n = p->spare->next;
		free(p->spare);
		p->spare = n;
	}
	rp_addrmap_release(&p->blocks);
	free(p);
}

const struct mt_policy_ops rp_policy_buddy = {
	.name = "buddy",
	.summary = "binary buddy allocator over power-of-two segments (2 MiB and up)",
	.flags = 0,
	.create = buddy_create,
	.alloc = buddy_alloc,
	.free = buddy_free,
	.empty_cache = buddy_empty_cache,
	.walk = buddy_walk,
	.stats = buddy_stats,
	.destroy = buddy_destroy,
};
