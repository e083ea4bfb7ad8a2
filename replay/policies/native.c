/* native.c — no allocator at all: every request is one driver allocation
 * (cuMemAlloc) and every free one cuMemFree, as a program calling
 * cudaMalloc/cudaFree directly does.
 *
 * Source: the CUDA driver API (cuMemAlloc/cuMemFree). Parameters: none.
 * Reserved equals the requested bytes live at once, so native shows the
 * lower bound's cost in driver calls rather than in memory.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "addrmap-private.h"
#include "policy-private.h"

extern const struct mt_policy_ops rp_policy_native;

struct native {
	struct mt_policy base;
	struct mt_backend *backend;
	struct rp_addrmap live; /* address -> bytes */
};

static int native_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                         char *err, size_t errlen)
{
	int rc = rp_params_parse("native", params, NULL, 0, err, errlen);
	if (rc < 0)
		return rc;
	struct native *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->base.ops = &rp_policy_native;
	p->backend = b;
	*out = &p->base;
	return 0;
}

static int native_alloc(struct mt_policy *pol, uint64_t bytes, uint64_t stream, size_t index,
                        uint64_t *address)
{
	struct native *p = (struct native *)pol;
	int rc = mt_backend_alloc(p->backend, bytes, address);
	if (rc < 0)
		return rc;
	if (rp_addrmap_put(&p->live, *address, bytes) < 0) {
		mt_backend_free(p->backend, *address);
		return -ENOMEM;
	}
	p->base.allocated += bytes;
	return 0;
}

static int native_free(struct mt_policy *pol, uint64_t address, uint64_t stream)
{
	struct native *p = (struct native *)pol;
	uint64_t bytes;
	if (!rp_addrmap_remove(&p->live, address, &bytes))
		return -EINVAL;
	p->base.allocated -= bytes;
	return mt_backend_free(p->backend, address);
}

static int native_empty_cache(struct mt_policy *pol)
{
	return 0;
}

static int native_walk(struct mt_policy *pol, mt_policy_walk_fn fn, void *data)
{
	return rp_policy_walk_own_segments(&((struct native *)pol)->live, fn, data);
}

static void native_stats(struct mt_policy *pol, struct mt_policy_stats *st)
{
	struct native *p = (struct native *)pol;
	*st = (struct mt_policy_stats){ .allocated = p->base.allocated,
		                        .requested = p->base.allocated,
		                        .reserved = p->base.allocated,
		                        .segments = p->live.count };
}

static void native_destroy(struct mt_policy *pol)
{
	struct native *p = (struct native *)pol;
	const struct rp_addrmap_slot *s;
	for (size_t i = 0; rp_addrmap_next(&p->live, &i, &s);)
		mt_backend_free(p->backend, s->key);
	rp_addrmap_release(&p->live);
	free(p);
}

const struct mt_policy_ops rp_policy_native = {
	.name = "native",
	.summary = "one driver allocation per request (cudaMalloc/cudaFree)",
	.flags = 0,
	.create = native_create,
	.alloc = native_alloc,
	.free = native_free,
	.empty_cache = native_empty_cache,
	.walk = native_walk,
	.stats = native_stats,
	.destroy = native_destroy,
};
