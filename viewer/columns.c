/* columns.c — aggregation per pixel column, so that drawing costs pixels,
 * not events: live bytes (the largest within each column and the moment it
 * holds), step series (samples, replay series) and kernel busy time.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viewer-private.h"

/* LSD radix sort by t, 16 bits a pass, as many passes as the range needs;
 * tmp has room for m deltas. */
static int radix_sort(struct vw_delta *d, size_t m, struct vw_delta *tmp)
{
	struct vw_delta *src = d, *dst = tmp, *swap;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	size_t *count, i;
	unsigned shift;
	uint64_t range;

	if (m < 2)
		return 0;
	for (i = 0; i < m; i++) {
		if (d[i].t < lo)
			lo = d[i].t;
		if (d[i].t > hi)
			hi = d[i].t;
	}
	range = (uint64_t)hi - (uint64_t)lo;
	count = malloc(65536 * sizeof(*count));
	if (!count)
		return -ENOMEM;
	for (shift = 0; shift < 64 && (range >> shift) != 0; shift += 16) {
		size_t sum = 0;

		memset(count, 0, 65536 * sizeof(*count));
		for (i = 0; i < m; i++)
			count[((uint64_t)src[i].t - (uint64_t)lo) >> shift & 0xffff]++;
		for (i = 0; i < 65536; i++) {
			size_t c = count[i];
			count[i] = sum;
			sum += c;
		}
		for (i = 0; i < m; i++)
			dst[count[((uint64_t)src[i].t - (uint64_t)lo) >> shift & 0xffff]++] =
			        src[i];
		swap = src;
		src = dst;
		dst = swap;
	}
	if (src != d)
		memcpy(d, src, m * sizeof(*d));
	free(count);
	return 0;
}

static bool sorted(const struct vw_delta *d, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (d[i].t < d[i - 1].t)
			return false;
	return true;
}

int vw_deltas(const struct mt_lifetime *l, size_t n, uint64_t base, struct vw_delta **out,
              size_t *m)
{
	/* Starts come in allocation order, so usually sorted already: only
	 * the ends are sorted, then merged. Memory: d holds the starts in its
	 * upper half (its lower half is the sort's scratch), e the ends; the
	 * merge writes d from the front, never past the next start it reads. */
	struct vw_delta *d = malloc((2 * n + 1) * sizeof(*d));
	struct vw_delta *e = malloc((n + 1) * sizeof(*e)), *s = d ? d + n : NULL;
	size_t i, j, ns = 0, ne = 0, k = 0;
	int rc = -ENOMEM;

	if (!d || !e)
		goto out;
	for (i = 0; i < n; i++) {
		if (!l[i].bytes)
			continue;
		s[ns++] = (struct vw_delta){ (int64_t)(l[i].start - base), (int64_t)l[i].bytes };
		if (l[i].end != UINT64_MAX)
			e[ne++] = (struct vw_delta){ (int64_t)(l[i].end - base),
				                     -(int64_t)l[i].bytes };
	}
	if ((!sorted(s, ns) && radix_sort(s, ns, d) < 0) || radix_sort(e, ne, d) < 0)
		goto out;
	for (i = 0, j = 0; i < ns || j < ne;)
		d[k++] = j == ne || (i < ns && s[i].t <= e[j].t) ? s[i++] : e[j++];
	rc = 0;
out:
	free(e);
	if (rc < 0) {
		free(d);
		return rc;
	}
	*out = d;
	*m = k;
	return 0;
}

uint64_t vw_column_start(const struct vw_columns *c, size_t x)
{
	if (x >= c->n)
		return c->to;
	return c->from + (uint64_t)((unsigned __int128)(c->to - c->from) * x / c->n);
}

size_t vw_column_of(const struct vw_columns *c, uint64_t ts)
{
	size_t x;

	if (ts <= c->from)
		return 0;
	if (ts >= c->to)
		return c->n - 1;
	x = (size_t)((unsigned __int128)(ts - c->from) * c->n / (c->to - c->from));
	return x < c->n ? x : c->n - 1;
}

void vw_sweep_start(struct vw_sweep *s, const struct vw_columns *c, double *max, int64_t *instant)
{
	*s = (struct vw_sweep){ .c = c, .max = max, .instant = instant };
}

static int64_t rel_start(const struct vw_columns *c, size_t x)
{
	return (int64_t)(vw_column_start(c, x) - c->from);
}

static void open_column(struct vw_sweep *s)
{
	s->best = s->cur;
	s->inst = 2 * rel_start(s->c, s->x) - 1;
	s->opened = true;
}

static void close_column(struct vw_sweep *s)
{
	if (!s->opened)
		open_column(s);
	s->max[s->x] = (double)s->best;
	if (s->instant)
		s->instant[s->x] = s->inst;
	s->x++;
	s->opened = false;
}

/* The moment of the pending changes is over: a new largest value? */
static void close_moment(struct vw_sweep *s)
{
	s->pending = false;
	if (s->x < s->c->n && s->opened && s->cur > s->best) {
		s->best = s->cur;
		s->inst = 2 * s->t;
	}
}

void vw_sweep_add(struct vw_sweep *s, int64_t t, int64_t bytes)
{
	if (s->pending && t != s->t)
		close_moment(s);
	while (s->x < s->c->n && t >= rel_start(s->c, s->x + 1))
		close_column(s);
	if (s->x < s->c->n && t >= rel_start(s->c, s->x) && !s->opened)
		open_column(s);
	s->cur += bytes;
	s->t = t;
	s->pending = true;
}

void vw_sweep_finish(struct vw_sweep *s)
{
	if (s->pending)
		close_moment(s);
	while (s->x < s->c->n)
		close_column(s);
}

void vw_columns_sweep(const struct vw_columns *c, const struct vw_delta *d, size_t m, double *max,
                      int64_t *instant)
{
	struct vw_sweep s;
	size_t i;

	vw_sweep_start(&s, c, max, instant);
	for (i = 0; i < m; i++)
		vw_sweep_add(&s, d[i].t, d[i].bytes);
	vw_sweep_finish(&s);
}

int vw_columns_live_max(const struct vw_columns *c, const struct mt_lifetime *l, size_t n,
                        double *out)
{
	struct vw_delta *d;
	size_t m;

	if (vw_deltas(l, n, c->from, &d, &m) < 0)
		return -ENOMEM;
	vw_columns_sweep(c, d, m, out, NULL);
	free(d);
	return 0;
}

void vw_columns_steps(const struct vw_columns *c, const struct vw_point *p, size_t n, double *out)
{
	size_t i = 0, x;
	double cur = NAN;

	for (x = 0; x < c->n; x++) {
		uint64_t cs = vw_column_start(c, x), ce = vw_column_start(c, x + 1);
		double best;

		while (i < n && p[i].ts < cs)
			cur = (double)p[i++].value;
		best = cur;
		while (i < n && p[i].ts < ce) {
			cur = (double)p[i++].value;
			if (isnan(best) || cur > best)
				best = cur;
		}
		out[x] = best;
	}
}

int vw_busy_start(struct vw_busy *b, const struct vw_columns *c, double *out)
{
	*b = (struct vw_busy){ .c = c, .out = out };
	/* whole columns a span covers, as a difference array: O(spans + columns) */
	b->whole = calloc(c->n + 1, sizeof(*b->whole));
	memset(out, 0, c->n * sizeof(*out));
	return b->whole ? 0 : -ENOMEM;
}

void vw_busy_add(struct vw_busy *b, const struct vw_span *s)
{
	const struct vw_columns *c = b->c;
	uint64_t lo = s->start > c->from ? s->start : c->from;
	uint64_t hi = s->end < c->to ? s->end : c->to;
	size_t xa, xb;

	if (lo >= hi)
		return;
	xa = vw_column_of(c, lo);
	xb = vw_column_of(c, hi - 1);
	if (xa == xb) {
		b->out[xa] += (double)(hi - lo);
		return;
	}
	b->out[xa] += (double)(vw_column_start(c, xa + 1) - lo);
	b->out[xb] += (double)(hi - vw_column_start(c, xb));
	if (xb > xa + 1) {
		b->whole[xa + 1] += 1;
		b->whole[xb] -= 1;
	}
}

void vw_busy_finish(struct vw_busy *b)
{
	const struct vw_columns *c = b->c;
	double width = (double)(c->to - c->from) / (double)c->n, covering = 0;
	size_t x;

	for (x = 0; x < c->n; x++) {
		covering += b->whole[x];
		b->out[x] += covering * (double)(vw_column_start(c, x + 1) - vw_column_start(c, x));
		b->out[x] /= width;
		if (b->out[x] > 1)
			b->out[x] = 1;
	}
	free(b->whole);
	b->whole = NULL;
}

void vw_columns_busy(const struct vw_columns *c, const struct vw_span *s, size_t n, double *out)
{
	struct vw_busy b;
	size_t i;

	if (vw_busy_start(&b, c, out) < 0)
		return;
	for (i = 0; i < n; i++)
		vw_busy_add(&b, &s[i]);
	vw_busy_finish(&b);
}

double vw_columns_max(const double *v, size_t n)
{
	double m = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (!isnan(v[i]) && v[i] > m)
			m = v[i];
	return m;
}
