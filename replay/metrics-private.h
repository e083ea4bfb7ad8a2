/* metrics-private.h — the replay driver's measurements that need more than
 * a counter: the decimated allocated/reserved series (max-preserving, so
 * peaks survive any decimation) and latency percentiles. */
#ifndef MEMTRACE_METRICS_PRIVATE_H
#define MEMTRACE_METRICS_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace-format.h"

/* Time [t0, t1] cut into n equal buckets; each keeps the first timestamp
 * that fell into it and the maxima of allocated and reserved seen in it. */
struct rp_series {
	struct mt_series_point *points; /* n buckets; ts == UINT64_MAX: empty */
	size_t n;
	uint64_t t0;
	uint64_t span; /* t1 - t0 + 1 */
};

int rp_series_init(struct rp_series *s, size_t n, uint64_t t0, uint64_t t1);
static inline void rp_series_add(struct rp_series *s, uint64_t ts, uint64_t allocated,
                                 uint64_t reserved)
{
	size_t i = (size_t)((unsigned __int128)(ts - s->t0) * s->n / s->span);
	struct mt_series_point *p = &s->points[i < s->n ? i : s->n - 1];
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

/* The q-quantile (0..1, nearest rank) of v[0..n); reorders v. 0 if n == 0. */
uint64_t rp_quantile(uint32_t *v, size_t n, double q);

#endif /* MEMTRACE_METRICS_PRIVATE_H */
