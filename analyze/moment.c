/* moment.c — what ran at a moment: the kernel on a stream and the
 * innermost NVTX range open in the process, for the report's peak and
 * OOMs. With kernels recorded at launch (--kernels launch) the kernel is
 * the last launched on the stream before the moment, which the words
 * shown for it must say (enum mt_kernel_times).
 */
#include "config.h"

#include <string.h>

#include "analyze-private.h"

#define FIRST_WINDOW_NS 1000000ull /* 1 ms; each next window 16 times as long */

enum mt_kernel_times mt_kernel_times(struct mt_reader *r)
{
	const char *v = mt_reader_meta(r, "kernels");

	if (v && !strcmp(v, "launch"))
		return MT_KERNEL_TIMES_LAUNCH;
	if (v && !strcmp(v, "none"))
		return MT_KERNEL_TIMES_NONE;
	return MT_KERNEL_TIMES_GPU;
}

/* Whether kernel event a goes with the moment better than b (a kernel
 * event or ts MT_TIME_UNKNOWN): one still running then first (GPU times;
 * a launch-time kernel's end is its ts, never after the moment), else the
 * later start or launch. On one stream kernels run in launch order, so
 * there this is the last started; among all of a process's streams it is
 * a kernel running anywhere, else the latest started anywhere. */
static bool better(const struct mt_event *a, const struct mt_event *b, uint64_t at)
{
	bool a_runs = a->kernel.end > at, b_runs = b->ts != MT_TIME_UNKNOWN && b->kernel.end > at;

	if (b->ts == MT_TIME_UNKNOWN || a_runs != b_runs)
		return b->ts == MT_TIME_UNKNOWN || a_runs;
	return a->ts >= b->ts;
}

/* The kernels of [from, at] into the best on the stream and anywhere. */
static int window(const struct mt_analysis *d, uint32_t process, uint64_t stream, uint64_t from,
                  uint64_t at, struct mt_event *on, struct mt_event *any)
{
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_KERNEL),
		              .device = d->device,
		              .process = process,
		              .from = from,
		              .to = at + 1 };
	struct mt_iter *it;
	struct mt_event ev;
	int rc = mt_reader_iter(d->r, &q, &it);

	if (rc < 0)
		return rc;
	while ((rc = mt_iter_next(it, &ev)) > 0) {
		if (ev.kernel.stream == stream && better(&ev, on, at))
			*on = ev;
		if (better(&ev, any, at))
			*any = ev;
	}
	mt_iter_free(it);
	return rc;
}

static int kernel_at(const struct mt_analysis *d, uint32_t process, uint64_t stream, uint64_t at,
                     struct mt_moment_context *c)
{
	struct mt_event on = { .ts = MT_TIME_UNKNOWN }, any = { .ts = MT_TIME_UNKNOWN };
	uint64_t span = FIRST_WINDOW_NS;
	const struct mt_event *k;
	int rc;

	/* Windows [at - span, at] growing 16 times until one holds a kernel
	 * of the stream (an earlier window can hold none that started later;
	 * on one stream none that still runs), else to the trace's start: a
	 * stream that launched nothing before the moment falls back on the
	 * best over every window (better), so a long kernel still running on
	 * another stream is found however early it started. With no stream
	 * asked, the first window holding any kernel. */
	for (;;) {
		uint64_t from = at > span ? at - span : 0;
		rc = window(d, process, stream, from, at, &on, &any);
		if (rc < 0)
			return rc;
		if (on.ts != MT_TIME_UNKNOWN || from == 0 ||
		    (stream == UINT64_MAX && any.ts != MT_TIME_UNKNOWN))
			break;
		span = span > UINT64_MAX / 16 ? UINT64_MAX : span * 16;
	}
	k = on.ts != MT_TIME_UNKNOWN ? &on : &any;
	if (k->ts == MT_TIME_UNKNOWN)
		return 0;
	c->kernel = k->kernel.name;
	c->kernel_stream = k->kernel.stream;
	c->kernel_ts = k->ts;
	c->kernel_end = k->kernel.end;
	c->running = c->times == MT_KERNEL_TIMES_GPU && k->kernel.end > at;
	c->elsewhere = k == &any && stream != UINT64_MAX;
	return 0;
}

/* The innermost range open in the process at the moment. */
static const struct mt_range *range_at(const struct mt_analysis *d, uint32_t process, uint64_t at)
{
	const struct mt_range *best = NULL;

	for (size_t i = 0; i < d->nranges && d->ranges[i].start <= at; i++) {
		const struct mt_range *r = &d->ranges[i];
		if ((process && r->process != process) ||
		    (r->end != MT_TIME_UNKNOWN && r->end <= at))
			continue;
		if (!best || r->depth >= best->depth)
			best = r;
	}
	return best;
}

int mt_moment_context(const struct mt_analysis *d, uint32_t process, uint64_t stream, uint64_t at,
                      struct mt_moment_context *c, char *err, size_t errlen)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->at = at;
	/* 0 is "default or unknown" (FORMAT.md); older traces kept CUPTI's
	 * invalid id for a synchronous cudaMalloc: neither names a stream */
	c->stream = stream == 0 || stream == UINT32_MAX ? UINT64_MAX : stream;
	stream = c->stream;
	c->times = mt_kernel_times(d->r);
	c->range = range_at(d, process, at);
	if (c->times == MT_KERNEL_TIMES_NONE)
		return 0;
	rc = kernel_at(d, process, stream, at, c);
	return rc < 0 ? an_reader_fail(d->r, rc, err, errlen) : 0;
}
