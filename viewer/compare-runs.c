/* compare-runs.c — two runs of a program, one timeline above the other,
 * aligned by phase (render --compare B.db): the x axis is run A's time; run
 * B's time is stretched piece by piece so that each of its phase instances
 * (the NVTX ranges the timeline's phase strip shows, matched by name and
 * occurrence: B's third "forward" to A's third "forward") starts and ends
 * where A's does. Each panel shows the most bytes live per pixel column
 * (the envelope) and the reserved memory, with the phase strip under it,
 * failed allocations marked, on one byte axis.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viewer-private.h"

#define MAX_KNOTS 65536

/* A point where B's time (b) maps onto A's time (a). */
struct knot {
	uint64_t a, b;
};

struct run {
	struct vw_trace t;
	struct vw_phases phases;
	double *live, *reserved; /* per column */
	double peak;
};

struct compare {
	struct vw_canvas *c;
	struct run run[2];
	struct knot *knots;
	size_t nknots;
	/* the phase names of both runs (strings), one colour each */
	const char *names[VW_MAX_PHASES * 2];
	size_t nnames;
	struct vw_rect plot[2];
	struct vw_axis x, y[2];
	size_t cols;
};

/* ---- alignment ---- */

static const char *range_name(const struct vw_trace *t, uint32_t name)
{
	const char *s = mt_reader_string(t->r, name);

	return s ? s : "";
}

/* Whether range i of t is one of its phase instances. */
static bool is_phase(const struct run *r, size_t i)
{
	return r->t.ranges[i].depth == r->phases.depth &&
	       vw_phase_index(&r->phases, r->t.ranges[i].name) >= 0;
}

static int by_a(const void *x, const void *y)
{
	const struct knot *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->b < q->b ? -1 : p->b > q->b;
}

static uint64_t range_end(const struct vw_trace *t, const struct vw_range *g)
{
	return g->end == MT_TIME_UNKNOWN ? t->t1 : g->end;
}

/* Knots from matched phase instances, increasing in both times, from the
 * starts of the runs to their ends. */
static int align(struct compare *cm)
{
	struct run *A = &cm->run[0], *B = &cm->run[1];
	size_t *of_b[VW_MAX_PHASES] = { NULL }, nb[VW_MAX_PHASES] = { 0 },
	       seen[VW_MAX_PHASES] = { 0 };
	size_t i, j, n = 0, m = 0;
	int rc = 0;

	cm->knots = malloc((MAX_KNOTS + 2) * sizeof(*cm->knots));
	if (!cm->knots)
		return -ENOMEM;
	/* B's phase instances by phase, in order */
	for (j = 0; j < VW_MAX_PHASES && rc == 0; j++)
		if (!(of_b[j] = malloc((B->t.nranges + 1) * sizeof(*of_b[j]))))
			rc = -ENOMEM;
	for (j = 0; rc == 0 && j < B->t.nranges; j++)
		if (is_phase(B, j)) {
			int k = vw_phase_index(&B->phases, B->t.ranges[j].name);
			of_b[k][nb[k]++] = j;
		}
	cm->knots[n++] = (struct knot){ A->t.t0, B->t.t0 };
	for (i = 0; rc == 0 && i < A->t.nranges && n + 3 < MAX_KNOTS; i++) {
		const struct vw_range *ga = &A->t.ranges[i], *gb;
		int ka, kb = -1;
		size_t k;

		if (!is_phase(A, i))
			continue;
		ka = vw_phase_index(&A->phases, ga->name);
		for (k = 0; k < B->phases.n && kb < 0; k++)
			if (!strcmp(range_name(&A->t, ga->name),
			            range_name(&B->t, B->phases.name[k])))
				kb = (int)k;
		if (kb < 0 || seen[ka] >= nb[kb]) {
			seen[ka]++;
			continue;
		}
		gb = &B->t.ranges[of_b[kb][seen[ka]++]];
		cm->knots[n++] = (struct knot){ ga->start, gb->start };
		cm->knots[n++] = (struct knot){ range_end(&A->t, ga), range_end(&B->t, gb) };
	}
	cm->knots[n++] = (struct knot){ A->t.t1 + 1, B->t.t1 + 1 };
	qsort(cm->knots, n, sizeof(*cm->knots), by_a);
	/* keep a strictly increasing chain */
	for (i = 0; i < n; i++)
		if (!m ||
		    (cm->knots[i].a > cm->knots[m - 1].a && cm->knots[i].b > cm->knots[m - 1].b))
			cm->knots[m++] = cm->knots[i];
	cm->nknots = m;
	for (j = 0; j < VW_MAX_PHASES; j++)
		free(of_b[j]);
	return rc;
}

/* B's time at A's time a (linear between knots). */
static uint64_t b_at(const struct compare *cm, uint64_t a)
{
	size_t lo = 1, hi = cm->nknots;
	const struct knot *p, *q;

	if (cm->nknots < 2 || a <= cm->knots[0].a)
		return cm->knots[0].b;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cm->knots[mid].a < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == cm->nknots)
		return cm->knots[cm->nknots - 1].b;
	p = &cm->knots[lo - 1];
	q = &cm->knots[lo];
	return p->b +
	       (uint64_t)((double)(a - p->a) / (double)(q->a - p->a) * (double)(q->b - p->b));
}

/* A's time at B's time b. */
static uint64_t a_at(const struct compare *cm, uint64_t b)
{
	size_t k;

	for (k = 1; k < cm->nknots; k++)
		if (cm->knots[k].b >= b) {
			const struct knot *p = &cm->knots[k - 1], *q = &cm->knots[k];

			if (b <= p->b)
				return p->a;
			return p->a + (uint64_t)((double)(b - p->b) / (double)(q->b - p->b) *
			                         (double)(q->a - p->a));
		}
	return cm->knots[cm->nknots - 1].a;
}

/* ---- per-column envelopes over columns of any width ---- */

/* The most bytes live in each of n intervals [bound[x], bound[x + 1]). */
static int envelope(const struct mt_lifetime *l, size_t nl, const uint64_t *bound, size_t n,
                    double *out)
{
	struct vw_delta *d;
	size_t m, k = 0, x;
	int64_t live = 0;
	int rc = vw_deltas(l, nl, bound[0], &d, &m);

	if (rc < 0)
		return rc;
	for (x = 0; x < n; x++) {
		int64_t b0 = (int64_t)(bound[x] - bound[0]),
		        b1 = (int64_t)(bound[x + 1] - bound[0]);
		int64_t best;

		while (k < m && d[k].t <= b0)
			live += d[k++].bytes;
		best = live;
		while (k < m && d[k].t < b1) {
			int64_t t = d[k].t;

			while (k < m && d[k].t == t)
				live += d[k++].bytes;
			if (live > best)
				best = live;
		}
		out[x] = (double)(best > 0 ? best : 0);
	}
	free(d);
	return 0;
}

static int measure(struct compare *cm)
{
	uint64_t *bound[2];
	size_t x, s;
	int rc = 0;

	for (s = 0; s < 2; s++) {
		struct run *r = &cm->run[s];

		bound[s] = malloc((cm->cols + 1) * sizeof(*bound[s]));
		r->live = calloc(cm->cols, sizeof(*r->live));
		r->reserved = calloc(cm->cols, sizeof(*r->reserved));
		if (!bound[s] || !r->live || !r->reserved)
			rc = -ENOMEM;
	}
	for (x = 0; rc == 0 && x <= cm->cols; x++) {
		const struct vw_trace *A = &cm->run[0].t;

		bound[0][x] = A->t0 + (uint64_t)((double)(A->t1 + 1 - A->t0) * (double)x /
		                                 (double)cm->cols);
		bound[1][x] = b_at(cm, bound[0][x]);
		if (x && bound[1][x] < bound[1][x - 1])
			bound[1][x] = bound[1][x - 1];
	}
	for (s = 0; rc == 0 && s < 2; s++) {
		struct run *r = &cm->run[s];

		rc = envelope(r->t.req, r->t.nreq, bound[s], cm->cols, r->live);
		if (rc == 0 && r->t.nseg)
			rc = envelope(r->t.seg, r->t.nseg, bound[s], cm->cols, r->reserved);
		r->peak = vw_columns_max(r->live, cm->cols);
		if (!r->t.nseg)
			for (x = 0; x < cm->cols; x++)
				r->reserved[x] = NAN;
	}
	free(bound[0]);
	free(bound[1]);
	return rc;
}

/* ---- drawing ---- */

static size_t name_color(struct compare *cm, const char *name)
{
	size_t i;

	for (i = 0; i < cm->nnames; i++)
		if (!strcmp(cm->names[i], name))
			return i;
	if (cm->nnames < sizeof(cm->names) / sizeof(cm->names[0]))
		cm->names[cm->nnames++] = name;
	return cm->nnames - 1;
}

static void draw_panel(struct compare *cm, size_t s, const char *label)
{
	struct vw_canvas *c = cm->c;
	const struct run *r = &cm->run[s];
	const struct vw_rect *p = &cm->plot[s];
	struct vw_rgb fill = vw_band_color(s ? 1 : 0);
	double lane = round(c->font * 1.1), d[] = { 3, 3 };
	size_t x, i;

	vw_draw_grid(c, *p, &cm->y[s], true);
	vw_set_rgb(c->cr, fill);
	for (x = 0; x < cm->cols; x++) {
		double y = vw_axis_map(&cm->y[s], r->live[x]);

		cairo_rectangle(c->cr, p->x + x, y, 1, p->y + p->h - y);
	}
	cairo_fill(c->cr);
	vw_stroke_columns(c, *p, &cm->y[s], r->reserved, cm->cols, vw_role_color(VW_ROLE_RESERVED),
	                  1.6, false);
	for (i = 0; i < r->t.nfails; i++) {
		uint64_t a = s ? a_at(cm, r->t.fails[i].ts) : r->t.fails[i].ts;
		double fx = vw_axis_map(&cm->x, (double)(a - cm->run[0].t.t0));

		cairo_save(c->cr);
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_OOM));
		cairo_set_line_width(c->cr, 1);
		cairo_set_dash(c->cr, d, 2, 0);
		cairo_move_to(c->cr, fx, p->y);
		cairo_line_to(c->cr, fx, p->y + p->h);
		cairo_stroke(c->cr);
		cairo_restore(c->cr);
		vw_marker_oom(c, fx, p->y + c->font * 0.5);
	}
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	vw_draw_axis_left(c, *p, &cm->y[s]);
	vw_label(c, p->x + c->font * 0.5, p->y + c->font * 0.4, 0.95, VW_LEFT, VW_TOP, label, p->x,
	         p->x + p->w);
	/* the phase strip, in A's time */
	cairo_save(c->cr);
	cairo_rectangle(c->cr, p->x, p->y + p->h + 2, p->w, lane);
	cairo_clip(c->cr);
	for (i = 0; i < r->t.nranges; i++) {
		const struct vw_range *g = &r->t.ranges[i];
		uint64_t s0 = g->start, s1 = range_end(&r->t, g);
		double x0, x1;

		if (!is_phase(r, i))
			continue;
		if (s) {
			s0 = a_at(cm, s0);
			s1 = a_at(cm, s1);
		}
		x0 = vw_axis_map(&cm->x, (double)(s0 - cm->run[0].t.t0));
		x1 = vw_axis_map(&cm->x, (double)(s1 - cm->run[0].t.t0));
		if (x1 - x0 < 1)
			x1 = x0 + 1;
		vw_set_rgb(c->cr, vw_phase_color(name_color(cm, range_name(&r->t, g->name))));
		cairo_rectangle(c->cr, x0, p->y + p->h + 2, x1 - x0, lane);
		cairo_fill(c->cr);
	}
	cairo_restore(c->cr);
}

static void describe(const struct compare *cm, size_t s, const char *name, char *buf, size_t len)
{
	const struct run *r = &cm->run[s];
	uint64_t peak = 0, at = vw_peak_moment(r->t.req, r->t.nreq, &peak);
	char size[32], when[32];

	mt_size_format(peak, size, sizeof(size));
	mt_duration_format(at - r->t.t0, when, sizeof(when));
	snprintf(buf, len, "%s: %s, peak live %s at +%s%s", s ? "B" : "A", name, size, when,
	         s ? " (of its own time)" : "");
}

static int draw(struct compare *cm, const struct mt_render_options *o)
{
	struct vw_canvas *c = cm->c;
	char sub[512], label[2][256];
	double top, gap, h, ymax;
	struct vw_legend_item items[3 + VW_MAX_PHASES * 2];
	size_t n = 0, s, i;
	int rc;

	describe(cm, 0, o->trace_name ? o->trace_name : "trace", label[0], sizeof(label[0]));
	describe(cm, 1, o->compare_name ? o->compare_name : "trace", label[1], sizeof(label[1]));
	snprintf(sub, sizeof(sub),
	         "%zu phase boundaries matched by name and occurrence; x: A's time",
	         cm->nknots > 2 ? cm->nknots - 2 : 0);
	top = vw_title(c, "Two runs, aligned by phase", sub);
	for (s = 0; s < 2; s++)
		for (i = 0; i < cm->run[s].phases.n; i++)
			name_color(cm, range_name(&cm->run[s].t, cm->run[s].phases.name[i]));
	items[n++] = (struct vw_legend_item){ VW_SWATCH_FILL, vw_band_color(0), "live bytes, A" };
	items[n++] = (struct vw_legend_item){ VW_SWATCH_FILL, vw_band_color(1), "live bytes, B" };
	items[n++] = (struct vw_legend_item){ VW_SWATCH_LINE, vw_role_color(VW_ROLE_RESERVED),
		                              "reserved (recorded segments)" };
	for (i = 0; i < cm->nnames && n < sizeof(items) / sizeof(items[0]); i++)
		items[n++] =
		        (struct vw_legend_item){ VW_SWATCH_FILL, vw_phase_color(i), cm->names[i] };
	top += vw_legend(c, c->font * 1.2, top, c->width - c->font * 2.4, items, n, true) +
	       c->font * 0.6;
	gap = c->font * 2.2;
	h = (c->height - top - c->font * 3.6 - gap) / 2;
	for (s = 0; s < 2; s++) {
		cm->plot[s].x = round(c->font * 6.2);
		cm->plot[s].w = c->width - cm->plot[s].x - round(c->font * 1.5);
		cm->plot[s].y = round(top + (double)s * (h + gap));
		cm->plot[s].h = round(h - c->font * 1.3);
	}
	cm->cols = (size_t)cm->plot[0].w;
	rc = measure(cm);
	if (rc < 0)
		return rc;
	ymax = 0;
	for (s = 0; s < 2; s++) {
		ymax = fmax(ymax, cm->run[s].peak);
		ymax = fmax(ymax, vw_columns_max(cm->run[s].reserved, cm->cols));
	}
	for (s = 0; s < 2; s++)
		vw_axis_bytes(&cm->y[s], ymax * 1.04, (unsigned)(cm->plot[s].h / (c->font * 3)) + 1,
		              cm->plot[s].y + cm->plot[s].h, cm->plot[s].y);
	vw_axis_time(&cm->x, 0, (double)(cm->run[0].t.t1 + 1 - cm->run[0].t.t0),
	             (unsigned)(cm->plot[0].w / (c->font * 7)) + 1, cm->plot[0].x,
	             cm->plot[0].x + cm->plot[0].w);
	for (s = 0; s < 2; s++)
		draw_panel(cm, s, label[s]);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	vw_draw_axis_bottom(c, cm->plot[1], &cm->x, cm->plot[1].y + cm->plot[1].h + c->font * 1.4,
	                    "time since the start of run A (run B stretched to A's phases)");
	return 0;
}

int vw_compare_runs(struct vw_canvas *c, struct mt_reader *r, const struct mt_render_options *o,
                    char *err, size_t errlen)
{
	struct compare cm;
	struct mt_reader *readers[2] = { r, o->compare };
	unsigned what = VW_LOAD_SEGMENTS | VW_LOAD_RANGES | VW_LOAD_FAILS;
	size_t s;
	int rc = 0;

	memset(&cm, 0, sizeof(cm));
	cm.c = c;
	for (s = 0; s < 2 && rc == 0; s++) {
		rc = vw_trace_load(&cm.run[s].t, readers[s], s ? 0 : o->device, what, err, errlen);
		if (rc == 0)
			vw_phases_collect(&cm.run[s].t, &cm.run[s].phases);
	}
	if (rc == 0 && align(&cm) < 0)
		rc = vw_fail(err, errlen, -ENOMEM, "out of memory");
	if (rc == 0 && draw(&cm, o) < 0)
		rc = vw_fail(err, errlen, -ENOMEM, "out of memory");
	for (s = 0; s < 2; s++) {
		free(cm.run[s].live);
		free(cm.run[s].reserved);
		vw_trace_release(&cm.run[s].t);
	}
	free(cm.knots);
	return rc;
}
