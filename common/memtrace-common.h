/* memtrace-common.h — what every memtrace module may use and none owns:
 * one-line error messages, reading and printing sizes and durations for
 * people, the pseudo-random generator and keeping a file under a numbered
 * name.
 *
 * Nothing here knows about traces, GPUs or SQLite; nothing prints or
 * exits. Errors are negative errno values.
 */
#ifndef MEMTRACE_COMMON_H
#define MEMTRACE_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ---- messages ----------------------------------------------------------- */

/* Formats a one-line message into err (errlen bytes, truncated to fit; err
 * may be NULL or errlen 0, then nothing is written) and returns rc, so that
 * a failure reads `return mt_fail(err, errlen, -EINVAL, "bad %s", what);`.
 * The library half of the house rule "a negative errno and one line". */
int mt_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* mt_fail with a va_list, for helpers that take their own arguments (a
 * message kept on a handle). */
int mt_vfail(char *err, size_t errlen, int rc, const char *fmt, va_list ap)
        __attribute__((format(printf, 4, 0)));

/* ---- sizes -------------------------------------------------------------- */

/* Makes room for element n (0-based) of an array of *cap elements of size
 * bytes at *p: doubles *cap (from 64) until it exceeds n, reallocating *p.
 * Returns 0, or -ENOMEM with *p and *cap unchanged. */
int mt_array_grow(void **p, size_t *cap, size_t n, size_t size);

/* Parses a size: a number (integer, decimal or exponent form: "1e9", "1.5")
 * followed by an optional unit B, K/KB, M/MB, G/GB, T/TB (powers of 1000),
 * KiB, MiB, GiB, TiB (powers of 1024), case-insensitive, optional space.
 * "24GiB", "512MB", "1e9". Returns 0, or -EINVAL for anything else
 * (empty, negative, garbage, overflow past UINT64_MAX). */
int mt_size_parse(const char *text, uint64_t *bytes);

/* Formats bytes in binary units with 3 significant digits ("512 B",
 * "1.50 KiB", "23.8 GiB") into buf; returns buf. buflen >= 16 suffices. */
char *mt_size_format(uint64_t bytes, char *buf, size_t buflen);

/* Formats a duration in ns as "850 ns", "12.3 us", "4.56 ms", "1.23 s". */
char *mt_duration_format(uint64_t ns, char *buf, size_t buflen);

/* ---- random numbers ------------------------------------------------------ */

/* splitmix64: advances *state and returns the next value. A whole stream
 * from one 64-bit state (the tests' random events and request streams) and
 * the seeding of mt_rng. */
uint64_t mt_splitmix64(uint64_t *state);

/* xoshiro256**, the generator for seeded models (synth): the same seed
 * gives the same sequence on every machine. */
struct mt_rng {
	uint64_t s[4];
};

/* Seeds r from one value through splitmix64. */
void mt_rng_seed(struct mt_rng *r, uint64_t seed);

/* The next 64 random bits. */
uint64_t mt_rng_next(struct mt_rng *r);

/* Uniform in [0, n), n > 0 (multiply-shift: one draw, no loop). */
uint64_t mt_rng_below(struct mt_rng *r, uint64_t n);

/* Uniform in [0, 1), 53 random bits. */
double mt_rng_unit(struct mt_rng *r);

/* ---- keeping earlier files ------------------------------------------------ */

/* Moves the file at path, with those of its side files path + suffixes[i]
 * that exist, to the first numbered name path.N (N = 1, 2, ...) for which
 * neither path.N nor any path.N + suffix exists, so that an earlier kept
 * file is never replaced (a concurrent keeper taking the same N makes this
 * one try the next). Side files move first. kept (keptlen bytes) receives
 * "path.N". Returns 0, -ENOENT when there is nothing at path, -ENAMETOOLONG,
 * -EEXIST when 100000 numbers are taken, or the errno of a failed rename
 * (what had moved is put back). */
int mt_keep_numbered(const char *path, const char *const *suffixes, size_t n_suffixes,
                     char *kept, size_t keptlen);

#endif /* MEMTRACE_COMMON_H */
