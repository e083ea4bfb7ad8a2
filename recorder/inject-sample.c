/* inject-sample.c — readings of the device memory in use (sample events,
 * the same kind and fields at every moment, so readers need nothing new):
 * - periodic: one for each device this process records, taken by the
 *   flushing thread every MEMTRACE_SAMPLE_MS;
 * - at a failed allocation (the driver's, or PyTorch's OOM), on the failing
 *   thread right after it: at most FAILURE_READINGS per device and second,
 *   so a program that keeps failing cannot turn every failure into a query;
 * - at a segment allocation that raises the process's reserved peak (PyTorch's
 *   SEGMENT_ALLOC/MAP), on the allocating thread right after it: at most
 *   one per device every PEAK_GAP_NS. A raise that comes sooner is read by
 *   the flushing thread once the gap has passed (within its 5 ms tick), so
 *   the last raise of a burst, the peak itself, always gets a reading.
 * MEMTRACE_MOMENT_READINGS=0 leaves only the periodic ones (to measure what
 * the others cost: bench/record-overhead/readings.py).
 * A reading is an NVML query (nvmlDeviceGetMemoryInfo and the process list;
 * else cuMemGetInfo), stamped as it starts: after the event it follows.
 */
#include "config.h"

#include "inject-private.h"

#define FAILURE_READINGS 100              /* per device and second */
#define PEAK_GAP_NS (10ull * 1000 * 1000) /* between peak readings of a device */
#define SECOND_NS (1000ull * 1000 * 1000)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint64_t last_peak; /* when the last peak reading was taken, 0 = never */
	bool peak_pending;  /* a raise since then, not read yet */
	uint64_t window;    /* start of the second the failure readings count in */
	unsigned failures;  /* failure readings in it */
} devices[REC_MAX_DEVICES];
static atomic_uint_fast64_t pending; /* bit per ordinal with peak_pending */

/* Queues one reading of a device (none when it cannot be read). */
static void read_device(unsigned ordinal)
{
	struct mt_event ev = { 0 };

	ev.kind = MT_EVENT_SAMPLE;
	ev.device = ordinal;
	ev.ts = rec_now();
	if (rec_device_usage(ordinal, &ev.sample.used_bytes, &ev.sample.process_bytes) == 0)
		rec_sink_push(&ev);
}

void rec_sample_devices(void)
{
	uint64_t mask = rec_device_seen();

	for (unsigned o = 0; mask && o < 64; o++)
		if (mask & (1ull << o))
			read_device(o);
}

void rec_sample_failure(unsigned ordinal)
{
	uint64_t now = rec_now();
	bool take;

	if (ordinal >= REC_MAX_DEVICES || !rec_state.moment_readings)
		return;
	pthread_mutex_lock(&lock);
	if (!devices[ordinal].window || now - devices[ordinal].window >= SECOND_NS) {
		devices[ordinal].window = now;
		devices[ordinal].failures = 0;
	}
	take = devices[ordinal].failures < FAILURE_READINGS;
	if (take)
		devices[ordinal].failures++;
	pthread_mutex_unlock(&lock);
	if (take)
		read_device(ordinal);
}

/* Whether a peak reading of ORDINAL may be taken at NOW (and then takes
 * its turn); lock held. */
static bool peak_turn_locked(unsigned ordinal, uint64_t now)
{
	if (devices[ordinal].last_peak && now - devices[ordinal].last_peak < PEAK_GAP_NS)
		return false;
	devices[ordinal].last_peak = now;
	devices[ordinal].peak_pending = false;
	atomic_fetch_and(&pending, ~(1ull << ordinal));
	return true;
}

void rec_sample_peak(unsigned ordinal)
{
	uint64_t now = rec_now();
	bool take;

	if (ordinal >= REC_MAX_DEVICES || !rec_state.moment_readings)
		return;
	pthread_mutex_lock(&lock);
	take = peak_turn_locked(ordinal, now);
	if (!take) {
		devices[ordinal].peak_pending = true;
		atomic_fetch_or(&pending, 1ull << ordinal);
	}
	pthread_mutex_unlock(&lock);
	if (take)
		read_device(ordinal);
}

void rec_sample_pending(void)
{
	uint64_t mask = atomic_load_explicit(&pending, memory_order_relaxed);

	for (unsigned o = 0; mask && o < REC_MAX_DEVICES; o++) {
		bool take;

		if (!(mask & (1ull << o)))
			continue;
		pthread_mutex_lock(&lock);
		take = devices[o].peak_pending && peak_turn_locked(o, rec_now());
		pthread_mutex_unlock(&lock);
		if (take)
			read_device(o);
	}
}
