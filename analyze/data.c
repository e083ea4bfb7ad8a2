/* data.c — one device's data for the analyses: lifetimes of the request
 * and driver layers, samples, the NVTX ranges of the device's processes and
 * failed allocations; and growing arrays, which every analyze file uses.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze-private.h"

int an_grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *q;

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

/* Every event of the query, handed to fn. */
static int walk(struct mt_reader *r, const struct mt_query *q,
                int (*fn)(void *data, const struct mt_event *ev), void *data)
{
	struct mt_iter *it = NULL;
	struct mt_event ev;
	int rc;

	rc = mt_reader_iter(r, q, &it);
	while (rc >= 0 && (rc = mt_iter_next(it, &ev)) == 1)
		rc = fn(data, &ev);
	mt_iter_free(it);
	return rc < 0 ? rc : 0;
}

struct samples {
	struct mt_sample *v;
	size_t n, cap;
};

static int add_sample(void *data, const struct mt_event *ev)
{
	struct samples *s = data;

	if (an_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v)) < 0)
		return -ENOMEM;
	s->v[s->n++] =
	        (struct mt_sample){ ev->ts, ev->sample.used_bytes, ev->sample.process_bytes };
	return 0;
}

int mt_samples_load(struct mt_reader *r, uint32_t device, struct mt_sample **out, size_t *n)
{
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_SAMPLE), .device = device };
	struct samples s = { 0 };
	int rc = walk(r, &q, add_sample, &s);

	if (rc < 0) {
		free(s.v);
		return rc;
	}
	*out = s.v;
	*n = s.n;
	return 0;
}

/* The processes with allocations on the device, and the events we keep. */
struct collect {
	struct mt_analysis *d;
	uint32_t *procs;
	size_t nprocs;
	size_t cap;
	size_t range_cap, fail_cap; /* of d->ranges and d->fails */
	bool all_ranges;
	uint32_t *dropped; /* names of the library ranges left out */
	size_t dropped_cap;
};

static bool has_process(const struct collect *c, uint32_t p)
{
	size_t i;

	for (i = 0; i < c->nprocs; i++)
		if (c->procs[i] == p)
			return true;
	return false;
}

static int note_process(struct collect *c, uint32_t p)
{
	if (has_process(c, p))
		return 0;
	if (an_grow((void **)&c->procs, &c->cap, c->nprocs, sizeof(*c->procs)) < 0)
		return -ENOMEM;
	c->procs[c->nprocs++] = p;
	return 0;
}

/* Leaves out a library's own range, noting its name once. */
static int drop_library_range(struct collect *c, const struct mt_event *ev, bool *dropped)
{
	const char *name = mt_reader_string(c->d->r, ev->range.name);
	const char *domain = mt_reader_string(c->d->r, ev->range.domain);
	size_t i;

	*dropped = !c->all_ranges && an_range_is_library(name, domain);
	if (!*dropped)
		return 0;
	for (i = 0; i < c->d->library_names; i++)
		if (c->dropped[i] == ev->range.name)
			return 0;
	if (an_grow((void **)&c->dropped, &c->dropped_cap, i, sizeof(*c->dropped)) < 0)
		return -ENOMEM;
	c->dropped[c->d->library_names++] = ev->range.name;
	return 0;
}

static int add_range(void *data, const struct mt_event *ev)
{
	struct collect *c = data;
	struct mt_analysis *d = c->d;
	bool dropped;

	if (!has_process(c, ev->process))
		return 0;
	if (drop_library_range(c, ev, &dropped) < 0)
		return -ENOMEM;
	if (dropped)
		return 0;
	if (an_grow((void **)&d->ranges, &c->range_cap, d->nranges, sizeof(*d->ranges)) < 0)
		return -ENOMEM;
	d->ranges[d->nranges++] = (struct mt_range){
		.start = ev->ts,
		.end = ev->range.end,
		.process = ev->process,
		.name = ev->range.name,
		.domain = ev->range.domain,
		.thread = ev->range.thread,
		.depth = ev->range.depth,
	};
	return 0;
}

static int add_fail(void *data, const struct mt_event *ev)
{
	struct collect *c = data;
	struct mt_analysis *d = c->d;

	if (an_grow((void **)&d->fails, &c->fail_cap, d->nfails, sizeof(*d->fails)) < 0)
		return -ENOMEM;
	d->fails[d->nfails++] = (struct mt_failure){
		.ts = ev->ts,
		.bytes = ev->failed.bytes,
		.free_bytes = ev->failed.free_bytes,
		.stream = ev->failed.stream,
		.process = ev->process,
		.site = ev->failed.site,
		.error = ev->failed.error,
		.layer = ev->failed.layer,
		.api = ev->failed.api,
	};
	return note_process(c, ev->process);
}

static int lifetimes(struct mt_analysis *d, unsigned layer, struct mt_lifetime **out, size_t *n)
{
	struct mt_query q = { .device = d->device };

	return mt_reader_lifetimes(d->r, &q, layer, out, n);
}

static int load_events(struct mt_analysis *d, bool all_ranges)
{
	struct mt_query fq = { .kinds = MT_KIND_BIT(MT_EVENT_ALLOC_FAILED), .device = d->device };
	struct mt_query rq = { .kinds = MT_KIND_BIT(MT_EVENT_RANGE) };
	struct collect c = { .d = d, .all_ranges = all_ranges };
	size_t i;
	int rc = 0;

	for (i = 0; i < d->nlive && rc == 0; i++)
		rc = note_process(&c, d->live[i].process);
	for (i = 0; i < d->nseg && rc == 0; i++)
		rc = note_process(&c, d->seg[i].process);
	if (rc == 0)
		rc = walk(d->r, &fq, add_fail, &c);
	if (rc == 0)
		rc = walk(d->r, &rq, add_range, &c);
	if (rc == 0)
		rc = mt_samples_load(d->r, d->device, &d->samples, &d->nsamples);
	free(c.procs);
	free(c.dropped);
	return rc;
}

int mt_analysis_load(struct mt_analysis *d, struct mt_reader *r, uint32_t device, bool all_ranges,
                     char *err, size_t errlen)
{
	int rc;

	memset(d, 0, sizeof(*d));
	d->r = r;
	if (device == 0) {
		uint32_t *ids = NULL;
		size_t n = 0;

		rc = mt_analyze_devices(r, &ids, &n, err, errlen);
		if (rc < 0)
			return rc;
		device = n ? ids[0] : 0;
		free(ids);
		if (!device)
			return an_fail(err, errlen, -ENOENT, "the trace holds no allocations");
	}
	d->device = device;
	d->dev = mt_reader_device_by_id(r, device);
	if (!d->dev)
		return an_fail(err, errlen, -EINVAL, "the trace has no device %u", device);
	rc = mt_analyze_span(r, device, &d->t0, &d->t1);
	if (rc == 0)
		rc = mt_reader_request_layer(r, &d->layer);
	if (rc == 0)
		rc = lifetimes(d, d->layer, &d->live, &d->nlive);
	if (rc == 0 && d->nlive == 0 && d->layer == MT_LAYER_REQUEST) {
		free(d->live);
		d->live = NULL;
		d->layer = MT_LAYER_DRIVER;
		rc = lifetimes(d, d->layer, &d->live, &d->nlive);
	}
	if (rc == 0 && d->layer == MT_LAYER_REQUEST)
		rc = lifetimes(d, MT_LAYER_DRIVER, &d->seg, &d->nseg);
	if (rc == 0)
		rc = load_events(d, all_ranges);
	if (rc < 0) {
		rc = an_reader_fail(r, rc, err, errlen);
		mt_analysis_release(d);
	}
	return rc;
}

void mt_analysis_release(struct mt_analysis *d)
{
	free(d->live);
	free(d->seg);
	free(d->samples);
	free(d->ranges);
	free(d->fails);
	memset(d, 0, sizeof(*d));
}
