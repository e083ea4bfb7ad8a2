/* block-pool-private.h — the PyTorch CUDA caching allocator engine shared by
 * the `caching` and `expandable` policies (and by `stitch` for its small
 * requests).
 *
 * PyTorch has one allocator (DeviceCachingAllocator in
 * c10/cuda/CUDACachingAllocator.cpp) whose `expandable_segments` option
 * swaps how segments are obtained: cudaMalloc'd segments or one growing VMM
 * reservation per (stream, pool). Three files, each using only those above
 * it:
 * - torch-blocks.c: the records (blocks, segments), a pool's ordered sets,
 *   splitting and merging neighbours (the steps of every free, merging and
 *   inserting a free block, inline in this header);
 * - expandable-segment.c: ExpandableSegment and its map/unmap helpers;
 * - block-pool.c: the allocator — rounding, pools, best fit by (stream,
 *   size, address), split and merge, the OOM retry ladder, garbage
 *   collection, walk and stats — over cudaMalloc'd segments or expandable
 *   ones.
 * replay/policies/caching.c and expandable.c are the two policies made of
 * it; their comments say what is modelled and what is left out.
 */
#ifndef MEMTRACE_BLOCK_POOL_PRIVATE_H
#define MEMTRACE_BLOCK_POOL_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addrmap-private.h"
#include "memtrace-replay.h"
#include "rbtree-private.h"
#include "sizebins-private.h"

/* Constants of CUDACachingAllocator.cpp (same names, same values). */
#define TORCH_MIN_BLOCK_SIZE 512ull         /* kMinBlockSize */
#define TORCH_SMALL_SIZE (1ull << 20)       /* kSmallSize: largest small request */
#define TORCH_SMALL_BUFFER (2ull << 20)     /* kSmallBuffer: small segment */
#define TORCH_MIN_LARGE_ALLOC (10ull << 20) /* kMinLargeAlloc */
#define TORCH_ROUND_LARGE (2ull << 20)      /* kRoundLarge */
#define TORCH_LARGE_BUFFER (20ull << 20)    /* kLargeBuffer */

/* PYTORCH_CUDA_ALLOC_CONF options the model honours. */
struct torch_options {
	uint64_t max_split_size;           /* UINT64_MAX: unlimited (default) */
	uint64_t max_non_split_rounding;   /* default kLargeBuffer */
	unsigned roundup_power2_divisions; /* 0: off (default); else a power of two */
	double gc_threshold;               /* garbage_collection_threshold, 0: off */
	bool expandable;                   /* expandable_segments:True */
	uint64_t large_segment;            /* expandable large-pool page: kLargeBuffer */
	uint64_t va_size;                  /* expandable reservation; 0: capacity * 9/8 */
};

struct torch_segment;
struct torch_pool;

/* A Block: a range of a segment, free or allocated. A free block sits in
 * one ordered set: its pool's free blocks (mapped) or its pool's unmapped
 * blocks (expandable); an allocated one is in the allocator's active map. */
struct torch_block {
	/* the node and the key fields first: one cache line per tree step */
	struct rp_rb_node node;
	uint64_t stream;
	uint64_t size;
	uint64_t place; /* its segment's place (struct torch_segment) */
	uint64_t addr;
	struct torch_block *prev, *next; /* neighbours in the segment, by address */
	struct torch_pool *pool;
	struct torch_segment *seg;
	uint64_t requested;
	int64_t gc_count_base;
	bool allocated;
	bool mapped; /* false only for unmapped address space of an expandable segment */
};

/* A BlockPool: free blocks ordered by (stream, size, address), unmapped
 * blocks by (stream, address). */
struct torch_pool {
	struct rp_sizebins blocks;
	struct rp_rb_tree unmapped;
	bool is_small;
	int64_t get_free_blocks_call_count;
	struct torch_block *spare; /* recycled block records, linked by next */
};

/* What the policy holds from the backend: a cudaMalloc'd segment, or an
 * expandable segment (a VA reservation with one physical handle per page
 * mapped on demand). */
struct torch_segment {
	struct torch_segment *prev_seg, *next_seg; /* all segments, in creation order */
	struct torch_block *head;                  /* the block at the lowest address */
	struct torch_pool *pool;
	/* where it lies among the segments, for the orders: where the recorded
	 * run's driver placed it, else below every segment made before it (see
	 * rp_torch_cmp_size) */
	uint64_t place;
	uint64_t stream;
	uint64_t addr;
	uint64_t size; /* bytes of memory (cudaMalloc) or of address space (expandable) */
	bool expandable;
	/* expandable only */
	uint64_t page;     /* segment_size_: 2 MiB small pool, large_segment large pool */
	uint64_t *handles; /* handles[i]: physical page mapped at addr + i * page, 0: none */
	size_t nhandles, handles_cap;
};

/* A driver allocation of the recorded run (place_segments). */
struct torch_recorded {
	uint64_t bytes;
	uint64_t address;
	size_t order; /* in the recording */
	size_t taken; /* first of a size only: how many of that size new segments took */
};

struct torch_alloc {
	struct mt_policy base; /* its allocated: rounded block sizes handed out */
	struct mt_backend *b;
	struct torch_options opt;
	struct torch_pool large, small;
	struct rp_addrmap active; /* allocated blocks: address -> struct torch_block * */
	struct torch_segment *segs, *segs_tail;
	uint64_t allowed_max; /* allowed_memory_maximum: the backend's capacity */
	uint64_t reserved;    /* total_allocated_memory */
	uint64_t requested;
	uint64_t nsegments;
	uint64_t lowest_place; /* the lowest place a segment took; 0: none yet */
	/* the recording's driver allocations by (bytes, order); NULL: none */
	struct torch_recorded *recorded;
	size_t nrecorded;
	struct rp_addrmap recorded_sizes; /* bytes -> index of the first of that size */
	uint64_t cache_flushes;
};

/* Creates the policy `ops` over backend b: PyTorch's defaults, then params
 * ("key=value,...": max_split_size, max_non_split_rounding_size,
 * roundup_power2_divisions, garbage_collection_threshold, and for
 * expandable large_segment_size, va_size), with expandable segments when
 * asked. Returns
 * 0, or a negative errno with a message in err (-ENOTSUP: expandable pages
 * are not multiples of the backend's granularity). */
int rp_torch_alloc_create(struct mt_policy **out, const struct mt_policy_ops *ops,
                          struct mt_backend *b, const char *params, bool expandable, char *err,
                          size_t errlen);
/* The `caching` policy (caching.c), which stitch embeds for its small
 * requests. */
extern const struct mt_policy_ops rp_policy_caching;

/* The policy operations (struct mt_policy_ops signatures). */
int rp_torch_alloc_alloc(struct mt_policy *p, uint64_t bytes, uint64_t stream, size_t request_index,
                         uint64_t *address);
int rp_torch_alloc_free(struct mt_policy *p, uint64_t address, uint64_t stream);
int rp_torch_alloc_empty_cache(struct mt_policy *p);
int rp_torch_alloc_walk(struct mt_policy *p, mt_policy_walk_fn fn, void *data);
void rp_torch_alloc_stats(struct mt_policy *p, struct mt_policy_stats *stats);
void rp_torch_alloc_destroy(struct mt_policy *p);

/* ---- records and ordered sets (torch-blocks.c) ---- */

/* The block of a node of a pool's set (NULL for NULL). */
static inline struct torch_block *rp_torch_block_of(struct rp_rb_node *n)
{
	return n ? rp_rb_entry(n, struct torch_block, node) : NULL;
}

static inline const struct torch_block *rp_torch_node_block(const struct rp_rb_node *n)
{
	return rp_rb_entry(n, const struct torch_block, node);
}

/* Whether b is a part of its segment (has neighbours). */
static inline bool rp_torch_is_split(const struct torch_block *b)
{
	return b->prev || b->next;
}

/* BlockComparatorSize, (stream, size, address), the order of pool->blocks.
 * PyTorch orders blocks by raw device pointers, so among free blocks of one
 * size it takes the one at the lowest address, and where cudaMalloc placed
 * each segment decides which. Here a block's "address" in an order is
 * (segment place, address). A segment's place is the address at which the
 * recorded run's driver placed it, when the replay was given the
 * recording's driver allocations (place_segments: the k-th new segment of a
 * size takes the place of the recording's k-th driver allocation of that
 * size); else, or once those of its size are used up, it is placed below
 * every earlier segment. That rule alone matched PyTorch on the sample
 * traces (the opposite one made the replay of BERT, checkpointed, at 120
 * sequences of the validation reserve 19 % more than PyTorch did), but the
 * driver does not follow it: it put 88 of the 136 segments of the GPT-2
 * snapshot of samples/snapshots above an earlier one, and the replay
 * reserved 8 MiB more than PyTorch; with the recorded places it reserves
 * what PyTorch reserved. The order does not depend on where a backend
 * happens to place segments, so sim and cuda replays choose alike. Inline,
 * as the descents of every allocation use it. */
static inline int rp_torch_cmp_size(const struct rp_rb_node *a, const struct rp_rb_node *b)
{
	const struct torch_block *x = rp_torch_node_block(a), *y = rp_torch_node_block(b);

	return rp_cmp4(x->stream, y->stream, x->size, y->size, x->place, y->place, x->addr,
	               y->addr);
}

/* A search key of pool->blocks' order (rp_torch_cmp_size): a block's four
 * ordering fields alone, so that a search does not fill a whole block
 * record on the stack. */
struct torch_key {
	uint64_t stream, size, place, addr;
};

/* Searches pool->blocks by a struct torch_key. */
static inline int rp_torch_key_size(const void *key, const struct rp_rb_node *n)
{
	const struct torch_key *k = key;
	const struct torch_block *y = rp_torch_node_block(n);

	return rp_cmp4(k->stream, y->stream, k->size, y->size, k->place, y->place, k->addr,
	               y->addr);
}

struct torch_block *rp_torch_block_new(struct torch_segment *seg, struct torch_pool *pool,
                                       uint64_t stream, uint64_t addr, uint64_t size);
/* Returns a block record (in no set, unlinked) to its pool's spares. */
static inline void rp_torch_block_recycle(struct torch_block *b)
{
	b->next = b->pool->spare;
	b->pool->spare = b;
}

/* Links b between before and after (either may be NULL) and keeps seg->head. */
void rp_torch_block_splice(struct torch_block *b, struct torch_block *before,
                           struct torch_block *after);
/* BlockComparatorAddress: (stream, address), the order of pool->unmapped
 * (see torch-blocks.c for what "address" means here). */
int rp_torch_cmp_address(const struct rp_rb_node *a, const struct rp_rb_node *b);
/* insert_into_blocks: into pool->blocks, stamping the gc counter. */
static inline void rp_torch_pool_insert_free(struct torch_pool *pool, struct torch_block *b)
{
	b->gc_count_base = pool->get_free_blocks_call_count;
	rp_sizebins_insert(&pool->blocks, &b->node, b->stream, b->size, rp_torch_cmp_size);
}

void rp_torch_pool_insert_unmapped(struct torch_pool *pool, struct torch_block *b);
/* try_merge_blocks: merges src into dst when src is free and mapped alike;
 * returns the bytes subsumed (0: no merge). */
static inline uint64_t rp_torch_try_merge(struct torch_block *dst, struct torch_block *src)
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
	if (src->mapped)
		rp_sizebins_erase(&src->pool->blocks, &src->node);
	else
		rp_rb_erase(&src->pool->unmapped, &src->node);
	rp_torch_block_recycle(src);
	return subsumed;
}

/* A segment record over [addr, addr + bytes) at its place (see
 * rp_torch_cmp_size), holding one block of its whole extent (mapped, in no
 * set), appended to t's segments and counted. Returns that block, or NULL
 * (no memory). */
struct torch_block *rp_torch_segment_add(struct torch_alloc *t, struct torch_pool *pool,
                                         uint64_t stream, uint64_t addr, uint64_t bytes);
/* Removes a segment record from t's segments (uncounts it). */
void rp_torch_segment_unlink(struct torch_alloc *t, struct torch_segment *s);
/* place_segments (struct mt_policy_ops): keeps where the recording's driver
 * placed its allocations, for the places of new segments. */
int rp_torch_alloc_place_segments(struct mt_policy *p, const struct mt_recorded_segment *segs,
                                  size_t n);

/* ---- expandable segments (expandable-segment.c) ---- */

/* try_allocate_expandable_block: finds or creates address space for size
 * bytes on stream in pool, maps the pages it lacks, and returns the free
 * mapped block (removed from the pool) in *out. Returns 1, 0 when the
 * backend is out of memory, or a negative errno. */
int rp_torch_expandable_allocate(struct torch_alloc *t, struct torch_pool *pool, uint64_t stream,
                                 uint64_t size, struct torch_block **out);
/* unmap_block: unmaps the whole pages inside free block b. Returns 0 or a
 * negative errno. */
int rp_torch_expandable_unmap_block(struct torch_alloc *t, struct torch_block *b);
/* release_expandable_segment: frees the reservation of a segment that is
 * one unmapped block. */
int rp_torch_expandable_release(struct torch_alloc *t, struct torch_block *b);
/* Unmaps and releases every page and the reservation (destroy). */
void rp_torch_expandable_destroy_segment(struct torch_alloc *t, struct torch_segment *s);

#endif /* MEMTRACE_BLOCK_POOL_PRIVATE_H */
