/* bands.c — the timeline's stacked allocation bands, computed per pixel
 * column as PyTorch's memory_viz draws them (one band per allocation,
 * stacked in allocation order, those beyond a budget merged into one band
 * at the bottom) but rasterised column by column with exact coverage, so the
 * cost is bounded by pixels and the number of bands drawn, not by events.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viewer-private.h"

struct weighted {
	double bs; /* byte-seconds inside the window */
	size_t idx;
};

static void swap(struct weighted *a, struct weighted *b)
{
	struct weighted t = *a;
	*a = *b;
	*b = t;
}

/* Moves the k largest by bs to the front: quickselect with a three-way
 * partition, so equal weights cannot make it quadratic. */
static void select_largest(struct weighted *w, size_t n, size_t k)
{
	size_t lo = 0, hi = n;

	while (hi - lo > 1) {
		double pivot = w[lo + (hi - lo) / 2].bs;
		size_t lt = lo, i = lo, gt = hi;

		while (i < gt) {
			if (w[i].bs > pivot)
				swap(&w[lt++], &w[i++]);
			else if (w[i].bs < pivot)
				swap(&w[i], &w[--gt]);
			else
				i++;
		}
		if (k <= lt)
			hi = lt;
		else if (k <= gt)
			return;
		else
			lo = gt;
	}
}

struct keyed {
	uint64_t start;
	size_t idx;
};

static int by_start(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* w: room for n weights (the caller's scratch memory). */
static int choose_bands(struct vw_stack *s, const struct mt_lifetime *l, size_t n, size_t max_bands,
                        struct weighted *w)
{
	uint64_t from = s->cols.from, to = s->cols.to;
	struct keyed *key;
	size_t i, m = 0;

	for (i = 0; i < n; i++) {
		uint64_t a = l[i].start > from ? l[i].start : from;
		uint64_t b = l[i].end < to ? l[i].end : to;

		if (!l[i].bytes || a >= b)
			continue;
		w[m].bs = (double)l[i].bytes * (double)(b - a);
		w[m++].idx = i;
	}
	if (m > max_bands && max_bands > 0)
		select_largest(w, m, max_bands);
	s->nbands = m < max_bands ? m : max_bands;
	s->merged = m - s->nbands;
	s->band = malloc((s->nbands ? s->nbands : 1) * sizeof(*s->band));
	/* stacking order: allocation order */
	key = malloc((s->nbands ? s->nbands : 1) * sizeof(*key));
	if (!s->band || !key) {
		free(key);
		return -ENOMEM;
	}
	for (i = 0; i < s->nbands; i++) {
		key[i].idx = w[i].idx;
		key[i].start = l[w[i].idx].start;
	}
	qsort(key, s->nbands, sizeof(*key), by_start);
	for (i = 0; i < s->nbands; i++)
		s->band[i] = key[i].idx;
	free(key);
	return 0;
}

int vw_stack_build(struct vw_stack *s, const struct vw_columns *c, const struct mt_lifetime *l,
                   size_t n, size_t max_bands)
{
	struct vw_delta *d = NULL;
	size_t m, x;

	memset(s, 0, sizeof(*s));
	s->cols = *c;
	s->total = malloc(c->n * sizeof(*s->total));
	s->instant = malloc(c->n * sizeof(*s->instant));
	if (!s->total || !s->instant || vw_deltas(l, n, c->from, &d, &m) < 0)
		goto oom;
	vw_columns_sweep(c, d, m, s->total, s->instant);
	for (x = 0; x < c->n; x++)
		if (s->total[x] > s->peak) {
			s->peak = s->total[x];
			s->peak_column = x;
		}
	s->peak_ts = c->from + (uint64_t)((s->instant[s->peak_column] + 1) / 2);
	/* the deltas' memory (2n + 1 of them, already paged in) holds the
	 * n weights */
	_Static_assert(sizeof(struct weighted) <= sizeof(struct vw_delta),
	               "weights fit the deltas");
	if (choose_bands(s, l, n, max_bands, (struct weighted *)d) < 0)
		goto oom;
	free(d);
	return 0;
oom:
	free(d);
	vw_stack_release(s);
	return -ENOMEM;
}

void vw_stack_release(struct vw_stack *s)
{
	free(s->total);
	free(s->instant);
	free(s->band);
	memset(s, 0, sizeof(*s));
}

/* First column whose moment is at or after t2 (a doubled relative time). */
static size_t first_at(const struct vw_stack *s, int64_t t2)
{
	size_t lo = 0, hi = s->cols.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->instant[mid] < t2)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void band_columns(const struct vw_stack *s, const struct mt_lifetime *l, size_t *x0,
                         size_t *x1)
{
	int64_t a = 2 * (int64_t)(l->start - s->cols.from);
	int64_t b = l->end == UINT64_MAX ? INT64_MAX : 2 * (int64_t)(l->end - s->cols.from);

	*x0 = first_at(s, a);
	*x1 = first_at(s, b);
}

/* Adds colour c over [y0, y1) (pixels from the bottom) of one column,
 * weighting each pixel by the part of it covered. */
static void span(float *col, size_t h, double y0, double y1, struct vw_rgb c)
{
	size_t r, r1;

	if (y0 < 0)
		y0 = 0;
	if (y1 > (double)h)
		y1 = (double)h;
	if (y1 <= y0)
		return;
	r1 = (size_t)ceil(y1);
	for (r = (size_t)y0; r < r1; r++) {
		double lo = y0 > r ? y0 : r, hi = y1 < r + 1 ? y1 : r + 1;
		float cov = (float)(hi - lo);
		float *p = col + r * 4;

		p[0] += cov * (float)c.r;
		p[1] += cov * (float)c.g;
		p[2] += cov * (float)c.b;
		p[3] += cov;
	}
}

static uint32_t to_pixel(const float *p)
{
	float a = p[3], k = a > 1 ? 1 / a : 1;
	uint32_t ch[4];
	int i;

	if (a <= 0)
		return 0;
	for (i = 0; i < 4; i++) {
		float v = p[i] * k;
		ch[i] = (uint32_t)(v >= 1 ? 255 : v * 255.0f + 0.5f);
	}
	return ch[3] << 24 | ch[0] << 16 | ch[1] << 8 | ch[2];
}

static cairo_surface_t *to_image(const float *acc, size_t w, size_t h)
{
	cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)w, (int)h);
	unsigned char *data;
	int stride;
	size_t x, y;

	if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
		cairo_surface_destroy(img);
		return NULL;
	}
	cairo_surface_flush(img);
	data = cairo_image_surface_get_data(img);
	stride = cairo_image_surface_get_stride(img);
	for (y = 0; y < h; y++) {
		uint32_t *row = (uint32_t *)(data + y * (size_t)stride);

		for (x = 0; x < w; x++)
			row[x] = to_pixel(acc + (x * h + (h - 1 - y)) * 4);
	}
	cairo_surface_mark_dirty(img);
	return img;
}

cairo_surface_t *vw_stack_image(const struct vw_stack *s, const struct mt_lifetime *l,
                                size_t height, double ymax)
{
	size_t w = s->cols.n, b, x, x0, x1;
	double scale = ymax > 0 ? (double)height / ymax : 0;
	float *acc = calloc(w * height * 4, sizeof(*acc));
	double *off = calloc(w, sizeof(*off));
	cairo_surface_t *img = NULL;

	if (!acc || !off)
		goto out;
	/* the merged band at the bottom: total minus what the bands draw */
	for (b = 0; b < s->nbands; b++) {
		band_columns(s, &l[s->band[b]], &x0, &x1);
		for (x = x0; x < x1; x++)
			off[x] += (double)l[s->band[b]].bytes;
	}
	for (x = 0; x < w; x++) {
		double rest = s->total[x] - off[x];

		off[x] = rest > 0 ? rest : 0;
		span(acc + x * height * 4, height, 0, off[x] * scale,
		     vw_role_color(VW_ROLE_MERGED));
	}
	for (b = 0; b < s->nbands; b++) {
		double bytes = (double)l[s->band[b]].bytes;
		struct vw_rgb c = vw_band_color(b);

		band_columns(s, &l[s->band[b]], &x0, &x1);
		for (x = x0; x < x1; x++) {
			span(acc + x * height * 4, height, off[x] * scale, (off[x] + bytes) * scale,
			     c);
			off[x] += bytes;
		}
	}
	img = to_image(acc, w, height);
out:
	free(acc);
	free(off);
	return img;
}
