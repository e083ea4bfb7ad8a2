/* view-segments.c — segment maps side by side: the recorded allocator's
 * segments (and the requests inside them) and policies replayed to the same
 * moment, one row per segment scaled by its bytes, live blocks coloured,
 * free space light (after the segment views of PyTorch's memory_viz and the
 * figures of the GMLake and expandable-segments write-ups).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viewer-private.h"

#define MAX_PANELS 8

struct layout {
	double x, w;   /* panel */
	double rows_y; /* top of the first row */
	double row_h, gap;
	size_t per_col; /* rows in one column of rows */
	double col_w;   /* width of a column of rows */
	double scale;   /* pixels per byte */
};

static void caption(const struct vw_canvas *c, const struct vw_segmap *m, double x, double y,
                    double w)
{
	char res[32], alloc[32], free_[32], line[256], fit[256];
	double frag = m->reserved ? 1.0 - (double)m->allocated / (double)m->reserved : 0;

	mt_size_format(m->reserved, res, sizeof(res));
	mt_size_format(m->allocated, alloc, sizeof(alloc));
	mt_size_format(m->largest_free, free_, sizeof(free_));
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	vw_fit_text(c, 1.1, m->name, w, fit, sizeof(fit));
	vw_text(c, x, y, 1.1, true, VW_LEFT, VW_TOP, fit);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
	snprintf(line, sizeof(line), "%zu segments \u00b7 reserved %s \u00b7 allocated %s",
	         m->nsegs, res, alloc);
	vw_fit_text(c, 0.9, line, w, fit, sizeof(fit));
	vw_text(c, x, y + c->font * 1.6, 0.9, false, VW_LEFT, VW_TOP, fit);
	snprintf(line, sizeof(line), "largest free block %s \u00b7 fragmentation %.1f%%", free_,
	         100.0 * frag);
	vw_fit_text(c, 0.9, line, w, fit, sizeof(fit));
	vw_text(c, x, y + c->font * 2.9, 0.9, false, VW_LEFT, VW_TOP, fit);
}

/* Rows of whole pixels with at least one pixel between them; when `most`
 * rows do not fit at 4 pixels a row, the panel gets columns of rows. */
static void rows(struct layout *l, double top, double bottom, size_t most, double font)
{
	double avail = floor(bottom - top), pitch;
	size_t ncols;

	l->rows_y = round(top);
	most = most ? most : 1;
	ncols = (size_t)ceil((double)most / floor(avail / 4));
	l->per_col = (most + ncols - 1) / ncols;
	l->col_w = floor((l->w - 2 * font * (double)(ncols - 1)) / (double)ncols);
	pitch = floor(avail / (double)l->per_col);
	if (pitch > 30)
		pitch = 30;
	l->gap = pitch >= 8 ? round(pitch * 0.25) : 1;
	l->row_h = pitch - l->gap;
}

static void draw_map(const struct vw_canvas *c, const struct vw_segmap *m, const struct layout *l)
{
	size_t i, j, colour = 0;

	for (i = 0; i < m->nsegs; i++) {
		const struct vw_segment *s = &m->segs[i];
		double x = l->x + (double)(i / l->per_col) * (l->col_w + 2 * c->font);
		double y = l->rows_y + (double)(i % l->per_col) * (l->row_h + l->gap);
		double w = fmax(2, round((double)s->bytes * l->scale));

		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_FREE));
		cairo_rectangle(c->cr, x, y, w, l->row_h);
		cairo_fill(c->cr);
		for (j = s->first; j < s->first + s->nblocks; j++) {
			const struct vw_block *b = &m->blocks[j];
			double x0 = round((double)(b->address - s->address) * l->scale);
			double x1 = round((double)(b->address + b->bytes - s->address) * l->scale);

			if (!b->allocated)
				continue;
			if (x1 > w)
				x1 = w;
			vw_set_rgb(c->cr, vw_band_color(colour++));
			if (x1 > x0) {
				cairo_rectangle(c->cr, x + x0, y, x1 - x0, l->row_h);
				cairo_fill(c->cr);
			}
		}
	}
}

static void draw(struct vw_canvas *c, const struct vw_trace *t, const struct vw_segmap *maps,
                 size_t n, const struct mt_render_options *o, const char *why)
{
	double f = c->font, margin = f * 1.2, gap = f * 2.5, top, panel_w, bottom;
	char subtitle[512], base[384], when[32];
	uint64_t largest = 1;
	size_t i, j, most = 0;
	struct layout l;

	vw_trace_subtitle(t, o->trace_name, base, sizeof(base));
	mt_duration_format(maps[0].at - t->t0, when, sizeof(when));
	snprintf(subtitle, sizeof(subtitle), "%s \u00b7 at %s (%s)", base, when, why);
	top = vw_title(c, "Segment map", subtitle);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
	vw_text(c, margin, top, 0.9, false, VW_LEFT, VW_TOP,
	        "one row per segment, length by bytes \u00b7 coloured: live blocks (colours "
	        "alternate) \u00b7 light grey: free space inside the segment");
	top += f * 2.2;
	panel_w = (c->width - 2 * margin - gap * (double)(n - 1)) / (double)n;
	for (i = 0; i < n; i++) {
		if (maps[i].nsegs > most)
			most = maps[i].nsegs;
		for (j = 0; j < maps[i].nsegs; j++)
			if (maps[i].segs[j].bytes > largest)
				largest = maps[i].segs[j].bytes;
	}
	bottom = c->height - margin;
	l.w = floor(panel_w);
	rows(&l, top + f * 4.6, bottom, most, f);
	l.scale = l.col_w / (double)largest;
	for (i = 0; i < n; i++) {
		l.x = round(margin + (double)i * (panel_w + gap));
		caption(c, &maps[i], l.x, top, l.w);
		draw_map(c, &maps[i], &l);
	}
}

int vw_view_segments(struct vw_canvas *c, struct mt_reader *r, const struct mt_render_options *o,
                     char *err, size_t errlen)
{
	struct vw_segmap maps[MAX_PANELS];
	struct vw_trace t;
	char **specs = NULL;
	size_t nspecs = 0, n = 0, i;
	uint64_t at, peak;
	const char *why;
	int rc;

	rc = vw_trace_load(&t, r, o->device, VW_LOAD_SEGMENTS, err, errlen);
	if (rc < 0)
		return rc;
	if (o->at_set) {
		at = t.t0 + o->at;
		why = "as asked";
	} else {
		at = t.nseg ? vw_peak_moment(t.seg, t.nseg, &peak)
		            : vw_peak_moment(t.req, t.nreq, &peak);
		why = "peak reserved of the recorded allocator";
	}
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
		rc = vw_segmap_policy(&t, specs[i], at, &maps[n], err, errlen);
		if (rc == 0)
			n++;
	}
	if (rc == 0)
		draw(c, &t, maps, n, o, why);
out:
	for (i = 0; i < n; i++)
		vw_segmap_release(&maps[i]);
	vw_specs_free(specs, nspecs);
	vw_trace_release(&t);
	return rc;
}
