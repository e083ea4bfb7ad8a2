/* inject-state.c — the one recorder state of a process (struct rec_state),
 * its single warning line and its clock. The bottom of the injection
 * library: every other file uses these, and they use no other file.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "inject-private.h"

struct rec_state rec_state = {
	.writer_lock = PTHREAD_MUTEX_INITIALIZER,
	.queue_lock = PTHREAD_MUTEX_INITIALIZER,
};

void rec_warn(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	atomic_store(&rec_state.enabled, false);
	if (atomic_exchange(&rec_state.warned, true))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "memtrace: %s; the program runs on without recording\n", msg);
}

/* Whether CUPTI's clock is CLOCK_REALTIME in nanoseconds, as its header
 * says for Linux on x86_64 and aarch64: then rec_now reads that clock
 * itself (the vDSO, about 20 ns) instead of through cuptiGetTimestamp
 * (32-48 ns on the H100 machines), at every PyTorch event and launch. */
static bool clock_is_realtime;

static uint64_t realtime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

void rec_clock_init(void)
{
	/* CLOCK_REALTIME read between two of CUPTI's timestamps must fall
	 * between them; anything else (another clock, an offset) keeps
	 * CUPTI's own. A few tries ride out a clock step in between. */
	for (int i = 0; i < 3 && !clock_is_realtime; i++) {
		uint64_t before = 0, after = 0, now;

		cuptiGetTimestamp(&before);
		now = realtime_ns();
		cuptiGetTimestamp(&after);
		clock_is_realtime = before && before <= now && now <= after;
	}
}

uint64_t rec_now(void)
{
	uint64_t ts = 0;

	if (clock_is_realtime)
		return realtime_ns();
	cuptiGetTimestamp(&ts);
	return ts;
}

bool rec_mine(void)
{
	return atomic_load(&rec_state.enabled) && rec_state.pid == getpid();
}
