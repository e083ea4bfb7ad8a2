/* trace-columns.c — the timeline's and the policies' per-column figures in
 * one streamed pass over a device's allocations (and kernels): live bytes
 * with the allocation bands, the segments' reserved bytes and the kernels'
 * busy time, so that drawing holds pixels and what is live, not the trace.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "viewer-private.h"

struct pass {
	const struct vw_trace *t;
	struct vw_stack *stack;
	struct vw_sweep live, reserved;
	bool has_live, has_reserved;
	struct vw_busy busy;
	bool has_busy;
};

static void change(struct pass *p, bool segment, uint64_t ts, int64_t bytes)
{
	if (!bytes)
		return;
	if (segment) {
		if (p->has_reserved)
			vw_sweep_add(&p->reserved, (int64_t)(ts - p->reserved.c->from), bytes);
	} else if (p->stack) {
		vw_stack_change(p->stack, ts, bytes);
	} else if (p->has_live) {
		vw_sweep_add(&p->live, (int64_t)(ts - p->live.c->from), bytes);
	}
}

static int on_step(void *data, const struct mt_walk_step *st)
{
	struct pass *p = data;
	const struct mt_lifetime *l = st->l;
	bool segment = l && l->layer != p->t->layer;
	uint64_t start;

	switch (st->kind) {
	case MT_WALK_EVENT:
		if (p->has_busy && st->ev->kind == MT_EVENT_KERNEL) {
			struct vw_span k = { st->ev->ts, st->ev->kernel.end > st->ev->ts
				                                 ? st->ev->kernel.end
				                                 : st->ev->ts };
			vw_busy_add(&p->busy, &k);
		}
		return 0;
	case MT_WALK_ALLOC:
		change(p, segment, l->start, (int64_t)l->bytes);
		return 0;
	case MT_WALK_FREE:
	case MT_WALK_ORPHAN:
		change(p, segment, l->end, -(int64_t)l->bytes);
		break;
	case MT_WALK_NEVER_FREED:
		break;
	}
	if (segment || !p->stack)
		return 0;
	start = l->flags & MT_LIFETIME_NO_ALLOC ? p->t->t0 : l->start;
	vw_stack_offer(p->stack, start, st->kind == MT_WALK_NEVER_FREED ? UINT64_MAX : l->end,
	               l->bytes, st->index);
	return 0;
}

int vw_trace_columns(const struct vw_trace *t, const struct vw_columns *c, struct vw_stack *stack,
                     double *live, double *reserved, double *busy, char *err, size_t errlen)
{
	struct pass p = { .t = t, .stack = stack };
	int rc;

	if (busy) {
		if (vw_busy_start(&p.busy, c, busy) < 0)
			return vw_fail(err, errlen, -ENOMEM, "out of memory");
		p.has_busy = true;
	}
	if (live && !stack) {
		vw_sweep_start(&p.live, c, live, NULL);
		p.has_live = true;
	}
	if (reserved) {
		vw_sweep_start(&p.reserved, c, reserved, NULL);
		p.has_reserved = true;
	}
	/* what was allocated before the trace is live from its start */
	change(&p, false, t->t0, (int64_t)t->d.orphan_bytes);
	change(&p, true, t->t0, (int64_t)t->d.seg_orphan_bytes);
	rc = mt_analysis_walk(&t->d, busy ? MT_KIND_BIT(MT_EVENT_KERNEL) : 0, on_step, &p);
	if (stack)
		vw_stack_finish(stack);
	if (p.has_live)
		vw_sweep_finish(&p.live);
	if (p.has_reserved)
		vw_sweep_finish(&p.reserved);
	if (p.has_busy)
		vw_busy_finish(&p.busy);
	if (rc < 0)
		return rc == -ENOMEM ? vw_fail(err, errlen, rc, "out of memory")
		                     : vw_fail(err, errlen, rc, "%s", mt_reader_message(t->r));
	return 0;
}
