/* capacity.c — the memory the allocator could take on the recorded card
 * (README.md's glossary, "capacity"): CUDA's device total less, at the peak
 * of live bytes, the CUDA context and libraries and the memory outside the
 * process as the anatomy shows them, with two corrections that make it
 * what cudaMemGetInfo's free plus the allocator's reserved would say:
 *  - the readings count the driver's own reserve (NVML's used includes it)
 *    while CUDA's total already leaves it out: where the trace records the
 *    reserve, the outside part is taken without it;
 *  - driver allocations in which no request ever lay (cuBLAS's and other
 *    libraries' own cudaMalloc beside the framework's allocator) are not
 *    the replayed allocator's: a replay of the requests must leave them.
 * It needs the driver-layer lifetimes, one pass over the request-layer
 * allocations before the moment, and the readings. `memtrace replay`
 * replays against it by default and predict starts from it.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyze-private.h"

/* A driver allocation live at the moment, and whether a request lay in it. */
struct held {
	uint32_t process;
	uint64_t address, bytes, start;
	bool holds_request;
};

static int held_order(const void *a, const void *b)
{
	const struct held *x = a, *y = b;

	if (x->process != y->process)
		return x->process < y->process ? -1 : 1;
	return x->address < y->address ? -1 : x->address > y->address;
}

/* The driver allocation of process holding address, NULL if none (h sorted
 * by held_order; allocations live at one moment do not overlap). */
static struct held *held_find(struct held *h, size_t n, uint32_t process, uint64_t address)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h[mid].process < process ||
		    (h[mid].process == process && h[mid].address <= address))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || h[lo - 1].process != process || address - h[lo - 1].address >= h[lo - 1].bytes)
		return NULL;
	return &h[lo - 1];
}

/* Bytes of the driver allocations live at `at` (known start) in which no
 * request-layer allocation lay from their start to `at`: the allocator
 * places the request it made a segment for at once, so these are other
 * code's. */
static int library_bytes(struct mt_reader *r, uint32_t device, const struct mt_lifetime *drv,
                         size_t ndrv, uint64_t at, uint64_t *out)
{
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_ALLOC),
		              .device = device,
		              .to = at + 1 };
	struct mt_iter *it = NULL;
	struct held *h = NULL;
	struct mt_event ev;
	size_t n = 0;
	int rc = 0;

	*out = 0;
	h = malloc((ndrv ? ndrv : 1) * sizeof(*h));
	if (!h)
		return -ENOMEM;
	q.from = at;
	for (size_t i = 0; i < ndrv; i++) {
		if (drv[i].start == MT_TIME_UNKNOWN || !mt_lifetime_live_at(&drv[i], at))
			continue;
		h[n++] = (struct held){ drv[i].process, drv[i].address, drv[i].bytes, drv[i].start,
			                false };
		if (drv[i].start < q.from)
			q.from = drv[i].start;
	}
	qsort(h, n, sizeof(*h), held_order);
	if (n && (rc = mt_reader_iter(r, &q, &it)) == 0) {
		while ((rc = mt_iter_next(it, &ev)) == 1) {
			struct held *s;
			if (ev.alloc.layer != MT_LAYER_REQUEST)
				continue;
			s = held_find(h, n, ev.process, ev.alloc.address);
			if (s && s->start <= ev.ts)
				s->holds_request = true;
		}
		mt_iter_free(it);
	}
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!h[i].holds_request)
			*out += h[i].bytes;
	free(h);
	return rc;
}

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

	*c = (struct mt_capacity){ .device_total = dev ? dev->total_bytes : 0, .at = at };
	c->bytes = c->device_total;
	if (!dev)
		return an_fail(err, errlen, -ENOENT, "the trace has no device row %u", device);
	rc = mt_reader_kind_stats(r, &q, st);
	/* without a reading or a device total the capacity is that total:
	 * no moment to find (the peak is a pass over the whole trace) */
	if (rc < 0 || !st[MT_EVENT_SAMPLE].events || !c->device_total)
		goto out;
	if ((rc = mt_reader_request_layer(r, &layer)) == 0 && at == MT_TIME_UNKNOWN)
		rc = mt_reader_peak_live(r, &q, layer, &peak, &at);
	c->at = at;
	if (rc < 0)
		goto out;
	if ((rc = mt_reader_lifetimes(r, &q, MT_LAYER_DRIVER, &drv, &ndrv)) < 0 ||
	    (rc = mt_samples_load(r, device, &samples, &nsamples)) < 0)
		goto out;
	/* without driver-layer memory the requests stand for the allocator's:
	 * those live about `at` only (a trace of requests holds millions) */
	if (!ndrv) {
		uint64_t from, to;

		an_anatomy_span(samples, nsamples, at, &from, &to);
		if ((rc = mt_reader_lifetimes_during(r, &q, MT_LAYER_REQUEST, from, to, &req,
		                                     &nreq)) < 0)
			goto out;
	}
	rc = mt_anatomy_compute(&c->anatomy, ndrv ? drv : req, ndrv ? ndrv : nreq,
	                        ndrv ? MT_LAYER_DRIVER : MT_LAYER_REQUEST, NULL, 0, samples,
	                        nsamples, at, err, errlen);
	/* the libraries' allocations count only beside a reading */
	if (rc == 0 && c->anatomy.available && ndrv && layer == MT_LAYER_REQUEST)
		rc = library_bytes(r, device, drv, ndrv, at, &c->library_bytes);
	if (rc == 0 && c->anatomy.available) {
		int64_t context = c->anatomy.part[MT_PART_CONTEXT];
		int64_t outside = c->anatomy.part[MT_PART_OTHER_PROCESSES];
		uint64_t taken;

		c->from_reading = true;
		c->context_bytes = context > 0 ? (uint64_t)context : 0;
		c->outside_bytes = outside > 0 ? (uint64_t)outside : 0;
		c->driver_reserved_bytes = dev->driver_reserved_bytes;
		if (c->outside_bytes >= c->driver_reserved_bytes)
			c->outside_bytes -= c->driver_reserved_bytes;
		else
			c->driver_reserved_bytes = 0; /* the reading does not count it */
		taken = c->context_bytes + c->outside_bytes + c->library_bytes;
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
	char total[32], context[32], outside[32], library[32], reserve[32], reading[160];
	char library_part[96] = "", outside_note[80];

	mt_size_format(c->device_total, total, sizeof(total));
	if (!c->device_total) {
		snprintf(buf, len, "the trace does not record the device's memory");
		return buf;
	}
	if (!c->from_reading) {
		snprintf(buf, len, "the device's %s: no reading of the memory in use", total);
		return buf;
	}
	if (c->library_bytes)
		snprintf(library_part, sizeof(library_part),
		         ", %s that libraries allocated beside the allocator",
		         mt_size_format(c->library_bytes, library, sizeof(library)));
	if (c->driver_reserved_bytes)
		snprintf(outside_note, sizeof(outside_note), "the driver's own %s left out",
		         mt_size_format(c->driver_reserved_bytes, reserve, sizeof(reserve)));
	else
		snprintf(outside_note, sizeof(outside_note),
		         "which may include the driver's reserve");
	snprintf(buf, len,
	         "the device's %s less %s CUDA context and libraries%s and %s outside this "
	         "process (%s), at the peak of live bytes against %s",
	         total, mt_size_format(c->context_bytes, context, sizeof(context)), library_part,
	         mt_size_format(c->outside_bytes, outside, sizeof(outside)), outside_note,
	         mt_anatomy_reading(&c->anatomy, t0, reading, sizeof(reading)));
	return buf;
}
