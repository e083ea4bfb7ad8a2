/* capacity.c — the memory the allocator could take on the recorded card
 * (README.md's glossary, "capacity"): the device total less the CUDA
 * context and libraries and the memory outside the process, as the anatomy
 * at the peak of live bytes shows them. It needs only the driver-layer
 * lifetimes (the segments, or the allocations themselves without a request
 * layer) and the readings: the anatomy's outside and context parts do not
 * depend on the live layer. `memtrace replay` replays against it by
 * default and predict starts from it.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyze-private.h"

int mt_capacity_recorded(struct mt_reader *r, uint32_t device, uint64_t at, struct mt_capacity *c,
                         char *err, size_t errlen)
{
	const struct mt_device *dev = mt_reader_device_by_id(r, device);
	struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { .device = device };
	struct mt_lifetime *drv = NULL, *req = NULL;
	struct mt_sample *samples = NULL;
	size_t ndrv = 0, nreq = 0, nsamples = 0;
	unsigned layer = MT_LAYER_DRIVER;
	uint64_t peak = 0;
	int rc;

	*c = (struct mt_capacity){ .device_total = dev ? dev->total_bytes : 0 };
	c->bytes = c->device_total;
	if (!dev)
		return an_fail(err, errlen, -ENOENT, "the trace has no device row %u", device);
	rc = mt_reader_kind_stats(r, &q, st);
	if (rc == 0 && at == MT_TIME_UNKNOWN && (rc = mt_reader_request_layer(r, &layer)) == 0)
		rc = mt_reader_peak_live(r, &q, layer, &peak, &at);
	c->at = at;
	if (rc < 0 || !st[MT_EVENT_SAMPLE].events || !c->device_total)
		goto out;
	if ((rc = mt_reader_lifetimes(r, &q, MT_LAYER_DRIVER, &drv, &ndrv)) < 0 ||
	    (rc = mt_samples_load(r, device, &samples, &nsamples)) < 0)
		goto out;
	/* without driver-layer memory the requests stand for the allocator's */
	if (!ndrv && (rc = mt_reader_lifetimes(r, &q, MT_LAYER_REQUEST, &req, &nreq)) < 0)
		goto out;
	rc = mt_anatomy_compute(&c->anatomy, ndrv ? drv : req, ndrv ? ndrv : nreq,
	                        ndrv ? MT_LAYER_DRIVER : MT_LAYER_REQUEST, NULL, 0, samples,
	                        nsamples, at, err, errlen);
	if (rc == 0 && c->anatomy.available) {
		int64_t context = c->anatomy.part[MT_PART_CONTEXT];
		int64_t outside = c->anatomy.part[MT_PART_OTHER_PROCESSES];
		uint64_t taken;

		c->from_reading = true;
		c->context_bytes = context > 0 ? (uint64_t)context : 0;
		c->outside_bytes = outside > 0 ? (uint64_t)outside : 0;
		taken = c->context_bytes + c->outside_bytes;
		c->bytes = c->device_total > taken ? c->device_total - taken : 0;
	}
out:
	free(drv);
	free(req);
	free(samples);
	/* the anatomy fails with -ENOMEM only; the rest is the reader's */
	return rc < 0 ? an_reader_fail(r, rc, err, errlen) : 0;
}

char *mt_capacity_describe(const struct mt_capacity *c, uint64_t t0, char *buf, size_t len)
{
	char total[32], context[32], outside[32], reading[160];

	mt_size_format(c->device_total, total, sizeof(total));
	if (!c->device_total)
		snprintf(buf, len, "the trace does not record the device's memory");
	else if (!c->from_reading)
		snprintf(buf, len, "the device's %s: no reading of the memory in use", total);
	else
		snprintf(buf, len,
		         "the device's %s less %s CUDA context and libraries and %s outside this "
		         "process, at the peak of live bytes against %s",
		         total, mt_size_format(c->context_bytes, context, sizeof(context)),
		         mt_size_format(c->outside_bytes, outside, sizeof(outside)),
		         mt_anatomy_reading(&c->anatomy, t0, reading, sizeof(reading)));
	return buf;
}
