/* test-sample.c — the recorder's readings of device memory
 * (recorder/inject-sample.c) on a clock of the test's own, without CUDA:
 * the periodic samples of the devices in use, the readings after failed
 * allocations (all of them up to 100 per device and second) and after
 * raises of the reserved peak (one per device every 10 ms, a raise held
 * back read as soon as the gap has passed, nothing read twice).
 */
#include "config.h"

#include <string.h>

#include "inject-private.h"
#include "tap.h"

#define MS 1000000ull

/* ---- the stubs ---- */

struct rec_state rec_state = { .moment_readings = true };

static uint64_t clock_ns = 1000 * MS;
static uint64_t seen;            /* what rec_device_seen answers */
static unsigned unreadable = 99; /* a device rec_device_usage cannot read */
static struct mt_event pushed[512];
static int n_pushed;

uint64_t rec_now(void)
{
	return clock_ns;
}

uint64_t rec_device_seen(void)
{
	return seen;
}

/* used = 1000 * ordinal + 1, process = the clock */
int rec_device_usage(unsigned ordinal, uint64_t *used, uint64_t *process)
{
	if (ordinal == unreadable)
		return -1;
	*used = 1000 * (uint64_t)ordinal + 1;
	*process = clock_ns;
	return 0;
}

void rec_sink_push(const struct mt_event *ev)
{
	if (n_pushed < 512)
		pushed[n_pushed++] = *ev;
}

/* ---- the cases ---- */

static bool is_reading(const struct mt_event *ev, unsigned device, uint64_t ts)
{
	return ev->kind == MT_EVENT_SAMPLE && ev->device == device && ev->ts == ts &&
	       ev->sample.used_bytes == 1000 * (uint64_t)device + 1;
}

static void test_periodic(void)
{
	n_pushed = 0;
	seen = 1ull << 0 | 1ull << 3 | 1ull << 9;
	unreadable = 9;
	rec_sample_devices();
	CHECK(n_pushed == 2);
	CHECK(is_reading(&pushed[0], 0, clock_ns) && is_reading(&pushed[1], 3, clock_ns));
	unreadable = 99;
}

static void test_failures(void)
{
	int first;

	n_pushed = 0;
	for (int i = 0; i < 150; i++) {
		rec_sample_failure(1);
		clock_ns += MS / 2; /* 75 ms in all */
	}
	CHECKF(n_pushed == 100, "%d readings", n_pushed);
	CHECK(is_reading(&pushed[0], 1, 1000 * MS) &&
	      is_reading(&pushed[99], 1, 1000 * MS + 99 * MS / 2));
	/* another device has its own count */
	rec_sample_failure(2);
	CHECK(n_pushed == 101 && pushed[100].device == 2);
	/* a second after the first one counted, device 1 is read again */
	first = n_pushed;
	clock_ns = 2000 * MS;
	rec_sample_failure(1);
	CHECK(n_pushed == first + 1 && is_reading(&pushed[first], 1, 2000 * MS));
	rec_sample_failure(REC_MAX_DEVICES);
	CHECK(n_pushed == first + 1);
}

static void test_peaks(void)
{
	uint64_t t0 = clock_ns = 5000 * MS;

	n_pushed = 0;
	rec_sample_peak(4); /* read now */
	CHECK(n_pushed == 1 && is_reading(&pushed[0], 4, t0));
	clock_ns = t0 + 1 * MS;
	rec_sample_peak(4); /* too soon: held back */
	rec_sample_peak(6); /* another device: read now */
	CHECK(n_pushed == 2 && is_reading(&pushed[1], 6, t0 + 1 * MS));
	clock_ns = t0 + 3 * MS;
	rec_sample_peak(4); /* still held back, once */
	clock_ns = t0 + 5 * MS;
	rec_sample_pending();
	CHECK(n_pushed == 2);
	clock_ns = t0 + 10 * MS;
	rec_sample_pending(); /* the gap has passed: the held raise is read */
	CHECK(n_pushed == 3 && is_reading(&pushed[2], 4, t0 + 10 * MS));
	clock_ns = t0 + 30 * MS;
	rec_sample_pending(); /* nothing held any more */
	CHECK(n_pushed == 3);
	rec_sample_peak(4); /* past the gap: read now */
	CHECK(n_pushed == 4 && is_reading(&pushed[3], 4, t0 + 30 * MS));
	rec_sample_peak(REC_MAX_DEVICES);
	CHECK(n_pushed == 4);
}

/* MEMTRACE_MOMENT_READINGS=0: the periodic samples only */
static void test_switched_off(void)
{
	n_pushed = 0;
	rec_state.moment_readings = false;
	clock_ns += 10000 * MS;
	rec_sample_failure(1);
	rec_sample_peak(4);
	rec_sample_pending();
	CHECK(n_pushed == 0);
	seen = 1;
	rec_sample_devices();
	CHECK(n_pushed == 1);
	rec_state.moment_readings = true;
}

int main(void)
{
	TEST(test_periodic);
	TEST(test_failures);
	TEST(test_peaks);
	TEST(test_switched_off);
	return check_done();
}
