/* check.h — the tests' assertion macro: report and count, so one run shows
 * every failing check; main returns failures ? 1 : 0. */
#ifndef MEMTRACE_TESTS_CHECK_H
#define MEMTRACE_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)

#endif
