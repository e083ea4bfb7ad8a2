/* async.c — policy `async`: the CUDA stream-ordered allocator
 * (cudaMallocAsync / cudaFreeAsync on the device's memory pool), as a
 * program gets it with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync,
 * TF_GPU_ALLOCATOR=cuda_malloc_async or plain cudaMallocAsync calls.
 *
 * Source: CUDA Programming Guide, "Stream Ordered Memory Allocator", and
 * PyTorch's c10/cuda/CUDAMallocAsyncAllocator.cpp for what a framework does
 * around it. Each request is one mt_backend_pool_alloc on its stream and
 * each free one mt_backend_pool_free; the pool's release threshold is the
 * capacity, so freed memory stays in the pool for reuse. When an allocation
 * fails, the pool is trimmed to nothing (cuMemPoolTrimTo 0) and the
 * allocation retried once, as PyTorch's backend does after synchronising;
 * empty_cache trims the pool too.
 *
 * Under the cuda backend this is the driver's real pool; under sim it is
 * the sim backend's documented approximation of it (replay/backend-sim.c),
 * hence MT_POLICY_SIM_APPROX. walk shows the pool's chunks and blocks where
 * the backend can see them (sim); the driver's pool keeps its layout to
 * itself, so under cuda each live allocation shows as a segment of its
 * own. allocated and requested are the requested bytes; reserved is the
 * pool's memory as the backend accounts it.
 *
 * Parameters: none. Left out: pool attributes other than the release
 * threshold, cross-stream dependencies (events), IPC pools.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "addrmap-private.h"
#include "policy-private.h"

extern const struct mt_policy_ops rp_policy_async;

struct async {
	struct mt_policy base;
	struct mt_backend *b;
	struct rp_addrmap live; /* address -> bytes */
	uint64_t cache_flushes;
};

static int async_create(struct mt_policy **out, struct mt_backend *b, const char *params, char *err,
                        size_t errlen)
{
	int rc = rp_params_parse("async", params, NULL, 0, err, errlen);
	struct async *p;

	if (rc < 0)
		return rc;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->base.ops = &rp_policy_async;
	p->b = b;
	*out = &p->base;
	return 0;
}

static int async_alloc(struct mt_policy *pol, uint64_t bytes, uint64_t stream, size_t index,
                       uint64_t *address)
{
	struct async *p = (struct async *)pol;
	uint64_t size = bytes ? bytes : 1;
	int rc = mt_backend_pool_alloc(p->b, size, stream, address);

	if (rc == -ENOMEM) {
		p->cache_flushes++;
		rc = mt_backend_pool_trim(p->b, 0);
		if (rc == 0)
			rc = mt_backend_pool_alloc(p->b, size, stream, address);
	}
	if (rc < 0)
		return rc;
	if (rp_addrmap_put(&p->live, *address, size) < 0) {
		mt_backend_pool_free(p->b, *address, stream);
		return -ENOMEM;
	}
	p->base.allocated += size;
	return 0;
}

static int async_free(struct mt_policy *pol, uint64_t address, uint64_t stream)
{
	struct async *p = (struct async *)pol;
	uint64_t bytes;

	if (!rp_addrmap_remove(&p->live, address, &bytes))
		return -EINVAL;
	p->base.allocated -= bytes;
	return mt_backend_pool_free(p->b, address, stream);
}

static int async_empty_cache(struct mt_policy *pol)
{
	return mt_backend_pool_trim(((struct async *)pol)->b, 0);
}

static int async_walk(struct mt_policy *pol, mt_policy_walk_fn fn, void *data)
{
	struct async *p = (struct async *)pol;
	int rc = mt_backend_pool_walk(p->b, fn, data);

	return rc == -ENOTSUP ? rp_policy_walk_own_segments(&p->live, fn, data) : rc;
}

/* Segments and the largest free block, as walk shows them. */
struct layout {
	uint64_t segments, largest_free;
};

static int count(void *data, bool is_segment, const struct mt_policy_block *blk)
{
	struct layout *l = data;

	if (is_segment)
		l->segments++;
	else if (!blk->allocated && blk->bytes > l->largest_free)
		l->largest_free = blk->bytes;
	return 0;
}

static void async_stats(struct mt_policy *pol, struct mt_policy_stats *st)
{
	struct async *p = (struct async *)pol;
	struct mt_backend_stats bs;
	struct layout l = { 0, 0 };

	async_walk(pol, count, &l);
	mt_backend_get_stats(p->b, &bs);
	st->allocated = p->base.allocated;
	st->requested = p->base.allocated;
	st->reserved = bs.reserved;
	st->segments = l.segments;
	st->largest_free = l.largest_free;
	st->cache_flushes = p->cache_flushes;
}

static void async_destroy(struct mt_policy *pol)
{
	struct async *p = (struct async *)pol;
	const struct rp_addrmap_slot *s;

	if (!p)
		return;
	for (size_t i = 0; rp_addrmap_next(&p->live, &i, &s);)
		mt_backend_pool_free(p->b, s->key, 0);
	mt_backend_pool_trim(p->b, 0);
	rp_addrmap_release(&p->live);
	free(p);
}

const struct mt_policy_ops rp_policy_async = {
	.name = "async",
	.summary = "CUDA stream-ordered pool (cudaMallocAsync); sim: documented approximation",
	.flags = MT_POLICY_POOL | MT_POLICY_SIM_APPROX,
	.create = async_create,
	.alloc = async_alloc,
	.free = async_free,
	.empty_cache = async_empty_cache,
	.walk = async_walk,
	.stats = async_stats,
	.destroy = async_destroy,
};
