/* clock-cost.c — what reading the time costs on this machine: the kernel's
 * clock source, whether the CPU's time-stamp counter is invariant, and
 * nanoseconds per clock_gettime call for each clock the recorder could use
 * (CUPTI's timestamps are one of them). A machine whose clock source is not
 * the TSC (a VM on kvm-clock without a vDSO path, hpet, acpi_pm) pays a
 * system call for each, and the recorder reads one per PyTorch event and per
 * launch: issue 22's per-event cost varied five-fold between GPU machines.
 * Prints figures; asserts nothing.
 *
 * Usage: clock-cost [CALLS]   (default 5 000 000 a clock)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The first line of path, or "unknown". */
static void first_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	snprintf(buf, len, "unknown");
	if (f && fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
}

/* Whether /proc/cpuinfo's first flags line names flag. */
static const char *cpu_flag(const char *flag)
{
	char line[8192], word[64];
	FILE *f = fopen("/proc/cpuinfo", "r");
	const char *found = "no";

	snprintf(word, sizeof(word), " %s ", flag);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5)) {
			line[strcspn(line, "\n")] = ' ';
			found = strstr(line, word) ? "yes" : "no";
			break;
		}
	if (f)
		fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		clockid_t id;
	} clocks[] = { { "CLOCK_MONOTONIC", CLOCK_MONOTONIC },
		       { "CLOCK_MONOTONIC_RAW", CLOCK_MONOTONIC_RAW },
		       { "CLOCK_REALTIME", CLOCK_REALTIME } };
	long calls = argc > 1 ? atol(argv[1]) : 5000000;
	char source[128];

	if (calls <= 0) {
		fprintf(stderr, "clock-cost: CALLS must be a positive number\n");
		return 2;
	}
	first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", source,
	           sizeof(source));
	printf("clock source: %s; constant_tsc: %s; nonstop_tsc: %s\n", source,
	       cpu_flag("constant_tsc"), cpu_flag("nonstop_tsc"));
	for (size_t c = 0; c < sizeof(clocks) / sizeof(clocks[0]); c++) {
		struct timespec t;
		volatile long sink = 0; /* keeps the calls */
		double t0 = now_ns();

		for (long i = 0; i < calls; i++) {
			clock_gettime(clocks[c].id, &t);
			sink += t.tv_nsec;
		}
		printf("%-20s %6.1f ns a call (%ld calls)\n", clocks[c].name,
		       (now_ns() - t0) / (double)calls, calls);
	}
	return 0;
}
