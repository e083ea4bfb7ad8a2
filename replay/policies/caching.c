/* caching.c — policy `caching`: PyTorch's CUDA caching allocator.
 *
 * Models DeviceCachingAllocator of c10/cuda/CUDACachingAllocator.cpp as in
 * PyTorch 2.5–2.11 (read at pytorch/pytorch commit 001074d2 and checked
 * against the later AcceleratorAllocatorConfig split; the logic is
 * unchanged across those versions), with the configuration of
 * c10/cuda/CUDAAllocatorConfig.cpp / c10/core/AllocatorConfig.cpp. The code
 * is the engine it shares with `expandable` (replay/block-pool.c and the
 * files block-pool-private.h names); this file is the policy.
 *
 * What it does, as PyTorch does:
 * - round_size: requests below 512 B become 512 B, others round up to 512 B,
 *   or, with roundup_power2_divisions=N, to the next of N equal divisions
 *   between two powers of two (when size > 512 * N).
 * - two pools: requests of at most 1 MiB (after rounding) in the small pool,
 *   the rest in the large pool; each pool keeps its free blocks of every
 *   stream in one set ordered by (stream, size, address) — the address taken
 *   as (segment place, address): where the recorded run's cudaMalloc placed
 *   the segment (place_segments: the trace's driver allocations), else below
 *   the earlier segments, see rp_torch_cmp_size.
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
 * sample traces and the 12 validation traces of predict the peak reserved
 * equals torch.cuda.max_memory_reserved() and the peak allocated
 * torch.cuda.max_memory_allocated(), to the byte
 * (tests/policies/test-fidelity.c).
 *
 * Left out: recordStream/cross-stream events (a trace replays each free as
 * completed), CUDA graph private pools and mempools, IPC, the per-interval
 * list form of roundup_power2_divisions, free-memory callbacks, pinned host
 * memory, and lock release around cudaMalloc.
 */
#include "config.h"

#include "block-pool-private.h"

static int caching_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                          char *err, size_t errlen);

const struct mt_policy_ops rp_policy_caching = {
	.name = "caching",
	.summary = "PyTorch CUDACachingAllocator (cudaMalloc segments, best fit, split/merge)",
	.flags = 0,
	.create = caching_create,
	.alloc = rp_torch_alloc_alloc,
	.free = rp_torch_alloc_free,
	.empty_cache = rp_torch_alloc_empty_cache,
	.place_segments = rp_torch_alloc_place_segments,
	.walk = rp_torch_alloc_walk,
	.stats = rp_torch_alloc_stats,
	.destroy = rp_torch_alloc_destroy,
};

static int caching_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                          char *err, size_t errlen)
{
	return rp_torch_alloc_create(out, &rp_policy_caching, b, params, false, err, errlen);
}
