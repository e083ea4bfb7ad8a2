/* request-stream.c — the request stream: one device's alloc/free events of
 * one layer in replay order, built once from a trace (or an event array)
 * and shared by any number of replays (see memtrace-replay.h for the
 * rules). Frees whose memory becomes reusable later (reuse_delay > 0) wait
 * in a min-heap keyed by reuse time and enter the order just before the
 * first recorded event at or after that time. */
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
	uint32_t request;
};

struct builder {
	struct mt_request_stream *s;
	unsigned layer;
	size_t req_cap, ev_cap, stream_cap;
	struct rp_addrmap live;    /* (address, process) key -> request index + 1 */
	struct rp_addrmap streams; /* stream id + 1 -> index */
	struct pending *heap;
	size_t heap_len, heap_cap;
	uint64_t seq;
	uint64_t live_bytes;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 1024;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static bool heap_less(const struct pending *a, const struct pending *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static int heap_push(struct builder *bd, struct pending p)
{
	if (grow((void **)&bd->heap, &bd->heap_cap, bd->heap_len + 1, sizeof(p)) < 0)
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

static int emit(struct builder *bd, uint32_t request, bool is_free, uint64_t ts)
{
	struct mt_request_stream *s = bd->s;
	if (grow((void **)&s->events, &bd->ev_cap, s->nevents + 1, sizeof(*s->events)) < 0)
		return -ENOMEM;
	s->events[s->nevents++] = (request << 1) | (is_free ? 1u : 0u);
	if (is_free) {
		bd->live_bytes -= s->bytes[request];
		s->free_ts[request] = ts;
	} else {
		bd->live_bytes += s->bytes[request];
		if (bd->live_bytes > s->peak_live) {
			s->peak_live = bd->live_bytes;
			s->peak_ts = ts;
		}
	}
	return 0;
}

/* Applies every delayed free reusable at or before ts. */
static int flush_pending(struct builder *bd, uint64_t ts)
{
	while (bd->heap_len && bd->heap[0].time <= ts) {
		struct pending p = heap_pop(bd);
		int rc = emit(bd, p.request, true, p.time);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int stream_index(struct builder *bd, uint64_t stream, uint32_t *index)
{
	struct mt_request_stream *s = bd->s;
	uint64_t v;
	if (rp_addrmap_get(&bd->streams, stream + 1, &v)) {
		*index = (uint32_t)v;
		return 0;
	}
	if (grow((void **)&s->streams, &bd->stream_cap, s->nstreams + 1, sizeof(uint64_t)) < 0 ||
	    rp_addrmap_put(&bd->streams, stream + 1, s->nstreams) < 0)
		return -ENOMEM;
	s->streams[s->nstreams] = stream;
	*index = (uint32_t)s->nstreams++;
	return 0;
}

static int free_request(struct builder *bd, uint32_t r, uint64_t ts, uint64_t delay)
{
	if (!delay)
		return emit(bd, r, true, ts);
	uint64_t t = ts + delay < ts ? UINT64_MAX - 1 : ts + delay;
	return heap_push(bd, (struct pending){ t, bd->seq++, r });
}

/* Makes room for one more request in every per-request column. */
static int grow_requests(struct builder *bd)
{
	struct mt_request_stream *s = bd->s;
	if (s->requests < bd->req_cap)
		return 0;
	size_t n = bd->req_cap ? bd->req_cap * 2 : 1024;
	void *p;
	if (!(p = realloc(s->bytes, n * sizeof(uint64_t))))
		return -ENOMEM;
	s->bytes = p;
	if (!(p = realloc(s->alloc_ts, n * sizeof(uint64_t))))
		return -ENOMEM;
	s->alloc_ts = p;
	if (!(p = realloc(s->free_ts, n * sizeof(uint64_t))))
		return -ENOMEM;
	s->free_ts = p;
	if (!(p = realloc(s->stream, n * sizeof(uint32_t))))
		return -ENOMEM;
	s->stream = p;
	bd->req_cap = n;
	return 0;
}

static int add_alloc(struct builder *bd, const struct mt_event *ev, uint64_t key)
{
	struct mt_request_stream *s = bd->s;
	uint64_t prev;
	int rc;
	if (rp_addrmap_remove(&bd->live, key, &prev) &&
	    (rc = emit(bd, (uint32_t)(prev - 1), true, ev->ts)) < 0)
		return rc;
	if (s->requests >= (1u << 31))
		return -E2BIG;
	if ((rc = grow_requests(bd)) < 0)
		return rc;
	size_t n = s->requests;
	if ((rc = stream_index(bd, ev->alloc.stream, &s->stream[n])) < 0)
		return rc;
	s->bytes[n] = ev->alloc.bytes;
	s->alloc_ts[n] = ev->ts;
	s->free_ts[n] = UINT64_MAX;
	s->requests++;
	if (rp_addrmap_put(&bd->live, key, n + 1) < 0)
		return -ENOMEM;
	return emit(bd, (uint32_t)n, false, ev->ts);
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
	uint64_t r;
	if (!rp_addrmap_remove(&bd->live, key, &r))
		return 0; /* freed, never seen allocated: before tracing began */
	return free_request(bd, (uint32_t)(r - 1), ev->ts, ev->alloc.reuse_delay);
}

static int builder_init(struct builder *bd, unsigned layer)
{
	memset(bd, 0, sizeof(*bd));
	bd->layer = layer;
	bd->s = calloc(1, sizeof(*bd->s));
	return bd->s ? 0 : -ENOMEM;
}

/* Ends the build: applies the remaining delayed frees, trims the arrays. */
static int builder_finish(struct builder *bd, struct mt_request_stream **out)
{
	int rc = flush_pending(bd, UINT64_MAX);
	rp_addrmap_release(&bd->live);
	rp_addrmap_release(&bd->streams);
	free(bd->heap);
	if (rc < 0) {
		mt_request_stream_free(bd->s);
		return rc;
	}
	*out = bd->s;
	return 0;
}

static void builder_abort(struct builder *bd)
{
	struct mt_request_stream *s = NULL;
	bd->heap_len = 0;
	if (builder_finish(bd, &s) == 0)
		mt_request_stream_free(s);
}

int mt_request_stream_from_events(struct mt_request_stream **out, const struct mt_event *events,
                                  size_t n, unsigned layer, char *err, size_t errlen)
{
	struct builder bd;
	int rc = builder_init(&bd, layer);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = builder_add(&bd, &events[i]);
	if (rc < 0) {
		if (bd.s)
			builder_abort(&bd);
		snprintf(err, errlen, "building the request stream: %s", strerror(-rc));
		return rc;
	}
	return builder_finish(&bd, out);
}

/* The first device (in id order) with alloc events, or 0. */
static int first_device(struct mt_reader *r, uint32_t *device)
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

int mt_request_stream_load(struct mt_request_stream **out, struct mt_reader *r, uint32_t device,
                           char *err, size_t errlen)
{
	unsigned layer;
	struct mt_iter *it = NULL;
	struct mt_event ev;
	struct builder bd;
	int rc = mt_reader_request_layer(r, &layer);
	if (rc == 0 && !device)
		rc = first_device(r, &device);
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
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE),
		              .device = device };
	if ((rc = builder_init(&bd, layer)) < 0 || (rc = mt_reader_iter(r, &q, &it)) < 0)
		goto fail;
	while ((rc = mt_iter_next(it, &ev)) > 0)
		if ((rc = builder_add(&bd, &ev)) < 0)
			goto fail;
	if (rc < 0)
		goto fail;
	mt_iter_free(it);
	it = NULL;
	bd.s->device = device;
	if ((rc = load_iterations(r, bd.s)) < 0)
		goto fail;
	return builder_finish(&bd, out);
fail:
	mt_iter_free(it);
	if (bd.s)
		builder_abort(&bd);
	snprintf(err, errlen, "%s",
	         rc == -ENOMEM || rc == -E2BIG ? strerror(-rc) : mt_reader_message(r));
	return rc;
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
	return s->requests ? s->alloc_ts[0] : 0;
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
	free(s->bytes);
	free(s->alloc_ts);
	free(s->free_ts);
	free(s->stream);
	free(s->streams);
	free(s->events);
	free(s->iteration_ts);
	free(s);
}
