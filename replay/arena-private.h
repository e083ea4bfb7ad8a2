/* arena-private.h — segments split into blocks, the engine shared by the
 * bestfit and firstfit policies and by the sim backend's stream-ordered
 * pool.
 *
 * The owner obtains segments (memory from a backend) and hands them to the
 * arena; the arena splits free blocks to serve requests and merges a freed
 * block with free address neighbours of its segment. Free blocks sit in
 * ordered sets for the chosen fit: best fit, one set by (stream, size,
 * position) in size-class bins (sizebins-private.h); first fit, per
 * segment a red-black tree of its free blocks by address in which each
 * block keeps the size of the largest free block of its subtree, and the
 * largest free block of every segment in an array in creation order: the
 * first fit is a scan of that array for the first segment that holds a
 * block large enough, then one descent of its tree: left while the left
 * subtree holds one, else the block itself if it fits, else right. (One
 * tree of every free block took more levels, each a branch that the
 * random pattern mispredicts: bench/RESULTS.md.) A position is (segment
 * creation number, address): never the address alone, which differs
 * between backends and runs, so that sim and cuda replays choose the same
 * blocks.
 * With per_stream set (best fit only) a block freed on stream s serves
 * stream s first (rp_arena_alloc), others only when asked
 * (rp_arena_alloc_any).
 * Allocated blocks are found by address through a hash map.
 */
#ifndef MEMTRACE_ARENA_PRIVATE_H
#define MEMTRACE_ARENA_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include "addrmap-private.h"
#include "memtrace-replay.h"
#include "rbtree-private.h"
#include "sizebins-private.h"

enum rp_arena_fit {
	RP_ARENA_BEST_FIT = 0,
	RP_ARENA_FIRST_FIT = 1,
};

struct rp_arena_segment;

/* A block. The tree node and the fields the trees order by come first and
 * records start on a cache line, so a step of a descent reads one line:
 * best fit's (stream, bytes, seq, address), first fit's largest, bytes
 * (and seq, address when a block goes in). A fit uses one of stream and
 * largest, which share their place. */
struct rp_arena_block {
	struct rp_rb_node node; /* in the free tree while free */
	union {
		uint64_t stream;  /* best fit: 0 unless per_stream */
		uint64_t largest; /* first fit, free: the largest free block of its subtree */
	};
	uint64_t bytes;
	uint64_t seq; /* its segment's creation number */
	uint64_t address;
	struct rp_arena_block *prev, *next; /* address neighbours in the segment */
	struct rp_arena_segment *segment;
	uint64_t requested; /* allocated: bytes the owner was asked for */
	bool allocated;
};

struct rp_arena_segment {
	uint64_t address;
	uint64_t bytes;
	uint64_t stream;
	uint64_t tag; /* the owner's (backend handle, ...) */
	uint64_t seq; /* creation number: orders segments (addresses differ by backend) */
	struct rp_arena_block *first;
	struct rp_rb_node node; /* in the segment tree, by seq */
	/* first fit: its free blocks by address, augmented, and its index in
	 * rp_arena.ff_segments */
	struct rp_rb_tree free;
	size_t index;
};

struct rp_arena {
	enum rp_arena_fit fit;
	bool per_stream;
	uint64_t min_split;           /* remainders smaller than this stay in the block */
	struct rp_sizebins free_bins; /* best fit: free blocks */
	/* first fit: the segments in creation order and the largest free
	 * block of each */
	struct rp_arena_segment **ff_segments;
	uint64_t *ff_largest;
	size_t ff_count, ff_cap;
	struct rp_rb_tree segments; /* by creation (seq) */
	uint64_t next_seq;
	struct rp_addrmap live;       /* address -> allocated block */
	uint64_t allocated;           /* bytes of allocated blocks */
	uint64_t requested;           /* their requested bytes */
	uint64_t reserved;            /* bytes of segments */
	struct rp_arena_block *spare; /* recycled block records (linked by next) */
};

void rp_arena_init(struct rp_arena *a, enum rp_arena_fit fit, bool per_stream, uint64_t min_split);
/* Frees the arena's records; the owner releases the segments' memory first
 * (rp_arena_release_segments with all = true). */
void rp_arena_release(struct rp_arena *a);

/* Adds a segment [address, address + bytes) whose whole extent is free. */
int rp_arena_add_segment(struct rp_arena *a, uint64_t address, uint64_t bytes, uint64_t stream,
                         uint64_t tag);

/* Serves bytes (already rounded by the owner; `requested` is what the
 * program asked for, kept with the block) from a free block of this
 * stream (any stream when per_stream is off). *granted receives the
 * block's size (bytes, or a little more when the remainder was too small to
 * split). Returns 0, -ENOSPC when no free block fits, or -ENOMEM. */
int rp_arena_alloc(struct rp_arena *a, uint64_t bytes, uint64_t requested, uint64_t stream,
                   uint64_t *address, uint64_t *granted);
/* As rp_arena_alloc, from a free block of any stream (best fit only). */
int rp_arena_alloc_any(struct rp_arena *a, uint64_t bytes, uint64_t requested, uint64_t stream,
                       uint64_t *address, uint64_t *granted);

/* Frees the block at address (freed on `stream`). *bytes receives its size.
 * Returns 0 or -ENOENT when no allocated block starts there. */
int rp_arena_free(struct rp_arena *a, uint64_t address, uint64_t stream, uint64_t *bytes);

/* Called for each segment removed by rp_arena_release_segments. */
typedef int (*rp_arena_release_fn)(void *data, const struct rp_arena_segment *seg);

/* Removes segments (all when `all`, else the wholly free ones in creation
 * order until reserved <= keep_bytes), calling fn for each before
 * forgetting it. Stops at fn's first error and returns it; else 0. */
int rp_arena_release_segments(struct rp_arena *a, bool all, uint64_t keep_bytes,
                              rp_arena_release_fn fn, void *data);

/* Walk in segment creation order, as mt_policy_ops.walk. */
int rp_arena_walk(struct rp_arena *a, mt_policy_walk_fn fn, void *data);

/* Largest free block. */
uint64_t rp_arena_largest_free(const struct rp_arena *a);

#endif /* MEMTRACE_ARENA_PRIVATE_H */
