/* replay-fragmentation.c — a replayed policy's fragmentation at the peak
 * of live bytes, walked through the replay's at_peak hook. */
#include "config.h"

#include <string.h>

#include "memtrace-analyze.h"
#include "replay-fragmentation.h"

struct walk {
	struct mt_segmap m;
	int rc;
};

static int on_block(void *data, bool is_segment, const struct mt_policy_block *blk)
{
	struct walk *w = data;

	w->rc = is_segment ? mt_segmap_add_segment(&w->m, blk->address, blk->bytes)
	                   : mt_segmap_add_block(&w->m, blk->address, blk->bytes, blk->allocated);
	return w->rc;
}

static int at_peak(void *data, const struct mt_replay_moment *m, struct mt_policy *p)
{
	struct cli_fragmentation *f = data;
	struct walk w;

	(void)m;
	if (!p->ops->walk)
		return 0;
	memset(&w, 0, sizeof(w));
	p->ops->walk(p, on_block, &w);
	if (w.rc == 0) {
		mt_segmap_finish(&w.m);
		f->bytes = mt_segmap_fragmentation(&w.m);
		f->reserved = w.m.reserved;
		f->known = true;
	}
	mt_segmap_release(&w.m);
	return w.rc < 0 ? w.rc : 0;
}

void cli_fragmentation_probe(struct mt_replay_options *opt, struct cli_fragmentation *f)
{
	memset(f, 0, sizeof(*f));
	opt->at_peak = at_peak;
	opt->at_peak_data = f;
}
