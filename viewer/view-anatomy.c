/* view-anatomy.c — why nvidia-smi shows more than the tensors: one bar per
 * device drawing the anatomy that analyze computes for `memtrace report`
 * (other processes, CUDA context and libraries, live tensors, fragmentation,
 * allocator cache, unexplained) against the device total, with the live
 * tensors split further by the NVTX phase that allocated them.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-common.h"
#include "viewer-private.h"

#define MAX_PARTS (VW_MAX_PHASES + 6)

struct part {
	char name[96];
	uint64_t bytes;
	struct vw_rgb color;
};

struct anatomy {
	struct part part[MAX_PARTS];
	size_t n;
	struct mt_anatomy an; /* the numbers, from analyze */
	uint64_t total;       /* the device */
};

static void add(struct anatomy *a, const char *name, int64_t bytes, struct vw_rgb color)
{
	if (a->n == MAX_PARTS || bytes <= 0)
		return;
	snprintf(a->part[a->n].name, sizeof(a->part[a->n].name), "%s", name);
	a->part[a->n].bytes = (uint64_t)bytes;
	a->part[a->n].color = color;
	a->n++;
}

static const char *label(const struct anatomy *a, unsigned part)
{
	return mt_anatomy_part_label(part, a->an.layer);
}

/* The live part split by the NVTX phase that allocated each block; what no
 * phase holds is the rest of the shared live figure. */
static void tensors(struct anatomy *a, const struct vw_trace *t)
{
	uint64_t by_phase[VW_MAX_PHASES] = { 0 }, phased = 0,
	         live = (uint64_t)a->an.part[MT_PART_LIVE];
	const char *what = label(a, MT_PART_LIVE);
	struct vw_phases ph;
	char name[96];
	size_t i;

	vw_phases_collect(t, &ph);
	for (i = 0; ph.n && i < t->nreq; i++) {
		const struct mt_lifetime *l = &t->req[i];
		int k;

		if (!mt_lifetime_live_at(l, a->an.at))
			continue;
		k = vw_phase_at(t, &ph, l->start);
		if (k >= 0) {
			by_phase[k] += l->bytes;
			phased += l->bytes;
		}
	}
	for (i = 0; i < ph.n; i++) {
		snprintf(name, sizeof(name), "%s, made in %s%s", what,
		         mt_reader_string(t->r, ph.name[i]),
		         ph.overflow && i + 1 == ph.n ? " and later phases" : "");
		add(a, name, (int64_t)by_phase[i], vw_phase_color(i));
	}
	snprintf(name, sizeof(name), "%s%s", what, ph.n ? ", outside NVTX ranges" : "");
	add(a, name, (int64_t)(live - (phased < live ? phased : live)),
	    ph.n ? vw_role_color(VW_ROLE_MERGED) : vw_phase_color(1));
}

static int measure(struct anatomy *a, const struct vw_trace *t, uint64_t at, char *err,
                   size_t errlen)
{
	int rc = vw_anatomy_at(t, at, &a->an, err, errlen);

	if (rc < 0)
		return rc;
	add(a, label(a, MT_PART_OTHER_PROCESSES), a->an.part[MT_PART_OTHER_PROCESSES],
	    vw_role_color(VW_ROLE_OTHER_PROCESSES));
	add(a, label(a, MT_PART_CONTEXT), a->an.part[MT_PART_CONTEXT],
	    vw_role_color(VW_ROLE_CONTEXT));
	tensors(a, t);
	add(a, label(a, MT_PART_FRAGMENTATION), a->an.part[MT_PART_FRAGMENTATION],
	    vw_role_color(VW_ROLE_FRAGMENTATION));
	add(a, label(a, MT_PART_CACHE), a->an.part[MT_PART_CACHE], vw_role_color(VW_ROLE_CACHE));
	add(a, label(a, MT_PART_UNEXPLAINED), a->an.part[MT_PART_UNEXPLAINED],
	    vw_role_color(VW_ROLE_UNEXPLAINED));
	a->total = t->dev->total_bytes;
	return 0;
}

/* The bytes the bar shows: the sample, or the parts when the sample reads
 * less than they do (it lags the events) or there is none. */
static uint64_t in_use(const struct anatomy *a)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < a->n; i++)
		sum += a->part[i].bytes;
	return a->an.available && a->an.used_bytes > sum ? a->an.used_bytes : sum;
}

/* The parts side by side in bar, scale bytes across its width, sizes
 * written inside the parts wide enough. */
static void draw_parts(const struct vw_canvas *c, const struct anatomy *a, struct vw_rect bar,
                       double scale)
{
	double x = bar.x;
	char sz[32];
	size_t i;

	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_DEVICE_FREE));
	cairo_rectangle(c->cr, bar.x, bar.y, bar.w, bar.h);
	cairo_fill(c->cr);
	for (i = 0; i < a->n; i++) {
		double pw = (double)a->part[i].bytes / scale * bar.w;

		vw_set_rgb(c->cr, a->part[i].color);
		cairo_rectangle(c->cr, x, bar.y, pw, bar.h);
		cairo_fill(c->cr);
		mt_size_format(a->part[i].bytes, sz, sizeof(sz));
		if (vw_text_width(c, 0.9, true, sz) + c->font < pw) {
			vw_set_rgb(c->cr, vw_text_on(a->part[i].color));
			vw_text(c, x + pw / 2, bar.y + bar.h / 2, 0.9, true, VW_CENTER, VW_MIDDLE,
			        sz);
		}
		x += pw;
	}
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_AXIS));
	cairo_set_line_width(c->cr, 1);
	cairo_rectangle(c->cr, bar.x + 0.5, bar.y + 0.5, bar.w - 1, bar.h - 1);
	cairo_stroke(c->cr);
}

/* A byte axis under bar from 0 to scale; returns the y below it. */
static double bar_axis(const struct vw_canvas *c, struct vw_rect bar, double scale)
{
	struct vw_axis axis;

	vw_axis_bytes(&axis, scale, (unsigned)(bar.w / (c->font * 6)) + 1, bar.x, bar.x + bar.w);
	/* the axis rounds up: keep the bar's own scale and the ticks within it */
	axis.v1 = scale;
	while (axis.nticks && axis.tick[axis.nticks - 1] > scale * (1 + 1e-9))
		axis.nticks--;
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	return vw_draw_axis_bottom(c, bar, &axis, bar.y + bar.h, NULL);
}

static double table(const struct vw_canvas *c, const struct anatomy *a, double x, double y,
                    uint64_t total, uint64_t in_use)
{
	double f = c->font, row = f * 1.45;
	char sz[32], line[256];
	size_t i;

	for (i = 0; i <= a->n; i++) {
		bool is_free = i == a->n;
		uint64_t bytes = is_free ? total - in_use : a->part[i].bytes;

		vw_draw_swatch(c, VW_SWATCH_FILL,
		               is_free ? vw_role_color(VW_ROLE_DEVICE_FREE) : a->part[i].color, x,
		               y + row * 0.2, f * 1.6, row * 0.6);
		mt_size_format(bytes, sz, sizeof(sz));
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
		vw_text(c, x + f * 8.7, y + row / 2, 0.95, true, VW_RIGHT, VW_MIDDLE, sz);
		snprintf(line, sizeof(line), "%5.1f%% of the device  %s",
		         100.0 * (double)bytes / (double)total,
		         is_free ? "free on the device" : a->part[i].name);
		vw_text(c, x + f * 9.5, y + row / 2, 0.95, false, VW_LEFT, VW_MIDDLE, line);
		y += row;
	}
	if (in_use) {
		uint64_t held =
		        (uint64_t)(a->an.part[MT_PART_CACHE] + a->an.part[MT_PART_FRAGMENTATION]);
		char use[32];
		int len;

		mt_size_format(in_use, use, sizeof(use));
		len = snprintf(line, sizeof(line), "Of the %s in use, %.1f%% are %s", use,
		               100.0 * (double)a->an.part[MT_PART_LIVE] / (double)in_use,
		               label(a, MT_PART_LIVE));
		if (a->an.part[MT_PART_CONTEXT])
			len += snprintf(line + len, sizeof(line) - (size_t)len,
			                ", %.1f%% the CUDA context and libraries",
			                100.0 * (double)a->an.part[MT_PART_CONTEXT] /
			                        (double)in_use);
		if (held)
			snprintf(line + len, sizeof(line) - (size_t)len,
			         ", %.1f%% allocator memory with no live tensor in it",
			         100.0 * (double)held / (double)in_use);
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
		vw_text(c, x, y + row * 0.9, 1.05, false, VW_LEFT, VW_MIDDLE, line);
		y += row * 1.6;
	}
	if (a->an.available && a->an.part[MT_PART_UNEXPLAINED] < 0) {
		char less[32];

		mt_size_format((uint64_t)-a->an.part[MT_PART_UNEXPLAINED], less, sizeof(less));
		snprintf(line, sizeof(line),
		         "the sample reads %s less than the parts: it lags the allocation events",
		         less);
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
		vw_text(c, x, y + row / 2, 0.85, false, VW_LEFT, VW_MIDDLE, line);
		y += row;
	}
	return y;
}

/* One device: the whole device, then (room permitting) the memory in use
 * magnified, then the numbers. Returns the y below. */
static double draw_device(const struct vw_canvas *c, const struct vw_trace *t,
                          const struct anatomy *a, double y, double height)
{
	double f = c->font, x0 = f * 1.2, w = c->width - 2 * x0;
	uint64_t used = in_use(a);
	uint64_t total = a->total > used ? a->total : used;
	bool zoom = height > f * 24 && (double)used < 0.6 * (double)total;
	struct vw_rect bar = { x0, round(y + f * 3.1), w,
		               round(fmin(fmax(height * 0.08, f * 1.8), f * 3.2)) };
	char head[256], sz[32], sz2[32], reading[256], fit[256], label[64];
	double ty, iw = (double)used / (double)total * w;

	mt_size_format(a->total, sz, sizeof(sz));
	mt_size_format(a->an.available ? a->an.used_bytes : used, sz2, sizeof(sz2));
	snprintf(head, sizeof(head), "%s \u00b7 %s \u00b7 %s total \u00b7 %s in use%s",
	         mt_analyze_device_label(t->dev, label, sizeof(label)),
	         t->dev->name && *t->dev->name ? t->dev->name : "unknown GPU", sz, sz2,
	         a->an.available ? " (what nvidia-smi shows)" : " (no readings: reserved)");
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	vw_text(c, x0, y, 1.05, true, VW_LEFT, VW_TOP, head);
	snprintf(fit, sizeof(fit), "measured against %s",
	         mt_anatomy_reading(&a->an, t->t0, reading, sizeof(reading)));
	vw_fit_text(c, 0.85, fit, w, reading, sizeof(reading));
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
	vw_text(c, x0, y + f * 1.5, 0.85, false, VW_LEFT, VW_TOP, reading);
	draw_parts(c, a, bar, (double)total);
	ty = bar_axis(c, bar, (double)total);
	if (zoom) {
		struct vw_rect big = { x0, round(ty + f * 2.6), w,
			               round(fmin(fmax(height * 0.14, f * 3), f * 6)) };

		/* lines from the used part of the device to its magnification */
		cairo_save(c->cr);
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
		cairo_set_line_width(c->cr, 0.8);
		cairo_move_to(c->cr, bar.x, ty);
		cairo_line_to(c->cr, big.x, big.y);
		cairo_move_to(c->cr, bar.x + iw, ty);
		cairo_line_to(c->cr, big.x + big.w, big.y);
		cairo_stroke(c->cr);
		cairo_restore(c->cr);
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
		vw_label(c, x0 + w / 2, big.y - f * 0.4, 0.85, VW_CENTER, VW_BOTTOM,
		         "the memory in use, magnified", x0, x0 + w);
		draw_parts(c, a, big, (double)used);
		ty = bar_axis(c, big, (double)used);
	}
	return table(c, a, x0, ty + f * 0.4, total, used) + f;
}

static int draw_view(struct vw_canvas *c, struct mt_reader *r, const struct mt_render_options *o,
                     char *err, size_t errlen)
{
	uint32_t *ids = NULL;
	size_t n = 0, i;
	double y = 0, each = 0;
	int rc;

	if (o->device) {
		ids = malloc(sizeof(*ids));
		if (!ids)
			return vw_fail(err, errlen, -ENOMEM, "out of memory");
		ids[0] = o->device;
		n = 1;
	} else {
		rc = mt_analyze_devices(r, &ids, &n, err, errlen);
		if (rc < 0)
			return rc;
		if (!n) {
			free(ids);
			return vw_fail(err, errlen, -ENOENT, "the trace holds no allocations");
		}
	}
	for (i = 0, rc = 0; i < n && rc == 0; i++) {
		struct vw_trace t;
		struct anatomy a;
		uint64_t at;
		char when[32], subtitle[512], base[384];

		rc = vw_trace_survey(&t, r, ids[i],
		                     VW_LOAD_SEGMENTS | VW_LOAD_SAMPLES | VW_LOAD_RANGES |
		                             (o->all_ranges ? VW_LOAD_LIBRARY_RANGES : 0),
		                     err, errlen);
		if (rc < 0)
			break;
		memset(&a, 0, sizeof(a));
		at = o->at_set ? t.t0 + o->at : t.d.peak_at;
		rc = vw_trace_keep_at(&t, at, err, errlen);
		if (rc == 0)
			rc = measure(&a, &t, at, err, errlen);
		if (rc == 0 && i == 0) {
			vw_trace_subtitle(&t, o->trace_name, base, sizeof(base));
			mt_duration_format(at - t.t0, when, sizeof(when));
			snprintf(subtitle, sizeof(subtitle), "%s \u00b7 at %s (%s)", base, when,
			         o->at_set ? "as asked" : "peak of live bytes");
			y = vw_title(c, "Where the device memory went", subtitle) + c->font * 0.5;
			each = (c->height - y) / (double)n;
		}
		if (rc == 0)
			y = fmax(y, draw_device(c, &t, &a, y, each));
		vw_trace_release(&t);
	}
	free(ids);
	return rc;
}

const struct vw_view vw_view_anatomy = {
	.info = { .name = "anatomy",
	          .summary = "device memory in use split into CUDA context, tensors,\n"
	                     "fragmentation and allocator cache, one bar per device",
	          .formats = VW_CAIRO_FORMATS,
	          .uses = MT_VIEW_USES_AT | MT_VIEW_USES_ALL_DEVICES | MT_VIEW_USES_PHASES },
	.draw = draw_view,
};
