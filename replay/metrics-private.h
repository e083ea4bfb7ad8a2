/* metrics-private.h — the replay driver's measurements that need more than
 * a counter: the decimated allocated/reserved series (max-preserving, so
 * peaks survive any decimation) and latency percentiles, both in memory
 * that does not grow with the replay. */
#ifndef MEMTRACE_METRICS_PRIVATE_H
#define MEMTRACE_METRICS_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace-format.h"

/* Time [t0, t1] cut into n equal buckets; each keeps the first timestamp
 * that fell into it and the maxima of allocated and reserved seen in it.
 * Times mostly come in order, so the bucket of the last one is kept with
 * its bounds and a division is made only when a time leaves it. */
struct rp_series {
	struct mt_series_point *points; /* n buckets; ts == UINT64_MAX: empty */
	size_t n;
	uint64_t t0;
	uint64_t span;   /* t1 - t0 + 1 */
	size_t cur;      /* the bucket of times t0 + [lo, hi) */
	uint64_t lo, hi; /* lo > hi: none yet */
};

int rp_series_init(struct rp_series *s, size_t n, uint64_t t0, uint64_t t1);
/* The bucket of ts (the cached one's bounds moved to it). */
size_t rp_series_bucket(struct rp_series *s, uint64_t ts);
static inline void rp_series_add(struct rp_series *s, uint64_t ts, uint64_t allocated,
                                 uint64_t reserved)
{
	uint64_t d = ts - s->t0;
	size_t i = d >= s->lo && d < s->hi ? s->cur : rp_series_bucket(s, ts);
	struct mt_series_point *p = &s->points[i];
	if (p->ts == UINT64_MAX)
		*p = (struct mt_series_point){ ts, allocated, reserved };
	if (allocated > p->allocated)
		p->allocated = allocated;
	if (reserved > p->reserved)
		p->reserved = reserved;
}
/* Drops empty buckets; hands the points over (*len of them, malloc'd). */
struct mt_series_point *rp_series_finish(struct rp_series *s, size_t *len);
void rp_series_release(struct rp_series *s);

/* Host latencies counted in buckets, so memory does not grow with the
 * replay: exact below 128 ns, then 64 buckets per power of two (a
 * quantile is its bucket's lower end, within 1/64 of the value). */
#define RP_LATENCY_BUCKETS (128 + 57 * 64)
struct rp_latency {
	uint64_t count[RP_LATENCY_BUCKETS];
	uint64_t n;
};

void rp_latency_add(struct rp_latency *l, uint64_t ns);
/* The q-quantile (0..1, nearest rank); 0 when nothing was counted. */
uint64_t rp_latency_quantile(const struct rp_latency *l, double q);

#endif /* MEMTRACE_METRICS_PRIVATE_H */
