/* html-data.c — what the HTML view carries: every allocation of the device
 * (the live layer: requests, else driver allocations) with its size, call
 * site, stream and the innermost NVTX range open when it was made (as
 * `memtrace report` names it), the level-of-detail pyramid (html-lod.c),
 * the recorded allocator's series (html-segments.c), the samples of device
 * memory in use, the NVTX phases, the failed allocations, the reserved
 * memory of saved replays, and segment maps at a set of moments for the
 * recorded allocator and each policy shown.
 *
 * Sections (times are ns since the trace start t0 of the device, as in
 * `memtrace report`), in allocation order (start, then recording order).
 * The first buffer holds what the first frame draws; then come the parts
 * (meta.parts: their names and sections, in the order the page receives
 * them): "detail" (a.stream, a.range, a.flags, the cache and the maps:
 * what hover and the panels read), "long" (below), "fine" (the finer
 * levels of html-lod.c) and "c<k>", the allocations k * meta.chunk on
 * (meta.chunks: the first start of each; meta.allocations: how many in
 * all):
 *   a.start  start, delta from the allocation before (the chunk's first:
 *            from meta.chunks[k])
 *   a.dur    end - start + 1; 0 = never freed
 *   a.size   index into size.req / size.round (first use order)
 *   a.site   index into meta.sites (0 = none)
 * In the first buffer, the allocations at least as long as level 0's bins
 * (or never freed: what the first frame draws one by one), and in "long"
 * those of at least meta.long_w ns, the same columns of each:
 *   top.i, long.i   allocation index, delta from the one before
 *   top.start, top.dur, top.size, top.site, and so long.*
 * In "detail":
 *   a.stream index into meta.streams
 *   a.range  index into meta.ranges (0 = none)
 *   a.flags  1 = freed, never seen allocated (live from the start)
 *   size.req, size.round   requested bytes, and what the recorded
 *            allocator rounds them to
 *   smp.t, smp.used, smp.proc   samples (time delta; bytes)
 *   ph.s, ph.e, ph.k   NVTX ranges of the phase depth: start, end, phase
 *   pol<k>.t, pol<k>.v  reserved series of policy k
 *   map<k>  segment map k: per segment its bytes and block count, then
 *           per block bytes * 2 + allocated
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html-private.h"

/* Moments with precomputed segment maps: this many across the span, plus
 * the peak and the first failed allocations. */
#define MAP_MOMENTS 64
#define MAP_OOMS 16
/* Requests a policy may replay for the maps in all (each map replays the
 * trace up to its moment). */
#define MAP_REPLAY_BUDGET 40000000ull
#define SERIES_POINTS 4096

struct ctx {
	struct mt_reader *r;
	struct vw_trace t;
	struct mt_report rep;
	struct vw_html_alloc *a;
	size_t n;
	struct vw_html_out *out;
	struct vw_hbuf *b;      /* the first buffer: what the first frame draws */
	struct vw_hbuf *detail; /* what hover and the panels need */
	struct vw_hbuf *long_part;
	json_t *meta;
	char *err;
	size_t errlen;
};

static int oom(struct ctx *c)
{
	return vw_fail(c->err, c->errlen, -ENOMEM, "out of memory");
}

/* ---- a small map from 64-bit keys to dense indices ---- */

struct index_map {
	uint64_t *key;
	uint32_t *val;
	size_t cap, n;
};

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	return k ^ (k >> 33);
}

/* The index of key (new keys get the next one); -1 when out of memory. */
static long index_of(struct index_map *m, uint64_t key)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct index_map g = { .cap = m->cap ? m->cap * 2 : 64, .n = m->n };

		g.key = malloc(g.cap * sizeof(*g.key));
		g.val = malloc(g.cap * sizeof(*g.val));
		if (!g.key || !g.val) {
			free(g.key);
			free(g.val);
			return -1;
		}
		memset(g.val, 0xff, g.cap * sizeof(*g.val));
		for (i = 0; i < m->cap; i++) {
			size_t j;

			if (m->val[i] == UINT32_MAX)
				continue;
			for (j = mix(m->key[i]) & (g.cap - 1); g.val[j] != UINT32_MAX;)
				j = (j + 1) & (g.cap - 1);
			g.key[j] = m->key[i];
			g.val[j] = m->val[i];
		}
		free(m->key);
		free(m->val);
		*m = g;
	}
	for (i = mix(key) & (m->cap - 1); m->val[i] != UINT32_MAX; i = (i + 1) & (m->cap - 1))
		if (m->key[i] == key)
			return m->val[i];
	m->key[i] = key;
	m->val[i] = (uint32_t)m->n;
	return (long)m->n++;
}

static void index_map_free(struct index_map *m)
{
	free(m->key);
	free(m->val);
}

/* ---- allocations ---- */

/* What the recorded allocator hands out for a request: PyTorch's caching
 * allocator rounds to 512 B (at least 512 B); others give what was asked. */
static uint64_t rounded(const struct mt_lifetime *l)
{
	if (l->api != MT_API_TORCH || l->layer != MT_LAYER_REQUEST)
		return l->bytes;
	return l->bytes < 512 ? 512 : (l->bytes + 511) / 512 * 512;
}

static int by_start(const void *x, const void *y)
{
	const struct vw_html_alloc *a = x, *b = y;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->src < b->src ? -1 : a->src > b->src;
}

static int collect(struct ctx *c)
{
	const struct vw_trace *t = &c->t;
	size_t i;
	bool sorted = true;

	c->a = malloc((t->nreq ? t->nreq : 1) * sizeof(*c->a));
	if (!c->a)
		return oom(c);
	for (i = 0; i < t->nreq; i++) {
		const struct mt_lifetime *l = &t->req[i];

		c->a[i] = (struct vw_html_alloc){
			.start = l->start - t->t0,
			.end = l->end == UINT64_MAX ? VW_HTML_NEVER : l->end - t->t0,
			.bytes = l->bytes,
			.site = l->site,
			.src = (uint32_t)i,
		};
		if (i && c->a[i].start < c->a[i - 1].start)
			sorted = false;
	}
	c->n = t->nreq;
	if (!sorted)
		qsort(c->a, c->n, sizeof(*c->a), by_start);
	return 0;
}

static const char *str(struct mt_reader *r, uint32_t id)
{
	const char *s = id ? mt_reader_string(r, id) : NULL;

	return s && *s ? s : NULL;
}

static json_t *site_json(struct mt_reader *r, uint32_t site)
{
	const char *stack = str(r, site);
	size_t i, n = mt_site_frame_count(stack), shown = mt_site_display_index(stack);
	json_t *frames = json_array();
	char frame[1024];

	for (i = 0; i < n; i++)
		json_array_append_new(frames,
		                      json_string(mt_site_frame(stack, i, frame, sizeof(frame))));
	return json_pack("{s:o, s:I}", "stack", frames, "shown",
	                 (json_int_t)(shown == (size_t)-1 ? -1 : (long)shown));
}

/* The columns the timeline draws of allocations [from, to) (ix: their
 * size and site indices, 4 a row), into b with names prefixed by pre;
 * only_long: only those of at least long_w ns or never freed, with their
 * indices. */
static void put_columns(struct ctx *c, struct vw_hbuf *b, const char *pre, size_t from, size_t to,
                        const uint32_t *ix, uint64_t long_w, bool only_long)
{
	static const char *const col[5] = { "i", "start", "dur", "size", "site" };
	char name[32];
	size_t i;
	unsigned k;

	for (k = only_long ? 0 : 1; k < 5; k++) {
		uint64_t prev = k == 1 && !only_long ? c->a[from].start : 0;

		snprintf(name, sizeof(name), "%s.%s", pre, col[k]);
		vw_hbuf_section(b, name);
		for (i = from; i < to; i++) {
			const struct vw_html_alloc *x = &c->a[i];

			if (only_long && x->end != VW_HTML_NEVER && x->end - x->start < long_w)
				continue;
			if (k == 0 || k == 1) {
				uint64_t v = k == 0 ? i : x->start;

				vw_hbuf_u(b, v - prev);
				prev = v;
			} else if (k == 2) {
				vw_hbuf_u(b, x->end == VW_HTML_NEVER ? 0 : x->end - x->start + 1);
			} else {
				vw_hbuf_u(b, ix[4 * i + k - 3]);
			}
		}
	}
}

/* The allocations of level 0's bins into the first buffer, the long ones
 * into their part, and every allocation into parts of VW_HTML_CHUNK. */
static int write_columns(struct ctx *c, const uint32_t *ix)
{
	json_t *firsts = json_array(), *lw = json_object_get(c->meta, "long_w");
	json_t *w0 = json_object_get(json_array_get(json_object_get(c->meta, "lod"), 0), "w");
	uint64_t long_w = lw ? (uint64_t)json_integer_value(lw) : 0;
	size_t from;

	if (!firsts)
		return oom(c);
	if (long_w && w0) {
		put_columns(c, c->b, "top", 0, c->n, ix, (uint64_t)json_integer_value(w0), true);
		put_columns(c, c->long_part, "long", 0, c->n, ix, long_w, true);
	}
	for (from = 0; from < c->n; from += VW_HTML_CHUNK) {
		size_t to = c->n - from < VW_HTML_CHUNK ? c->n : from + VW_HTML_CHUNK;
		char name[16];
		struct vw_hbuf *part;

		snprintf(name, sizeof(name), "c%u", (unsigned)(from / VW_HTML_CHUNK));
		if (!(part = vw_html_part(c->out, name)) ||
		    json_array_append_new(firsts, json_integer((json_int_t)c->a[from].start)) < 0) {
			json_decref(firsts);
			return oom(c);
		}
		put_columns(c, part, "a", from, to, ix, 0, false);
	}
	json_object_set_new(c->meta, "chunks", firsts);
	json_object_set_new(c->meta, "chunk", json_integer(VW_HTML_CHUNK));
	json_object_set_new(c->meta, "allocations", json_integer((json_int_t)c->n));
	return 0;
}

/* The allocation columns and the tables they index. */
static int write_allocs(struct ctx *c)
{
	struct index_map sizes = { 0 }, sites = { 0 }, streams = { 0 }, ranges = { 0 };
	json_t *jsites = json_array(), *jstreams = json_array(), *jranges = json_array();
	uint32_t *sz = malloc((c->n ? c->n : 1) * sizeof(*sz)), *ix = NULL;
	static const char *const names[4] = { "a.size", "a.site", "a.stream", "a.range" };
	struct vw_hbuf *b = c->b;
	size_t i;
	unsigned k;
	int rc = 0;

	ix = malloc((c->n ? c->n : 1) * 4 * sizeof(*ix));
	if (!sz || !ix || !jsites || !jstreams || !jranges) {
		rc = oom(c);
		goto out;
	}
	/* index 0 of sites and ranges is "none" */
	if (index_of(&sites, 0) < 0 || index_of(&ranges, 0) < 0) {
		rc = oom(c);
		goto out;
	}
	json_array_append_new(jsites, json_null());
	json_array_append_new(jranges, json_null());
	for (i = 0; i < c->n && rc == 0; i++) {
		const struct mt_lifetime *l = &c->t.req[c->a[i].src];
		const struct mt_range *g = c->rep.range_of ? c->rep.range_of[c->a[i].src] : NULL;
		size_t before[4] = { sites.n, streams.n, ranges.n, sizes.n };
		long v[4];

		v[0] = index_of(&sizes, l->bytes);
		v[1] = index_of(&sites, l->site);
		v[2] = index_of(&streams, l->stream);
		v[3] = index_of(&ranges, g ? (uint64_t)g->name + 1 : 0);
		if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0) {
			rc = oom(c);
			break;
		}
		if ((size_t)v[0] == sizes.n - 1 && sizes.n > before[3])
			sz[v[0]] = c->a[i].src; /* first lifetime of this size */
		if (sites.n > before[0])
			json_array_append_new(jsites, site_json(c->r, l->site));
		if (streams.n > before[1])
			json_array_append_new(jstreams, json_integer((json_int_t)l->stream));
		if (ranges.n > before[2]) {
			const char *name = str(c->r, g->name);
			json_array_append_new(jranges, json_string(name ? name : "(unnamed)"));
		}
		memcpy(&ix[4 * i],
		       (uint32_t[4]){ (uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2],
		                      (uint32_t)v[3] },
		       sizeof(uint32_t[4]));
	}
	if (rc < 0)
		goto out;
	if ((rc = write_columns(c, ix)) < 0)
		goto out;
	for (k = 2; k < 4; k++) { /* stream and range: details */
		vw_hbuf_section(c->detail, names[k]);
		for (i = 0; i < c->n; i++)
			vw_hbuf_u(c->detail, ix[4 * i + k]);
	}
	vw_hbuf_section(c->detail, "a.flags");
	for (i = 0; i < c->n; i++)
		vw_hbuf_u(c->detail, c->t.req[c->a[i].src].flags & MT_LIFETIME_NO_ALLOC ? 1 : 0);
	vw_hbuf_section(b, "size.req");
	for (i = 0; i < sizes.n; i++)
		vw_hbuf_u(b, c->t.req[sz[i]].bytes);
	vw_hbuf_section(b, "size.round");
	for (i = 0; i < sizes.n; i++)
		vw_hbuf_u(b, rounded(&c->t.req[sz[i]]));
	json_object_set(c->meta, "sites", jsites);
	json_object_set(c->meta, "streams", jstreams);
	json_object_set(c->meta, "ranges", jranges);
out:
	json_decref(jsites);
	json_decref(jstreams);
	json_decref(jranges);
	index_map_free(&sizes);
	index_map_free(&sites);
	index_map_free(&streams);
	index_map_free(&ranges);
	free(sz);
	free(ix);
	return rc;
}

/* ---- samples, phases, failed allocations ---- */

static void write_samples(struct ctx *c)
{
	const struct mt_analysis *d = &c->rep.data;
	struct vw_hbuf *b = c->b;
	size_t i;

	vw_hbuf_section(b, "smp.t");
	for (i = 0; i < d->nsamples; i++)
		vw_hbuf_u(b, d->samples[i].ts - (i ? d->samples[i - 1].ts : d->t0));
	vw_hbuf_section(b, "smp.used");
	for (i = 0; i < d->nsamples; i++)
		vw_hbuf_u(b, d->samples[i].used_bytes);
	vw_hbuf_section(b, "smp.proc");
	for (i = 0; i < d->nsamples; i++)
		vw_hbuf_u(b, d->samples[i].process_bytes);
}

static int write_phases(struct ctx *c)
{
	const struct vw_trace *t = &c->t;
	struct vw_phases p;
	json_t *names = json_array();
	struct vw_hbuf *b = c->b;
	size_t i;
	int pass;

	if (!names)
		return oom(c);
	vw_phases_collect(t, &p);
	for (i = 0; i < p.n; i++) {
		const char *s = str(c->r, p.name[i]);
		json_array_append_new(names, json_string(p.overflow && i + 1 == p.n ? "other"
		                                         : s                        ? s
		                                                                    : "(unnamed)"));
	}
	json_object_set_new(c->meta, "phases", names);
	for (pass = 0; pass < 3; pass++) {
		vw_hbuf_section(b, pass == 0 ? "ph.s" : pass == 1 ? "ph.e" : "ph.k");
		for (i = 0; i < t->nranges; i++) {
			const struct vw_range *g = &t->ranges[i];
			uint64_t end = g->end == MT_TIME_UNKNOWN ? t->t1 : g->end;
			int k;

			if (g->depth != p.depth || (k = vw_phase_index(&p, g->name)) < 0 ||
			    g->start < t->t0)
				continue;
			vw_hbuf_u(b, pass == 0   ? g->start - t->t0
			             : pass == 1 ? (end > g->start ? end : g->start) - t->t0
			                         : (uint64_t)k);
		}
	}
	return 0;
}

/* The OOMs the program saw (mt_failure_roles): one marker each, with the
 * driver attempts behind it counted. */
static int write_ooms(struct ctx *c)
{
	const struct mt_analysis *d = &c->rep.data;
	struct mt_report_failure *roles = calloc(d->nfails + 1, sizeof(*roles));
	json_t *arr = json_array();
	size_t i, k, nooms = 0;

	if (!arr || !roles || mt_failure_roles(d, roles, &nooms) < 0) {
		json_decref(arr);
		free(roles);
		return oom(c);
	}
	for (i = 0; i < d->nfails; i++) {
		size_t attempts = 0;

		if (roles[i].role != MT_FAILURE_OOM)
			continue;
		for (k = 0; k < d->nfails; k++)
			attempts +=
			        roles[k].role == MT_FAILURE_ATTEMPT && roles[k].oom == roles[i].oom;
		json_array_append_new(arr, json_pack("{s:I, s:I, s:I, s:I}", "t",
		                                     (json_int_t)(d->fails[i].ts - d->t0), "bytes",
		                                     (json_int_t)d->fails[i].bytes, "free",
		                                     (json_int_t)d->fails[i].free_bytes, "attempts",
		                                     (json_int_t)attempts));
	}
	free(roles);
	json_object_set_new(c->meta, "ooms", arr);
	return 0;
}

/* ---- policies and segment maps ---- */

/* Whether the trace has a saved replay of this device. */
static bool has_saved(struct ctx *c)
{
	const struct mt_replay_record *recs;
	size_t n, i;

	if (mt_reader_replays(c->r, &recs, &n) < 0)
		return false;
	for (i = 0; i < n; i++)
		if (recs[i].device == c->t.device || recs[i].device == 0)
			return true;
	return false;
}

static int write_map(struct ctx *c, const struct mt_segmap *m, size_t set, size_t k, json_t *list)
{
	char name[32];
	size_t i, j;

	snprintf(name, sizeof(name), "map%zu.%zu", set, k);
	vw_hbuf_section(c->detail, name);
	for (i = 0; i < m->nsegs; i++) {
		const struct mt_segmap_segment *g = &m->segs[i];

		vw_hbuf_u(c->detail, g->bytes);
		vw_hbuf_u(c->detail, g->nblocks);
		for (j = g->first; j < g->first + g->nblocks; j++)
			vw_hbuf_u(c->detail, m->blocks[j].bytes * 2 + m->blocks[j].allocated);
	}
	return json_array_append_new(list, json_pack("{s:I, s:I, s:I, s:I, s:I}", "at",
	                                             (json_int_t)(m->at - c->t.t0), "reserved",
	                                             (json_int_t)m->reserved, "allocated",
	                                             (json_int_t)m->allocated, "largest_free",
	                                             (json_int_t)m->largest_free, "segments",
	                                             (json_int_t)m->nsegs)) < 0
	               ? oom(c)
	               : 0;
}

static int by_value(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* The moments with maps (absolute), sorted and distinct. */
static size_t map_moments(struct ctx *c, uint64_t *at)
{
	const struct vw_trace *t = &c->t;
	size_t n = 0, i, m = 0;

	for (i = 0; i < MAP_MOMENTS; i++)
		at[n++] = t->t0 + (t->t1 - t->t0) * i / (MAP_MOMENTS - 1);
	at[n++] = c->rep.peak_at;
	for (i = 0; i < t->nfails && i < MAP_OOMS; i++)
		at[n++] = t->fails[i].ts;
	qsort(at, n, sizeof(*at), by_value);
	for (i = 0; i < n; i++)
		if (!m || at[i] != at[m - 1])
			at[m++] = at[i];
	return m;
}

/* "#rrggbb" of the policy's colour in every picture (vw_policy_color). */
static const char *policy_color(const char *spec, char *buf, size_t len)
{
	struct vw_rgb rgb = vw_policy_color(spec);

	snprintf(buf, len, "#%02x%02x%02x", (unsigned)lround(rgb.r * 255),
	         (unsigned)lround(rgb.g * 255), (unsigned)lround(rgb.b * 255));
	return buf;
}

static int write_policies(struct ctx *c, const struct mt_render_options *o)
{
	struct vw_policy_run *runs = NULL;
	size_t nruns = 0, nat, i, k, set;
	uint64_t at[MAP_MOMENTS + 1 + MAP_OOMS];
	json_t *pols = json_array(), *sets = json_array();
	int rc = 0;

	if (!pols || !sets) {
		rc = oom(c);
		goto out;
	}
	if (o->policies || has_saved(c)) {
		rc = vw_policy_runs(&c->t, o->policies, SERIES_POINTS, UINT64_MAX, &runs, &nruns,
		                    NULL, c->err, c->errlen);
		if (rc < 0)
			goto out;
	}
	for (i = 0; i < nruns; i++) {
		struct vw_point *p = malloc((runs[i].npoints + 1) * sizeof(*p));
		char name[32], vname[32], color[8];
		size_t j, m = 0;

		if (!p) {
			rc = oom(c);
			goto out;
		}
		for (j = 0; j < runs[i].npoints; j++)
			if (runs[i].reserved[j].ts >= c->t.t0)
				p[m++] = (struct vw_point){ runs[i].reserved[j].ts - c->t.t0,
					                    runs[i].reserved[j].value };
		snprintf(name, sizeof(name), "pol%zu.t", i);
		snprintf(vname, sizeof(vname), "pol%zu.v", i);
		vw_html_series(c->b, name, vname, p, m);
		free(p);
		json_array_append_new(pols,
		                      json_pack("{s:s, s:b, s:I, s:I, s:s, s:s}", "name",
		                                runs[i].name, "saved", runs[i].saved,
		                                "peak_reserved", (json_int_t)runs[i].peak_reserved,
		                                "oom_count", (json_int_t)runs[i].oom_count,
		                                "conditions", runs[i].conditions, "color",
		                                policy_color(runs[i].name, color, sizeof(color))));
	}
	nat = map_moments(c, at);
	for (set = 0; set <= nruns && rc == 0; set++) {
		json_t *list = json_array();
		/* replays for policy maps: within the budget, the peak first */
		size_t every = 1;

		if (set && c->t.nreq * nat > MAP_REPLAY_BUDGET)
			every = (size_t)(c->t.nreq * nat / MAP_REPLAY_BUDGET) + 1;
		for (k = 0; k < nat && rc == 0; k++) {
			struct mt_segmap m;

			if (set && k % every && at[k] != c->rep.peak_at)
				continue;
			rc = set ? vw_segmap_policy(&c->t, runs[set - 1].name, at[k], UINT64_MAX,
			                            &m, c->err, c->errlen)
			         : vw_segmap_recorded(&c->t, at[k], &m, c->err, c->errlen);
			if (rc == -ENOTSUP) { /* a policy that cannot list its segments */
				rc = 0;
				break;
			}
			if (rc == 0) {
				rc = write_map(c, &m, set, json_array_size(list), list);
				mt_segmap_release(&m);
			}
		}
		json_array_append_new(sets, json_pack("{s:s, s:o}", "name",
		                                      set ? runs[set - 1].name : "recorded", "maps",
		                                      list));
	}
	json_object_set(c->meta, "policies", pols);
	json_object_set(c->meta, "maps", sets);
out:
	json_decref(pols);
	json_decref(sets);
	vw_policy_runs_free(runs, nruns);
	return rc;
}

/* ---- the description ---- */

static int describe(struct ctx *c, const char *trace_name)
{
	const struct vw_trace *t = &c->t;
	const struct mt_anatomy *an = &c->rep.anatomy;
	char subtitle[512], t0[32];
	json_t *d;
	int rc;

	vw_trace_subtitle(t, trace_name, subtitle, sizeof(subtitle));
	snprintf(t0, sizeof(t0), "%llu", (unsigned long long)t->t0);
	d = json_pack("{s:s, s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:I, s:b, s:b, s:I, s:I}", "trace",
	              trace_name ? trace_name : "trace", "subtitle", subtitle, "device_name",
	              t->dev->name && *t->dev->name ? t->dev->name : "unknown GPU", "device_total",
	              (json_int_t)t->dev->total_bytes, "t0", t0, "span",
	              (json_int_t)(t->t1 - t->t0 + 1), "layer", (json_int_t)t->layer, "peak_bytes",
	              (json_int_t)c->rep.peak_bytes, "peak_at",
	              (json_int_t)(c->rep.peak_at - t->t0), "segments", t->nseg > 0, "cache_known",
	              an->cache_known, "raw_max", (json_int_t)VW_HTML_RAW_MAX, "checkpoint",
	              (json_int_t)VW_HTML_CHECKPOINT);
	rc = !d || json_object_update(c->meta, d) < 0 ? oom(c) : 0;
	json_decref(d);
	return rc;
}

int vw_html_data(struct mt_reader *r, const struct mt_render_options *o, struct vw_html_out *out,
                 json_t *meta, char *err, size_t errlen)
{
	struct ctx c = {
		.r = r, .out = out, .b = &out->first, .meta = meta, .err = err, .errlen = errlen
	};
	struct vw_hbuf *fine;
	struct mt_report_options ro = { 0 };
	int rc;

	rc = vw_trace_load(&c.t, r, o->device,
	                   VW_LOAD_SEGMENTS | VW_LOAD_SAMPLES | VW_LOAD_RANGES | VW_LOAD_FAILS, err,
	                   errlen);
	if (rc < 0)
		return rc;
	rc = mt_report_build(&c.rep, r, c.t.device, &ro, err, errlen);
	if (rc < 0) {
		vw_trace_release(&c.t);
		return rc;
	}
	rc = collect(&c);
	if (rc == 0)
		rc = describe(&c, o->trace_name);
	if (rc == 0 &&
	    (!(c.detail = vw_html_part(out, "detail")) ||
	     !(c.long_part = vw_html_part(out, "long")) || !(fine = vw_html_part(out, "fine"))))
		rc = oom(&c);
	if (rc == 0 && vw_html_lod(c.a, c.n, c.t.t1 - c.t.t0 + 1, c.b, fine, meta) < 0)
		rc = oom(&c);
	if (rc == 0)
		rc = write_allocs(&c);
	if (rc == 0 && c.t.layer == MT_LAYER_REQUEST && c.t.nseg &&
	    vw_html_segments(&c.t, c.a, c.n, c.b, c.detail, meta) < 0)
		rc = oom(&c);
	if (rc == 0) {
		write_samples(&c);
		rc = write_phases(&c);
	}
	if (rc == 0)
		rc = write_ooms(&c);
	if (rc == 0)
		rc = write_policies(&c, o);
	free(c.a);
	mt_report_release(&c.rep);
	vw_trace_release(&c.t);
	return rc;
}
