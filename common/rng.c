/* rng.c — the one pseudo-random generator of memtrace: splitmix64 for a
 * plain stream and for seeding, xoshiro256** for everything drawn from a
 * seeded state (Blackman and Vigna's published algorithms). Deterministic
 * on every machine: synthetic traces and test streams depend on it. */
#include "config.h"

#include "memtrace-common.h"

uint64_t mt_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void mt_rng_seed(struct mt_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = mt_splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t mt_rng_next(struct mt_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t mt_rng_below(struct mt_rng *r, uint64_t n)
{
	__extension__ typedef unsigned __int128 u128;
	return (uint64_t)(((u128)mt_rng_next(r) * n) >> 64);
}

double mt_rng_unit(struct mt_rng *r)
{
	return (double)(mt_rng_next(r) >> 11) * 0x1.0p-53;
}
