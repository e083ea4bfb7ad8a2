/* tap.h — the tests' one assertion style: TAP, which meson reads for every
 * test declared with `protocol: 'tap'` and counts case by case.
 *
 * A test program is a list of cases, each a `static void fn(void)`:
 *
 *     int main(void)
 *     {
 *             TEST(test_split);
 *             TEST(test_merge);
 *             return check_done();
 *     }
 *
 * TEST runs one case and prints "ok N - name" or "not ok N - name";
 * check_done prints the plan "1..N" and returns the exit status (1 when any
 * check failed). Inside a case, CHECK(cond) and CHECKF(cond, fmt, ...)
 * report a failing condition as a diagnostic line ("# file:line: ...") and
 * carry on, so one run shows every failing check; REQUIRE(cond) stops the
 * whole program ("Bail out!") where going on makes no sense (a setup step
 * failed). check_failed() says whether the running case has failed so far
 * (to stop a long loop early); check_skip counts a case that cannot run
 * here as skipped. Checks outside any case count towards an
 * implicit case named "setup". Diagnostics go to stdout, where TAP wants
 * them.
 */
#ifndef MEMTRACE_TESTS_TAP_H
#define MEMTRACE_TESTS_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static int check_cases;         /* cases run so far */
static int check_failed_cases;  /* cases with at least one failed check */
static int check_case_failures; /* failed checks in the running case */
static int check_outside;       /* failed checks outside any case */

static inline void check_report(const char *file, int line, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static inline void check_report(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	printf("# %s:%d: check failed: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	check_case_failures++;
}

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			check_report(__FILE__, __LINE__, "%s", #cond);                             \
	} while (0)

#define CHECKF(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond))                                                                       \
			check_report(__FILE__, __LINE__, __VA_ARGS__);                             \
	} while (0)

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("Bail out! %s:%d: %s\n", __FILE__, __LINE__, #cond);                \
			fflush(stdout);                                                            \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static inline bool check_failed(void)
{
	return check_case_failures != 0;
}

static inline void check_run(const char *name, void (*fn)(void))
{
	check_outside += check_case_failures;
	check_case_failures = 0;
	fn();
	check_cases++;
	if (check_case_failures)
		check_failed_cases++;
	printf("%sok %d - %s\n", check_case_failures ? "not " : "", check_cases, name);
	fflush(stdout);
	check_case_failures = 0;
}

#define TEST(fn) check_run(#fn, fn)

/* Counts a case that could not run here as skipped ("ok N - name # SKIP
 * why"), which meson reports as a skip. */
static inline void check_skip(const char *name, const char *why)
{
	check_cases++;
	printf("ok %d - %s # SKIP %s\n", check_cases, name, why);
	fflush(stdout);
}

/* Prints the plan; returns the program's exit status. */
static inline int check_done(void)
{
	check_outside += check_case_failures;
	check_case_failures = 0;
	if (check_outside) {
		check_cases++;
		printf("not ok %d - setup\n", check_cases);
	}
	printf("1..%d\n", check_cases);
	return check_failed_cases || check_outside ? 1 : 0;
}

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)

#endif
