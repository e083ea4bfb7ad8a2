/* planned.c — offline placement with full knowledge of lifetimes: what a
 * static memory planner reaches on this request stream.
 *
 * Models: greedy-by-size offset assignment, the heuristic of TensorFlow
 * Lite's arena planner and of Pisarchyk & Lee, "Efficient Memory
 * Management for Deep Neural Net Inference" (2020): requests sorted by size
 * (largest first, earlier start first among equals), each placed at the
 * lowest offset where it overlaps no already placed request in both time
 * and address. The whole plan lives in one arena taken with a single
 * cuMemAlloc of the planned size at the first allocation, so peak reserved
 * is the arena size. Parameters: align=SIZE (offset and size granule,
 * default 512 B).
 *
 * The plan is made by planner.c (planner-private.h says how it finds each
 * offset); this file holds the policy: the arena, and the live requests by
 * address. Planning stops with -EINTR soon after the driver's interrupt
 * flag is set.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "addrmap-private.h"
#include "planner-private.h"
#include "policy-private.h"

extern const struct mt_policy_ops rp_policy_planned;

struct planned {
	struct mt_policy base;
	struct mt_backend *backend;
	uint64_t align;
	uint64_t *offset; /* per request */
	size_t n;
	uint64_t arena_bytes, arena; /* arena: address, 0 = not held */
	struct rp_addrmap live;      /* address -> bytes asked */
	uint64_t requested;
};

static int planned_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                          char *err, size_t errlen)
{
	uint64_t align = 512;
	const struct rp_param defs[] = { { "align", RP_PARAM_SIZE, &align } };
	int rc = rp_params_parse("planned", params, defs, 1, err, errlen);
	if (rc < 0)
		return rc;
	if (!align) {
		snprintf(err, errlen, "policy planned: align must be > 0");
		return -EINVAL;
	}
	struct planned *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->base.ops = &rp_policy_planned;
	p->backend = b;
	p->align = align;
	*out = &p->base;
	return 0;
}

static int planned_plan(struct mt_policy *pol, const struct mt_plan_request *reqs, size_t n)
{
	struct planned *p = (struct planned *)pol;
	free(p->offset);
	p->n = 0;
	p->arena_bytes = 0;
	if (!(p->offset = malloc((n ? n : 1) * sizeof(uint64_t))))
		return -ENOMEM;
	int rc = rp_plan_greedy_by_size(reqs, n, p->align, p->base.interrupted, p->base.planned,
	                                p->offset, &p->arena_bytes);
	if (rc == 0)
		p->n = n;
	return rc;
}

/* What a request of this many bytes takes in the plan. */
static uint64_t planned_size(const struct planned *p, uint64_t bytes)
{
	return rp_round_up(bytes ? bytes : 1, p->align);
}

static int planned_alloc(struct mt_policy *pol, uint64_t bytes, uint64_t stream, size_t index,
                         uint64_t *address)
{
	struct planned *p = (struct planned *)pol;
	if (index >= p->n)
		return -EINVAL;
	if (!p->arena) {
		int rc = mt_backend_alloc(p->backend, p->arena_bytes, &p->arena);
		if (rc < 0) {
			p->arena = 0;
			return rc;
		}
	}
	*address = p->arena + p->offset[index];
	if (rp_addrmap_put(&p->live, *address, bytes) < 0)
		return -ENOMEM;
	p->base.allocated += planned_size(p, bytes);
	p->requested += bytes;
	return 0;
}

static int planned_free(struct mt_policy *pol, uint64_t address, uint64_t stream)
{
	struct planned *p = (struct planned *)pol;
	uint64_t bytes;
	if (!rp_addrmap_remove(&p->live, address, &bytes))
		return -EINVAL;
	p->base.allocated -= planned_size(p, bytes);
	p->requested -= bytes;
	return 0;
}

static int planned_empty_cache(struct mt_policy *pol)
{
	struct planned *p = (struct planned *)pol;
	if (!p->arena || p->live.count)
		return 0;
	int rc = mt_backend_free(p->backend, p->arena);
	if (rc == 0)
		p->arena = 0;
	return rc;
}

static int by_address(const void *a, const void *b)
{
	const struct rp_addrmap_slot *x = a, *y = b;
	return (x->key > y->key) - (x->key < y->key);
}

static int planned_walk(struct mt_policy *pol, mt_policy_walk_fn fn, void *data)
{
	struct planned *p = (struct planned *)pol;
	if (!p->arena)
		return 0;
	struct rp_addrmap_slot *live = malloc((p->live.count + 1) * sizeof(*live));
	const struct rp_addrmap_slot *s;
	size_t k = 0;
	if (!live)
		return -ENOMEM;
	for (size_t i = 0; rp_addrmap_next(&p->live, &i, &s);)
		live[k++] = *s;
	qsort(live, k, sizeof(*live), by_address);
	struct mt_policy_block blk = { p->arena, p->arena_bytes, 0, false };
	int rc = fn(data, true, &blk);
	uint64_t at = p->arena, end = p->arena + p->arena_bytes;
	for (size_t i = 0; !rc && i <= k; i++) {
		uint64_t next = i < k ? live[i].key : end;
		if (next > at) {
			blk = (struct mt_policy_block){ at, next - at, 0, false };
			if ((rc = fn(data, false, &blk)))
				break;
		}
		if (i < k) {
			blk = (struct mt_policy_block){ next, planned_size(p, live[i].value), 0,
				                        true };
			rc = fn(data, false, &blk);
			at = next + blk.bytes;
		}
	}
	free(live);
	return rc;
}

static void planned_stats(struct mt_policy *pol, struct mt_policy_stats *st)
{
	struct planned *p = (struct planned *)pol;
	*st = (struct mt_policy_stats){ .allocated = p->base.allocated,
		                        .requested = p->requested,
		                        .reserved = p->arena ? p->arena_bytes : 0,
		                        .segments = p->arena ? 1 : 0 };
}

static void planned_destroy(struct mt_policy *pol)
{
	struct planned *p = (struct planned *)pol;
	if (p->arena)
		mt_backend_free(p->backend, p->arena);
	rp_addrmap_release(&p->live);
	free(p->offset);
	free(p);
}

const struct mt_policy_ops rp_policy_planned = {
	.name = "planned",
	.summary = "offline greedy-by-size placement with every lifetime known (a static planner)",
	.flags = MT_POLICY_OFFLINE,
	.create = planned_create,
	.plan = planned_plan,
	.alloc = planned_alloc,
	.free = planned_free,
	.empty_cache = planned_empty_cache,
	.walk = planned_walk,
	.stats = planned_stats,
	.destroy = planned_destroy,
};
