/* inject-sample.c — readings of the device memory in use (sample events):
 * one for each device this process records, taken by the flushing thread
 * every MEMTRACE_SAMPLE_MS.
 */
#include "config.h"

#include "inject-private.h"

void rec_sample_devices(void)
{
	uint64_t mask = rec_device_seen();
	struct mt_event ev = { 0 };

	ev.kind = MT_EVENT_SAMPLE;
	for (unsigned o = 0; mask && o < 64; o++) {
		if (!(mask & (1ull << o)))
			continue;
		ev.ts = rec_now();
		ev.device = o;
		if (rec_device_usage(o, &ev.sample.used_bytes, &ev.sample.process_bytes) < 0)
			continue;
		rec_sink_push(&ev);
	}
}
