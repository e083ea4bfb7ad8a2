/* timeline.c — a trace as tracks of counters, slices and instants, in
 * time order, for the timeline viewers' formats (Perfetto, Chrome JSON):
 *  - per process and device: the bytes live (the request layer, else the
 *    driver layer), the bytes reserved (the driver layer, when there is a
 *    request layer: the allocator's segments) and the sampled device memory
 *    in use, each a counter track in bytes;
 *  - per saved replay: its reserved bytes over time;
 *  - NVTX ranges as slices, one track per thread and nesting depth;
 *  - failed allocations as instants on their process;
 *  - with --kernels, kernels as slices, one track per stream.
 * Counters are written when they change. Slice ends, and replays' points,
 * wait in a time-ordered queue, so everything comes out in time order;
 * memory is bounded by what is live and open at once.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "interop-private.h"

enum pend { PEND_SLICE_END, PEND_REPLAY_POINT };

struct tl {
	struct io_export *x;
	const struct io_timeline_ops *ops;
	void *arg;
	unsigned layer;      /* the request layer */
	struct io_map index; /* track key → index into tracks */
	struct io_track *tracks;
	size_t ntracks, cap;
	uint64_t *value; /* per track: the counter's last value */
	size_t vcap;
	struct io_live *live; /* pairing frees with allocs */
	struct io_pending pending;
	const struct mt_replay_record *replays;
	size_t nreplays;
	uint64_t end_ts; /* the trace's last event: where open slices end */
};

static uint64_t key_of(enum io_track_kind kind, uint32_t process, uint32_t device)
{
	return (uint64_t)kind << 56 | (uint64_t)(device & 0xffffff) << 32 | process;
}

static const struct mt_process *process_row(struct mt_reader *r, uint32_t id)
{
	for (size_t i = 0; i < mt_reader_process_count(r); i++)
		if (mt_reader_process(r, i)->id == id)
			return mt_reader_process(r, i);
	return NULL;
}

/* The track of this kind and key, made (and announced) on first use;
 * NULL when out of memory or the format failed (rc set). */
static struct io_track *track(struct tl *t, enum io_track_kind kind, uint32_t process,
                              uint32_t device, uint64_t sub, int *rc)
{
	uint64_t k = key_of(kind, process, device), i;
	struct io_track *tr, *parent = NULL;
	const struct mt_process *p;

	if (io_map_get(&t->index, k, sub, &i))
		return &t->tracks[i];
	if (kind != IO_TRACK_PROCESS && kind != IO_TRACK_REPLAY &&
	    !(parent = track(t, IO_TRACK_PROCESS, process, 0, 0, rc)))
		return NULL;
	if (mt_array_grow((void **)&t->tracks, &t->cap, t->ntracks, sizeof(*t->tracks)) < 0 ||
	    mt_array_grow((void **)&t->value, &t->vcap, t->ntracks, sizeof(*t->value)) < 0) {
		*rc = -ENOMEM;
		return NULL;
	}
	/* (growing tracks may move parent) */
	parent = parent ? &t->tracks[parent - t->tracks] : NULL;
	tr = &t->tracks[t->ntracks];
	*tr = (struct io_track){ .uuid = t->ntracks + 1,
		                 .parent = parent ? parent->uuid : 0,
		                 .kind = kind,
		                 .process = process,
		                 .device = device,
		                 .sub = sub,
		                 .pid = parent ? parent->pid : 0 };
	t->value[t->ntracks] = UINT64_MAX;
	switch (kind) {
	case IO_TRACK_PROCESS:
		p = process_row(t->x->r, process);
		tr->pid = p ? p->pid : 0;
		snprintf(tr->name, sizeof(tr->name), "%s",
		         p && *p->command_line ? p->command_line : "process");
		break;
	case IO_TRACK_LIVE:
		snprintf(tr->name, sizeof(tr->name), "device %" PRIu32 " live bytes (%s layer)",
		         device, mt_layer_name(t->layer));
		tr->counter = true;
		break;
	case IO_TRACK_RESERVED:
		snprintf(tr->name, sizeof(tr->name),
		         "device %" PRIu32 " reserved bytes (allocator segments)", device);
		tr->counter = true;
		break;
	case IO_TRACK_DEVICE_USED:
		snprintf(tr->name, sizeof(tr->name), "device %" PRIu32 " memory in use (sampled)",
		         device);
		tr->counter = true;
		break;
	case IO_TRACK_REPLAY: {
		const struct mt_replay_record *rec = &t->replays[sub];
		snprintf(tr->name, sizeof(tr->name),
		         "replay %s%s%s (%s): device %" PRIu32 " reserved bytes", rec->policy,
		         *rec->params ? ":" : "", rec->params, rec->backend, device);
		tr->counter = true;
		break;
	}
	case IO_TRACK_RANGES:
		if (sub & 0xffff)
			snprintf(tr->name, sizeof(tr->name),
			         "thread %" PRIu64 " ranges, depth %" PRIu64, sub >> 16,
			         sub & 0xffff);
		else
			snprintf(tr->name, sizeof(tr->name), "thread %" PRIu64 " ranges",
			         sub >> 16);
		tr->thread = (uint32_t)(sub >> 16);
		break;
	case IO_TRACK_KERNELS:
		snprintf(tr->name, sizeof(tr->name),
		         "device %" PRIu32 " stream %" PRIu64 " kernels", device, sub);
		break;
	}
	if (io_map_put(&t->index, k, sub, t->ntracks) < 0) {
		*rc = -ENOMEM;
		return NULL;
	}
	t->ntracks++;
	if ((*rc = t->ops->track(t->arg, tr)) < 0)
		return NULL;
	return tr;
}

static int counter(struct tl *t, struct io_track *tr, uint64_t ts, uint64_t value)
{
	size_t i = (size_t)(tr - t->tracks);

	if (t->value[i] == value)
		return 0;
	t->value[i] = value;
	t->x->res->records++;
	return t->ops->counter(t->arg, tr, ts, value);
}

/* Writes what the queue holds up to ts. */
static int flush(struct tl *t, uint64_t ts)
{
	struct io_pending_item p;
	int rc = 0;

	while (rc >= 0 && io_pending_pop(&t->pending, ts, &p)) {
		uint64_t at = p.ts == MT_TIME_UNKNOWN ? t->end_ts : p.ts;
		if (p.e == PEND_SLICE_END) {
			rc = t->ops->slice_end(t->arg, &t->tracks[p.d], at);
			continue;
		}
		/* a replay's point, then queue its next */
		const struct mt_replay_record *rec = &t->replays[p.a];
		rc = counter(t, &t->tracks[p.d], at, rec->series[p.b].reserved);
		if (rc >= 0 && p.b + 1 < rec->series_len)
			rc = io_pending_push(&t->pending, (struct io_pending_item){
			                                          .ts = rec->series[p.b + 1].ts,
			                                          .a = p.a,
			                                          .b = p.b + 1,
			                                          .d = p.d,
			                                          .e = PEND_REPLAY_POINT });
	}
	return rc;
}

static int slice(struct tl *t, struct io_track *tr, uint64_t ts, uint64_t end, uint32_t name,
                 uint32_t category)
{
	const char *n = mt_reader_string(t->x->r, name);
	const char *c = category ? mt_reader_string(t->x->r, category) : NULL;
	int rc = t->ops->slice(t->arg, tr, ts, end == MT_TIME_UNKNOWN ? t->end_ts : end, n ? n : "",
	                       c ? c : "");

	t->x->res->records++;
	if (rc >= 0)
		rc = io_pending_push(&t->pending,
		                     (struct io_pending_item){ .ts = end < ts ? ts : end,
		                                               .d = (uint32_t)(tr - t->tracks),
		                                               .e = PEND_SLICE_END });
	return rc;
}

static int memory_event(struct tl *t, const struct mt_event *ev)
{
	const struct mt_alloc_event *a = &ev->alloc;
	enum io_track_kind kind;
	struct io_live_entry closed;
	struct io_track *tr;
	uint64_t bytes;
	int rc = 0;

	if (a->layer == t->layer)
		kind = IO_TRACK_LIVE;
	else if (a->layer == MT_LAYER_DRIVER)
		kind = IO_TRACK_RESERVED;
	else
		return 0;
	rc = io_live_apply(t->live, ev, &closed);
	if (rc < 0 || (ev->kind == MT_EVENT_FREE && rc == 0))
		return rc;
	if (!(tr = track(t, kind, ev->process, ev->device, 0, &rc)))
		return rc;
	bytes = t->value[tr - t->tracks] == UINT64_MAX ? 0 : t->value[tr - t->tracks];
	bytes = ev->kind == MT_EVENT_ALLOC ? bytes + a->bytes : bytes - closed.bytes;
	return counter(t, tr, ev->ts, bytes);
}

static int event(struct tl *t, const struct mt_event *ev)
{
	struct io_track *tr;
	int rc = 0;

	switch (ev->kind) {
	case MT_EVENT_ALLOC:
	case MT_EVENT_FREE:
		return memory_event(t, ev);
	case MT_EVENT_SAMPLE:
		if (!(tr = track(t, IO_TRACK_DEVICE_USED, ev->process, ev->device, 0, &rc)))
			return rc;
		return counter(t, tr, ev->ts, ev->sample.used_bytes);
	case MT_EVENT_ALLOC_FAILED:
		if (!(tr = track(t, IO_TRACK_PROCESS, ev->process, 0, 0, &rc)))
			return rc;
		t->x->res->records++;
		return t->ops->instant(t->arg, tr, ev->ts, ev->failed.bytes, ev->failed.free_bytes);
	case MT_EVENT_RANGE:
		tr = track(t, IO_TRACK_RANGES, ev->process, 0,
		           (uint64_t)ev->range.thread << 16 | (ev->range.depth & 0xffff), &rc);
		return tr ? slice(t, tr, ev->ts, ev->range.end, ev->range.name, ev->range.domain)
		          : rc;
	case MT_EVENT_KERNEL:
		tr = track(t, IO_TRACK_KERNELS, ev->process, ev->device, ev->kernel.stream, &rc);
		return tr ? slice(t, tr, ev->ts, ev->kernel.end, ev->kernel.name, 0) : rc;
	}
	return 0;
}

/* Queues the first point of every saved replay of the selected devices. */
static int queue_replays(struct tl *t)
{
	int rc = mt_reader_replays(t->x->r, &t->replays, &t->nreplays);

	for (size_t i = 0; rc >= 0 && i < t->nreplays; i++) {
		const struct mt_replay_record *rec = &t->replays[i];
		struct io_track *tr;
		if ((t->x->opt->device && rec->device != t->x->opt->device) || !rec->series_len)
			continue;
		if (!(tr = track(t, IO_TRACK_REPLAY, 0, rec->device, i, &rc)))
			break;
		rc = io_pending_push(&t->pending,
		                     (struct io_pending_item){ .ts = rec->series[0].ts,
		                                               .a = i,
		                                               .d = (uint32_t)(tr - t->tracks),
		                                               .e = PEND_REPLAY_POINT });
	}
	return rc;
}

int io_timeline_walk(struct io_export *x, const struct io_timeline_ops *ops, void *arg)
{
	struct tl t = { .x = x, .ops = ops, .arg = arg };
	uint32_t kinds = MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE) |
	                 MT_KIND_BIT(MT_EVENT_ALLOC_FAILED) | MT_KIND_BIT(MT_EVENT_RANGE) |
	                 MT_KIND_BIT(MT_EVENT_SAMPLE);
	struct mt_iter *it = NULL;
	struct mt_event ev;
	int rc;

	if (x->opt->kernels)
		kinds |= MT_KIND_BIT(MT_EVENT_KERNEL);
	t.live = io_live_new();
	if (!t.live)
		return mt_fail(x->err, x->errlen, -ENOMEM, "out of memory");
	rc = mt_reader_request_layer(x->r, &t.layer);
	if (rc >= 0)
		rc = queue_replays(&t);
	if (rc < 0 && rc != -ENOMEM)
		rc = mt_fail(x->err, x->errlen, rc, "%s", mt_reader_message(x->r));
	if (rc >= 0)
		rc = io_export_iter(x, kinds, &it, &x->total);
	if (rc >= 0)
		t.end_ts = io_export_last_ts(x);
	while (rc >= 0 && (rc = io_export_next(x, it, &ev)) > 0) {
		if ((rc = flush(&t, ev.ts)) >= 0)
			rc = event(&t, &ev);
	}
	if (rc >= 0)
		rc = flush(&t, UINT64_MAX);
	if (rc == -ENOMEM)
		rc = mt_fail(x->err, x->errlen, rc, "out of memory");
	mt_iter_free(it);
	io_live_free(t.live);
	io_pending_release(&t.pending);
	io_map_release(&t.index);
	free(t.tracks);
	free(t.value);
	return rc;
}
