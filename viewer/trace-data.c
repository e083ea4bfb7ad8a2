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

/* Kernels: the one thing the views draw that analyze does not load; they
 * stream past in vw_trace_columns, counted here. */
static int count_kernels(struct vw_trace *t)
{
	struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { .device = t->device };
	int rc = mt_reader_kind_stats(t->r, &q, st);

	if (rc == 0)
		t->nkernels = st[MT_EVENT_KERNEL].events;
	return rc;
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

int vw_trace_survey(struct vw_trace *t, struct mt_reader *r, uint32_t device, unsigned what,
                    char *err, size_t errlen)
{
	struct mt_analysis *d = &t->d;
	int rc;

	memset(t, 0, sizeof(*t));
	t->r = r;
	rc = mt_analysis_survey(d, r, device, what & VW_LOAD_LIBRARY_RANGES, err, errlen);
	if (rc < 0)
		return rc;
	t->what = what;
	t->device = d->device;
	t->dev = d->dev;
	t->t0 = d->t0;
	t->t1 = d->t1;
	t->layer = d->layer;
	if (!d->nlive_all) {
		vw_trace_release(t);
		return vw_fail(err, errlen, -ENOENT, "device %u holds no allocations", t->device);
	}
	rc = convert_events(t, d, what);
	if (rc == 0 && what & VW_LOAD_KERNELS)
		rc = count_kernels(t);
	if (rc < 0) {
		rc = rc == -ENOMEM ? vw_fail(err, errlen, rc, "out of memory")
		                   : reader_fail(r, rc, err, errlen);
		vw_trace_release(t);
	}
	return rc;
}

/* Lifetimes of d (all, or those live at the n moments) as the views use
 * them. */
static int keep(struct vw_trace *t, const uint64_t *moments, size_t n, char *err, size_t errlen)
{
	struct mt_analysis *d = &t->d;
	int rc = mt_analysis_keep(d, moments, n, err, errlen);

	if (rc < 0)
		return rc;
	t->req = d->live;
	t->nreq = d->nlive;
	normalise(t->req, t->nreq, t->t0);
	if (t->what & VW_LOAD_SEGMENTS) {
		t->seg = d->seg;
		t->nseg = d->nseg;
		normalise(t->seg, t->nseg, t->t0);
	}
	return 0;
}

int vw_trace_keep_at(struct vw_trace *t, uint64_t at, char *err, size_t errlen)
{
	size_t s = mt_analysis_nearest_sample(&t->d, at);
	uint64_t moments[2] = { at, s != (size_t)-1 ? t->d.samples[s].ts : at };

	return keep(t, moments, 2, err, errlen);
}

int vw_trace_load(struct vw_trace *t, struct mt_reader *r, uint32_t device, unsigned what,
                  char *err, size_t errlen)
{
	int rc = vw_trace_survey(t, r, device, what, err, errlen);

	if (rc == 0 && (rc = keep(t, NULL, 0, err, errlen)) < 0)
		vw_trace_release(t);
	return rc;
}

void vw_trace_release(struct vw_trace *t)
{
	mt_analysis_release(&t->d);
	free(t->samples);
	free(t->ranges);
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
	return mt_analysis_anatomy(&t->d, at, a, err, errlen);
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
