/* view-segments.c — segment maps side by side: the recorded allocator's
 * segments (and the requests inside them) and policies replayed to the same
 * moment, one row per segment scaled by its bytes (packed several to a row
 * when there are too many for that), live blocks coloured, free space light (after the segment
 * views of PyTorch's memory_viz and the figures of the GMLake and expandable-segments write-ups).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-common.h"
#include "viewer-private.h"

#define MAX_PANELS 8

/* Rows of one scale for every panel: with few segments one row per
 * segment, the largest spanning the panel; with too many for rows of 8
 * pixels, segments are packed left to right into rows of row_bytes (a
 * segment longer than a row continues on the next), so every segment shows
 * and area stays proportional to bytes. */
struct layout {
	double x, w;   /* panel */
	double rows_y; /* top of the first row */
	double row_h, gap;
	size_t nrows;       /* rows that fit */
	uint64_t row_bytes; /* bytes across a whole row */
	double scale;       /* pixels per byte */
	bool packed;
};

#define SEGMENT_GAP 3 /* pixels between segments sharing a row */

/* A part of a segment drawn on one row: bytes [p0, p1) of it at (x, row). */
typedef void (*piece_fn)(const struct vw_canvas *c, const struct layout *l,
                         const struct mt_segmap *m, size_t seg, uint64_t p0, uint64_t p1, double x,
                         size_t row, size_t *colour);

/* Lays the map out and hands each piece to fn (NULL: only counts); returns
 * the rows used. */
static size_t place(const struct vw_canvas *c, const struct layout *l, const struct mt_segmap *m,
                    piece_fn fn)
{
	size_t i, row = 0, colour = 0;
	double x = 0;

	for (i = 0; i < m->nsegs; i++) {
		uint64_t bytes = m->segs[i].bytes, done = 0;
		double w = fmax(2, round((double)bytes * l->scale));

		if (!l->packed) {
			if (fn)
				fn(c, l, m, i, 0, bytes, 0, i, &colour);
			continue;
		}
		if (x > 0 && (x + w > l->w || w > l->w)) {
			row++;
			x = 0;
		}
		while (done < bytes) {
			uint64_t room = (uint64_t)((l->w - x) / l->scale);
			uint64_t take = bytes - done < room || room == 0 ? bytes - done : room;
			double pw = fmax(2, round((double)take * l->scale));

			if (fn)
				fn(c, l, m, i, done, done + take, x, row, &colour);
			done += take;
			x += pw + SEGMENT_GAP;
			if (done < bytes || x >= l->w) {
				row++;
				x = 0;
			}
		}
	}
	return l->packed ? row + (x > 0) : m->nsegs;
}

static void draw_piece(const struct vw_canvas *c, const struct layout *l, const struct mt_segmap *m,
                       size_t seg, uint64_t p0, uint64_t p1, double x, size_t row, size_t *colour)
{
	const struct mt_segmap_segment *s = &m->segs[seg];
	double y = l->rows_y + (double)row * (l->row_h + l->gap), w, left = l->x + x;
	size_t j;

	if (row >= l->nrows)
		return;
	w = fmax(2, round((double)(p1 - p0) * l->scale));
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_FREE));
	cairo_rectangle(c->cr, left, y, w, l->row_h);
	cairo_fill(c->cr);
	/* packed rows: a dark tick where each segment starts */
	if (l->packed && p0 == 0) {
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
		cairo_rectangle(c->cr, left, y - 1, 1.5, l->row_h + 2);
		cairo_fill(c->cr);
	}
	for (j = s->first; j < s->first + s->nblocks; j++) {
		const struct mt_segmap_block *b = &m->blocks[j];
		uint64_t b0 = b->address - s->address, b1 = b0 + b->bytes;
		double x0, x1;

		if (!b->allocated || b1 <= p0 || b0 >= p1)
			continue;
		x0 = round((double)((b0 > p0 ? b0 : p0) - p0) * l->scale);
		x1 = fmin(w, round((double)((b1 < p1 ? b1 : p1) - p0) * l->scale));
		vw_set_rgb(c->cr, vw_band_color((*colour)++));
		if (x1 > x0) {
			cairo_rectangle(c->cr, left + x0, y, x1 - x0, l->row_h);
			cairo_fill(c->cr);
		}
	}
}

/* Chooses the rows for maps in [top, bottom). */
static void lay_out(const struct vw_canvas *c, struct layout *l, const struct mt_segmap *maps,
                    size_t n, double top, double bottom)
{
	double avail = floor(bottom - top), pitch;
	uint64_t largest = 1, total = 1, lo, hi;
	size_t most = 1, i, j;

	for (i = 0; i < n; i++) {
		most = maps[i].nsegs > most ? maps[i].nsegs : most;
		total = maps[i].reserved > total ? maps[i].reserved : total;
		for (j = 0; j < maps[i].nsegs; j++)
			largest = maps[i].segs[j].bytes > largest ? maps[i].segs[j].bytes : largest;
	}
	l->rows_y = round(top);
	l->packed = (double)most > avail / 8;
	pitch = l->packed ? 10 : fmin(30, floor(avail / (double)most));
	l->gap = pitch >= 8 ? round(pitch * 0.25) : 1;
	l->row_h = pitch - l->gap;
	l->nrows = (size_t)(avail / pitch);
	l->row_bytes = largest;
	l->scale = l->w / (double)largest;
	if (!l->packed)
		return;
	/* the longest rows (largest scale) with which every map fits */
	lo = largest / 1024 + 1;
	hi = 2 * total + largest;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		bool fits = true;

		l->scale = l->w / (double)mid;
		for (i = 0; i < n && fits; i++)
			fits = place(c, l, &maps[i], NULL) <= l->nrows;
		if (fits)
			hi = mid;
		else
			lo = mid + 1;
	}
	l->row_bytes = lo;
	l->scale = l->w / (double)lo;
}

static void caption(const struct vw_canvas *c, const struct mt_segmap *m, double x, double y,
                    double w)
{
	char res[32], alloc[32], free_[32], frag[32], cache[32], line[256], fit[256];
	uint64_t fragmentation = mt_segmap_fragmentation(m);

	mt_size_format(m->reserved, res, sizeof(res));
	mt_size_format(m->allocated, alloc, sizeof(alloc));
	mt_size_format(m->largest_free, free_, sizeof(free_));
	mt_size_format(fragmentation, frag, sizeof(frag));
	mt_size_format(mt_segmap_cache(m), cache, sizeof(cache));
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	vw_fit_text(c, 1.1, m->name, w, fit, sizeof(fit));
	vw_text(c, x, y, 1.1, true, VW_LEFT, VW_TOP, fit);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
	snprintf(line, sizeof(line), "%zu segments \u00b7 reserved %s \u00b7 allocated %s",
	         m->nsegs, res, alloc);
	vw_fit_text(c, 0.9, line, w, fit, sizeof(fit));
	vw_text(c, x, y + c->font * 1.6, 0.9, false, VW_LEFT, VW_TOP, fit);
	snprintf(line, sizeof(line),
	         "fragmentation %s (%.1f%%) \u00b7 cache %s \u00b7 largest free block %s", frag,
	         100.0 * mt_fragmentation_share(fragmentation, m->reserved), cache, free_);
	vw_fit_text(c, 0.9, line, w, fit, sizeof(fit));
	vw_text(c, x, y + c->font * 2.9, 0.9, false, VW_LEFT, VW_TOP, fit);
}

/* The device memory in use at the moment, and the reading it comes from. */
static void device_line(const struct vw_canvas *c, const struct vw_trace *t,
                        const struct mt_anatomy *an, double x, double y, double w)
{
	char used[32], reading[256], line[320], fit[320];

	if (an->available)
		snprintf(line, sizeof(line), "device memory in use %s: %s",
		         mt_size_format(an->used_bytes, used, sizeof(used)),
		         mt_anatomy_reading(an, t->t0, reading, sizeof(reading)));
	else
		snprintf(line, sizeof(line), "device memory in use: no reading on this device");
	vw_fit_text(c, 0.9, line, w, fit, sizeof(fit));
	vw_text(c, x, y, 0.9, false, VW_LEFT, VW_TOP, fit);
}

static void draw(struct vw_canvas *c, const struct vw_trace *t, const struct mt_segmap *maps,
                 size_t n, const struct mt_render_options *o, const char *why,
                 const struct mt_anatomy *an)
{
	double f = c->font, margin = f * 1.2, gap = f * 2.5, top, panel_w;
	char subtitle[512], base[384], when[32], how[256], row[32];
	struct layout l;
	size_t i;

	vw_trace_subtitle(t, o->trace_name, base, sizeof(base));
	mt_duration_format(maps[0].at - t->t0, when, sizeof(when));
	snprintf(subtitle, sizeof(subtitle), "%s \u00b7 at %s (%s)", base, when, why);
	top = vw_title(c, "Segment map", subtitle);
	panel_w = (c->width - 2 * margin - gap * (double)(n - 1)) / (double)n;
	l.w = floor(panel_w);
	lay_out(c, &l, maps, n, top + f * 9.2, c->height - margin);
	mt_size_format(l.row_bytes, row, sizeof(row));
	if (l.packed)
		snprintf(how, sizeof(how),
		         "segments largest first, packed into rows of %s; a dark tick marks where "
		         "a segment starts, a longer one continues on the next row",
		         row);
	else
		snprintf(how, sizeof(how), "one row per segment, largest first, a full row = %s",
		         row);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
	vw_text(c, margin, top, 0.9, false, VW_LEFT, VW_TOP, how);
	vw_text(c, margin, top + f * 1.3, 0.9, false, VW_LEFT, VW_TOP,
	        "coloured: live blocks (colours alternate) \u00b7 light grey: free space inside a "
	        "segment");
	device_line(c, t, an, margin, top + f * 2.6, c->width - 2 * margin);
	top += f * 4.5;
	for (i = 0; i < n; i++) {
		l.x = round(margin + (double)i * (panel_w + gap));
		caption(c, &maps[i], l.x, top, l.w);
		place(c, &l, &maps[i], draw_piece);
	}
}

static int draw_view(struct vw_canvas *c, struct mt_reader *r, const struct mt_render_options *o,
                     char *err, size_t errlen)
{
	struct mt_segmap maps[MAX_PANELS];
	struct mt_anatomy an;
	struct vw_trace t;
	char **specs = NULL;
	size_t nspecs = 0, n = 0, i;
	uint64_t at;
	const char *why;
	int rc;

	rc = vw_trace_survey(&t, r, o->device, VW_LOAD_SEGMENTS, err, errlen);
	if (rc < 0)
		return rc;
	if (o->at_set) {
		at = t.t0 + o->at;
		why = "as asked";
	} else {
		at = t.d.peak_at;
		why = "peak of live bytes";
	}
	rc = vw_trace_keep_at(&t, at, err, errlen);
	if (rc < 0)
		goto out;
	if (o->policies && vw_specs_split(o->policies, &specs, &nspecs) < 0) {
		rc = vw_fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	if (nspecs + 1 > MAX_PANELS) {
		rc = vw_fail(err, errlen, -EINVAL, "at most %d policies side by side",
		             MAX_PANELS - 1);
		goto out;
	}
	rc = vw_segmap_recorded(&t, at, &maps[n], err, errlen);
	if (rc == 0)
		n++;
	for (i = 0; rc == 0 && i < nspecs; i++) {
		rc = vw_segmap_policy(&t, specs[i], at, o->plan_budget, &maps[n], err, errlen);
		if (rc == 0)
			n++;
	}
	if (rc == 0)
		rc = vw_anatomy_at(&t, at, &an, err, errlen);
	if (rc == 0)
		draw(c, &t, maps, n, o, why, &an);
out:
	for (i = 0; i < n; i++)
		mt_segmap_release(&maps[i]);
	vw_specs_free(specs, nspecs);
	vw_trace_release(&t);
	return rc;
}

const struct vw_view vw_view_segments = {
	.info = { .name = "segments",
	          .summary = "the segment map at a moment, one row per segment",
	          .formats = VW_CAIRO_FORMATS,
	          .uses = MT_VIEW_USES_AT | MT_VIEW_USES_POLICIES },
	.draw = draw_view,
};
