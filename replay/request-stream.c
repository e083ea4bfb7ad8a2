/* request-stream.c — the request stream: one device's alloc/free events of
 * one layer in replay order (see memtrace-replay.h for the rules and
 * request-stream-private.h for the steps). One builder orders them as they
 * come: it pairs frees with allocs by (process, address), gives each live
 * request a slot, and keeps frees whose memory becomes reusable later
 * (reuse_delay > 0) in a min-heap keyed by reuse time; they enter the order
 * just before the first recorded event at or after that time. Loading a
 * trace runs the builder once for the summary; every cursor over a loaded
 * stream runs it again over the trace, a chunk at a time. */
#include "memtrace-common.h"
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrmap-private.h"
#include "request-stream-private.h"

struct pending {
	uint64_t time;
	uint64_t seq; /* keeps equal times in free order */
	uint32_t slot;
};

struct slot_info {
	uint64_t bytes;
	uint64_t stream;
	uint32_t request;
};

struct builder {
	unsigned layer;
	struct rp_addrmap live; /* (address, process) key -> slot + 1 */
	struct slot_info *slot; /* per slot */
	size_t nslots, slot_cap;
	uint32_t *spare; /* free slots, reused last freed first */
	size_t nspare, spare_cap;
	struct pending *heap;
	size_t heap_len, heap_cap;
	uint64_t seq;
	uint64_t requests;
	struct rp_step *out; /* steps emitted and not yet taken */
	size_t nout, out_cap;
};

static bool heap_less(const struct pending *a, const struct pending *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static int heap_push(struct builder *bd, struct pending p)
{
	if (mt_array_grow((void **)&bd->heap, &bd->heap_cap, bd->heap_len, sizeof(p)) < 0)
		return -ENOMEM;
	size_t i = bd->heap_len++;
	while (i && heap_less(&p, &bd->heap[(i - 1) / 2])) {
		bd->heap[i] = bd->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	bd->heap[i] = p;
	return 0;
}

static struct pending heap_pop(struct builder *bd)
{
	struct pending top = bd->heap[0], last = bd->heap[--bd->heap_len];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= bd->heap_len)
			break;
		if (c + 1 < bd->heap_len && heap_less(&bd->heap[c + 1], &bd->heap[c]))
			c++;
		if (!heap_less(&bd->heap[c], &last))
			break;
		bd->heap[i] = bd->heap[c];
		i = c;
	}
	if (bd->heap_len)
		bd->heap[i] = last;
	return top;
}

/* Appends the step of slot's request; a free gives the slot back. */
static int emit(struct builder *bd, uint32_t slot, bool is_free, uint64_t ts)
{
	const struct slot_info *si = &bd->slot[slot];
	if (mt_array_grow((void **)&bd->out, &bd->out_cap, bd->nout, sizeof(*bd->out)) < 0)
		return -ENOMEM;
	bd->out[bd->nout++] = (struct rp_step){ ts, si->bytes, si->stream, slot,
		                                (si->request << 1) | (is_free ? 1u : 0u) };
	if (!is_free)
		return 0;
	if (mt_array_grow((void **)&bd->spare, &bd->spare_cap, bd->nspare, sizeof(*bd->spare)) < 0)
		return -ENOMEM;
	bd->spare[bd->nspare++] = slot;
	return 0;
}

/* Applies every delayed free reusable at or before ts. */
static int flush_pending(struct builder *bd, uint64_t ts)
{
	while (bd->heap_len && bd->heap[0].time <= ts) {
		struct pending p = heap_pop(bd);
		int rc = emit(bd, p.slot, true, p.time);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int free_request(struct builder *bd, uint32_t slot, uint64_t ts, uint64_t delay)
{
	if (!delay)
		return emit(bd, slot, true, ts);
	uint64_t t = ts + delay < ts ? UINT64_MAX - 1 : ts + delay;
	return heap_push(bd, (struct pending){ t, bd->seq++, slot });
}

static int add_alloc(struct builder *bd, const struct mt_event *ev, uint64_t key)
{
	uint64_t prev;
	uint32_t slot;
	int rc;
	if (rp_addrmap_remove(&bd->live, key, &prev) &&
	    (rc = emit(bd, (uint32_t)(prev - 1), true, ev->ts)) < 0)
		return rc;
	if (bd->requests >= (1u << 31))
		return -E2BIG;
	if (bd->nspare) {
		slot = bd->spare[--bd->nspare];
	} else {
		if (mt_array_grow((void **)&bd->slot, &bd->slot_cap, bd->nslots,
		                  sizeof(*bd->slot)) < 0)
			return -ENOMEM;
		slot = (uint32_t)bd->nslots++;
	}
	bd->slot[slot] =
	        (struct slot_info){ ev->alloc.bytes, ev->alloc.stream, (uint32_t)bd->requests++ };
	if (rp_addrmap_put(&bd->live, key, (uint64_t)slot + 1) < 0)
		return -ENOMEM;
	return emit(bd, slot, false, ev->ts);
}

static int builder_add(struct builder *bd, const struct mt_event *ev)
{
	if ((ev->kind != MT_EVENT_ALLOC && ev->kind != MT_EVENT_FREE) ||
	    ev->alloc.layer != bd->layer)
		return 0;
	int rc = flush_pending(bd, ev->ts);
	if (rc < 0)
		return rc;
	/* pair by (process, address): device addresses stay below 2^48 */
	uint64_t key = ev->alloc.address ^ ((uint64_t)ev->process << 48);
	if (!key)
		key = 1ull << 63;
	if (ev->kind == MT_EVENT_ALLOC)
		return add_alloc(bd, ev, key);
	uint64_t slot;
	if (!rp_addrmap_remove(&bd->live, key, &slot))
		return 0; /* freed, never seen allocated: before tracing began */
	return free_request(bd, (uint32_t)(slot - 1), ev->ts, ev->alloc.reuse_delay);
}

/* Notes a driver-layer allocation of device memory beside a request layer
 * (mt_request_stream_load says why). */
static int note_segment(struct mt_request_stream *s, const struct mt_event *ev)
{
	if (ev->kind != MT_EVENT_ALLOC || s->layer == MT_LAYER_DRIVER ||
	    ev->alloc.layer != MT_LAYER_DRIVER || ev->alloc.mem_kind != MT_MEM_DEVICE)
		return 0;
	if (mt_array_grow((void **)&s->segments, &s->segments_cap, s->nsegments,
	                  sizeof(*s->segments)) < 0)
		return -ENOMEM;
	s->segments[s->nsegments++] =
	        (struct mt_recorded_segment){ ev->alloc.address, ev->alloc.bytes };
	return 0;
}

static void builder_release(struct builder *bd)
{
	rp_addrmap_release(&bd->live);
	free(bd->slot);
	free(bd->spare);
	free(bd->heap);
	free(bd->out);
	memset(bd, 0, sizeof(*bd));
}

/* ---- the summary ---- */

struct summary {
	struct mt_request_stream *s;
	uint64_t live;
	bool lifetimes; /* kept in s->lifetimes (room for cap) */
	size_t cap;
};

/* Notes the lifetime step st, at this position, gives its request. */
static int note_lifetime(struct summary *sum, const struct rp_step *st, uint64_t pos)
{
	struct mt_request_stream *s = sum->s;
	size_t q = RP_STEP_REQUEST(st->code);
	if (RP_STEP_IS_FREE(st->code)) {
		s->lifetimes[q].end = (uint32_t)pos;
		return 0;
	}
	/* requests are numbered in alloc order, and their allocs come in it */
	if (q >= sum->cap &&
	    mt_array_grow((void **)&s->lifetimes, &sum->cap, q, sizeof(*s->lifetimes)) < 0)
		return -ENOMEM;
	s->lifetimes[q] = (struct mt_plan_request){ (uint32_t)pos, UINT32_MAX, st->bytes };
	return 0;
}

static int summarize(struct summary *sum, const struct rp_step *steps, size_t n)
{
	struct mt_request_stream *s = sum->s;
	for (size_t i = 0; i < n; i++) {
		const struct rp_step *st = &steps[i];
		if (sum->lifetimes && note_lifetime(sum, st, s->nevents) < 0)
			return -ENOMEM;
		if (!s->nevents++)
			s->t0 = st->ts;
		if (RP_STEP_IS_FREE(st->code)) {
			sum->live -= st->bytes;
		} else {
			sum->live += st->bytes;
			if (sum->live > s->peak_live)
				s->peak_live = sum->live;
		}
	}
	if (n)
		s->t1 = steps[n - 1].ts;
	return 0;
}

/* Ends a summarised pass: applies the remaining delayed frees. */
static int finish_summary(struct builder *bd, struct summary *sum)
{
	int rc = flush_pending(bd, UINT64_MAX);
	if (rc < 0 || (rc = summarize(sum, bd->out, bd->nout)) < 0)
		return rc;
	sum->s->requests = bd->requests;
	sum->s->slots = (uint32_t)bd->nslots;
	return 0;
}

int mt_request_stream_from_events(struct mt_request_stream **out, const struct mt_event *events,
                                  size_t n, unsigned layer, char *err, size_t errlen)
{
	struct builder bd = { .layer = layer };
	struct mt_request_stream *s = calloc(1, sizeof(*s));
	struct summary sum = { s, 0, false, 0 };
	int rc = s ? 0 : -ENOMEM;
	if (s)
		s->layer = layer;
	for (size_t i = 0; rc == 0 && i < n; i++)
		if ((rc = builder_add(&bd, &events[i])) == 0)
			rc = note_segment(s, &events[i]);
	if (rc == 0)
		rc = finish_summary(&bd, &sum);
	if (rc < 0) {
		builder_release(&bd);
		mt_request_stream_free(s);
		snprintf(err, errlen, "building the request stream: %s", strerror(-rc));
		return rc;
	}
	s->steps = bd.out; /* the steps stay, in memory */
	bd.out = NULL;
	builder_release(&bd);
	*out = s;
	return 0;
}

/* ---- loading a trace ---- */

int mt_request_stream_first_device(struct mt_reader *r, uint32_t *device)
{
	struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
	for (size_t i = 0; i < mt_reader_device_count(r); i++) {
		struct mt_query q = { .device = mt_reader_device(r, i)->id };
		int rc = mt_reader_kind_stats(r, &q, st);
		if (rc < 0)
			return rc;
		if (st[MT_EVENT_ALLOC].events) {
			*device = q.device;
			return 0;
		}
	}
	*device = 0;
	return 0;
}

/* The starts of the trace's most frequent outermost NVTX range (ties: the
 * name seen first), when it occurs at least 3 times: a training loop's
 * steps. Ranges are host-side, so every device's are considered. */
static int load_iterations(struct mt_reader *r, struct mt_request_stream *s)
{
	enum { MAX_NAMES = 256, MIN_ITERATIONS = 3 };
	uint32_t names[MAX_NAMES];
	uint64_t counts[MAX_NAMES];
	size_t nnames = 0, best = 0;
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_RANGE) };
	struct mt_iter *it;
	struct mt_event ev;
	int rc;

	for (int pass = 0; pass < 2; pass++) {
		if ((rc = mt_reader_iter(r, &q, &it)) < 0)
			return rc;
		while ((rc = mt_iter_next(it, &ev)) > 0) {
			if (ev.range.depth != 0)
				continue;
			if (pass == 1) {
				if (ev.range.name == names[best])
					s->iteration_ts[s->iterations++] = ev.ts;
				continue;
			}
			size_t i = 0;
			while (i < nnames && names[i] != ev.range.name)
				i++;
			if (i == nnames && nnames < MAX_NAMES) {
				names[nnames] = ev.range.name;
				counts[nnames++] = 0;
			}
			if (i < nnames && ++counts[i] > counts[best])
				best = i;
		}
		mt_iter_free(it);
		if (rc < 0)
			return rc;
		if (pass == 0) {
			if (nnames == 0 || counts[best] < MIN_ITERATIONS)
				return 0;
			s->iteration_ts = malloc(counts[best] * sizeof(*s->iteration_ts));
			if (!s->iteration_ts)
				return -ENOMEM;
		}
	}
	return 0;
}

static int open_events(const struct mt_request_stream *s, struct mt_iter **it)
{
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE),
		              .device = s->device };
	return mt_reader_iter(s->reader, &q, it);
}

/* A message for rc: the reader's own, or what rc says. */
static int reader_fail(struct mt_reader *r, int rc, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s",
	         rc == -ENOMEM || rc == -E2BIG ? strerror(-rc) : mt_reader_message(r));
	return rc;
}

static int load(struct mt_request_stream **out, struct mt_reader *r, uint32_t device,
                bool lifetimes, char *err, size_t errlen)
{
	unsigned layer;
	struct mt_iter *it = NULL;
	struct mt_event ev;
	struct builder bd = { 0 };
	struct mt_request_stream *s;
	struct summary sum;
	int rc = mt_reader_request_layer(r, &layer);
	if (rc == 0 && !device)
		rc = mt_request_stream_first_device(r, &device);
	if (rc < 0) {
		snprintf(err, errlen, "%s", mt_reader_message(r));
		return rc;
	}
	if (!device || !mt_reader_device_by_id(r, device)) {
		snprintf(err, errlen,
		         device ? "no device %u in the trace" : "no allocations in the trace",
		         device);
		return -ENOENT;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return reader_fail(r, -ENOMEM, err, errlen);
	s->device = device;
	s->reader = r;
	s->layer = layer;
	sum = (struct summary){ s, 0, lifetimes, 0 };
	bd.layer = layer;
	if ((rc = open_events(s, &it)) < 0)
		goto fail;
	while ((rc = mt_iter_next(it, &ev)) > 0) {
		if ((rc = builder_add(&bd, &ev)) < 0 || (rc = note_segment(s, &ev)) < 0)
			goto fail;
		if (bd.nout >= RP_CHUNK_STEPS) {
			if ((rc = summarize(&sum, bd.out, bd.nout)) < 0)
				goto fail;
			bd.nout = 0;
		}
	}
	if (rc < 0 || (rc = finish_summary(&bd, &sum)) < 0 || (rc = load_iterations(r, s)) < 0)
		goto fail;
	if (s->lifetimes && s->requests < sum.cap) { /* to fit */
		void *fit = realloc(s->lifetimes, s->requests * sizeof(*s->lifetimes));
		s->lifetimes = fit ? fit : s->lifetimes;
	}
	mt_iter_free(it);
	builder_release(&bd);
	*out = s;
	return 0;
fail:
	mt_iter_free(it);
	builder_release(&bd);
	mt_request_stream_free(s);
	return reader_fail(r, rc, err, errlen);
}

int mt_request_stream_load(struct mt_request_stream **out, struct mt_reader *r, uint32_t device,
                           char *err, size_t errlen)
{
	return load(out, r, device, false, err, errlen);
}

int mt_request_stream_load_with_lifetimes(struct mt_request_stream **out, struct mt_reader *r,
                                          uint32_t device, char *err, size_t errlen)
{
	return load(out, r, device, true, err, errlen);
}

/* ---- cursors ---- */

struct rp_cursor {
	const struct mt_request_stream *s;
	size_t next;        /* in memory: the next step */
	struct mt_iter *it; /* from a trace: the events, NULL once read */
	struct builder bd;  /* from a trace: the steps as they come */
	bool flushed;       /* from a trace: the delayed frees at the end emitted */
};

int rp_cursor_open(const struct mt_request_stream *s, struct rp_cursor **out, char *err,
                   size_t errlen)
{
	struct rp_cursor *c = calloc(1, sizeof(*c));
	int rc;
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->s = s;
	c->bd.layer = s->layer;
	if (s->reader && (rc = open_events(s, &c->it)) < 0) {
		free(c);
		return reader_fail(s->reader, rc, err, errlen);
	}
	*out = c;
	return 0;
}

int rp_cursor_next(struct rp_cursor *c, const struct rp_step **steps, size_t *n, char *err,
                   size_t errlen)
{
	const struct mt_request_stream *s = c->s;
	struct mt_event ev;
	int rc = 0;
	if (!s->reader) {
		size_t left = s->nevents - c->next;
		*steps = s->steps + c->next;
		*n = left < RP_CHUNK_STEPS ? left : RP_CHUNK_STEPS;
		c->next += *n;
		return 0;
	}
	c->bd.nout = 0;
	while (c->bd.nout < RP_CHUNK_STEPS && c->it) {
		if ((rc = mt_iter_next(c->it, &ev)) == 0) { /* the end of the events */
			mt_iter_free(c->it);
			c->it = NULL;
		} else if (rc < 0 || (rc = builder_add(&c->bd, &ev)) < 0) {
			return reader_fail(s->reader, rc, err, errlen);
		}
	}
	if (!c->it && c->bd.nout < RP_CHUNK_STEPS && !c->flushed) {
		c->flushed = true;
		if ((rc = flush_pending(&c->bd, UINT64_MAX)) < 0)
			return reader_fail(s->reader, rc, err, errlen);
	}
	*steps = c->bd.out;
	*n = c->bd.nout;
	return 0;
}

void rp_cursor_close(struct rp_cursor *c)
{
	if (!c)
		return;
	mt_iter_free(c->it);
	builder_release(&c->bd);
	free(c);
}

int rp_request_stream_lifetimes(const struct mt_request_stream *s,
                                const struct mt_replay_options *opt, struct mt_plan_request **out,
                                char *err, size_t errlen)
{
	struct mt_plan_request *reqs = malloc((s->requests ? s->requests : 1) * sizeof(*reqs));
	struct rp_cursor *c = NULL;
	const struct rp_step *steps;
	uint64_t pos = 0;
	size_t n;
	int rc = reqs ? rp_cursor_open(s, &c, err, errlen) : -ENOMEM;
	while (rc == 0 && (rc = rp_cursor_next(c, &steps, &n, err, errlen)) == 0 && n) {
		if (opt && opt->interrupted && *opt->interrupted) {
			snprintf(err, errlen, "interrupted");
			rc = -EINTR;
			break;
		}
		if (opt && opt->progress)
			opt->progress(opt->progress_data, 0, s->nevents);
		for (size_t i = 0; i < n; i++, pos++) {
			struct mt_plan_request *q = &reqs[RP_STEP_REQUEST(steps[i].code)];
			if (RP_STEP_IS_FREE(steps[i].code))
				q->end = (uint32_t)pos;
			else
				*q = (struct mt_plan_request){ (uint32_t)pos, UINT32_MAX,
					                       steps[i].bytes };
		}
	}
	rp_cursor_close(c);
	if (rc < 0) {
		if (rc == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		free(reqs);
		return rc;
	}
	*out = reqs;
	return 0;
}

uint64_t mt_request_stream_events(const struct mt_request_stream *s)
{
	return s->nevents;
}

uint64_t mt_request_stream_requests(const struct mt_request_stream *s)
{
	return s->requests;
}

uint64_t mt_request_stream_start(const struct mt_request_stream *s)
{
	return s->nevents ? s->t0 : 0;
}

uint64_t mt_request_stream_peak_live(const struct mt_request_stream *s)
{
	return s->peak_live;
}

uint32_t mt_request_stream_device(const struct mt_request_stream *s)
{
	return s->device;
}

void mt_request_stream_free(struct mt_request_stream *s)
{
	if (!s)
		return;
	free(s->steps);
	free(s->lifetimes);
	free(s->iteration_ts);
	free(s->segments);
	free(s);
}
