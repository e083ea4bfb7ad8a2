/* trace-data.c — one device's events as the views use them: lifetimes of
 * the request and driver layers, samples, NVTX ranges, kernels and failed
 * allocations, plus the questions every view asks of them (live bytes at a
 * moment, the peak, the phase open at a moment).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viewer-private.h"

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *q;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 256;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

static int reader_fail(struct mt_reader *r, int rc, char *err, size_t errlen)
{
	return vw_fail(err, errlen, rc, "%s", mt_reader_message(r));
}

/* Every event of one kind on the device, handed to fn. */
static int walk_kind(struct mt_reader *r, unsigned kind, uint32_t device,
                     int (*fn)(void *data, const struct mt_event *ev), void *data)
{
	struct mt_query q = { .kinds = MT_KIND_BIT(kind), .device = device };
	struct mt_iter *it = NULL;
	struct mt_event ev;
	int rc;

	rc = mt_reader_iter(r, &q, &it);
	while (rc >= 0 && (rc = mt_iter_next(it, &ev)) == 1)
		rc = fn(data, &ev);
	mt_iter_free(it);
	return rc < 0 ? rc : 0;
}

struct collector {
	void *items;
	size_t n, cap, size;
	int (*convert)(void *item, const struct mt_event *ev);
};

static int collect_one(void *data, const struct mt_event *ev)
{
	struct collector *c = data;

	if (grow(&c->items, &c->cap, c->n, c->size) < 0)
		return -ENOMEM;
	if (c->convert((char *)c->items + c->n * c->size, ev))
		c->n++;
	return 0;
}

static int conv_sample(void *item, const struct mt_event *ev)
{
	struct vw_point *p = item;

	p->ts = ev->ts;
	p->value = ev->sample.used_bytes;
	return 1;
}

static int conv_fail(void *item, const struct mt_event *ev)
{
	struct vw_point *p = item;

	p->ts = ev->ts;
	p->value = ev->failed.bytes;
	return 1;
}

static int conv_kernel(void *item, const struct mt_event *ev)
{
	struct vw_span *s = item;

	s->start = ev->ts;
	s->end = ev->kernel.end > ev->ts ? ev->kernel.end : ev->ts;
	return 1;
}

static int conv_range(void *item, const struct mt_event *ev)
{
	struct vw_range *g = item;

	g->start = ev->ts;
	g->end = ev->range.end;
	g->name = ev->range.name;
	g->depth = ev->range.depth;
	return 1;
}

static int collect(struct mt_reader *r, unsigned kind, uint32_t device, size_t size,
                   int (*convert)(void *item, const struct mt_event *ev), void **out, size_t *n)
{
	struct collector c = { .size = size, .convert = convert };
	int rc = walk_kind(r, kind, device, collect_one, &c);

	if (rc < 0) {
		free(c.items);
		return rc;
	}
	*out = c.items;
	*n = c.n;
	return 0;
}

static void normalise(struct mt_lifetime *l, size_t n, uint64_t t0)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (l[i].flags & MT_LIFETIME_NO_ALLOC || l[i].start == MT_TIME_UNKNOWN)
			l[i].start = t0;
		if (l[i].flags & MT_LIFETIME_NO_FREE || l[i].end == MT_TIME_UNKNOWN)
			l[i].end = UINT64_MAX;
	}
}

static int lifetimes(struct vw_trace *t, unsigned layer, struct mt_lifetime **out, size_t *n)
{
	struct mt_query q = { .device = t->device };
	int rc = mt_reader_lifetimes(t->r, &q, layer, out, n);

	if (rc == 0)
		normalise(*out, *n, t->t0);
	return rc;
}

static int load_events(struct vw_trace *t, unsigned what)
{
	int rc = 0;

	if (what & VW_LOAD_SAMPLES)
		rc = collect(t->r, MT_EVENT_SAMPLE, t->device, sizeof(struct vw_point), conv_sample,
		             (void **)&t->samples, &t->nsamples);
	if (rc == 0 && what & VW_LOAD_FAILS)
		rc = collect(t->r, MT_EVENT_ALLOC_FAILED, t->device, sizeof(struct vw_point),
		             conv_fail, (void **)&t->fails, &t->nfails);
	if (rc == 0 && what & VW_LOAD_KERNELS)
		rc = collect(t->r, MT_EVENT_KERNEL, t->device, sizeof(struct vw_span), conv_kernel,
		             (void **)&t->kernels, &t->nkernels);
	if (rc == 0 && what & VW_LOAD_RANGES) {
		rc = collect(t->r, MT_EVENT_RANGE, t->device, sizeof(struct vw_range), conv_range,
		             (void **)&t->ranges, &t->nranges);
		/* NVTX ranges belong to a thread: a recorder may file them
		 * under no particular device */
		if (rc == 0 && t->nranges == 0) {
			free(t->ranges);
			t->ranges = NULL;
			rc = collect(t->r, MT_EVENT_RANGE, 0, sizeof(struct vw_range), conv_range,
			             (void **)&t->ranges, &t->nranges);
		}
	}
	return rc;
}

int vw_trace_load(struct vw_trace *t, struct mt_reader *r, uint32_t device, unsigned what,
                  char *err, size_t errlen)
{
	struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
	int rc;

	memset(t, 0, sizeof(*t));
	t->r = r;
	if (device == 0) {
		uint32_t *ids;
		size_t n;

		rc = mt_analyze_devices(r, &ids, &n, err, errlen);
		if (rc < 0)
			return rc;
		device = n ? ids[0] : 0;
		free(ids);
		if (!device)
			return vw_fail(err, errlen, -ENOENT, "the trace holds no allocations");
	}
	t->device = device;
	t->dev = mt_reader_device_by_id(r, device);
	if (!t->dev)
		return vw_fail(err, errlen, -EINVAL, "the trace has no device %u", device);
	rc = mt_reader_kind_stats(r, &(struct mt_query){ .device = device }, st);
	if (rc < 0)
		return reader_fail(r, rc, err, errlen);
	/* the memory's story starts with its own events: the same start as
	 * memtrace report's */
	rc = mt_device_span(r, device, &t->t0, &t->t1);
	if (rc < 0)
		return reader_fail(r, rc, err, errlen);
	if (st[MT_EVENT_ALLOC].events == 0 && st[MT_EVENT_FREE].events == 0)
		return vw_fail(err, errlen, -ENOENT, "device %u holds no allocations", device);
	rc = mt_reader_request_layer(r, &t->layer);
	if (rc == 0)
		rc = lifetimes(t, t->layer, &t->req, &t->nreq);
	if (rc == 0 && t->nreq == 0 && t->layer == MT_LAYER_REQUEST) {
		free(t->req);
		t->req = NULL;
		t->layer = MT_LAYER_DRIVER;
		rc = lifetimes(t, t->layer, &t->req, &t->nreq);
	}
	if (rc == 0 && what & VW_LOAD_SEGMENTS && t->layer == MT_LAYER_REQUEST)
		rc = lifetimes(t, MT_LAYER_DRIVER, &t->seg, &t->nseg);
	if (rc == 0)
		rc = load_events(t, what);
	if (rc < 0) {
		rc = reader_fail(r, rc, err, errlen);
		vw_trace_release(t);
	}
	return rc;
}

void vw_trace_release(struct vw_trace *t)
{
	free(t->req);
	free(t->seg);
	free(t->samples);
	free(t->ranges);
	free(t->kernels);
	free(t->fails);
	memset(t, 0, sizeof(*t));
}

uint64_t vw_peak_moment(const struct mt_lifetime *l, size_t n, uint64_t *peak_bytes)
{
	uint64_t at = n ? l[0].start : 0;

	if (mt_peak_moment(l, n, peak_bytes, &at) < 0)
		*peak_bytes = 0;
	return at;
}

void vw_trace_subtitle(const struct vw_trace *t, const char *trace_name, char *buf, size_t len)
{
	const char *capture = mt_reader_meta(t->r, "capture");
	char total[32];

	mt_size_format(t->dev->total_bytes, total, sizeof(total));
	snprintf(buf, len, "%s \u00b7 %s (%s) \u00b7 capture: %s \u00b7 %s layer",
	         trace_name ? trace_name : "trace",
	         t->dev->name && *t->dev->name ? t->dev->name : "unknown GPU", total,
	         capture && *capture ? capture : "unknown", mt_layer_name(t->layer));
}

int vw_phase_index(const struct vw_phases *p, uint32_t name)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->name[i] == name)
			return (int)i;
	return p->overflow ? (int)p->n - 1 : -1;
}

/* The shallowest depth with two range names or more (0 if none). */
static uint32_t phase_depth(const struct vw_trace *t)
{
	uint32_t first[4] = { 0 }, d;
	bool several[4] = { false };
	size_t i;

	for (i = 0; i < t->nranges; i++) {
		d = t->ranges[i].depth;
		if (d >= 4)
			continue;
		if (!first[d])
			first[d] = t->ranges[i].name;
		else if (first[d] != t->ranges[i].name)
			several[d] = true;
	}
	for (d = 0; d < 4; d++)
		if (several[d])
			return d;
	return 0;
}

void vw_phases_collect(const struct vw_trace *t, struct vw_phases *p)
{
	size_t i, j;

	memset(p, 0, sizeof(*p));
	p->depth = phase_depth(t);
	for (i = 0; i < t->nranges; i++) {
		if (t->ranges[i].depth != p->depth)
			continue;
		for (j = 0; j < p->n && p->name[j] != t->ranges[i].name; j++)
			;
		if (j < p->n)
			continue;
		if (p->n == VW_MAX_PHASES) {
			p->overflow = true;
			continue;
		}
		p->name[p->n++] = t->ranges[i].name;
	}
}

int vw_phase_at(const struct vw_trace *t, const struct vw_phases *p, uint64_t ts)
{
	size_t lo = 0, hi = t->nranges, i;

	/* ranges come in start order: the last one starting at or before ts */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->ranges[mid].start <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges of one depth do not overlap: the latest one decides */
	for (i = lo; i-- > 0;) {
		const struct vw_range *g = &t->ranges[i];
		uint64_t end = g->end == MT_TIME_UNKNOWN ? UINT64_MAX : g->end;

		if (g->depth == p->depth)
			return ts < end ? vw_phase_index(p, g->name) : -1;
	}
	return -1;
}
