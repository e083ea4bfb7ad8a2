/* devices.c — the devices of a trace as the analyses and people see them:
 * which hold memory events, and one way of naming each (the CUDA ordinal
 * the program saw) in reports, pictures and options.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyze-private.h"

int an_reader_fail(struct mt_reader *r, int rc, char *err, size_t errlen)
{
	if (rc == -ENOMEM)
		return an_fail(err, errlen, rc, "out of memory");
	return an_fail(err, errlen, rc, "%s", mt_reader_message(r));
}

int an_device_stats(struct mt_reader *r, uint32_t device,
                    struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1])
{
	struct mt_query q = { .device = device };

	return mt_reader_kind_stats(r, &q, st);
}

int mt_analyze_devices(struct mt_reader *r, uint32_t **ids, size_t *n, char *err, size_t errlen)
{
	size_t count = mt_reader_device_count(r), i, m = 0;
	uint32_t *out = calloc(count ? count : 1, sizeof(*out));

	if (!out)
		return an_fail(err, errlen, -ENOMEM, "out of memory");
	for (i = 0; i < count; i++) {
		struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
		const struct mt_device *d = mt_reader_device(r, i);
		int rc = an_device_stats(r, d->id, st);

		if (rc < 0) {
			free(out);
			return an_reader_fail(r, rc, err, errlen);
		}
		if (st[MT_EVENT_ALLOC].events || st[MT_EVENT_FREE].events ||
		    st[MT_EVENT_ALLOC_FAILED].events)
			out[m++] = d->id;
	}
	*ids = out;
	*n = m;
	return 0;
}

int mt_analyze_device_by_ordinal(struct mt_reader *r, unsigned ordinal, uint32_t *id, char *err,
                                 size_t errlen)
{
	size_t count = mt_reader_device_count(r), i, found = 0;

	for (i = 0; i < count; i++) {
		const struct mt_device *d = mt_reader_device(r, i);

		if (d->ordinal == ordinal && found++ == 0)
			*id = d->id;
	}
	if (!found)
		return an_fail(err, errlen, -ENOENT, "the trace has no device %u", ordinal);
	if (found > 1)
		return an_fail(err, errlen, -EEXIST,
		               "%zu devices of the trace were CUDA device %u in their processes",
		               found, ordinal);
	return 0;
}

char *mt_analyze_device_label(const struct mt_device *dev, char *buf, size_t len)
{
	if (dev->pci_bus_id && *dev->pci_bus_id)
		snprintf(buf, len, "device %u (PCI %s)", dev->ordinal, dev->pci_bus_id);
	else
		snprintf(buf, len, "device %u", dev->ordinal);
	return buf;
}

int mt_analyze_span(struct mt_reader *r, uint32_t device, uint64_t *t0, uint64_t *t1)
{
	struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
	int rc = an_device_stats(r, device, st);
	unsigned k;

	*t0 = UINT64_MAX;
	*t1 = 0;
	if (rc < 0)
		return rc;
	for (k = 1; k <= MT_EVENT_KIND_MAX; k++) {
		bool activity =
		        k == MT_EVENT_KERNEL || k == MT_EVENT_MEMCPY || k == MT_EVENT_MEMSET;

		if (!st[k].events)
			continue;
		if (!activity && st[k].first_ts < *t0)
			*t0 = st[k].first_ts;
		if (st[k].last_ts > *t1)
			*t1 = st[k].last_ts;
	}
	if (*t0 == UINT64_MAX)
		*t0 = *t1;
	return 0;
}
