/* view-anatomy.c — why nvidia-smi shows more than the tensors: one bar per
 * device splitting the memory in use at a moment into the CUDA context and
 * libraries (sampled use minus the driver-layer memory), live tensors (by
 * the NVTX phase that allocated them), fragmentation (free space inside
 * segments that hold live blocks) and allocator cache (segments with
 * nothing live), against the device total — the same split as
 * `memtrace report` (issue 6).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	uint64_t at, total, used, reserved, allocated;
	bool sampled;
};

static void add(struct anatomy *a, const char *name, uint64_t bytes, struct vw_rgb color)
{
	if (a->n == MAX_PARTS || bytes == 0)
		return;
	snprintf(a->part[a->n].name, sizeof(a->part[a->n].name), "%s", name);
	a->part[a->n].bytes = bytes;
	a->part[a->n].color = color;
	a->n++;
}

static void tensors(struct anatomy *a, const struct vw_trace *t)
{
	uint64_t by_phase[VW_MAX_PHASES + 1] = { 0 };
	struct vw_phases ph;
	const char *what = t->layer == MT_LAYER_REQUEST ? "live tensors" : "live allocations";
	char name[96];
	size_t i;

	vw_phases_collect(t, &ph);
	for (i = 0; i < t->nreq; i++) {
		const struct mt_lifetime *l = &t->req[i];
		int k;

		if (!(l->start <= a->at && a->at < l->end))
			continue;
		k = ph.n ? vw_phase_at(t, &ph, l->start) : -1;
		by_phase[k < 0 ? VW_MAX_PHASES : (size_t)k] += l->bytes;
	}
	for (i = 0; i < ph.n; i++) {
		snprintf(name, sizeof(name), "%s, made in %s%s", what,
		         mt_reader_string(t->r, ph.name[i]),
		         ph.overflow && i + 1 == ph.n ? " and later phases" : "");
		add(a, name, by_phase[i], vw_phase_color(i));
	}
	snprintf(name, sizeof(name), "%s%s", what, ph.n ? ", outside NVTX ranges" : "");
	add(a, name, by_phase[VW_MAX_PHASES], ph.n ? vw_band_color(4) : vw_phase_color(1));
}

static int measure(struct anatomy *a, const struct vw_trace *t, char *err, size_t errlen)
{
	uint64_t frag = 0, cache = 0, context = 0;
	size_t i, j;

	a->allocated = vw_live_at(t->req, t->nreq, a->at);
	a->reserved = t->nseg ? vw_live_at(t->seg, t->nseg, a->at) : a->allocated;
	a->sampled = vw_sample_at(t, a->at, &a->used);
	if (t->nseg) {
		struct vw_segmap m;
		int rc = vw_segmap_recorded(t, a->at, &m, err, errlen);

		if (rc < 0)
			return rc;
		for (i = 0; i < m.nsegs; i++) {
			uint64_t live = 0;

			for (j = m.segs[i].first; j < m.segs[i].first + m.segs[i].nblocks; j++)
				if (m.blocks[j].allocated)
					live += m.blocks[j].bytes;
			if (live)
				frag += m.segs[i].bytes - live;
			else
				cache += m.segs[i].bytes;
		}
		vw_segmap_release(&m);
	}
	if (a->sampled && a->used > a->reserved)
		context = a->used - a->reserved;
	add(a, "CUDA context and libraries", context, vw_role_color(VW_ROLE_CONTEXT));
	tensors(a, t);
	add(a, "fragmentation (free space in segments with live blocks)", frag,
	    vw_role_color(VW_ROLE_FRAGMENTATION));
	add(a, "allocator cache (segments with nothing live)", cache, vw_role_color(VW_ROLE_CACHE));
	a->total = t->dev->total_bytes;
	return 0;
}

static double draw_device(const struct vw_canvas *c, const struct vw_trace *t,
                          const struct anatomy *a, double y, double height)
{
	double f = c->font, x0 = f * 1.2, w = c->width - 2 * x0,
	       bar_h = fmin(f * 3.2, height * 0.3);
	uint64_t in_use = a->sampled && a->used > a->reserved ? a->used : a->reserved;
	uint64_t scale_total = a->total > in_use ? a->total : in_use;
	char head[256], sz[32], sz2[32], line[256];
	struct vw_rect bar = { x0, 0, w, bar_h };
	struct vw_axis axis;
	double x, row = f * 1.45, ty;
	size_t i;

	mt_size_format(a->total, sz, sizeof(sz));
	mt_size_format(in_use, sz2, sizeof(sz2));
	snprintf(head, sizeof(head), "device %u \u00b7 %s \u00b7 %s total \u00b7 %s in use%s",
	         t->dev->ordinal, t->dev->name && *t->dev->name ? t->dev->name : "unknown GPU", sz,
	         sz2, a->sampled ? " (sampled, what nvidia-smi shows)" : " (no samples: reserved)");
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	vw_text(c, x0, y, 1.05, true, VW_LEFT, VW_TOP, head);
	bar.y = round(y + f * 1.9);
	vw_axis_bytes(&axis, (double)scale_total, (unsigned)(w / (f * 6)) + 1, bar.x,
	              bar.x + bar.w);
	/* the axis may round the total up: the bar spans the device */
	axis.v1 = (double)scale_total;
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_DEVICE_FREE));
	cairo_rectangle(c->cr, bar.x, bar.y, bar.w, bar.h);
	cairo_fill(c->cr);
	x = bar.x;
	for (i = 0; i < a->n; i++) {
		double pw = (double)a->part[i].bytes / (double)scale_total * w;

		vw_set_rgb(c->cr, a->part[i].color);
		cairo_rectangle(c->cr, x, bar.y, pw, bar.h);
		cairo_fill(c->cr);
		mt_size_format(a->part[i].bytes, sz, sizeof(sz));
		if (vw_text_width(c, 0.9, true, sz) + f < pw) {
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
	/* the axis's own ticks: keep those within the device */
	while (axis.nticks && axis.tick[axis.nticks - 1] > axis.v1 * (1 + 1e-9))
		axis.nticks--;
	ty = vw_draw_axis_bottom(c, bar, &axis, bar.y + bar.h, NULL) + f * 0.3;
	for (i = 0; i <= a->n; i++) {
		bool is_free = i == a->n;
		uint64_t bytes = is_free ? scale_total - in_use : a->part[i].bytes;

		vw_draw_swatch(c, VW_SWATCH_FILL,
		               is_free ? vw_role_color(VW_ROLE_DEVICE_FREE) : a->part[i].color, x0,
		               ty + row * 0.2, f * 1.6, row * 0.6);
		mt_size_format(bytes, sz, sizeof(sz));
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
		vw_text(c, x0 + f * 2.2 + f * 6.5, ty + row / 2, 0.95, true, VW_RIGHT, VW_MIDDLE,
		        sz);
		snprintf(line, sizeof(line), "%5.1f%%  %s",
		         100.0 * (double)bytes / (double)scale_total,
		         is_free ? "free on the device" : a->part[i].name);
		vw_text(c, x0 + f * 9.5, ty + row / 2, 0.95, false, VW_LEFT, VW_MIDDLE, line);
		ty += row;
	}
	if (a->sampled && a->used < a->reserved) {
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
		vw_text(c, x0, ty + row / 2, 0.85, false, VW_LEFT, VW_MIDDLE,
		        "the sample reads less than the allocator holds: the context is not shown");
		ty += row;
	}
	return ty + f;
}

int vw_view_anatomy(struct vw_canvas *c, struct mt_reader *r, const struct mt_render_options *o,
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
		rc = vw_trace_devices(r, &ids, &n, err, errlen);
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
		uint64_t peak;
		char when[32], subtitle[512], base[384];

		rc = vw_trace_load(&t, r, ids[i],
		                   VW_LOAD_SEGMENTS | VW_LOAD_SAMPLES | VW_LOAD_RANGES, err,
		                   errlen);
		if (rc < 0)
			break;
		memset(&a, 0, sizeof(a));
		a.at = o->at_set ? t.t0 + o->at : vw_peak_moment(t.req, t.nreq, &peak);
		rc = measure(&a, &t, err, errlen);
		if (rc == 0 && i == 0) {
			vw_trace_subtitle(&t, o->trace_name, base, sizeof(base));
			mt_duration_format(a.at - t.t0, when, sizeof(when));
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
