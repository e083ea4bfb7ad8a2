/* html-segments.c — the recorded allocator's memory over time for the HTML
 * view's anatomy: one sweep over segments and the blocks inside them gives
 * the reserved bytes, the allocator cache (bytes of live segments holding
 * no live block) and the live bytes outside every segment at any moment,
 * from which the page splits the memory as mt_anatomy_compute does
 * (fragmentation = reserved - cache - live bytes inside segments).
 *
 * The cache changes with almost every allocation where small segments
 * empty and fill, so it is carried per allocation rather than as a series.
 * Sections (times relative to t0; a series is a step function holding until
 * its next point, times as deltas, values as zigzag deltas):
 *   res.t, res.v    reserved bytes (segments live)
 *   out.t, out.v    live bytes not inside a live segment
 *   cseg.t, cseg.v  changes of the cache at segment events (deltas)
 * and in the detail buffer:
 *   c.on, c.off     per allocation (page order): the cache bytes it took
 *                   when allocated (its segment was empty) and gave back
 *                   when freed (its segment became empty), as 1 + an
 *                   index into meta.cache_sizes, 0 for none
 *   ck.v            the cache after all events at or before the start of
 *                   allocation k * VW_HTML_CHECKPOINT (zigzag deltas)
 */
#define _GNU_SOURCE /* qsort_r */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "html-private.h"

enum { SEG_ALLOC, BLOCK_FREE, BLOCK_ALLOC, SEG_FREE };

struct ev {
	uint64_t ts;
	uint32_t idx;
	uint8_t kind;
};

struct seg_state {
	uint64_t address, bytes;
	uint64_t blocks;   /* live blocks inside */
	uint64_t in_bytes; /* their bytes inside the segment */
	bool alive;
};

struct sweep {
	const struct vw_trace *t;
	const uint32_t *page; /* per lifetime: its index in the page's order */
	uint64_t *on, *off;   /* per page index: cache taken and given back */
	int64_t seg_delta;    /* the cache's change by segment events this moment */
	struct seg_state *segs;
	uint32_t *by_address; /* live segments, sorted by address */
	size_t nlive;
	bool dirty;
	uint32_t *block_seg; /* per block: segment + 1, 0 = outside */
	uint64_t *block_in;  /* per block: bytes inside its segment */
	uint64_t reserved, cache, out;
};

static int by_event(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int by_seg_address(const void *a, const void *b, void *segs)
{
	const struct seg_state *g = segs;
	uint64_t x = g[*(const uint32_t *)a].address, y = g[*(const uint32_t *)b].address;

	return x < y ? -1 : x > y;
}

static void reindex(struct sweep *s)
{
	size_t i;

	s->nlive = 0;
	for (i = 0; i < s->t->nseg; i++)
		if (s->segs[i].alive)
			s->by_address[s->nlive++] = (uint32_t)i;
	qsort_r(s->by_address, s->nlive, sizeof(*s->by_address), by_seg_address, s->segs);
	s->dirty = false;
}

/* The live segment holding address, or -1. */
static long find_segment(struct sweep *s, uint64_t address)
{
	size_t lo = 0, hi;
	const struct seg_state *g;

	if (s->dirty)
		reindex(s);
	hi = s->nlive;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->segs[s->by_address[mid]].address <= address)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	g = &s->segs[s->by_address[lo - 1]];
	return address < g->address + g->bytes ? (long)s->by_address[lo - 1] : -1;
}

static void apply(struct sweep *s, const struct ev *e)
{
	const struct mt_lifetime *l;
	struct seg_state *g;

	switch (e->kind) {
	case SEG_ALLOC:
		l = &s->t->seg[e->idx];
		g = &s->segs[e->idx];
		*g = (struct seg_state){ l->address, l->bytes, 0, 0, true };
		s->reserved += l->bytes;
		s->cache += l->bytes;
		s->seg_delta += (int64_t)l->bytes;
		s->dirty = true;
		break;
	case SEG_FREE:
		g = &s->segs[e->idx];
		g->alive = false;
		s->reserved -= g->bytes;
		if (g->blocks) {
			s->out += g->in_bytes; /* its blocks are outside from now on */
		} else {
			s->cache -= g->bytes;
			s->seg_delta -= (int64_t)g->bytes;
		}
		s->dirty = true;
		break;
	case BLOCK_ALLOC: {
		long k;

		l = &s->t->req[e->idx];
		k = find_segment(s, l->address);
		s->block_seg[e->idx] = 0;
		s->block_in[e->idx] = 0;
		if (k < 0) {
			s->out += l->bytes;
			break;
		}
		g = &s->segs[k];
		s->block_seg[e->idx] = (uint32_t)k + 1;
		s->block_in[e->idx] = l->address + l->bytes <= g->address + g->bytes
		                              ? l->bytes
		                              : g->address + g->bytes - l->address;
		s->out += l->bytes - s->block_in[e->idx];
		if (!g->blocks++) {
			s->cache -= g->bytes;
			s->on[s->page[e->idx]] = g->bytes;
		}
		g->in_bytes += s->block_in[e->idx];
		break;
	}
	case BLOCK_FREE:
		l = &s->t->req[e->idx];
		if (!s->block_seg[e->idx] || !s->segs[s->block_seg[e->idx] - 1].alive) {
			s->out -= l->bytes;
			break;
		}
		g = &s->segs[s->block_seg[e->idx] - 1];
		s->out -= l->bytes - s->block_in[e->idx];
		g->in_bytes -= s->block_in[e->idx];
		if (!--g->blocks) {
			s->cache += g->bytes;
			s->off[s->page[e->idx]] = g->bytes;
		}
		break;
	}
}

struct series {
	const char *t, *v;
	struct vw_point *p;
	size_t n, cap;
	bool oom;
};

static void point(struct series *s, uint64_t t, uint64_t v)
{
	if (s->n && v == s->p[s->n - 1].value)
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct vw_point *p = s->oom ? NULL : realloc(s->p, cap * sizeof(*p));

		if (!p) {
			s->oom = true;
			return;
		}
		s->p = p;
		s->cap = cap;
	}
	s->p[s->n++] = (struct vw_point){ t, v };
}

void vw_html_series(struct vw_hbuf *b, const char *tname, const char *vname,
                    const struct vw_point *p, size_t n)
{
	size_t i;

	vw_hbuf_section(b, tname);
	for (i = 0; i < n; i++)
		vw_hbuf_u(b, p[i].ts - (i ? p[i - 1].ts : 0));
	vw_hbuf_section(b, vname);
	for (i = 0; i < n; i++)
		vw_hbuf_s(b, (int64_t)(p[i].value - (i ? p[i - 1].value : 0)));
}

/* Per allocation: 0, or 1 + the index of its bytes in sizes (the few
 * distinct segment sizes, added as they come). */
static int write_column(struct vw_hbuf *b, const char *name, const uint64_t *v, size_t n,
                        json_t *sizes)
{
	size_t i, k;

	vw_hbuf_section(b, name);
	for (i = 0; i < n; i++) {
		for (k = 0; v[i] && k < json_array_size(sizes); k++)
			if ((uint64_t)json_integer_value(json_array_get(sizes, k)) == v[i])
				break;
		if (v[i] && k == json_array_size(sizes) &&
		    json_array_append_new(sizes, json_integer((json_int_t)v[i])) < 0)
			return -ENOMEM;
		vw_hbuf_u(b, v[i] ? k + 1 : 0);
	}
	return 0;
}

int vw_html_segments(const struct vw_trace *t, const struct vw_html_alloc *a, size_t na,
                     struct vw_hbuf *b, struct vw_hbuf *detail, json_t *meta)
{
	json_t *sizes = json_array();
	size_t n = 2 * (t->nseg + t->nreq), m = 0, i, ck = 0;
	size_t nck = (na + VW_HTML_CHECKPOINT - 1) / VW_HTML_CHECKPOINT;
	struct ev *ev = malloc((n ? n : 1) * sizeof(*ev));
	uint32_t *page = malloc((t->nreq ? t->nreq : 1) * sizeof(*page));
	uint64_t *ckv = calloc(nck + 1, sizeof(*ckv));
	struct sweep s = { .t = t, .page = page };
	struct series ser[3] = {
		{ .t = "res.t", .v = "res.v" },
		{ .t = "out.t", .v = "out.v" },
		{ .t = "cseg.t", .v = "cseg.v" },
	};
	uint64_t cseg = 0;
	int rc = -ENOMEM, k;

	s.segs = calloc(t->nseg + 1, sizeof(*s.segs));
	s.by_address = calloc(t->nseg + 1, sizeof(*s.by_address));
	s.block_seg = calloc(t->nreq + 1, sizeof(*s.block_seg));
	s.block_in = calloc(t->nreq + 1, sizeof(*s.block_in));
	s.on = calloc(na + 1, sizeof(*s.on));
	s.off = calloc(na + 1, sizeof(*s.off));
	if (!sizes || !ev || !page || !ckv || !s.segs || !s.by_address || !s.block_seg ||
	    !s.block_in || !s.on || !s.off)
		goto out;
	for (i = 0; i < na; i++)
		page[a[i].src] = (uint32_t)i;
	for (i = 0; i < t->nseg; i++) {
		ev[m++] = (struct ev){ t->seg[i].start, (uint32_t)i, SEG_ALLOC };
		if (t->seg[i].end != UINT64_MAX)
			ev[m++] = (struct ev){ t->seg[i].end, (uint32_t)i, SEG_FREE };
	}
	for (i = 0; i < t->nreq; i++) {
		if (!t->req[i].bytes)
			continue;
		ev[m++] = (struct ev){ t->req[i].start, (uint32_t)i, BLOCK_ALLOC };
		if (t->req[i].end != UINT64_MAX)
			ev[m++] = (struct ev){ t->req[i].end, (uint32_t)i, BLOCK_FREE };
	}
	qsort(ev, m, sizeof(*ev), by_event);
	for (i = 0; i < m; i++) {
		uint64_t ts = ev[i].ts - t->t0;

		/* checkpoints before this moment hold the state so far */
		for (; ck < nck && a[ck * VW_HTML_CHECKPOINT].start < ts; ck++)
			ckv[ck] = s.cache;
		apply(&s, &ev[i]);
		if (i + 1 < m && ev[i + 1].ts == ev[i].ts)
			continue;
		point(&ser[0], ts, s.reserved);
		point(&ser[1], ts, s.out);
		if (s.seg_delta) {
			cseg += (uint64_t)s.seg_delta;
			point(&ser[2], ts, cseg);
			s.seg_delta = 0;
		}
	}
	for (; ck < nck; ck++)
		ckv[ck] = s.cache;
	rc = 0;
	for (k = 0; k < 3; k++) {
		if (ser[k].oom)
			rc = -ENOMEM;
		vw_html_series(b, ser[k].t, ser[k].v, ser[k].p, ser[k].n);
	}
	if (write_column(detail, "c.on", s.on, na, sizes) < 0 ||
	    write_column(detail, "c.off", s.off, na, sizes) < 0 ||
	    json_object_set(meta, "cache_sizes", sizes) < 0)
		rc = -ENOMEM;
	vw_hbuf_section(detail, "ck.v");
	for (i = 0; i < nck; i++)
		vw_hbuf_s(detail, (int64_t)(ckv[i] - (i ? ckv[i - 1] : 0)));
out:
	json_decref(sizes);
	for (k = 0; k < 3; k++)
		free(ser[k].p);
	free(ev);
	free(page);
	free(ckv);
	free(s.segs);
	free(s.by_address);
	free(s.block_seg);
	free(s.block_in);
	free(s.on);
	free(s.off);
	return rc;
}
