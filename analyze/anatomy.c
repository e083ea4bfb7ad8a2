/* anatomy.c — why nvidia-smi shows more than the tensors: the sampled
 * device memory in use at a moment, split into what is outside this process
 * (other processes, the driver's own reserve), the CUDA context and
 * libraries, the allocator's cache and fragmentation, the live allocations,
 * and what is left unexplained, so that the parts add up to the sample
 * exactly. Samples come every ~50 ms and a peak falls between two of
 * them, so the sample used is the nearest one taken while the driver-layer
 * memory (the allocator's segments) was the same as at the moment asked:
 * the device total was then the same, and every part is measured at the
 * moment itself. When no such sample is near, the nearest sample is used
 * and every part is measured at its time instead, so that they still add
 * up. `memtrace report` prints it and the viewer's anatomy view draws it.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analyze-private.h"

static const char *const keys[MT_PART_COUNT] = {
	"other_processes", "cuda_context_and_libraries", "allocator_cache",
	"fragmentation",   "live_allocations",           "unexplained",
};

const char *mt_anatomy_part_key(unsigned part)
{
	return part < MT_PART_COUNT ? keys[part] : NULL;
}

const char *mt_anatomy_part_label(unsigned part, unsigned layer)
{
	switch (part) {
	case MT_PART_OTHER_PROCESSES:
		return "outside this process (other processes, the driver's reserve)";
	case MT_PART_CONTEXT:
		return "CUDA context and libraries";
	case MT_PART_CACHE:
		return "allocator cache (segments with nothing live)";
	case MT_PART_FRAGMENTATION:
		return "fragmentation (free space in segments with live blocks)";
	case MT_PART_LIVE:
		return layer == MT_LAYER_REQUEST ? "live tensors" : "live allocations";
	case MT_PART_UNEXPLAINED:
		return "unexplained";
	}
	return NULL;
}

char *mt_anatomy_reading(const struct mt_anatomy *a, uint64_t t0, char *buf, size_t len)
{
	uint64_t d = a->sample_ts > a->at ? a->sample_ts - a->at : a->at - a->sample_ts;
	char when[32], away[32];

	if (!a->available) {
		snprintf(buf, len, "no reading");
		return buf;
	}
	mt_duration_format(a->sample_ts > t0 ? a->sample_ts - t0 : 0, when, sizeof(when));
	mt_duration_format(d, away, sizeof(away));
	if (!d)
		snprintf(buf, len, "the reading at +%s, taken at that moment", when);
	else
		snprintf(buf, len, "the reading at +%s, %s %s, when the allocator held %s", when,
		         away, a->sample_ts > a->at ? "after" : "before",
		         a->same_segments ? "the same segments"
		                          : "other segments (every part is measured then)");
	return buf;
}

#define SAME_DRIVER_CANDIDATES 64 /* samples tried, nearest first */

/* The first sample after at (n when none). */
static size_t samples_after(const struct mt_sample *s, size_t n, uint64_t at)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].ts <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t an_nearest_sample(const struct mt_sample *s, size_t n, uint64_t at)
{
	size_t lo = samples_after(s, n, at);

	if (!n)
		return (size_t)-1;
	if (!lo)
		return 0;
	if (lo < n && s[lo].ts - at < at - s[lo - 1].ts)
		return lo;
	return lo - 1;
}

void an_anatomy_span(const struct mt_sample *samples, size_t nsamples, uint64_t at, uint64_t *from,
                     uint64_t *to)
{
	size_t after = samples_after(samples, nsamples, at);
	size_t first = after > SAME_DRIVER_CANDIDATES ? after - SAME_DRIVER_CANDIDATES : 0;
	size_t last = nsamples - after > SAME_DRIVER_CANDIDATES ? after + SAME_DRIVER_CANDIDATES
	                                                        : nsamples;

	*from = first < nsamples && samples[first].ts < at ? samples[first].ts : at;
	*to = last > after && samples[last - 1].ts > at ? samples[last - 1].ts : at;
}

/* The sample to measure against (see the top). *same: the driver-layer
 * memory at its time is the same as at `at` (drv: the driver-layer
 * lifetimes, NULL when unknown; drv_at_sample: the bytes they hold at each
 * sample's time, NULL to compute them from drv). */
static const struct mt_sample *sample_for(const struct mt_sample *s, size_t n, uint64_t at,
                                          const struct mt_lifetime *drv, size_t ndrv,
                                          const uint64_t *drv_at_sample, bool *same)
{
	size_t lo, before, after, tries;
	uint64_t driver_at;

	*same = false;
	if (!n)
		return NULL;
	lo = samples_after(s, n, at);
	/* candidates outward from at: s[before - 1] going back, s[after] forward */
	before = lo;
	after = lo;
	driver_at = drv ? mt_live_at(drv, ndrv, at) : 0;
	for (tries = 0; drv && tries < SAME_DRIVER_CANDIDATES && (before || after < n); tries++) {
		size_t c;

		if (before && (after == n || at - s[before - 1].ts <= s[after].ts - at))
			c = --before;
		else
			c = after++;
		if ((drv_at_sample ? drv_at_sample[c] : mt_live_at(drv, ndrv, s[c].ts)) ==
		    driver_at) {
			*same = true;
			return &s[c];
		}
	}
	return &s[an_nearest_sample(s, n, at)];
}

/* Cache, fragmentation and the driver memory live, from the recorded
 * segments and the blocks inside them. */
static int split_segments(struct mt_anatomy *a, const struct mt_lifetime *live, size_t nlive,
                          const struct mt_lifetime *segs, size_t nsegs)
{
	struct mt_segmap m;
	int rc = mt_segmap_recorded(&m, segs, nsegs, live, nlive, a->measured_at);

	if (rc < 0)
		return rc;
	a->part[MT_PART_FRAGMENTATION] = (int64_t)mt_segmap_fragmentation(&m);
	a->part[MT_PART_CACHE] = (int64_t)mt_segmap_cache(&m);
	a->reserved = m.reserved;
	a->driver_live = m.reserved;
	mt_segmap_release(&m);
	return 0;
}

int an_anatomy(struct mt_anatomy *a, const struct mt_lifetime *live, size_t nlive, unsigned layer,
               bool segments, const struct mt_lifetime *segs, size_t nsegs,
               const struct mt_sample *samples, size_t nsamples, const uint64_t *driver_at_sample,
               uint64_t at, char *err, size_t errlen)
{
	const struct mt_lifetime *drv = segments ? segs : layer == MT_LAYER_DRIVER ? live : NULL;
	bool same;
	const struct mt_sample *s = sample_for(samples, nsamples, at, drv, segments ? nsegs : nlive,
	                                       driver_at_sample, &same);
	uint64_t when = s && !same ? s->ts : at;
	uint64_t allocated = mt_live_at(live, nlive, when), process_use;
	int64_t rest;
	unsigned i;

	memset(a, 0, sizeof(*a));
	a->at = at;
	a->measured_at = when;
	a->layer = layer;
	a->part[MT_PART_LIVE] = (int64_t)allocated;
	a->cache_known = segments;
	if (a->cache_known) {
		if (split_segments(a, live, nlive, segs, nsegs) < 0)
			return an_fail(err, errlen, -ENOMEM, "out of memory");
	} else {
		/* the driver layer itself, or requests with no segments known:
		 * the live allocations are all the allocator's memory we know */
		a->reserved = a->driver_live = allocated;
	}
	if (!s) {
		snprintf(a->why, sizeof(a->why),
		         "no samples of the device memory in use on this device");
		return 0;
	}
	a->available = true;
	a->sample_ts = s->ts;
	a->same_segments = same;
	a->used_bytes = s->used_bytes;
	process_use = s->used_bytes;
	if (s->process_bytes && s->process_bytes < s->used_bytes) {
		a->process_bytes = s->process_bytes;
		process_use = s->process_bytes;
		a->part[MT_PART_OTHER_PROCESSES] = (int64_t)(s->used_bytes - s->process_bytes);
	}
	if (process_use > a->driver_live)
		a->part[MT_PART_CONTEXT] = (int64_t)(process_use - a->driver_live);
	rest = (int64_t)s->used_bytes;
	for (i = 0; i < MT_PART_UNEXPLAINED; i++)
		rest -= a->part[i];
	a->part[MT_PART_UNEXPLAINED] = rest;
	return 0;
}

int mt_anatomy_compute(struct mt_anatomy *a, const struct mt_lifetime *live, size_t nlive,
                       unsigned layer, const struct mt_lifetime *segs, size_t nsegs,
                       const struct mt_sample *samples, size_t nsamples, uint64_t at, char *err,
                       size_t errlen)
{
	return an_anatomy(a, live, nlive, layer, layer == MT_LAYER_REQUEST && segs && nsegs, segs,
	                  nsegs, samples, nsamples, NULL, at, err, errlen);
}

int mt_analysis_anatomy(const struct mt_analysis *d, uint64_t at, struct mt_anatomy *a, char *err,
                        size_t errlen)
{
	return an_anatomy(a, d->live, d->nlive, d->layer,
	                  d->layer == MT_LAYER_REQUEST && d->nseg_all, d->seg, d->nseg, d->samples,
	                  d->nsamples, d->driver_at_sample, at, err, errlen);
}
