/* metrics.c — decimated series and latency quantiles for the replay
 * driver (see metrics-private.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "metrics-private.h"

int rp_series_init(struct rp_series *s, size_t n, uint64_t t0, uint64_t t1)
{
	s->n = n;
	s->t0 = t0;
	s->span = t1 - t0 + 1 ? t1 - t0 + 1 : UINT64_MAX;
	s->points = NULL;
	s->lo = 1;
	s->hi = 0;
	if (!n)
		return 0;
	s->points = malloc(n * sizeof(*s->points));
	if (!s->points)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		s->points[i] = (struct mt_series_point){ UINT64_MAX, 0, 0 };
	return 0;
}

struct mt_series_point *rp_series_finish(struct rp_series *s, size_t *len)
{
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->points[i].ts != UINT64_MAX)
			s->points[k++] = s->points[i];
	struct mt_series_point *p = s->points;
	s->points = NULL;
	*len = k;
	if (!k) {
		free(p);
		return NULL;
	}
	return p;
}

void rp_series_release(struct rp_series *s)
{
	free(s->points);
	s->points = NULL;
}

static uint64_t bucket_start(const struct rp_series *s, size_t i)
{
	return (uint64_t)(((unsigned __int128)i * s->span + s->n - 1) / s->n);
}

size_t rp_series_bucket(struct rp_series *s, uint64_t ts)
{
	uint64_t d = ts - s->t0;
	size_t i = (size_t)((unsigned __int128)d * s->n / s->span);
	if (i >= s->n)
		i = s->n - 1;
	s->cur = i;
	s->lo = bucket_start(s, i);
	s->hi = i + 1 < s->n ? bucket_start(s, i + 1) : UINT64_MAX;
	return i;
}

void rp_latency_add(struct rp_latency *l, uint64_t ns)
{
	size_t b = (size_t)ns;
	if (ns >= 128) {
		unsigned e = 63u - (unsigned)__builtin_clzll(ns);
		b = 128 + (e - 7) * 64 + (size_t)((ns >> (e - 6)) & 63);
	}
	l->count[b]++;
	l->n++;
}

static uint64_t latency_value(size_t b)
{
	if (b < 128)
		return b;
	unsigned e = 7 + (unsigned)((b - 128) / 64);
	return (64 + (uint64_t)((b - 128) % 64)) << (e - 6);
}

uint64_t rp_latency_quantile(const struct rp_latency *l, double q)
{
	if (!l->n)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)l->n), seen = 0;
	if (rank >= l->n)
		rank = l->n - 1;
	for (size_t b = 0; b < RP_LATENCY_BUCKETS; b++) {
		seen += l->count[b];
		if (seen > rank)
			return latency_value(b);
	}
	return latency_value(RP_LATENCY_BUCKETS - 1);
}
