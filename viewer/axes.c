/* axes.c — what every view draws around its data: readable ticks in binary
 * units and in s/ms/us, axes, grid lines, legends, series lines and markers.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viewer-private.h"

static const char *const byte_units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };

/* "1.5 GiB", "768 MiB", "1152 MiB" (not "1.12 GiB"), "0": the largest unit
 * in which the value needs at most two decimals. */
static void byte_label(double v, char *buf, size_t len)
{
	size_t u = 0;
	char num[32], *p;

	if (v <= 0) {
		snprintf(buf, len, "0");
		return;
	}
	while (u + 1 < sizeof(byte_units) / sizeof(byte_units[0]) && v >= 1024.0 &&
	       fabs(v / 10.24 - round(v / 10.24)) < 1e-6 * v)
		v /= 1024.0, u++;
	snprintf(num, sizeof(num), "%.2f", v);
	p = num + strlen(num) - 1;
	while (*p == '0')
		*p-- = '\0';
	if (*p == '.')
		*p = '\0';
	snprintf(buf, len, "%s %s", num, byte_units[u]);
}

void vw_axis_bytes(struct vw_axis *a, double max_bytes, unsigned max_ticks, double p0, double p1)
{
	/* binary steps only: 512 MiB, 1 GiB, 16 GiB read well as GPU sizes */
	static const double mult[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512 };
	double step = 1, unit = 1, top_unit = 1;
	size_t i, u;
	bool found = false;

	if (max_bytes < 1)
		max_bytes = 1;
	if (max_ticks < 2)
		max_ticks = 2;
	if (max_ticks > VW_MAX_TICKS)
		max_ticks = VW_MAX_TICKS;
	/* no step finer than a quarter of the largest value's unit: 1.25 GiB,
	 * not 1152 MiB beside 1.25 GiB */
	while (top_unit * 1024 <= max_bytes)
		top_unit *= 1024;
	for (u = 0; u < 6 && !found; u++, unit *= 1024)
		for (i = 0; i < sizeof(mult) / sizeof(mult[0]) && !found; i++) {
			step = mult[i] * unit;
			found = step >= top_unit / 4 && ceil(max_bytes / step) <= max_ticks - 1;
		}
	memset(a, 0, sizeof(*a));
	a->v0 = 0;
	a->v1 = ceil(max_bytes / step) * step;
	a->p0 = p0;
	a->p1 = p1;
	for (i = 0; i < VW_MAX_TICKS && i * step <= a->v1 * (1 + 1e-9); i++) {
		a->tick[i] = i * step;
		byte_label(a->tick[i], a->label[i], sizeof(a->label[i]));
	}
	a->nticks = i;
}

void vw_axis_time(struct vw_axis *a, double origin_ns, double span_ns, unsigned max_ticks,
                  double p0, double p1)
{
	static const double mult[] = { 1, 2, 5 };
	double step = 1, mag, unit, first, t;
	const char *uname;
	int decimals;
	size_t i;

	if (span_ns < 1)
		span_ns = 1;
	if (max_ticks < 2)
		max_ticks = 2;
	if (max_ticks > VW_MAX_TICKS)
		max_ticks = VW_MAX_TICKS;
	for (mag = 1; mag < 1e15; mag *= 10) {
		for (i = 0; i < 3; i++) {
			step = mult[i] * mag;
			if (span_ns / step <= max_ticks - 1)
				break;
		}
		if (i < 3)
			break;
	}
	/* the unit of the largest value, with the decimals the step needs */
	if (origin_ns + span_ns >= 1e9) {
		unit = 1e9, uname = "s";
	} else if (origin_ns + span_ns >= 1e6) {
		unit = 1e6, uname = "ms";
	} else if (origin_ns + span_ns >= 1e3) {
		unit = 1e3, uname = "us";
	} else {
		unit = 1, uname = "ns";
	}
	decimals = step / unit >= 1 ? 0 : (int)ceil(-log10(step / unit) - 1e-9);
	memset(a, 0, sizeof(*a));
	a->v0 = origin_ns;
	a->v1 = origin_ns + span_ns;
	a->p0 = p0;
	a->p1 = p1;
	first = ceil(origin_ns / step - 1e-9) * step;
	for (i = 0, t = first; i < VW_MAX_TICKS && t <= a->v1 + step * 1e-9;
	     i++, t = first + (i * step)) {
		a->tick[i] = t;
		/* no "-0" at the origin */
		snprintf(a->label[i], sizeof(a->label[i]), "%.*f %s", decimals,
		         fabs(t) < step * 1e-6 ? 0.0 : t / unit, uname);
	}
	a->nticks = i;
}

double vw_axis_map(const struct vw_axis *a, double v)
{
	if (a->v1 == a->v0)
		return a->p0;
	return a->p0 + (v - a->v0) / (a->v1 - a->v0) * (a->p1 - a->p0);
}

void vw_draw_grid(const struct vw_canvas *c, struct vw_rect plot, const struct vw_axis *a,
                  bool vertical_axis)
{
	size_t i;

	cairo_save(c->cr);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_GRID));
	cairo_set_line_width(c->cr, 1);
	for (i = 0; i < a->nticks; i++) {
		double p = round(vw_axis_map(a, a->tick[i])) + 0.5;

		if (vertical_axis) {
			cairo_move_to(c->cr, plot.x, p);
			cairo_line_to(c->cr, plot.x + plot.w, p);
		} else {
			cairo_move_to(c->cr, p, plot.y);
			cairo_line_to(c->cr, p, plot.y + plot.h);
		}
	}
	cairo_stroke(c->cr);
	cairo_restore(c->cr);
}

void vw_draw_axis_left(const struct vw_canvas *c, struct vw_rect plot, const struct vw_axis *a)
{
	size_t i;

	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_AXIS));
	cairo_set_line_width(c->cr, 1);
	cairo_move_to(c->cr, floor(plot.x) - 0.5, plot.y);
	cairo_line_to(c->cr, floor(plot.x) - 0.5, plot.y + plot.h);
	cairo_stroke(c->cr);
	for (i = 0; i < a->nticks; i++)
		vw_text(c, plot.x - c->font * 0.5, vw_axis_map(a, a->tick[i]), 0.9, false, VW_RIGHT,
		        VW_MIDDLE, a->label[i]);
}

double vw_draw_axis_bottom(const struct vw_canvas *c, struct vw_rect plot, const struct vw_axis *a,
                           double y, const char *caption)
{
	double tick = c->font * 0.4, last_right = -1e9;
	size_t i;

	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_AXIS));
	cairo_set_line_width(c->cr, 1);
	cairo_move_to(c->cr, plot.x, floor(y) + 0.5);
	cairo_line_to(c->cr, plot.x + plot.w, floor(y) + 0.5);
	for (i = 0; i < a->nticks; i++) {
		double x = round(vw_axis_map(a, a->tick[i])) + 0.5;

		cairo_move_to(c->cr, x, floor(y) + 0.5);
		cairo_line_to(c->cr, x, floor(y) + 0.5 + tick);
	}
	cairo_stroke(c->cr);
	for (i = 0; i < a->nticks; i++) {
		double x = vw_axis_map(a, a->tick[i]);
		double w = vw_text_width(c, 0.9, false, a->label[i]);

		/* inside the picture, and never touching the previous label */
		if (x + w / 2 > c->width - 2)
			x = c->width - 2 - w / 2;
		if (x - w / 2 < last_right + c->font * 0.5)
			continue;
		vw_text(c, x, y + tick + c->font * 0.2, 0.9, false, VW_CENTER, VW_TOP, a->label[i]);
		last_right = x + w / 2;
	}
	y += tick + c->font * 1.4;
	if (caption) {
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
		vw_text(c, plot.x + plot.w / 2, y, 0.9, false, VW_CENTER, VW_TOP, caption);
		y += c->font * 1.3;
	}
	return y;
}

void vw_draw_swatch(const struct vw_canvas *c, enum vw_swatch s, struct vw_rgb color, double x,
                    double y, double w, double h)
{
	cairo_t *cr = c->cr;

	cairo_save(cr);
	switch (s) {
	case VW_SWATCH_FILL:
		vw_set_rgb(cr, color);
		cairo_rectangle(cr, x, y, w, h);
		cairo_fill(cr);
		break;
	case VW_SWATCH_LINE:
	case VW_SWATCH_DASH:
		vw_set_rgb(cr, color);
		cairo_set_line_width(cr, 2);
		if (s == VW_SWATCH_DASH) {
			double d[] = { 5, 3 };
			cairo_set_dash(cr, d, 2, 0);
		}
		cairo_move_to(cr, x, y + h / 2);
		cairo_line_to(cr, x + w, y + h / 2);
		cairo_stroke(cr);
		break;
	case VW_SWATCH_PEAK:
		vw_marker_peak(c, x + w / 2, y + h / 2);
		break;
	case VW_SWATCH_OOM:
		vw_marker_oom(c, x + w / 2, y + h / 2 - h * 0.3);
		break;
	case VW_SWATCH_NONE:
		break;
	}
	cairo_restore(cr);
}

double vw_legend(const struct vw_canvas *c, double x, double y, double width,
                 const struct vw_legend_item *items, size_t n, bool draw)
{
	double sw = c->font * 1.8, sh = c->font * 0.8, gap = c->font * 1.4, row = c->font * 1.5;
	double cx = x, cy = y;
	size_t i;

	for (i = 0; i < n; i++) {
		bool note = items[i].swatch == VW_SWATCH_NONE;
		double lead = note ? 0 : sw + c->font * 0.4;
		double w = lead + vw_text_width(c, 0.9, false, items[i].label);

		if (cx > x && cx + w > x + width) {
			cx = x;
			cy += row;
		}
		if (draw) {
			vw_draw_swatch(c, items[i].swatch, items[i].color, cx,
			               cy + (row - sh) / 2 - c->font * 0.1, sw, sh);
			vw_set_rgb(c->cr, vw_role_color(note ? VW_ROLE_MUTED_TEXT : VW_ROLE_TEXT));
			vw_text(c, cx + lead, cy + row / 2, 0.9, false, VW_LEFT, VW_MIDDLE,
			        items[i].label);
		}
		cx += w + gap;
	}
	return cy + row - y;
}

void vw_stroke_columns(const struct vw_canvas *c, struct vw_rect plot, const struct vw_axis *y,
                       const double *v, size_t n, struct vw_rgb color, double width, bool dashed)
{
	cairo_t *cr = c->cr;
	bool open = false;
	size_t i;

	cairo_save(cr);
	cairo_rectangle(cr, plot.x, plot.y - width, plot.w, plot.h + 2 * width);
	cairo_clip(cr);
	for (i = 0; i < n; i++) {
		double py;

		if (isnan(v[i])) {
			open = false;
			continue;
		}
		py = vw_axis_map(y, v[i]);
		if (open)
			cairo_line_to(cr, plot.x + i, py);
		else
			cairo_move_to(cr, plot.x + i, py);
		cairo_line_to(cr, plot.x + i + 1, py);
		open = true;
	}
	cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
	/* a white halo keeps the line readable over the bands */
	cairo_set_source_rgba(cr, 1, 1, 1, 0.7);
	cairo_set_line_width(cr, width + 2);
	cairo_stroke_preserve(cr);
	vw_set_rgb(cr, color);
	cairo_set_line_width(cr, width);
	if (dashed) {
		double d[] = { 6, 4 };
		cairo_set_dash(cr, d, 2, 0);
	}
	cairo_stroke(cr);
	cairo_restore(cr);
}

void vw_marker_peak(const struct vw_canvas *c, double x, double y)
{
	double r = c->font * 0.38;

	cairo_save(c->cr);
	/* text leaves a current point: an arc would join it with a line */
	cairo_new_path(c->cr);
	cairo_arc(c->cr, x, y, r, 0, 2 * M_PI);
	cairo_set_source_rgb(c->cr, 1, 1, 1);
	cairo_set_line_width(c->cr, 2);
	cairo_stroke_preserve(c->cr);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_PEAK));
	cairo_fill(c->cr);
	cairo_restore(c->cr);
}

/* A downward triangle whose tip is at (x, y + size). */
void vw_marker_oom(const struct vw_canvas *c, double x, double y)
{
	double s = c->font * 0.55;

	cairo_save(c->cr);
	cairo_move_to(c->cr, x - s, y - s * 0.6);
	cairo_line_to(c->cr, x + s, y - s * 0.6);
	cairo_line_to(c->cr, x, y + s);
	cairo_close_path(c->cr);
	cairo_set_source_rgb(c->cr, 1, 1, 1);
	cairo_set_line_width(c->cr, 2);
	cairo_stroke_preserve(c->cr);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_OOM));
	cairo_fill(c->cr);
	cairo_restore(c->cr);
}
