/* expandable.c — policy `expandable`: PyTorch's caching allocator with
 * expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True).
 *
 * Models ExpandableSegment and DeviceCachingAllocator's find_expandable_block,
 * map_block, try_allocate_expandable_block, unmap_block and
 * release_expandable_segment of c10/cuda/CUDACachingAllocator.cpp (PyTorch
 * 2.5–2.11, read at pytorch/pytorch commit 001074d2; large_segment_size
 * became a config option, default 20 MiB, with AcceleratorAllocatorConfig).
 * The segments are replay/expandable-segment.c; everything else — rounding,
 * pools, best fit, split/merge, the OOM retry — is the caching allocator's
 * own engine, replay/block-pool.c (block-pool-private.h).
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

#include "block-pool-private.h"

static int expandable_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                             char *err, size_t errlen);

const struct mt_policy_ops rp_policy_expandable = {
	.name = "expandable",
	.summary = "PyTorch caching allocator with expandable segments (VMM pages on demand)",
	.flags = MT_POLICY_NEEDS_VMM,
	.create = expandable_create,
	.alloc = rp_torch_alloc_alloc,
	.free = rp_torch_alloc_free,
	.empty_cache = rp_torch_alloc_empty_cache,
	.walk = rp_torch_alloc_walk,
	.stats = rp_torch_alloc_stats,
	.destroy = rp_torch_alloc_destroy,
};

static int expandable_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                             char *err, size_t errlen)
{
	return rp_torch_alloc_create(out, &rp_policy_expandable, b, params, true, err, errlen);
}
