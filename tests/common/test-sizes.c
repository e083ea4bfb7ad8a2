/* test-sizes.c — unit test of mt_size_parse, mt_size_format and
 * mt_duration_format against hand-computed values. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "memtrace-common.h"
#include "tap.h"

struct parse_case {
	const char *text;
	uint64_t bytes;
};

static const struct parse_case accepted[] = {
	{ "0", 0 },
	{ "4096", 4096 },
	{ "24GiB", 24ull << 30 },
	{ "24gib", 24ull << 30 },
	{ "512MB", 512000000ull },
	{ "512 MiB", 512ull << 20 },
	{ "512\tMiB", 512ull << 20 },
	{ "1e9", 1000000000ull },
	{ "1E9", 1000000000ull },
	{ "1e+3", 1000 },
	{ "1.5GiB", 1610612736ull },
	{ "1.5KB", 1500 },
	{ "1.5K", 1500 },
	{ "2M", 2000000ull },
	{ "3T", 3000000000000ull },
	{ "3TiB", 3ull << 40 },
	{ "7B", 7 },
	{ "7b", 7 },
	{ "1.0", 1 },
	{ "2.50e1", 25 },
	{ "15e-1KiB", 1536 },
	{ "0.5KiB", 512 },
	/* 1.3 GiB = 1395864371.2 B: rounded to the nearest byte */
	{ "1.3GiB", 1395864371ull },
	/* 0.0007 KiB = 0.7168 B rounds up to 1 */
	{ "0.0007KiB", 1 },
	{ "007", 7 },
	{ "18446744073709551615", UINT64_MAX },
	{ "1.8446744073709551615e19", UINT64_MAX },
	{ "16777215.999999999999TiB", UINT64_MAX }, /* 2^64 - 1.0995 B */
	{ "184467440737095516150e-1", UINT64_MAX },
	{ "0e99999", 0 },
	{ "1e-60KiB", 0 },
};

static const char *const refused[] = {
	"",
	" ",
	"-1",
	"+1",
	"12XB",
	"GiB",
	"1e30",
	"18446744073709551616",
	"16EiB",
	"20000000TiB",
	"nan",
	"inf",
	"0x10",
	"1.5",
	"1.5B",
	"1e-3",
	"1.",
	".5",
	"1e",
	"1e+",
	"1 ",
	" 1",
	"1 GiB ",
	"1GiBx",
	"1 2",
	"1,5GiB",
	"1.0000000000000000000000000000000000001",
	"1..2",
};

static void test_parse(void)
{
	char detail[160];
	size_t i;

	for (i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		uint64_t v = 12345;
		int rc = mt_size_parse(accepted[i].text, &v);
		snprintf(detail, sizeof(detail), "'%s' -> rc %d, %" PRIu64 " (want %" PRIu64 ")",
		         accepted[i].text, rc, v, accepted[i].bytes);
		CHECKF(rc == 0 && v == accepted[i].bytes, "parse: %s", detail);
	}
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		uint64_t v = 12345;
		int rc = mt_size_parse(refused[i], &v);
		snprintf(detail, sizeof(detail), "'%s' refused -> rc %d, value %" PRIu64,
		         refused[i], rc, v);
		CHECKF(rc == -EINVAL && v == 12345, "refuse: %s", detail);
	}
	CHECK(mt_size_parse(NULL, &(uint64_t){ 0 }) == -EINVAL);
}

struct format_case {
	uint64_t value;
	const char *text;
};

static const struct format_case sizes[] = {
	{ 0, "0 B" },
	{ 512, "512 B" },
	{ 1023, "1023 B" },
	{ 1024, "1.00 KiB" },
	{ 1536, "1.50 KiB" },
	{ 10234, "9.99 KiB" },
	{ 10235, "10.0 KiB" },  /* 9.995 KiB rounds to 10.0 */
	{ 102348, "99.9 KiB" }, /* 99.949 KiB */
	{ 102349, "100 KiB" },  /* 99.950 KiB */
	{ 102400, "100 KiB" },
	{ 1047552, "1023 KiB" },
	{ 1048063, "1023 KiB" }, /* 1023.499 KiB */
	{ 1048064, "1.00 MiB" }, /* 1023.5 KiB would print as 1024 */
	{ 25555055411ull, "23.8 GiB" },
	{ 80ull << 30, "80.0 GiB" },
	{ 3ull << 40, "3.00 TiB" },
	{ UINT64_MAX, "16.0 EiB" },
};

static const struct format_case durations[] = {
	{ 0, "0 ns" },
	{ 850, "850 ns" },
	{ 999, "999 ns" },
	{ 1000, "1.00 us" },
	{ 12300, "12.3 us" },
	{ 999499, "999 us" },
	{ 999500, "1.00 ms" },
	{ 4560000, "4.56 ms" },
	{ 1230000000ull, "1.23 s" },
	{ 61000000000ull, "61.0 s" },
	{ 3600000000000ull, "3600 s" },
};

static void test_format(void)
{
	char buf[32], detail[160];
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *s = mt_size_format(sizes[i].value, buf, sizeof(buf));
		snprintf(detail, sizeof(detail), "%" PRIu64 " -> '%s' (want '%s')", sizes[i].value,
		         s, sizes[i].text);
		CHECKF(s == buf && !strcmp(buf, sizes[i].text), "size format: %s", detail);
	}
	for (i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
		char *s = mt_duration_format(durations[i].value, buf, sizeof(buf));
		snprintf(detail, sizeof(detail), "%" PRIu64 " -> '%s' (want '%s')",
		         durations[i].value, s, durations[i].text);
		CHECKF(s == buf && !strcmp(buf, durations[i].text), "duration format: %s", detail);
	}
	/* buflen 16 is enough for the longest size */
	mt_size_format(UINT64_MAX - 1, buf, 16);
	CHECKF(strlen(buf) < 16 && !strcmp(buf, "16.0 EiB"), "size fits 16 bytes: %s", buf);
	/* a short buffer is truncated, still terminated */
	memset(buf, 'x', sizeof(buf));
	mt_size_format(1536, buf, 4);
	CHECKF(!strcmp(buf, "1.5"), "short buffer truncates: %s", buf);
}

static void test_round_trip(void)
{
	/* what mt_size_format prints parses back to within the 3 digits shown */
	static const uint64_t values[] = { 1, 1000, 4096, 1 << 20, 123456789, 80ull << 30 };
	char buf[32], detail[160];
	size_t i;

	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		uint64_t back = 0;
		int rc = mt_size_parse(mt_size_format(values[i], buf, sizeof(buf)), &back);
		double err =
		        back > values[i] ? (double)(back - values[i]) : (double)(values[i] - back);
		snprintf(detail, sizeof(detail), "%" PRIu64 " -> '%s' -> %" PRIu64, values[i], buf,
		         back);
		CHECKF(rc == 0 && err <= 0.005 * (double)values[i], "format then parse: %s",
		       detail);
	}
}

int main(void)
{
	TEST(test_parse);
	TEST(test_format);
	TEST(test_round_trip);
	return check_done();
}
