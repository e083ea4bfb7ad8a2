/* sizes.c — reading and printing byte sizes and durations for people.
 *
 * Accepted sizes (mt_size_parse): a decimal number, optionally with a
 * fraction and a decimal exponent ("4096", "1.5", "1e9", "2.5e3"), then
 * optionally spaces and a unit, case-insensitive: B; K, KB, M, MB, G, GB,
 * T, TB (powers of 1000); KiB, MiB, GiB, TiB (powers of 1024). The value is
 * computed exactly in integers (no floating point), so "1e9" is 1000000000
 * and "1.5GiB" is 1610612736.
 *
 * Decisions, documented for the CLI:
 *  - a result with a fractional byte is rounded to the nearest byte when a
 *    unit larger than B was given ("1.3GiB"), and refused without one
 *    ("1.5", "1.5B", "1e-3": a byte count must be whole);
 *  - refused: empty text, signs ("-1", "+1"), hexadecimal ("0x10"),
 *    "nan"/"inf", a unit without a number ("GiB"), unknown units ("12XB"),
 *    leading or trailing spaces, a lone dot ("1.", ".5"), values above
 *    UINT64_MAX ("1e30", "16EiB" is not a unit either).
 * Printing uses binary units with three significant digits.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "memtrace-common.h"

/* 128-bit arithmetic keeps every intermediate product of a 64-bit result
 * exact (gcc and clang on 64-bit targets). */
__extension__ typedef unsigned __int128 u128;

#define U128_MAX (~(u128)0)

struct size_unit {
	const char *name;
	uint64_t factor;
};

static const struct size_unit size_units[] = {
	{ "B", 1 },
	{ "K", 1000ull },
	{ "KB", 1000ull },
	{ "M", 1000000ull },
	{ "MB", 1000000ull },
	{ "G", 1000000000ull },
	{ "GB", 1000000000ull },
	{ "T", 1000000000000ull },
	{ "TB", 1000000000000ull },
	{ "KiB", 1ull << 10 },
	{ "MiB", 1ull << 20 },
	{ "GiB", 1ull << 30 },
	{ "TiB", 1ull << 40 },
};

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Appends one decimal digit to *m; returns -1 once *m reaches 2^80 (more
 * significant digits than a 64-bit value needs; m * 10 + 9 times a unit
 * below 2^41 still fits in 128 bits), in which case the digit is dropped and
 * only moves the decimal exponent; *sticky records a dropped non-zero one. */
static int push_digit(u128 *m, char c, int *sticky)
{
	if (*m >= (u128)1 << 80) {
		if (c != '0')
			*sticky = 1;
		return -1;
	}
	*m = *m * 10 + (u128)(c - '0');
	return 0;
}

/* Parses "DIGITS[.DIGITS][e[+-]DIGITS]" at *p into mantissa and decimal
 * exponent (value = mantissa * 10^exp10, plus a dropped tail when *sticky);
 * advances *p. Returns 0 or -EINVAL. */
static int parse_number(const char **p, u128 *mantissa, int *exp10, int *sticky)
{
	const char *s = *p;
	u128 m = 0;
	long e = 0, ev = 0;
	int esign = 1;

	if (!is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++)
		if (push_digit(&m, *s, sticky) < 0)
			e++;
	if (*s == '.') {
		s++;
		if (!is_digit(*s))
			return -EINVAL;
		for (; is_digit(*s); s++)
			if (push_digit(&m, *s, sticky) == 0)
				e--;
	}
	if ((*s == 'e' || *s == 'E') &&
	    (is_digit(s[1]) || ((s[1] == '+' || s[1] == '-') && is_digit(s[2])))) {
		s++;
		if (*s == '+' || *s == '-')
			esign = *s++ == '-' ? -1 : 1;
		for (; is_digit(*s); s++)
			if (ev < 100000)
				ev = ev * 10 + (*s - '0');
	}
	e += esign * ev;
	if (e > 100000)
		e = 100000;
	if (e < -100000)
		e = -100000;
	*mantissa = m;
	*exp10 = (int)e;
	*p = s;
	return 0;
}

static int parse_unit(const char *s, uint64_t *factor)
{
	size_t i;

	if (!*s) {
		*factor = 1;
		return 0;
	}
	for (i = 0; i < sizeof(size_units) / sizeof(size_units[0]); i++)
		if (!strcasecmp(s, size_units[i].name)) {
			*factor = size_units[i].factor;
			return 0;
		}
	return -EINVAL;
}

int mt_size_parse(const char *text, uint64_t *bytes)
{
	const char *p = text;
	u128 m, div = 1, q, r;
	uint64_t factor;
	int e, sticky = 0;

	if (!text || !bytes)
		return -EINVAL;
	if (parse_number(&p, &m, &e, &sticky) < 0)
		return -EINVAL;
	if (*p == ' ' || *p == '\t') {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p) /* spaces must be followed by a unit */
			return -EINVAL;
	}
	if (parse_unit(p, &factor) < 0)
		return -EINVAL;

	/* value = m * factor * 10^e, exactly */
	m *= factor;
	for (; e > 0 && m; e--) {
		if (m > UINT64_MAX)
			return -EINVAL;
		m *= 10;
	}
	for (; e < 0 && div <= U128_MAX / 10; e++)
		div *= 10;
	if (e < 0) /* 10^-e exceeds the mantissa: the value is below 0.5 */
		q = 0, r = m;
	else
		q = m / div, r = m % div;
	if (r || sticky) {
		if (factor == 1)
			return -EINVAL; /* a fractional number of bytes */
		if (e >= 0 && r >= div - r)
			q++;
	}
	if (q > UINT64_MAX)
		return -EINVAL;
	*bytes = (uint64_t)q;
	return 0;
}

/* Formats value / base^k with three significant digits, choosing k so the
 * printed number is below base (or the last unit). units[0] is printed as
 * an integer. */
static char *format_scaled(uint64_t value, double base, const char *const *units, size_t nunits,
                           char *buf, size_t buflen)
{
	double v = (double)value;
	size_t k = 0;

	if (!buf || !buflen)
		return buf;
	if (v < base) {
		snprintf(buf, buflen, "%" PRIu64 " %s", value, units[0]);
		return buf;
	}
	/* 999.5 and up prints as 1000 (or 1024 KiB as 1.00 MiB): next unit */
	do {
		v /= base;
		k++;
	} while (v >= base - 0.5 && k + 1 < nunits);
	if (v < 9.995)
		snprintf(buf, buflen, "%.2f %s", v, units[k]);
	else if (v < 99.95)
		snprintf(buf, buflen, "%.1f %s", v, units[k]);
	else
		snprintf(buf, buflen, "%.0f %s", v, units[k]);
	return buf;
}

char *mt_size_format(uint64_t bytes, char *buf, size_t buflen)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };

	return format_scaled(bytes, 1024.0, units, sizeof(units) / sizeof(units[0]), buf, buflen);
}

char *mt_duration_format(uint64_t ns, char *buf, size_t buflen)
{
	static const char *const units[] = { "ns", "us", "ms", "s" };

	return format_scaled(ns, 1000.0, units, sizeof(units) / sizeof(units[0]), buf, buflen);
}
