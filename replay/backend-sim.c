/* backend-sim.c — the simulated device: a virtual address space with a
 * capacity, no GPU needed.
 *
 * Models: the CUDA driver's allocation APIs as seen by an allocator.
 * - Plain memory (cuMemAlloc) and VMM address reservations get addresses
 *   from two bump regions that are never reused (2^64 bytes of address
 *   space outlast any trace), 512-byte aligned and 2 MiB aligned; physical
 *   handles (cuMemCreate) are counters. Only held bytes count against the
 *   capacity, exactly as backend.c accounts for the cuda backend, so both
 *   backends report the same reserved bytes for the same calls.
 * - The stream-ordered pool (cudaMallocAsync on a pool whose release
 *   threshold is the capacity) is a documented approximation: the driver's
 *   pool is closed source. Requests are rounded to 512 bytes; the pool
 *   grows in chunks of the request rounded up to 2 MiB; a chunk is split
 *   best fit and freed blocks merge with free neighbours; a request is
 *   served first from blocks freed on its own stream, then from blocks freed
 *   on other streams (the driver's opportunistic reuse: during a replay no
 *   GPU work is pending, so a freed block is always safe to reuse), and only
 *   then grows the pool. Memory stays in the pool until trimmed
 *   (release threshold = capacity); trim gives back wholly free chunks.
 *   Sources: CUDA Programming Guide, "Stream Ordered Memory Allocator";
 *   cuMemPoolTrimTo and CU_MEMPOOL_ATTR_REUSE_* in the driver API reference.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "arena-private.h"
#include "backend-private.h"

#define SIM_GRANULARITY (2ull << 20)
#define SIM_ALIGN 512ull
#define SIM_PLAIN_BASE 0x7f0000000000ull
#define SIM_VA_BASE 0x100000000000ull

struct sim {
	uint64_t next_plain;
	uint64_t next_va;
	uint64_t next_handle;
	struct rp_arena pool;
};

static uint64_t round_up(uint64_t x, uint64_t to)
{
	return (x + to - 1) / to * to;
}

static int sim_alloc(struct mt_backend *b, uint64_t bytes, uint64_t *address)
{
	struct sim *s = b->priv;
	*address = s->next_plain;
	s->next_plain += round_up(bytes, SIM_ALIGN);
	return 0;
}

static int sim_nop_free(struct mt_backend *b, uint64_t address)
{
	return 0;
}

static int sim_va_reserve(struct mt_backend *b, uint64_t bytes, uint64_t *va)
{
	struct sim *s = b->priv;
	*va = s->next_va;
	s->next_va += bytes + SIM_GRANULARITY; /* a guard gap between reservations */
	return 0;
}

static int sim_va_free(struct mt_backend *b, uint64_t va, uint64_t bytes)
{
	return 0;
}

static int sim_mem_create(struct mt_backend *b, uint64_t bytes, uint64_t *handle)
{
	struct sim *s = b->priv;
	*handle = ++s->next_handle;
	return 0;
}

static int sim_pool_alloc(struct mt_backend *b, uint64_t bytes, uint64_t stream, uint64_t *address,
                          unsigned *grew)
{
	struct sim *s = b->priv;
	uint64_t need = round_up(bytes, SIM_ALIGN), granted;
	int rc = rp_arena_alloc(&s->pool, need, bytes, stream, address, &granted);
	if (rc == -ENOSPC)
		rc = rp_arena_alloc_any(&s->pool, need, bytes, stream, address, &granted);
	if (rc == -ENOSPC) {
		uint64_t chunk = round_up(need, SIM_GRANULARITY);
		if (chunk > rp_backend_room(b))
			return rp_backend_fail(b, -ENOMEM,
			                       "pool growth by %llu bytes exceeds the capacity",
			                       (unsigned long long)chunk);
		uint64_t base;
		sim_alloc(b, chunk, &base);
		if ((rc = rp_arena_add_segment(&s->pool, base, chunk, stream, 0)) < 0)
			return rp_backend_fail(b, rc, "out of host memory");
		b->pool_reserved += chunk;
		*grew = 1;
		rc = rp_arena_alloc(&s->pool, need, bytes, stream, address, &granted);
	}
	if (rc < 0)
		return rp_backend_fail(b, rc == -ENOSPC ? -ENOMEM : rc, "pool allocation failed");
	return 0;
}

static int sim_pool_free(struct mt_backend *b, uint64_t address, uint64_t stream)
{
	struct sim *s = b->priv;
	uint64_t bytes;
	if (rp_arena_free(&s->pool, address, stream, &bytes) < 0)
		return rp_backend_fail(b, -EINVAL, "pool free of 0x%llx, which is not allocated",
		                       (unsigned long long)address);
	return 0;
}

struct trim_ctx {
	struct mt_backend *b;
	unsigned released;
};

static int trim_one(void *data, const struct rp_arena_segment *seg)
{
	struct trim_ctx *t = data;
	t->b->pool_reserved -= seg->bytes;
	t->released++;
	return 0;
}

static int sim_pool_trim(struct mt_backend *b, uint64_t keep_bytes, unsigned *released)
{
	struct sim *s = b->priv;
	struct trim_ctx t = { b, 0 };
	int rc = rp_arena_release_segments(&s->pool, false, keep_bytes, trim_one, &t);
	*released = t.released;
	return rc;
}

static int sim_pool_walk(struct mt_backend *b, mt_policy_walk_fn fn, void *data)
{
	return rp_arena_walk(&((struct sim *)b->priv)->pool, fn, data);
}

static int sim_mem_info(struct mt_backend *b, uint64_t *free_bytes, uint64_t *total_bytes)
{
	*free_bytes = rp_backend_room(b);
	*total_bytes = b->capacity;
	return 0;
}

static void sim_destroy(struct mt_backend *b)
{
	struct sim *s = b->priv;
	struct trim_ctx t = { b, 0 };
	rp_arena_release_segments(&s->pool, true, 0, trim_one, &t);
	rp_arena_release(&s->pool);
	free(s);
}

static const struct rp_backend_impl sim_impl = {
	.kind = MT_BACKEND_SIM,
	.name = "sim",
	.alloc = sim_alloc,
	.free = sim_nop_free,
	.va_reserve = sim_va_reserve,
	.va_free = sim_va_free,
	.mem_create = sim_mem_create,
	.mem_release = sim_nop_free,
	.map = NULL, /* mappings are backend.c's bookkeeping alone */
	.unmap = NULL,
	.pool_alloc = sim_pool_alloc,
	.pool_free = sim_pool_free,
	.pool_trim = sim_pool_trim,
	.pool_walk = sim_pool_walk,
	.mem_info = sim_mem_info,
	.destroy = sim_destroy,
};

int rp_backend_sim_init(struct mt_backend *b, unsigned ordinal)
{
	struct sim *s = calloc(1, sizeof(*s));
	if (!s)
		return rp_backend_fail(b, -ENOMEM, "out of memory");
	s->next_plain = SIM_PLAIN_BASE;
	s->next_va = SIM_VA_BASE;
	rp_arena_init(&s->pool, RP_ARENA_BEST_FIT, true, SIM_ALIGN);
	b->impl = &sim_impl;
	b->priv = s;
	b->granularity = SIM_GRANULARITY;
	return 0;
}
