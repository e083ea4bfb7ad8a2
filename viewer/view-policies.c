/* view-policies.c — allocator policies compared on one trace: peak
 * reserved per policy as bars against the lower bound (the most bytes live
 * at once, which no allocator can beat), and each policy's reserved memory
 * over time beside the live bytes. Results come from the trace's saved
 * replays or from replays under sim; an offline policy that would need more
 * memory than the budget to replay is left out with a note in the legend.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-common.h"
#include "viewer-private.h"

#define MAX_SERIES 16

/* per_bar: the runs ran under different conditions, which each bar's
 * label then names (else the subtitle does). */
static void draw_bars(const struct vw_canvas *c, struct vw_rect area,
                      const struct vw_policy_run *runs, size_t n, uint64_t lower, bool per_bar)
{
	double f = c->font, name_w = 0, ymax = (double)lower, pitch, bar_h, d[] = { 5, 3 };
	struct vw_rect plot;
	struct vw_axis x;
	char size[32], label[128];
	size_t i;

	for (i = 0; i < n; i++) {
		name_w = fmax(name_w, vw_text_width(c, 0.9, false, runs[i].name));
		ymax = fmax(ymax, (double)runs[i].peak_reserved);
	}
	name_w = fmin(name_w, area.w * 0.35);
	plot = (struct vw_rect){ area.x + name_w + f * 0.8, area.y + f * 1.6, 0, 0 };
	plot.w = area.x + area.w - plot.x - f * 0.5;
	plot.h = area.h - f * 1.6 - f * 3.2;
	/* room at the right of the longest bar for its label */
	vw_axis_bytes(&x, ymax * 1.35, (unsigned)(plot.w / (f * 6)) + 1, plot.x, plot.x + plot.w);
	vw_draw_grid(c, plot, &x, false);
	pitch = plot.h / (double)(n ? n : 1);
	bar_h = fmin(pitch * 0.7, f * 2.2);
	for (i = 0; i < n; i++) {
		double y = plot.y + pitch * (double)i + (pitch - bar_h) / 2;
		double w = vw_axis_map(&x, (double)runs[i].peak_reserved) - plot.x;
		char fit[192];
		int len;

		vw_set_rgb(c->cr, vw_policy_color(runs[i].name));
		cairo_rectangle(c->cr, plot.x, y, w, bar_h);
		cairo_fill(c->cr);
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
		vw_fit_text(c, 0.9, runs[i].name, name_w, fit, sizeof(fit));
		vw_text(c, plot.x - f * 0.5, y + bar_h / 2, 0.9, false, VW_RIGHT, VW_MIDDLE, fit);
		mt_size_format(runs[i].peak_reserved, size, sizeof(size));
		len = snprintf(label, sizeof(label), "%s", size);
		if (lower)
			len += snprintf(label + len, sizeof(label) - (size_t)len, "  \u00d7%.2f",
			                (double)runs[i].peak_reserved / (double)lower);
		if (runs[i].oom_count)
			snprintf(label + len, sizeof(label) - (size_t)len, "  %llu OOM",
			         (unsigned long long)runs[i].oom_count);
		vw_text(c, plot.x + w + f * 0.4, y + bar_h / 2, 0.85, false, VW_LEFT, VW_MIDDLE,
		        label);
		if (per_bar) { /* under the bar */
			vw_fit_text(c, 0.75, runs[i].conditions, plot.w, fit, sizeof(fit));
			vw_text(c, plot.x + f * 0.3, y + bar_h + f * 0.15, 0.75, false, VW_LEFT,
			        VW_TOP, fit);
		}
	}
	if (lower) {
		double lx = round(vw_axis_map(&x, (double)lower)) + 0.5;

		cairo_save(c->cr);
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_LOWER_BOUND));
		cairo_set_line_width(c->cr, 1.5);
		cairo_set_dash(c->cr, d, 2, 0);
		cairo_move_to(c->cr, lx, plot.y - f * 0.3);
		cairo_line_to(c->cr, lx, plot.y + plot.h);
		cairo_stroke(c->cr);
		cairo_restore(c->cr);
		mt_size_format(lower, size, sizeof(size));
		snprintf(label, sizeof(label), "lower bound %s", size);
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
		vw_label(c, lx, plot.y - f * 0.4, 0.85, VW_CENTER, VW_BOTTOM, label, area.x,
		         area.x + area.w);
	}
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	vw_draw_axis_bottom(c, plot, &x, plot.y + plot.h,
	                    "peak reserved (bars) against the lower bound");
}

/* runs[0..n) drawn, runs[n..n + nleft) left out (a note each in the legend). */
static int draw_lines(const struct vw_canvas *c, struct vw_rect area, const struct vw_trace *t,
                      const struct mt_render_options *o, const struct vw_policy_run *runs, size_t n,
                      size_t nleft, char *err, size_t errlen)
{
	struct vw_legend_item items[2 * MAX_SERIES + 1];
	char note[MAX_SERIES][320];
	double f = c->font, ymax = 0, *v[MAX_SERIES + 1] = { 0 };
	struct vw_columns cols;
	struct vw_rect plot;
	struct vw_axis x, y;
	size_t i, m = n < MAX_SERIES ? n : MAX_SERIES, k = m + 1;
	int rc;

	plot.x = round(area.x + f * 6.2);
	plot.w = area.x + area.w - plot.x;
	for (i = 0; i < m; i++)
		items[i] = (struct vw_legend_item){ VW_SWATCH_LINE, vw_policy_color(runs[i].name),
			                            runs[i].name };
	items[m] = (struct vw_legend_item){ VW_SWATCH_DASH, vw_role_color(VW_ROLE_LOWER_BOUND),
		                            "live bytes (lower bound)" };
	for (i = 0; i < nleft && i < MAX_SERIES; i++) {
		vw_policy_left_out_note(c, &runs[n + i], plot.w, note[i], sizeof(note[i]));
		items[k++] = (struct vw_legend_item){ VW_SWATCH_NONE,
			                              vw_role_color(VW_ROLE_MUTED_TEXT), note[i] };
	}
	plot.y = round(area.y + vw_legend(c, plot.x, area.y, plot.w, items, k, false) + f * 0.8);
	plot.h = area.y + area.h - plot.y - f * 3.2;
	rc = vw_window(t, o, plot.w, &cols, err, errlen);
	if (rc < 0)
		return rc;
	for (i = 0; i <= m; i++)
		if (!(v[i] = malloc(cols.n * sizeof(double)))) {
			rc = vw_fail(err, errlen, -ENOMEM, "out of memory");
			goto out;
		}
	for (i = 0; i < m; i++)
		vw_columns_steps(&cols, runs[i].reserved, runs[i].npoints, v[i]);
	rc = vw_trace_columns(t, &cols, NULL, v[m], NULL, NULL, err, errlen);
	if (rc < 0)
		goto out;
	for (i = 0; i <= m; i++)
		ymax = fmax(ymax, vw_columns_max(v[i], cols.n));
	vw_axis_bytes(&y, ymax * 1.04, (unsigned)(plot.h / (f * 3.2)) + 1, plot.y + plot.h, plot.y);
	vw_axis_time(&x, (double)(cols.from - t->t0), (double)(cols.to - cols.from),
	             (unsigned)(plot.w / (f * 7)) + 1, plot.x, plot.x + plot.w);
	vw_draw_grid(c, plot, &y, true);
	vw_stroke_columns(c, plot, &y, v[m], cols.n, vw_role_color(VW_ROLE_LOWER_BOUND), 1.5, true);
	for (i = 0; i < m; i++)
		vw_stroke_columns(c, plot, &y, v[i], cols.n, vw_policy_color(runs[i].name), 1.8,
		                  false);
	vw_legend(c, plot.x, area.y, plot.w, items, k, true);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	vw_draw_axis_left(c, plot, &y);
	vw_draw_axis_bottom(c, plot, &x, plot.y + plot.h, "reserved over time");
out:
	for (i = 0; i <= m; i++)
		free(v[i]);
	return rc;
}

static int draw_view(struct vw_canvas *c, struct mt_reader *r, const struct mt_render_options *o,
                     char *err, size_t errlen)
{
	struct vw_policy_run *runs = NULL;
	struct vw_trace t;
	char subtitle[640], base[384];
	double f = c->font, top, split;
	uint64_t lower = 0;
	size_t n = 0, nleft = 0, i;
	bool per_bar;
	int rc;

	rc = vw_trace_survey(&t, r, o->device, 0, err, errlen);
	if (rc < 0)
		return rc;
	rc = vw_policy_runs(&t, o->policies, (size_t)c->width, o->plan_budget, &runs, &n, &nleft,
	                    err, errlen);
	if (rc < 0)
		goto out;
	if (n + nleft == 0) {
		rc = vw_fail(err, errlen, -ENOENT, "no policy to compare");
		goto out;
	}
	lower = t.d.peak_bytes;
	vw_trace_subtitle(&t, o->trace_name, base, sizeof(base));
	for (i = 1; i < n && !strcmp(runs[i].conditions, runs[0].conditions); i++)
		;
	if (n)
		snprintf(subtitle, sizeof(subtitle), "%s \u00b7 %s: %s", base,
		         runs[0].saved ? "saved replays" : "replayed",
		         i == n ? runs[0].conditions : "each as its bar says");
	else
		snprintf(subtitle, sizeof(subtitle), "%s", base);
	per_bar = i < n;
	top = vw_title(c, "Allocator policies", subtitle);
	split = round(c->width * 0.4);
	draw_bars(c, (struct vw_rect){ f * 1.2, top, split - f * 1.2, c->height - top - f * 0.8 },
	          runs, n, lower, per_bar);
	rc = draw_lines(c,
	                (struct vw_rect){ split + f * 1.5, top, c->width - split - f * 2.7,
	                                  c->height - top - f * 0.8 },
	                &t, o, runs, n, nleft, err, errlen);
out:
	vw_policy_runs_free(runs, n + nleft);
	vw_trace_release(&t);
	return rc;
}

const struct vw_view vw_view_policies = {
	.info = { .name = "policies",
	          .summary = "peak reserved per policy against the lower bound, and\n"
	                     "reserved memory over time per policy",
	          .formats = VW_CAIRO_FORMATS,
	          .uses = MT_VIEW_USES_WINDOW | MT_VIEW_USES_POLICIES },
	.draw = draw_view,
};
