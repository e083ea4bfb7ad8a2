/* replay-fragmentation.c — a replayed policy's fragmentation by memtrace's
 * one definition (analyze: mt_segmap_fragmentation, free bytes inside
 * segments that hold a live block) at the peak of live bytes, the moment
 * report's anatomy and the segment map show by default: the stream is
 * replayed again under sim, with the same capacity, up to that moment and
 * the policy walked there. The policy's decisions are the same under
 * either backend, and a training loop reaches its peak early, so the
 * second replay is mostly short.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "memtrace-analyze.h"
#include "replay-fragmentation.h"

struct at_peak {
	uint64_t peak_live;
	struct mt_segmap m;
	int rc;
	bool walked;
};

static int on_walk(void *data, bool is_segment, const struct mt_policy_block *blk)
{
	struct at_peak *a = data;

	a->rc = is_segment ? mt_segmap_add_segment(&a->m, blk->address, blk->bytes)
	                   : mt_segmap_add_block(&a->m, blk->address, blk->bytes, blk->allocated);
	return a->rc;
}

/* Walks the policy once the peak of live bytes is live, then stops. */
static int observe(void *data, const struct mt_replay_moment *m, struct mt_policy *p)
{
	struct at_peak *a = data;

	if (m->allocated < a->peak_live)
		return 0;
	if (!p->ops->walk)
		return -ENOTSUP;
	p->ops->walk(p, on_walk, a);
	a->walked = true;
	return a->rc < 0 ? a->rc : 1;
}

int cli_replay_fragmentation(const struct mt_request_stream *s, const struct mt_replay_options *opt,
                             uint64_t *bytes, uint64_t *reserved, char *err, size_t errlen)
{
	struct at_peak a = { .peak_live = mt_request_stream_peak_live(s) };
	struct mt_replay_options o = {
		.policy = opt->policy,
		.backend = MT_BACKEND_SIM,
		.capacity = opt->capacity,
		.device = opt->device,
		.interrupted = opt->interrupted,
		.observe = observe,
		.observe_data = &a,
	};
	struct mt_replay_result res;
	int rc = mt_replay_run(s, &o, &res, err, errlen);

	mt_replay_result_release(&res);
	if (rc == 0 && !a.walked)
		rc = -ENOENT; /* it ran out of memory before the peak */
	if (rc == 0) {
		mt_segmap_finish(&a.m);
		*bytes = mt_segmap_fragmentation(&a.m);
		*reserved = a.m.reserved;
	}
	mt_segmap_release(&a.m);
	return rc;
}
