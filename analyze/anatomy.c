/* anatomy.c — why nvidia-smi shows more than the tensors: the sampled
 * device memory in use at a moment, split into other processes, the CUDA
 * context and libraries, the allocator's cache and fragmentation, the live
 * allocations, and what is left unexplained, so that the parts add up to the
 * sample exactly. `memtrace report` prints it and the viewer's anatomy view
 * draws it.
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
		return "other processes";
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

/* The last sample at or before at, else the first one after. */
static const struct mt_sample *sample_for(const struct mt_sample *s, size_t n, uint64_t at)
{
	size_t lo = 0, hi = n;

	if (!n)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].ts <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &s[lo - 1] : &s[0];
}

/* Cache, fragmentation and the driver memory live, from the recorded
 * segments and the blocks inside them. */
static int split_segments(struct mt_anatomy *a, const struct mt_lifetime *live, size_t nlive,
                          const struct mt_lifetime *segs, size_t nsegs)
{
	struct mt_segmap m;
	size_t i;
	int rc = mt_segmap_recorded(&m, segs, nsegs, live, nlive, a->at);

	if (rc < 0)
		return rc;
	for (i = 0; i < m.nsegs; i++) {
		uint64_t in = mt_segmap_segment_live(&m, i);

		if (in)
			a->part[MT_PART_FRAGMENTATION] += (int64_t)(m.segs[i].bytes - in);
		else
			a->part[MT_PART_CACHE] += (int64_t)m.segs[i].bytes;
	}
	a->reserved = m.reserved;
	a->driver_live = m.reserved;
	mt_segmap_release(&m);
	return 0;
}

int mt_anatomy_compute(struct mt_anatomy *a, const struct mt_lifetime *live, size_t nlive,
                       unsigned layer, const struct mt_lifetime *segs, size_t nsegs,
                       const struct mt_sample *samples, size_t nsamples, uint64_t at, char *err,
                       size_t errlen)
{
	const struct mt_sample *s = sample_for(samples, nsamples, at);
	uint64_t allocated = mt_live_at(live, nlive, at), process_use;
	int64_t rest;
	unsigned i;

	memset(a, 0, sizeof(*a));
	a->at = at;
	a->layer = layer;
	a->part[MT_PART_LIVE] = (int64_t)allocated;
	a->cache_known = layer == MT_LAYER_REQUEST && segs && nsegs;
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
