/* firstfit.c — a textbook firstfit allocator over device segments.
 *
 * Models: first fit: the free block with the lowest address that holds the request, as in Knuth,
 * TAOCP vol. 1, 2.5 ("Dynamic Storage Allocation") and Wilson et al., "Dynamic Storage Allocation:
 * A Survey and Critical Review" (1995), over segments taken from the driver. Parameters:
 * segment=SIZE (minimum segment; default 0 = each segment is its first request rounded up to 2
 * MiB), round=SIZE (request rounding, default 512 B). Free blocks merge with free neighbours; free
 * segments are kept until empty_cache or an OOM (free-cache-and-retry). The engine is shared with
 * the other fit in replay/fit-policy.c.
 */
#include "config.h"

#include "fit-policy-private.h"

extern const struct mt_policy_ops rp_policy_firstfit;

static int firstfit_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                           char *err, size_t errlen)
{
	return rp_fit_policy_create(out, &rp_policy_firstfit, RP_ARENA_FIRST_FIT, b, params, err,
	                            errlen);
}

const struct mt_policy_ops rp_policy_firstfit = {
	.name = "firstfit",
	.summary = "first fit (lowest address) over 2 MiB-rounded segments, split and merge",
	.flags = 0,
	.create = firstfit_create,
	.alloc = rp_fit_policy_alloc,
	.free = rp_fit_policy_free,
	.empty_cache = rp_fit_policy_empty_cache,
	.walk = rp_fit_policy_walk,
	.stats = rp_fit_policy_stats,
	.destroy = rp_fit_policy_destroy,
};
