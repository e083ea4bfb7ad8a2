/* fit-policy.c — a simple arena allocator, the engine of the bestfit and
 * firstfit policies (see fit-policy-private.h and the policy files).
 *
 * Requests are rounded up to `round` bytes (default 512). When no free
 * block fits, the policy takes a new segment from the backend with one
 * cuMemAlloc: max(segment, request rounded up to 2 MiB) bytes, so with the
 * default segment=0 every segment is its first request rounded to 2 MiB,
 * like a minimal arena that never shares a segment between requests that
 * did not fit together. Blocks split on allocation (remainders of at least
 * `round` bytes) and merge with free neighbours on free; segments are kept
 * until empty_cache. On OOM the policy gives back its wholly free segments
 * and retries once (as PyTorch does) before failing with -ENOMEM.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "fit-policy-private.h"
#include "policy-private.h"

#define SEGMENT_ROUND (2ull << 20)

struct fit_policy {
	struct mt_policy base;
	struct mt_backend *backend;
	struct rp_arena arena;
	uint64_t segment;
	uint64_t round;
	uint64_t flushes;
};

int rp_fit_policy_create(struct mt_policy **out, const struct mt_policy_ops *ops,
                         enum rp_arena_fit fit, struct mt_backend *b, const char *params, char *err,
                         size_t errlen)
{
	uint64_t segment = 0, round = 512;
	const struct rp_param defs[] = {
		{ "segment", RP_PARAM_SIZE, &segment },
		{ "round", RP_PARAM_SIZE, &round },
	};
	int rc = rp_params_parse(ops->name, params, defs, 2, err, errlen);
	if (rc < 0)
		return rc;
	if (!round) {
		snprintf(err, errlen, "policy %s: round must be > 0", ops->name);
		return -EINVAL;
	}
	struct fit_policy *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->base.ops = ops;
	p->backend = b;
	p->segment = segment;
	p->round = round;
	rp_arena_init(&p->arena, fit, false, round);
	*out = &p->base;
	return 0;
}

static int release_segment(void *data, const struct rp_arena_segment *seg)
{
	struct fit_policy *p = data;
	return mt_backend_free(p->backend, seg->address);
}

int rp_fit_policy_empty_cache(struct mt_policy *pol)
{
	struct fit_policy *p = (struct fit_policy *)pol;
	return rp_arena_release_segments(&p->arena, false, 0, release_segment, p);
}

static int grow(struct fit_policy *p, uint64_t need)
{
	uint64_t bytes = rp_round_up(need, SEGMENT_ROUND);
	if (p->segment > bytes)
		bytes = p->segment;
	uint64_t address;
	int rc = mt_backend_alloc(p->backend, bytes, &address);
	if (rc == -ENOMEM && p->arena.reserved > p->arena.allocated) {
		p->flushes++;
		if ((rc = rp_fit_policy_empty_cache(&p->base)) < 0)
			return rc;
		rc = mt_backend_alloc(p->backend, bytes, &address);
	}
	if (rc < 0)
		return rc;
	rc = rp_arena_add_segment(&p->arena, address, bytes, 0, 0);
	if (rc < 0)
		mt_backend_free(p->backend, address);
	return rc;
}

int rp_fit_policy_alloc(struct mt_policy *pol, uint64_t bytes, uint64_t stream, size_t index,
                        uint64_t *address)
{
	struct fit_policy *p = (struct fit_policy *)pol;
	uint64_t need = rp_round_up(bytes ? bytes : 1, p->round), granted;
	int rc = rp_arena_alloc(&p->arena, need, bytes, 0, address, &granted);
	if (rc == -ENOSPC) {
		if ((rc = grow(p, need)) < 0)
			return rc;
		rc = rp_arena_alloc(&p->arena, need, bytes, 0, address, &granted);
	}
	p->base.allocated = p->arena.allocated;
	return rc;
}

int rp_fit_policy_free(struct mt_policy *pol, uint64_t address, uint64_t stream)
{
	struct fit_policy *p = (struct fit_policy *)pol;
	uint64_t bytes;
	int rc = rp_arena_free(&p->arena, address, 0, &bytes);
	p->base.allocated = p->arena.allocated;
	return rc < 0 ? -EINVAL : 0;
}

int rp_fit_policy_walk(struct mt_policy *pol, mt_policy_walk_fn fn, void *data)
{
	struct fit_policy *p = (struct fit_policy *)pol;
	return rp_arena_walk(&p->arena, fn, data);
}

void rp_fit_policy_stats(struct mt_policy *pol, struct mt_policy_stats *st)
{
	struct fit_policy *p = (struct fit_policy *)pol;
	*st = (struct mt_policy_stats){ .allocated = p->arena.allocated,
		                        .requested = p->arena.requested,
		                        .reserved = p->arena.reserved,
		                        .segments = p->arena.segments.count,
		                        .largest_free = rp_arena_largest_free(&p->arena),
		                        .cache_flushes = p->flushes };
}

void rp_fit_policy_destroy(struct mt_policy *pol)
{
	struct fit_policy *p = (struct fit_policy *)pol;
	rp_arena_release_segments(&p->arena, true, 0, release_segment, p);
	rp_arena_release(&p->arena);
	free(p);
}
