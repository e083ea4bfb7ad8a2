/* view-timeline.c — the memory timeline: live allocations as stacked bands
 * over time (after PyTorch's memory_viz "Active Memory Timeline": one band
 * per allocation in allocation order, the smaller ones merged), with the
 * reserved memory of the recorded allocator or of replayed policies, the
 * device memory in use from the samples, NVTX phases, a kernel lane, the
 * peak and failed allocations.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-common.h"
#include "viewer-private.h"

/* Bands drawn individually; the rest are merged (memory_viz merges beyond
 * 15 000; a few thousand already exceed what a picture can separate). */
#define MAX_BANDS 3000
#define MAX_LINES 10

struct line {
	double *v;
	struct vw_legend_item legend;
	char label[320];
	bool dashed;
};

struct timeline {
	struct vw_canvas *c;
	struct vw_trace t;
	struct vw_columns cols;
	struct vw_stack stack;
	struct vw_rect plot;
	struct vw_axis x, y;
	struct line lines[MAX_LINES];
	size_t nlines;
	struct vw_phases phases;
	double *busy;   /* per column, the kernels' share (when there are kernels) */
	double lanes_y; /* top of the phase strip */
	double lane_h;
};

static struct line *add_line(struct timeline *tl, enum vw_swatch swatch, struct vw_rgb color)
{
	struct line *l;

	if (tl->nlines == MAX_LINES)
		return NULL;
	l = &tl->lines[tl->nlines];
	l->v = malloc(tl->cols.n * sizeof(*l->v));
	if (!l->v)
		return NULL;
	l->legend = (struct vw_legend_item){ swatch, color, l->label };
	l->dashed = swatch == VW_SWATCH_DASH;
	tl->nlines++;
	return l;
}

/* Reserved memory (recorded segments, policies) and device memory in use;
 * the live bytes, the bands, the reserved line and the kernels come from
 * one pass over the trace. */
static int gather_lines(struct timeline *tl, const struct mt_render_options *o, char *err,
                        size_t errlen)
{
	struct line *l, *reserved = NULL;
	size_t i;
	int rc;

	if (tl->t.d.nseg_all) {
		reserved = l = add_line(tl, VW_SWATCH_LINE, vw_role_color(VW_ROLE_RESERVED));
		if (!l)
			return vw_fail(err, errlen, -ENOMEM, "out of memory");
		snprintf(l->label, sizeof(l->label), "reserved (recorded segments)");
	}
	if (tl->t.nkernels && !(tl->busy = malloc(tl->cols.n * sizeof(*tl->busy))))
		return vw_fail(err, errlen, -ENOMEM, "out of memory");
	rc = vw_trace_columns(&tl->t, &tl->cols, &tl->stack, NULL, reserved ? reserved->v : NULL,
	                      tl->busy, err, errlen);
	if (rc < 0)
		return rc;
	if (tl->t.nsamples) {
		l = add_line(tl, VW_SWATCH_DASH, vw_role_color(VW_ROLE_DEVICE_USED));
		if (!l)
			return vw_fail(err, errlen, -ENOMEM, "out of memory");
		vw_columns_steps(&tl->cols, tl->t.samples, tl->t.nsamples, l->v);
		snprintf(l->label, sizeof(l->label), "device memory in use (samples)");
	}
	if (o->policies) {
		struct vw_policy_run *runs;
		size_t n, nleft;

		rc = vw_policy_runs(&tl->t, o->policies, tl->cols.n, o->plan_budget, &runs, &n,
		                    &nleft, err, errlen);
		if (rc < 0)
			return rc;
		for (i = 0; i < n + nleft; i++) {
			/* a policy left out: a note in the legend, no values */
			l = add_line(tl, i < n ? VW_SWATCH_LINE : VW_SWATCH_NONE,
			             vw_policy_color(runs[i].name));
			if (!l) {
				vw_policy_runs_free(runs, n + nleft);
				return vw_fail(err, errlen, -ENOMEM,
				               "out of memory or too many policies");
			}
			if (i < n) {
				vw_columns_steps(&tl->cols, runs[i].reserved, runs[i].npoints,
				                 l->v);
				snprintf(l->label, sizeof(l->label), "reserved: %s (%s: %s)",
				         runs[i].name, runs[i].saved ? "saved replay" : "replayed",
				         runs[i].conditions);
			} else {
				size_t x;

				for (x = 0; x < tl->cols.n; x++)
					l->v[x] = NAN;
				vw_policy_left_out_note(tl->c, &runs[i],
				                        tl->c->width - tl->c->font * 2.4, l->label,
				                        sizeof(l->label));
			}
		}
		vw_policy_runs_free(runs, n + nleft);
	}
	return 0;
}

/* The plot's columns: its left and width (the y axis labels go left of it). */
static void layout_x(struct timeline *tl)
{
	double f = tl->c->font;

	tl->plot.x = round(f * 6.2);
	tl->plot.w = tl->c->width - tl->plot.x - round(f * 1.5);
}

/* The plot's rows, below the title and legend, above the lanes and axis. */
static void layout_y(struct timeline *tl, double top, double legend_h)
{
	struct vw_canvas *c = tl->c;
	double f = c->font, bottom = f * 4.6;

	tl->lane_h = round(f * 1.15);
	if (tl->t.nranges)
		bottom += tl->lane_h + f * 0.3;
	if (tl->t.nkernels)
		bottom += tl->lane_h + f * 0.3;
	tl->plot.y = round(top + legend_h + f * 1.6);
	tl->plot.h = round(c->height - tl->plot.y - bottom);
	tl->lanes_y = tl->plot.y + tl->plot.h + f * 0.3;
}

static void draw_phases(struct timeline *tl)
{
	struct vw_canvas *c = tl->c;
	double y = tl->lanes_y, h = tl->lane_h;
	size_t i;

	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
	vw_text(c, tl->plot.x - c->font * 0.5, y + h / 2, 0.8, false, VW_RIGHT, VW_MIDDLE,
	        "phases");
	cairo_save(c->cr);
	cairo_rectangle(c->cr, tl->plot.x, y, tl->plot.w, h);
	cairo_clip(c->cr);
	for (i = 0; i < tl->t.nranges; i++) {
		const struct vw_range *g = &tl->t.ranges[i];
		uint64_t end = g->end == MT_TIME_UNKNOWN ? tl->t.t1 : g->end;
		double x0, x1;
		int k;

		if (g->depth != tl->phases.depth || end <= tl->cols.from || g->start >= tl->cols.to)
			continue;
		x0 = vw_axis_map(&tl->x, (double)(g->start - tl->t.t0));
		x1 = vw_axis_map(&tl->x, (double)(end - tl->t.t0));
		if (x1 - x0 < 1)
			x1 = x0 + 1;
		k = vw_phase_index(&tl->phases, g->name);
		vw_set_rgb(c->cr, vw_phase_color(k < 0 ? 0 : (size_t)k));
		cairo_rectangle(c->cr, x0, y, x1 - x0, h);
		cairo_fill(c->cr);
		if (x1 - x0 > c->font * 3) {
			char fit[128];

			vw_fit_text(c, 0.75, mt_reader_string(tl->t.r, g->name),
			            x1 - x0 - c->font * 0.4, fit, sizeof(fit));
			vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
			vw_text(c, (x0 + x1) / 2, y + h / 2, 0.75, false, VW_CENTER, VW_MIDDLE,
			        fit);
		}
	}
	cairo_restore(c->cr);
	tl->lanes_y += h + c->font * 0.3;
}

static void draw_kernels(struct timeline *tl)
{
	struct vw_canvas *c = tl->c;
	double *busy = tl->busy, y = tl->lanes_y, h = tl->lane_h;
	struct vw_rgb k = vw_role_color(VW_ROLE_KERNEL);
	size_t x;

	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
	vw_text(c, tl->plot.x - c->font * 0.5, y + h / 2, 0.8, false, VW_RIGHT, VW_MIDDLE,
	        "kernels");
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_GRID));
	cairo_rectangle(c->cr, tl->plot.x, y, tl->plot.w, h);
	cairo_fill(c->cr);
	for (x = 0; x < tl->cols.n; x++) {
		if (busy[x] <= 0)
			continue;
		cairo_set_source_rgba(c->cr, k.r, k.g, k.b, 0.15 + 0.85 * busy[x]);
		cairo_rectangle(c->cr, tl->plot.x + x, y, 1, h);
		cairo_fill(c->cr);
	}
	tl->lanes_y += h + c->font * 0.3;
}

static void draw_peak(struct timeline *tl)
{
	struct vw_canvas *c = tl->c;
	double x = tl->plot.x + tl->stack.peak_column + 0.5;
	double y = vw_axis_map(&tl->y, tl->stack.peak);
	char size[32], when[32], label[96];
	bool below = y - c->font * 1.6 < tl->plot.y;

	if (tl->stack.peak <= 0)
		return;
	mt_size_format((uint64_t)tl->stack.peak, size, sizeof(size));
	mt_duration_format(tl->stack.peak_ts - tl->t.t0, when, sizeof(when));
	snprintf(label, sizeof(label), "peak %s at %s", size, when);
	vw_marker_peak(c, x, y);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	vw_label(c, x, below ? y + c->font * 0.8 : y - c->font * 0.8, 0.9,
	         x > tl->plot.x + tl->plot.w * 0.6 ? VW_RIGHT : VW_LEFT, below ? VW_TOP : VW_BOTTOM,
	         label, tl->plot.x, tl->plot.x + tl->plot.w);
}

static void draw_ooms(struct timeline *tl)
{
	struct vw_canvas *c = tl->c;
	double d[] = { 3, 3 }, top = tl->plot.y - c->font * 0.9, first_x = 0;
	uint64_t first_bytes = 0;
	size_t i, shown = 0;
	char size[32], label[96];

	for (i = 0; i < tl->t.nfails; i++) {
		const struct vw_point *f = &tl->t.fails[i];
		double x;

		if (f->ts < tl->cols.from || f->ts >= tl->cols.to)
			continue;
		x = tl->plot.x + vw_column_of(&tl->cols, f->ts) + 0.5;
		cairo_save(c->cr);
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_OOM));
		cairo_set_line_width(c->cr, 1);
		cairo_set_dash(c->cr, d, 2, 0);
		cairo_move_to(c->cr, x, tl->plot.y);
		cairo_line_to(c->cr, x, tl->plot.y + tl->plot.h);
		cairo_stroke(c->cr);
		cairo_restore(c->cr);
		vw_marker_oom(c, x, top);
		if (!shown++) {
			first_x = x;
			first_bytes = f->value;
		}
	}
	if (!shown)
		return;
	mt_size_format(first_bytes, size, sizeof(size));
	if (shown == 1)
		snprintf(label, sizeof(label), "out of memory asking for %s", size);
	else
		snprintf(label, sizeof(label), "%zu OOMs (the first asking for %s)", shown, size);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_OOM));
	vw_label(c, first_x + c->font * 0.8, top, 0.9, VW_LEFT, VW_MIDDLE, label, tl->plot.x,
	         tl->plot.x + tl->plot.w);
}

static void legend(struct timeline *tl, double top, bool draw, double *height)
{
	struct vw_legend_item items[MAX_LINES + 4 + VW_MAX_PHASES];
	char bands[96], merged[96], phase[VW_MAX_PHASES][80];
	size_t n = 0, i;

	snprintf(bands, sizeof(bands), "%s (%zu largest by byte-seconds, one band each)",
	         tl->t.layer == MT_LAYER_REQUEST ? "live tensors" : "live allocations",
	         tl->stack.nbands);
	items[n++] = (struct vw_legend_item){ VW_SWATCH_FILL, vw_band_color(0), bands };
	if (tl->stack.merged) {
		snprintf(merged, sizeof(merged), "%zu smaller allocations, merged",
		         tl->stack.merged);
		items[n++] = (struct vw_legend_item){ VW_SWATCH_FILL, vw_role_color(VW_ROLE_MERGED),
			                              merged };
	}
	for (i = 0; i < tl->nlines; i++)
		items[n++] = tl->lines[i].legend;
	items[n++] = (struct vw_legend_item){ VW_SWATCH_PEAK, vw_role_color(VW_ROLE_PEAK),
		                              "peak of live bytes" };
	if (tl->t.nfails)
		items[n++] = (struct vw_legend_item){ VW_SWATCH_OOM, vw_role_color(VW_ROLE_OOM),
			                              "OOM the program saw" };
	for (i = 0; i < tl->phases.n; i++) {
		snprintf(phase[i], sizeof(phase[i]), "phase %s%s",
		         mt_reader_string(tl->t.r, tl->phases.name[i]),
		         tl->phases.overflow && i + 1 == tl->phases.n ? " and later" : "");
		items[n++] = (struct vw_legend_item){ VW_SWATCH_FILL, vw_phase_color(i), phase[i] };
	}
	*height = vw_legend(tl->c, tl->c->font * 1.2, top, tl->c->width - tl->c->font * 2.4, items,
	                    n, draw);
}

static int draw(struct timeline *tl, const struct mt_render_options *o, char *err, size_t errlen)
{
	struct vw_canvas *c = tl->c;
	char subtitle[512];
	double top, legend_h, ymax;
	cairo_surface_t *img;
	size_t i;
	int rc;

	vw_trace_subtitle(&tl->t, o->trace_name, subtitle, sizeof(subtitle));
	top = vw_title(c, "Memory timeline", subtitle);
	/* the legend's height depends on the lines, which need the columns,
	 * which need the plot width: the width does not depend on the legend */
	layout_x(tl);
	rc = vw_window(&tl->t, o, tl->plot.w, &tl->cols, err, errlen);
	if (rc < 0)
		return rc;
	if (vw_stack_start(&tl->stack, &tl->cols, MAX_BANDS) < 0)
		return vw_fail(err, errlen, -ENOMEM, "out of memory");
	rc = gather_lines(tl, o, err, errlen);
	if (rc < 0)
		return rc;
	vw_phases_collect(&tl->t, &tl->phases);
	legend(tl, top, false, &legend_h);
	layout_y(tl, top, legend_h);

	ymax = tl->stack.peak;
	for (i = 0; i < tl->nlines; i++)
		ymax = fmax(ymax, vw_columns_max(tl->lines[i].v, tl->cols.n));
	vw_axis_bytes(&tl->y, ymax * 1.04, (unsigned)(tl->plot.h / (c->font * 3.2)) + 1,
	              tl->plot.y + tl->plot.h, tl->plot.y);
	vw_axis_time(
	        &tl->x, (double)(tl->cols.from - tl->t.t0), (double)(tl->cols.to - tl->cols.from),
	        (unsigned)(tl->plot.w / (c->font * 7)) + 1, tl->plot.x, tl->plot.x + tl->plot.w);

	vw_draw_grid(c, tl->plot, &tl->y, true);
	img = vw_stack_image(&tl->stack, (size_t)tl->plot.h, tl->y.v1);
	if (!img)
		return vw_fail(err, errlen, -ENOMEM, "out of memory");
	cairo_save(c->cr);
	cairo_set_source_surface(c->cr, img, tl->plot.x, tl->plot.y);
	cairo_pattern_set_filter(cairo_get_source(c->cr), CAIRO_FILTER_NEAREST);
	cairo_paint(c->cr);
	cairo_restore(c->cr);
	cairo_surface_destroy(img);
	for (i = 0; i < tl->nlines; i++)
		vw_stroke_columns(c, tl->plot, &tl->y, tl->lines[i].v, tl->cols.n,
		                  tl->lines[i].legend.color, 1.6, tl->lines[i].dashed);
	draw_ooms(tl);
	draw_peak(tl);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	vw_draw_axis_left(c, tl->plot, &tl->y);
	legend(tl, top, true, &legend_h);
	if (tl->t.nranges)
		draw_phases(tl);
	if (tl->t.nkernels)
		draw_kernels(tl);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	vw_draw_axis_bottom(c, tl->plot, &tl->x, tl->lanes_y, "time since the start of the trace");
	return 0;
}

static int draw_view(struct vw_canvas *c, struct mt_reader *r, const struct mt_render_options *o,
                     char *err, size_t errlen)
{
	struct timeline tl;
	size_t i;
	int rc;

	memset(&tl, 0, sizeof(tl));
	tl.c = c;
	rc = vw_trace_survey(&tl.t, r, o->device,
	                     VW_LOAD_SEGMENTS | VW_LOAD_SAMPLES | VW_LOAD_RANGES | VW_LOAD_KERNELS |
	                             VW_LOAD_FAILS | (o->all_ranges ? VW_LOAD_LIBRARY_RANGES : 0),
	                     err, errlen);
	if (rc < 0)
		return rc;
	rc = draw(&tl, o, err, errlen);
	for (i = 0; i < tl.nlines; i++)
		free(tl.lines[i].v);
	vw_stack_release(&tl.stack);
	free(tl.busy);
	vw_trace_release(&tl.t);
	return rc;
}

const struct vw_view vw_view_timeline = {
	.info = { .name = "timeline",
	          .summary = "live allocations over time, reserved and device memory,\n"
	                     "kernels, NVTX phases, peak and failed allocations",
	          .formats = VW_CAIRO_FORMATS,
	          .uses = MT_VIEW_USES_WINDOW | MT_VIEW_USES_POLICIES | MT_VIEW_USES_PHASES },
	.draw = draw_view,
};
