/* html-lod.c — the level-of-detail pyramid of the HTML view.
 *
 * The page draws a window of the timeline one pixel column at a time: a
 * column shows the allocations live at its moment (the first moment within
 * it at which the most bytes are live, so the top edge is the true
 * envelope and the peak is never lost), stacked in allocation order. An
 * allocation that lives at least a column's width is drawn as itself; the
 * shorter ones live at the column's moment are drawn merged per call site
 * on top, so that every byte live at that moment is in the column.
 *
 * When a window holds at most VW_HTML_RAW_MAX allocation starts the page
 * computes this from the allocations themselves. For wider windows it
 * reads this pyramid: level l cuts the span into bins of w_l ns
 * (VW_HTML_LOD_BINS << l bins), and for each bin gives its moment, the
 * bytes live then and, per call site, the count and bytes of the
 * allocations shorter than w_l live then. The page draws a level whose
 * bins are at most a pixel wide, with the allocations of at least w_l ns
 * as themselves. Levels stop once every run of VW_HTML_LOD_WINDOW bins
 * holds at most VW_HTML_RAW_MAX starts, where the page takes over.
 *
 * The long duration is the bin width of the finest level whose individual
 * allocations (at least that long, or never freed) number at most
 * VW_HTML_LONG_MAX (the coarsest level's when none does): the page reads
 * those allocations and the levels of bins at least that wide first, so
 * that it draws any window at such a level before the rest arrives.
 *
 * Sections, per level l (values in bin order):
 *   lod<l>.m  the bin's moment, ns after the bin's start
 *   lod<l>.t  bytes live at the moment, zigzag delta from the bin before
 *   lod<l>.g  number of call-site groups of short allocations
 *   lod<l>.s  per group: call site, allocations, bytes
 * and, with the coarse levels:
 *   lod.n     allocations starting in each bin of the finest level
 * meta.lod = [{ "w": w_l, "n": bins }, ...], coarsest first; meta.long_w.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html-private.h"

#define MAX_LEVELS 20
#define MAX_BINS (1u << 22)

struct end_ev {
	uint64_t t, bytes;
};

struct group {
	uint32_t bin, site;
	uint64_t bytes;
};

static int by_time(const void *a, const void *b)
{
	const struct end_ev *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t;
}

static int by_site(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	return x->site < y->site ? -1 : x->site > y->site;
}

struct level {
	uint64_t w;
	size_t nb;
	uint64_t *moment; /* absolute (relative to t0) */
	uint64_t *total;
};

/* Moments and totals of every bin: one sweep over starts and ends. */
static void sweep(struct level *lv, const struct vw_html_alloc *a, size_t n,
                  const struct end_ev *ends, size_t nends)
{
	size_t i = 0, k = 0, j;
	int64_t live = 0;

	for (j = 0; j < lv->nb; j++) {
		uint64_t b0 = j * lv->w, b1 = b0 + lv->w, best_t = b0;
		int64_t best;

		/* events before b0 were applied by the bins before; now b0's */
		while (i < n && a[i].start <= b0)
			live += (int64_t)a[i++].bytes;
		while (k < nends && ends[k].t <= b0)
			live -= (int64_t)ends[k++].bytes;
		best = live;
		for (;;) {
			uint64_t ts = UINT64_MAX;

			if (i < n && a[i].start < ts)
				ts = a[i].start;
			if (k < nends && ends[k].t < ts)
				ts = ends[k].t;
			if (ts >= b1)
				break;
			while (i < n && a[i].start == ts)
				live += (int64_t)a[i++].bytes;
			while (k < nends && ends[k].t == ts)
				live -= (int64_t)ends[k++].bytes;
			if (live > best) {
				best = live;
				best_t = ts;
			}
		}
		lv->moment[j] = best_t;
		lv->total[j] = (uint64_t)best;
	}
}

/* The short allocations live at each bin's moment, grouped per call site
 * and written with the bins. */
static int write_groups(const struct level *lv, unsigned l, const struct vw_html_alloc *a, size_t n,
                        struct vw_hbuf *b)
{
	size_t *first = calloc(lv->nb + 2, sizeof(*first)), ng = 0, i, j, g;
	struct group *v = NULL;
	char name[32];
	int pass;

	if (!first)
		return -ENOMEM;
	/* two passes: count per bin, then place (a counting sort by bin) */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			uint64_t jb;

			if (a[i].end == VW_HTML_NEVER || a[i].end - a[i].start >= lv->w)
				continue;
			jb = a[i].start / lv->w;
			for (j = (size_t)jb; j < (size_t)jb + 2 && j < lv->nb; j++) {
				uint64_t m = lv->moment[j];

				if (m < a[i].start || m >= a[i].end)
					continue;
				if (pass == 0)
					first[j + 2]++;
				else
					v[first[j + 1]++] = (struct group){ (uint32_t)j, a[i].site,
						                            a[i].bytes };
			}
		}
		if (pass == 0) {
			for (j = 0; j < lv->nb; j++)
				first[j + 2] += first[j + 1];
			ng = first[lv->nb + 1];
			v = malloc((ng ? ng : 1) * sizeof(*v));
			if (!v) {
				free(first);
				return -ENOMEM;
			}
		}
	}
	/* first[j] is now the start of bin j's entries */
	snprintf(name, sizeof(name), "lod%u.g", l);
	vw_hbuf_section(b, name);
	for (j = 0; j < lv->nb; j++) {
		size_t s = first[j], e = first[j + 1], groups = 0;

		qsort(v + s, e - s, sizeof(*v), by_site);
		for (g = s; g < e; g++)
			groups += g == s || v[g].site != v[g - 1].site;
		vw_hbuf_u(b, groups);
	}
	snprintf(name, sizeof(name), "lod%u.s", l);
	vw_hbuf_section(b, name);
	for (j = 0; j < lv->nb; j++) {
		size_t s = first[j], e = first[j + 1];

		for (g = s; g < e;) {
			size_t h = g;
			uint64_t bytes = 0;

			for (; h < e && v[h].site == v[g].site; h++)
				bytes += v[h].bytes;
			vw_hbuf_u(b, v[g].site);
			vw_hbuf_u(b, h - g);
			vw_hbuf_u(b, bytes);
			g = h;
		}
	}
	free(first);
	free(v);
	return 0;
}

/* Whether every run of VW_HTML_LOD_WINDOW bins holds at most
 * VW_HTML_RAW_MAX starts: the page draws windows this narrow itself. */
static bool fine_enough(const struct level *lv, const struct vw_html_alloc *a, size_t n)
{
	size_t lo = 0, hi = 0;

	for (lo = 0; lo < n; lo++) {
		uint64_t limit = (a[lo].start / lv->w + VW_HTML_LOD_WINDOW) * lv->w;

		if (hi < lo)
			hi = lo;
		while (hi < n && a[hi].start < limit)
			hi++;
		if (hi - lo > VW_HTML_RAW_MAX)
			return false;
	}
	return true;
}

static void write_level(const struct level *lv, unsigned l, struct vw_hbuf *b)
{
	char name[32];
	uint64_t prev = 0;
	size_t j;

	snprintf(name, sizeof(name), "lod%u.m", l);
	vw_hbuf_section(b, name);
	for (j = 0; j < lv->nb; j++)
		vw_hbuf_u(b, lv->moment[j] - j * lv->w);
	snprintf(name, sizeof(name), "lod%u.t", l);
	vw_hbuf_section(b, name);
	for (j = 0; j < lv->nb; j++) {
		vw_hbuf_s(b, (int64_t)(lv->total[j] - prev));
		prev = lv->total[j];
	}
}

/* Bin width of level l over span (at least 1 ns). */
static uint64_t level_width(uint64_t span, unsigned l)
{
	uint64_t want = (uint64_t)VW_HTML_LOD_BINS << l, w = (span + want - 1) / want;

	return w ? w : 1;
}

/* The finest level whose allocations of at least its bin width (or never
 * freed) number at most VW_HTML_LONG_MAX; 0 when none. */
static unsigned long_level(const struct vw_html_alloc *a, size_t n, uint64_t span)
{
	size_t count[MAX_LEVELS] = { 0 }, i, sum = 0;
	uint64_t w[MAX_LEVELS];
	unsigned l, best = 0;

	for (l = 0; l < MAX_LEVELS; l++)
		w[l] = level_width(span, l);
	for (i = 0; i < n; i++) {
		uint64_t d = a[i].end == VW_HTML_NEVER ? UINT64_MAX : a[i].end - a[i].start;

		for (l = 0; l < MAX_LEVELS && w[l] > d; l++)
			;
		if (l < MAX_LEVELS)
			count[l]++;
	}
	for (l = 0; l < MAX_LEVELS; l++) {
		sum += count[l];
		if (sum <= VW_HTML_LONG_MAX)
			best = l;
	}
	return best;
}

/* Allocations starting in each bin of a level. */
static void write_starts(const struct vw_html_alloc *a, size_t n, uint64_t w, size_t nb,
                         struct vw_hbuf *b)
{
	size_t i = 0, j;

	vw_hbuf_section(b, "lod.n");
	for (j = 0; j < nb; j++) {
		size_t from = i;

		while (i < n && a[i].start / w == j)
			i++;
		vw_hbuf_u(b, i - from);
	}
}

int vw_html_lod(const struct vw_html_alloc *a, size_t n, uint64_t span, struct vw_hbuf *b,
                struct vw_hbuf *fine, json_t *meta)
{
	json_t *levels = json_array();
	struct end_ev *ends = malloc((n ? n : 1) * sizeof(*ends));
	struct level lv = { 0 };
	uint64_t prev_w = 0, long_w = 0;
	size_t nends = 0, i, last_nb = 0;
	unsigned l, long_l = n > VW_HTML_RAW_MAX ? long_level(a, n, span) : 0;
	int rc = 0;

	if (!levels || !ends) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		if (a[i].end != VW_HTML_NEVER)
			ends[nends++] = (struct end_ev){ a[i].end, a[i].bytes };
	qsort(ends, nends, sizeof(*ends), by_time);
	for (l = 0; n > VW_HTML_RAW_MAX && l < MAX_LEVELS && rc == 0; l++) {
		struct vw_hbuf *to = l <= long_l ? b : fine;

		lv.w = level_width(span, l);
		if (lv.w == prev_w)
			break;
		lv.nb = (size_t)((span + lv.w - 1) / lv.w);
		if (lv.nb > MAX_BINS)
			break;
		lv.moment = malloc(lv.nb * sizeof(*lv.moment));
		lv.total = malloc(lv.nb * sizeof(*lv.total));
		if (!lv.moment || !lv.total) {
			rc = -ENOMEM;
		} else {
			sweep(&lv, a, n, ends, nends);
			write_level(&lv, l, to);
			rc = write_groups(&lv, l, a, n, to);
			if (l <= long_l)
				long_w = lv.w;
			last_nb = lv.nb;
			if (rc == 0 &&
			    json_array_append_new(levels,
			                          json_pack("{s:I, s:I}", "w", (json_int_t)lv.w,
			                                    "n", (json_int_t)lv.nb)) < 0)
				rc = -ENOMEM;
		}
		free(lv.moment);
		free(lv.total);
		lv.moment = lv.total = NULL;
		prev_w = lv.w;
		if (rc == 0 && fine_enough(&lv, a, n))
			break;
	}
	if (rc == 0 && last_nb)
		write_starts(a, n, prev_w, last_nb, b);
	if (rc == 0 && (json_object_set(meta, "lod", levels) < 0 ||
	                json_object_set_new(meta, "long_w", json_integer((json_int_t)long_w)) < 0))
		rc = -ENOMEM;
out:
	json_decref(levels);
	free(ends);
	return rc;
}
