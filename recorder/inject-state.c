/* inject-state.c — the one recorder state of a process (struct rec_state),
 * its single warning line and its clock. The bottom of the injection
 * library: every other file uses these, and they use no other file.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
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

uint64_t rec_now(void)
{
	uint64_t ts = 0;

	cuptiGetTimestamp(&ts);
	return ts;
}

bool rec_mine(void)
{
	return atomic_load(&rec_state.enabled) && rec_state.pid == getpid();
}
