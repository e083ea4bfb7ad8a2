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

#include "memtrace-common.h"
#include "viewer-private.h"

static int reader_fail(struct mt_reader *r, int rc, char *err, size_t errlen)
{
	return vw_fail(err, errlen, rc, "%s", mt_reader_message(r));
}

/* Kernels: the one thing the views draw that analyze does not load. */
static int load_kernels(struct vw_trace *t)
{
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_KERNEL), .device = t->device };
	struct mt_iter *it = NULL;
	struct mt_event ev;
	size_t cap = 0;
	int rc;

	rc = mt_reader_iter(t->r, &q, &it);
	while (rc >= 0 && (rc = mt_iter_next(it, &ev)) == 1) {
		if (t->nkernels == cap) {
			size_t c = cap ? cap * 2 : 256;
			struct vw_span *k = realloc(t->kernels, c * sizeof(*k));
			if (!k) {
				rc = -ENOMEM;
				break;
			}
			t->kernels = k;
			cap = c;
		}
		t->kernels[t->nkernels++] = (struct vw_span){
			.start = ev.ts,
			.end = ev.kernel.end > ev.ts ? ev.kernel.end : ev.ts,
		};
	}
	mt_iter_free(it);
	return rc < 0 ? rc : 0;
}

/* Unknown starts (allocated before tracing) at t0; never freed to the end. */
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

/* The OOMs the program saw: of the failed allocations, those analyze
 * counts as one OOM each (not the driver attempts behind them). */
static int load_ooms(struct vw_trace *t, const struct mt_analysis *d)
{
	struct mt_report_failure *roles = malloc(d->nfails * sizeof(*roles));
	size_t i, n = 0;
	int rc = -ENOMEM;

	t->fails = malloc(d->nfails * sizeof(*t->fails));
	if (!roles || !t->fails || mt_failure_roles(d, roles, &n) < 0)
		goto out;
	for (i = 0; i < d->nfails; i++)
		if (roles[i].role == MT_FAILURE_OOM)
			t->fails[t->nfails++] =
			        (struct vw_point){ d->fails[i].ts, d->fails[i].bytes };
	rc = 0;
out:
	free(roles);
	return rc;
}

/* The views' copies of analyze's samples, OOMs and ranges. */
static int convert_events(struct vw_trace *t, const struct mt_analysis *d, unsigned what)
{
	size_t i;

	if (what & VW_LOAD_SAMPLES && d->nsamples) {
		if (!(t->samples = malloc(d->nsamples * sizeof(*t->samples))))
			return -ENOMEM;
		for (i = 0; i < d->nsamples; i++)
			t->samples[i] =
			        (struct vw_point){ d->samples[i].ts, d->samples[i].used_bytes };
		t->nsamples = d->nsamples;
	}
	if (what & VW_LOAD_FAILS && d->nfails && load_ooms(t, d) < 0)
		return -ENOMEM;
	if (what & VW_LOAD_RANGES && d->nranges) {
		if (!(t->ranges = malloc(d->nranges * sizeof(*t->ranges))))
			return -ENOMEM;
		for (i = 0; i < d->nranges; i++)
			t->ranges[i] = (struct vw_range){ .start = d->ranges[i].start,
				                          .end = d->ranges[i].end,
				                          .name = d->ranges[i].name,
				                          .depth = d->ranges[i].depth };
		t->nranges = d->nranges;
	}
	return 0;
}

int vw_trace_load(struct vw_trace *t, struct mt_reader *r, uint32_t device, unsigned what,
                  char *err, size_t errlen)
{
	struct mt_analysis d;
	int rc;

	memset(t, 0, sizeof(*t));
	t->r = r;
	rc = mt_analysis_load(&d, r, device, what & VW_LOAD_LIBRARY_RANGES, err, errlen);
	if (rc < 0)
		return rc;
	t->device = d.device;
	t->dev = d.dev;
	t->t0 = d.t0;
	t->t1 = d.t1;
	t->layer = d.layer;
	if (!d.nlive) {
		mt_analysis_release(&d);
		return vw_fail(err, errlen, -ENOENT, "device %u holds no allocations", t->device);
	}
	/* the rest is copied into the views' types (the OOMs read the
	 * lifetimes), then the lifetimes change hands */
	rc = convert_events(t, &d, what);
	t->req = d.live;
	t->nreq = d.nlive;
	d.live = NULL;
	normalise(t->req, t->nreq, t->t0);
	if (what & VW_LOAD_SEGMENTS) {
		t->seg = d.seg;
		t->nseg = d.nseg;
		d.seg = NULL;
		normalise(t->seg, t->nseg, t->t0);
	}
	mt_analysis_release(&d);
	if (rc == 0 && what & VW_LOAD_KERNELS)
		rc = load_kernels(t);
	if (rc < 0) {
		rc = rc == -ENOMEM ? vw_fail(err, errlen, rc, "out of memory")
		                   : reader_fail(r, rc, err, errlen);
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

int vw_anatomy_at(const struct vw_trace *t, uint64_t at, struct mt_anatomy *a, char *err,
                  size_t errlen)
{
	struct mt_sample *s = NULL;
	size_t ns = 0;
	int rc = mt_samples_load(t->r, t->device, &s, &ns);

	if (rc < 0)
		return reader_fail(t->r, rc, err, errlen);
	rc = mt_anatomy_compute(a, t->req, t->nreq, t->layer, t->seg, t->nseg, s, ns, at, err,
	                        errlen);
	free(s);
	return rc;
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
