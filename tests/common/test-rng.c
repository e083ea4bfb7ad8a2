/* test-rng.c — the common generator against values worked out from the
 * published algorithms: splitmix64's first outputs for state 0, and
 * xoshiro256**'s first four outputs from the state {1, 2, 3, 4}; the ranges of mt_rng_below and
 * mt_rng_unit; seeding is splitmix64 and is deterministic. */
#include "config.h"

#include <inttypes.h>

#include "memtrace-common.h"
#include "tap.h"

/* splitmix64 from state 0: the reference implementation's first three
 * values (Vigna, splitmix64.c). */
static void test_splitmix64(void)
{
	static const uint64_t want[] = { 0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull,
		                         0x06c45d188009454full };
	uint64_t state = 0;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint64_t v = mt_splitmix64(&state);
		CHECKF(v == want[i], "value %zu: %#" PRIx64 ", want %#" PRIx64, i, v, want[i]);
	}
	CHECK(state == 3 * 0x9e3779b97f4a7c15ull);
}

/* xoshiro256** from {1, 2, 3, 4}: result = rotl(s1 * 5, 7) * 9, then the
 * state update. Step 1: rotl(10, 7) * 9 = 1280 * 9 = 11520, and the state
 * becomes {7, 0, 262146, rotl(6, 45)}; step 2: s1 = 0 gives 0. The third
 * and fourth values come from the same steps carried on (a Python
 * transcription of the reference xoshiro256starstar.c). */
static void test_xoshiro(void)
{
	static const uint64_t want[] = { 11520, 0, 1509978240, 1215971899390074240ull };
	struct mt_rng r = { { 1, 2, 3, 4 } };

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint64_t v = mt_rng_next(&r);
		CHECKF(v == want[i], "value %zu: %" PRIu64 ", want %" PRIu64, i, v, want[i]);
	}
}

static void test_seed(void)
{
	struct mt_rng a, b;
	uint64_t s = 42;

	mt_rng_seed(&a, 42);
	for (int i = 0; i < 4; i++)
		CHECK(a.s[i] == mt_splitmix64(&s));
	mt_rng_seed(&b, 42);
	CHECK(mt_rng_next(&a) == mt_rng_next(&b));
	mt_rng_seed(&b, 43);
	CHECK(mt_rng_next(&a) != mt_rng_next(&b));
}

/* Below n stays below n and reaches both ends of a small range; unit stays
 * in [0, 1) and averages about 1/2. */
static void test_ranges(void)
{
	struct mt_rng r;
	int seen[7] = { 0 };
	double sum = 0;

	mt_rng_seed(&r, 7);
	for (int i = 0; i < 10000; i++) {
		uint64_t v = mt_rng_below(&r, 7);
		double u = mt_rng_unit(&r);

		CHECKF(v < 7, "below 7 gave %" PRIu64, v);
		CHECKF(u >= 0 && u < 1, "unit gave %g", u);
		if (check_failed())
			return;
		seen[v]++;
		sum += u;
	}
	for (int k = 0; k < 7; k++)
		CHECKF(seen[k] > 1200 && seen[k] < 1650, "%d drawn %d times of 10000", k, seen[k]);
	CHECKF(sum / 10000 > 0.48 && sum / 10000 < 0.52, "mean %g", sum / 10000);
	CHECK(mt_rng_below(&r, 1) == 0);
}

int main(void)
{
	TEST(test_splitmix64);
	TEST(test_xoshiro);
	TEST(test_seed);
	TEST(test_ranges);
	return check_done();
}
