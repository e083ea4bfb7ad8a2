/* capacity.c — the memory the allocator may take on the card of the
 * largest input: the device total less the CUDA context and libraries and
 * the memory outside the process, from the anatomy (analyze) at the peak of
 * live bytes, which needs the driver-layer memory and the samples. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "memtrace-analyze.h"
#include "predict-private.h"

int pr_capacity(struct mt_predictor *p, char *err, size_t errlen)
{
	const struct pr_input *ref = &p->in[p->ref];
	struct mt_predict_summary *s = &p->summary;
	struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { .device = ref->device };
	struct mt_lifetime *drv = NULL, *live = NULL;
	struct mt_sample *samples = NULL;
	struct mt_anatomy a;
	size_t ndrv = 0, nlive = 0, nsamples = 0;
	s->device_total = mt_reader_device_by_id(ref->reader, ref->device)->total_bytes;
	int rc = mt_reader_kind_stats(ref->reader, &q, st);
	if (rc == 0 && st[MT_EVENT_SAMPLE].events &&
	    (rc = mt_reader_lifetimes(ref->reader, &q, MT_LAYER_DRIVER, &drv, &ndrv)) == 0 &&
	    (rc = mt_samples_load(ref->reader, ref->device, &samples, &nsamples)) == 0) {
		/* the driver memory is the segments, when recorded, else the live
		 * requests themselves (which the allocator's memory is then taken to be) */
		bool segments = ref->layer == MT_LAYER_REQUEST && ndrv;
		if (ref->layer == MT_LAYER_REQUEST && !ndrv)
			rc = mt_reader_lifetimes(ref->reader, &q, MT_LAYER_REQUEST, &live, &nlive);
		else if (!segments) {
			live = drv, nlive = ndrv;
			drv = NULL, ndrv = 0;
		}
		if (rc == 0)
			rc = mt_anatomy_compute(&a, live, nlive, ref->layer, drv, ndrv, samples,
			                        nsamples, ref->peak_ts, err, errlen);
	}
	free(drv);
	free(live);
	free(samples);
	if (rc < 0)
		return mt_fail(err, errlen, rc, "%s: the anatomy: %s", ref->name,
		               rc == -ENOMEM ? "out of memory" : mt_reader_message(ref->reader));
	s->capacity_sampled = st[MT_EVENT_SAMPLE].events && a.available;
	if (s->capacity_sampled) {
		s->context_bytes =
		        a.part[MT_PART_CONTEXT] > 0 ? (uint64_t)a.part[MT_PART_CONTEXT] : 0;
		s->outside_bytes = a.part[MT_PART_OTHER_PROCESSES] > 0
		                           ? (uint64_t)a.part[MT_PART_OTHER_PROCESSES]
		                           : 0;
	}
	uint64_t taken = s->context_bytes + s->outside_bytes;
	s->capacity = s->device_total > taken ? s->device_total - taken : 0;
	return 0;
}
