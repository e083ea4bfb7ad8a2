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

/* Whether band a ranks before b: more byte-seconds, then the earlier
 * allocation. */
static bool ranks_before(const struct vw_band *a, const struct vw_band *b)
{
	return a->bs > b->bs || (a->bs == b->bs && a->index < b->index);
}

/* s->band as a heap with the band ranking last on top. */
static void sift_down(struct vw_stack *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, last = i;
		struct vw_band t;

		if (l < s->nbands && ranks_before(&s->band[last], &s->band[l]))
			last = l;
		if (r < s->nbands && ranks_before(&s->band[last], &s->band[r]))
			last = r;
		if (last == i)
			return;
		t = s->band[i];
		s->band[i] = s->band[last];
		s->band[last] = t;
		i = last;
	}
}

static void sift_up(struct vw_stack *s, size_t i)
{
	while (i > 0 && ranks_before(&s->band[(i - 1) / 2], &s->band[i])) {
		struct vw_band t = s->band[i];

		s->band[i] = s->band[(i - 1) / 2];
		s->band[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

int vw_stack_start(struct vw_stack *s, const struct vw_columns *c, size_t max_bands)
{
	memset(s, 0, sizeof(*s));
	s->cols = *c;
	s->max_bands = max_bands;
	s->total = malloc(c->n * sizeof(*s->total));
	s->instant = malloc(c->n * sizeof(*s->instant));
	s->band = malloc((max_bands ? max_bands : 1) * sizeof(*s->band));
	if (!s->total || !s->instant || !s->band) {
		vw_stack_release(s);
		return -ENOMEM;
	}
	vw_sweep_start(&s->sweep, &s->cols, s->total, s->instant);
	return 0;
}

void vw_stack_change(struct vw_stack *s, uint64_t ts, int64_t bytes)
{
	if (bytes)
		vw_sweep_add(&s->sweep, (int64_t)(ts - s->cols.from), bytes);
}

void vw_stack_offer(struct vw_stack *s, uint64_t start, uint64_t end, uint64_t bytes,
                    uint64_t index)
{
	uint64_t from = s->cols.from, to = s->cols.to;
	uint64_t a = start > from ? start : from, b = end < to ? end : to;
	struct vw_band band;

	if (!bytes || a >= b)
		return;
	band = (struct vw_band){ start, end, bytes, index, (double)bytes * (double)(b - a) };
	s->merged++;
	if (s->nbands < s->max_bands) {
		s->band[s->nbands++] = band;
		sift_up(s, s->nbands - 1);
	} else if (s->max_bands && ranks_before(&band, &s->band[0])) {
		s->band[0] = band;
		sift_down(s, 0);
	}
}

/* Stacking order: allocation order. */
static int by_start(const void *a, const void *b)
{
	const struct vw_band *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

void vw_stack_finish(struct vw_stack *s)
{
	const struct vw_columns *c = &s->cols;
	size_t x;

	vw_sweep_finish(&s->sweep);
	for (x = 0; x < c->n; x++)
		if (s->total[x] > s->peak) {
			s->peak = s->total[x];
			s->peak_column = x;
		}
	s->peak_ts = c->from + (uint64_t)((s->instant[s->peak_column] + 1) / 2);
	s->merged -= s->nbands;
	if (s->nbands)
		qsort(s->band, s->nbands, sizeof(*s->band), by_start);
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

static void band_columns(const struct vw_stack *s, const struct vw_band *l, size_t *x0, size_t *x1)
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

cairo_surface_t *vw_stack_image(const struct vw_stack *s, size_t height, double ymax)
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
		band_columns(s, &s->band[b], &x0, &x1);
		for (x = x0; x < x1; x++)
			off[x] += (double)s->band[b].bytes;
	}
	for (x = 0; x < w; x++) {
		double rest = s->total[x] - off[x];

		off[x] = rest > 0 ? rest : 0;
		span(acc + x * height * 4, height, 0, off[x] * scale,
		     vw_role_color(VW_ROLE_MERGED));
	}
	for (b = 0; b < s->nbands; b++) {
		double bytes = (double)s->band[b].bytes;
		struct vw_rgb c = vw_band_color(b);

		band_columns(s, &s->band[b], &x0, &x1);
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
