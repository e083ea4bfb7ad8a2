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

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

uint64_t rp_quantile(uint32_t *v, size_t n, double q)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u32);
	size_t i = (size_t)(q * (double)n);
	return v[i < n ? i : n - 1];
}
