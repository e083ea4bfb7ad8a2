/* snapshot-import.c — a PyTorch memory snapshot's structure as events.
 *
 * Model: the dict torch.cuda.memory._snapshot() returns (PyTorch's
 * torch/csrc/cuda/memory_snapshot.cpp builds it; torch/cuda/_memory_viz.py
 * and MemoryViz.js read it): "segments" (the allocator's state at the end:
 * each segment with its blocks), "device_traces" (per CUDA ordinal, the
 * allocator's trace entries in order: alloc, free_requested,
 * free_completed, segment_alloc/free/map/unmap, oom, snapshot, each with
 * addr, size, stream, time_us and frames), "allocator_settings" and
 * "external_annotations". A plain list is a snapshot of segments only.
 *
 * Mapping, per device:
 *  - alloc: a request-layer alloc of the requested size; frames become the
 *    call site (innermost first, "filename:line:name" per line).
 *  - free_requested: a request-layer free at that moment whose reuse delay
 *    runs to the matching free_completed (the block was still in use on
 *    another stream until then); free_completed has no event of its own.
 *  - segment_alloc/free: driver-layer alloc/free (device memory);
 *    segment_map/unmap: driver-layer VMM pieces (expandable segments). An
 *    unmap that covers part of a piece frees the piece and maps again what
 *    stays mapped, at the same moment.
 *  - oom: a request-layer alloc_failed with the device's free bytes.
 *  - snapshot: an empty range "snapshot"; user_metadata and compile_context
 *    values: ranges over the entries that carry them; external annotations
 *    (record_function START/END): ranges.
 *  - time_us becomes ns on the trace's clock; a time earlier than the
 *    entry before it is raised to it (the entries' order is the truth).
 *
 * Partial history: when history began after allocations already existed,
 * or the ring buffer (max_entries) wrapped, the entries show frees of
 * blocks they never allocated, and the final segments hold blocks and
 * segments they never allocated. Those were live at the first entry: they
 * are written as allocations at its time, and the trace is marked
 * (meta history_from). Nothing else is made up.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "interop-private.h"

#define SNAPSHOT_DOMAIN "pytorch"

enum action {
	A_UNKNOWN = 0,
	A_ALLOC,
	A_FREE_REQUESTED,
	A_FREE_COMPLETED,
	A_SEGMENT_ALLOC,
	A_SEGMENT_FREE,
	A_SEGMENT_MAP,
	A_SEGMENT_UNMAP,
	A_OOM,
	A_SNAPSHOT,
};

static const char *const action_names[] = {
	[A_ALLOC] = "alloc",
	[A_FREE_REQUESTED] = "free_requested",
	[A_FREE_COMPLETED] = "free_completed",
	[A_SEGMENT_ALLOC] = "segment_alloc",
	[A_SEGMENT_FREE] = "segment_free",
	[A_SEGMENT_MAP] = "segment_map",
	[A_SEGMENT_UNMAP] = "segment_unmap",
	[A_OOM] = "oom",
	[A_SNAPSHOT] = "snapshot",
};

/* One trace entry, checked. */
struct entry {
	enum action action;
	uint64_t addr, size, stream, ts;
	uint64_t device_free;
	const struct io_value *frames;
	const struct io_value *user_metadata, *compile_context;
};

/* Mapped ranges [start, end) of expandable segments, sorted, disjoint. */
struct piece {
	uint64_t start, end;
};
struct pieces {
	struct piece *v;
	size_t n, cap;
};

enum cut_part { CUT_GAP, CUT_PIECE, CUT_REMAINDER };

struct snap {
	struct io_import *im;
	struct io_sink *s;
	uint32_t process;
	uint64_t t0;         /* the earliest first entry of any device; 0 when none */
	struct io_map sites; /* frames value → site id */
	char *site;          /* the call-site string being built */
	size_t site_cap;
	bool any_frames;
	uint64_t history_from;
	/* the device being read */
	unsigned ordinal;
	uint32_t device;
	struct io_value *const *entries;
	size_t n;
	struct entry *e;    /* n checked entries */
	uint64_t *delay;    /* per free_requested: its reuse delay */
	struct pieces maps; /* VMM pieces mapped now */
	/* what was live at the first entry */
	struct live_before {
		uint64_t addr, size, stream;
		const struct io_value *frames;
		uint8_t layer, mem_kind;
	} * before;
	size_t nbefore, before_cap;
};

static int fail(struct snap *sn, int rc, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int fail(struct snap *sn, int rc, const char *fmt, ...)
{
	char msg[240];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mt_fail(sn->im->err, sn->im->errlen, rc, "snapshot: %s", msg);
}

static int sink_failed(struct snap *sn, int rc)
{
	return mt_fail(sn->im->err, sn->im->errlen, rc, "%s", sn->s->err);
}

/* ---- mapped pieces ---------------------------------------------------------- */

/* Index of the first piece that ends after addr. */
static size_t first_after(const struct pieces *ps, uint64_t addr)
{
	size_t lo = 0, hi = ps->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ps->v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int pieces_insert(struct pieces *ps, uint64_t start, uint64_t end)
{
	size_t i = first_after(ps, start);

	if (start >= end)
		return 0;
	if (mt_array_grow((void **)&ps->v, &ps->cap, ps->n, sizeof(*ps->v)) < 0)
		return -ENOMEM;
	memmove(ps->v + i + 1, ps->v + i, (ps->n - i) * sizeof(*ps->v));
	ps->v[i] = (struct piece){ start, end };
	ps->n++;
	return 0;
}

/* Removes [start, end) from the set. fn (may be NULL) hears, in address
 * order, the gaps of [start, end) no piece covered, every piece that
 * overlapped (whole), and the remainders of those pieces that stay. */
static int pieces_cut(struct pieces *ps, uint64_t start, uint64_t end,
                      int (*fn)(void *arg, enum cut_part part, uint64_t s, uint64_t e), void *arg)
{
	size_t i = first_after(ps, start), j = i;
	uint64_t at = start;
	struct piece keep[2];
	size_t nkeep = 0;
	int rc = 0;

	while (j < ps->n && ps->v[j].start < end) {
		struct piece p = ps->v[j++];
		if (p.start > at && fn)
			rc = rc ? rc : fn(arg, CUT_GAP, at, p.start);
		if (fn)
			rc = rc ? rc : fn(arg, CUT_PIECE, p.start, p.end);
		if (p.start < start)
			keep[nkeep++] = (struct piece){ p.start, start };
		if (p.end > end)
			keep[nkeep++] = (struct piece){ end, p.end };
		at = p.end;
	}
	if (at < end && fn)
		rc = rc ? rc : fn(arg, CUT_GAP, at, end);
	if (j < ps->n) /* none may be held yet: ps->v is then NULL */
		memmove(ps->v + i, ps->v + j, (ps->n - j) * sizeof(*ps->v));
	ps->n -= j - i;
	for (size_t k = 0; k < nkeep && rc >= 0; k++) {
		if (fn)
			rc = fn(arg, CUT_REMAINDER, keep[k].start, keep[k].end);
		if (rc >= 0 && pieces_insert(ps, keep[k].start, keep[k].end) < 0)
			rc = -ENOMEM;
	}
	return rc;
}

/* ---- reading the structure ---------------------------------------------------- */

static bool get_u64(const struct io_value *d, const char *key, uint64_t *out)
{
	const struct io_value *v = io_get(d, key);
	int64_t i;

	if (io_as_u64(v, out))
		return true;
	/* streams and addresses are written as int64 */
	if (io_as_i64(v, &i)) {
		*out = (uint64_t)i;
		return true;
	}
	return false;
}

static enum action action_of(const struct io_value *v)
{
	for (size_t a = 1; a < sizeof(action_names) / sizeof(action_names[0]); a++)
		if (io_is_str(v, action_names[a]))
			return (enum action)a;
	return A_UNKNOWN;
}

/* Checks entry i of the device and fills sn->e[i]; times are raised to
 * keep the order. */
static int read_entry(struct snap *sn, size_t i, uint64_t *last_ts, bool *have_ts)
{
	const struct io_value *d = sn->entries[i];
	struct entry *e = &sn->e[i];
	uint64_t us;

	if (!d || d->type != IO_DICT)
		return fail(sn, -EBADMSG, "device_traces[%u][%zu] is not a dict", sn->ordinal, i);
	memset(e, 0, sizeof(*e));
	e->action = action_of(io_get(d, "action"));
	if (e->action == A_UNKNOWN) {
		if (!io_get(d, "action") || io_get(d, "action")->type != IO_STR)
			return fail(sn, -EBADMSG, "device_traces[%u][%zu] has no action",
			            sn->ordinal, i);
		sn->im->res->skipped++;
	}
	if (e->action == A_OOM) {
		if (!get_u64(d, "device_free", &e->device_free) || !get_u64(d, "size", &e->size))
			return fail(sn, -EBADMSG,
			            "device_traces[%u][%zu]: an oom without size or "
			            "device_free",
			            sn->ordinal, i);
	} else if (e->action != A_UNKNOWN && e->action != A_SNAPSHOT) {
		if (!get_u64(d, "addr", &e->addr) || !get_u64(d, "size", &e->size))
			return fail(sn, -EBADMSG, "device_traces[%u][%zu]: %s without addr or size",
			            sn->ordinal, i, action_names[e->action]);
	}
	get_u64(d, "stream", &e->stream);
	e->frames = io_get(d, "frames");
	e->user_metadata = io_get(d, "user_metadata");
	e->compile_context = io_get(d, "compile_context");
	if (get_u64(d, "time_us", &us)) {
		if (us > UINT64_MAX / 1000)
			return fail(sn, -EBADMSG,
			            "device_traces[%u][%zu]: time_us %" PRIu64 " out of range",
			            sn->ordinal, i, us);
		e->ts = us * 1000;
		if (*have_ts && e->ts < *last_ts) {
			e->ts = *last_ts;
			sn->im->res->clamped++;
		}
	} else {
		/* no time: 1 us after the entry before */
		e->ts = *have_ts ? *last_ts + 1000 : sn->t0;
	}
	*last_ts = e->ts;
	*have_ts = true;
	return 0;
}

/* ---- call sites ------------------------------------------------------------------ */

static int site_append(struct snap *sn, size_t *len, const char *s, size_t n)
{
	if (*len + n + 1 > sn->site_cap) {
		size_t cap = sn->site_cap ? sn->site_cap : 256;
		char *p;
		while (cap < *len + n + 1)
			cap *= 2;
		p = realloc(sn->site, cap);
		if (!p)
			return -ENOMEM;
		sn->site = p;
		sn->site_cap = cap;
	}
	memcpy(sn->site + *len, s, n);
	*len += n;
	sn->site[*len] = 0;
	return 0;
}

/* The interned call site of a frames list (0 for none or empty). */
static int site_of(struct snap *sn, const struct io_value *frames, uint32_t *id)
{
	struct io_value *const *f;
	size_t nf, len = 0;
	uint64_t cached;
	int rc = 0;

	*id = 0;
	f = io_items(frames, &nf);
	if (!nf)
		return 0;
	if (io_map_get(&sn->sites, (uintptr_t)frames, 0, &cached)) {
		*id = (uint32_t)cached;
		return 0;
	}
	for (size_t i = 0; i < nf && rc == 0; i++) {
		const struct io_value *file = io_get(f[i], "filename");
		const struct io_value *name = io_get(f[i], "name");
		char line[24];
		uint64_t ln = 0;
		if (!file || file->type != IO_STR || !name || name->type != IO_STR)
			continue;
		get_u64(f[i], "line", &ln);
		snprintf(line, sizeof(line), ":%" PRIu64 ":", ln);
		if (len)
			rc = site_append(sn, &len, "\n", 1);
		if (!rc)
			rc = site_append(sn, &len, file->s, file->n);
		if (!rc)
			rc = site_append(sn, &len, line, strlen(line));
		if (!rc)
			rc = site_append(sn, &len, name->s, name->n);
	}
	if (rc < 0)
		return fail(sn, rc, "out of memory");
	if (len) {
		/* a string with a NUL inside is cut there, as SQLite would */
		rc = sn->s->intern(sn->s, sn->site, id);
		if (rc < 0)
			return sink_failed(sn, rc);
		sn->any_frames = true;
	}
	if (io_map_put(&sn->sites, (uintptr_t)frames, 0, *id) < 0)
		return fail(sn, -ENOMEM, "out of memory");
	return 0;
}

/* ---- writing events ------------------------------------------------------------- */

static int append(struct snap *sn, struct mt_event *ev)
{
	int rc;

	ev->process = sn->process;
	ev->device = sn->device;
	rc = sn->s->append(sn->s, ev);
	if (rc < 0)
		return sink_failed(sn, rc);
	sn->im->res->events++;
	return 0;
}

static int alloc_event(struct snap *sn, unsigned kind, uint64_t ts, uint64_t addr, uint64_t bytes,
                       uint64_t stream, uint8_t layer, uint8_t mem_kind,
                       const struct io_value *frames, uint64_t reuse_delay)
{
	struct mt_event ev = { .kind = (uint8_t)kind, .ts = ts };
	int rc;

	ev.alloc.address = addr;
	ev.alloc.bytes = bytes;
	ev.alloc.stream = stream;
	ev.alloc.reuse_delay = reuse_delay;
	ev.alloc.layer = layer;
	ev.alloc.mem_kind = mem_kind;
	ev.alloc.api = MT_API_TORCH;
	if (kind == MT_EVENT_ALLOC && (rc = site_of(sn, frames, &ev.alloc.site)) < 0)
		return rc;
	return append(sn, &ev);
}

static int range_event(struct snap *sn, uint64_t start, uint64_t end, const char *name,
                       size_t name_len, const char *domain, uint32_t depth)
{
	struct mt_event ev = { .kind = MT_EVENT_RANGE, .ts = start };
	char buf[512];
	int rc;

	snprintf(buf, sizeof(buf), "%.*s", (int)(name_len < 511 ? name_len : 511), name);
	ev.range.end = end;
	ev.range.depth = depth;
	if ((rc = sn->s->intern(sn->s, buf, &ev.range.name)) < 0 ||
	    (rc = sn->s->intern(sn->s, domain, &ev.range.domain)) < 0)
		return sink_failed(sn, rc);
	return append(sn, &ev);
}

/* ---- what was live before the first entry ------------------------------------ */

static int live_before(struct snap *sn, uint64_t addr, uint64_t size, uint64_t stream,
                       const struct io_value *frames, uint8_t layer, uint8_t mem_kind)
{
	if (mt_array_grow((void **)&sn->before, &sn->before_cap, sn->nbefore, sizeof(*sn->before)) < 0)
		return fail(sn, -ENOMEM, "out of memory");
	sn->before[sn->nbefore++] =
	        (struct live_before){ addr, size, stream, frames, layer, mem_kind };
	return 0;
}

static int note_gap(void *arg, enum cut_part part, uint64_t s, uint64_t e)
{
	struct snap *sn = arg;

	if (part != CUT_GAP)
		return 0;
	return live_before(sn, s, e - s, 0, NULL, MT_LAYER_DRIVER, MT_MEM_VMM);
}

/* Final block state strings. */
static bool block_allocated(const struct io_value *b)
{
	const struct io_value *state = io_get(b, "state");

	return !state || io_is_str(state, "active_allocated");
}

/* The final segments of this device: blocks and segments the entries
 * never allocated were live before them. blocks/segs: what the entries
 * leave live at the end. */
static int final_state(struct snap *sn, const struct io_value *segments, struct io_map *blocks,
                       struct io_map *segs)
{
	struct io_value *const *sv;
	size_t ns;

	sv = io_items(segments, &ns);
	for (size_t i = 0; i < ns; i++) {
		const struct io_value *seg = sv[i];
		struct io_value *const *bv;
		uint64_t dev = 0, addr, total, stream = 0, at;
		const struct io_value *x;
		size_t nb;
		int rc;

		if (!seg || seg->type != IO_DICT)
			return fail(sn, -EBADMSG, "segments[%zu] is not a dict", i);
		get_u64(seg, "device", &dev);
		if (dev != sn->ordinal)
			continue;
		if (!get_u64(seg, "address", &addr) || !get_u64(seg, "total_size", &total))
			return fail(sn, -EBADMSG, "segments[%zu] without address or total_size", i);
		get_u64(seg, "stream", &stream);
		x = io_get(seg, "is_expandable");
		if (x && x->type == IO_BOOL && x->i) {
			/* mapped at the end: what no piece covers was mapped
			 * before the first entry */
			struct pieces copy = { 0 };
			if (sn->maps.n && !(copy.v = malloc(sn->maps.n * sizeof(*copy.v))))
				return fail(sn, -ENOMEM, "out of memory");
			if (sn->maps.n)
				memcpy(copy.v, sn->maps.v, sn->maps.n * sizeof(*copy.v));
			copy.n = copy.cap = sn->maps.n;
			rc = pieces_cut(&copy, addr, addr + total, note_gap, sn);
			free(copy.v);
			if (rc < 0)
				return rc;
		} else if (!io_map_get(segs, addr, 0, NULL)) {
			rc = live_before(sn, addr, total, stream, io_get(seg, "frames"),
			                 MT_LAYER_DRIVER, MT_MEM_DEVICE);
			if (rc < 0)
				return rc;
		}
		bv = io_items(io_get(seg, "blocks"), &nb);
		at = addr;
		for (size_t k = 0; k < nb; k++) {
			uint64_t baddr = at, size = 0, requested;
			if (!bv[k] || bv[k]->type != IO_DICT || !get_u64(bv[k], "size", &size))
				return fail(sn, -EBADMSG, "segments[%zu].blocks[%zu] without size",
				            i, k);
			get_u64(bv[k], "address", &baddr);
			if (!get_u64(bv[k], "requested_size", &requested))
				requested = size;
			at = baddr + size;
			if (!block_allocated(bv[k]) || io_map_get(blocks, baddr, 0, NULL))
				continue;
			rc = live_before(sn, baddr, requested, stream, io_get(bv[k], "frames"),
			                 MT_LAYER_REQUEST, MT_MEM_DEVICE);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/* Pass 1: the reuse delay of each free, and what was live before the first
 * entry. */
static int plan(struct snap *sn, const struct io_value *segments)
{
	struct io_map blocks = { 0 }, segs = { 0 }, pending = { 0 };
	uint64_t v;
	int rc = 0;

	for (size_t i = 0; i < sn->n && rc >= 0; i++) {
		const struct entry *e = &sn->e[i];
		switch (e->action) {
		case A_ALLOC:
			rc = io_map_put(&blocks, e->addr, 0, e->size);
			break;
		case A_FREE_REQUESTED:
			if (!io_map_take(&blocks, e->addr, 0, NULL))
				rc = live_before(sn, e->addr, e->size, e->stream, e->frames,
				                 MT_LAYER_REQUEST, MT_MEM_DEVICE);
			if (rc >= 0)
				rc = io_map_put(&pending, e->addr, 0, i);
			break;
		case A_FREE_COMPLETED:
			if (io_map_take(&pending, e->addr, 0, &v))
				sn->delay[v] = e->ts - sn->e[v].ts;
			else
				sn->im->res->skipped++; /* requested before the first entry */
			break;
		case A_SEGMENT_ALLOC:
			rc = io_map_put(&segs, e->addr, 0, e->size);
			break;
		case A_SEGMENT_FREE:
			if (!io_map_take(&segs, e->addr, 0, NULL))
				rc = live_before(sn, e->addr, e->size, e->stream, e->frames,
				                 MT_LAYER_DRIVER, MT_MEM_DEVICE);
			break;
		case A_SEGMENT_MAP:
			rc = pieces_cut(&sn->maps, e->addr, e->addr + e->size, NULL, NULL);
			if (rc >= 0)
				rc = pieces_insert(&sn->maps, e->addr, e->addr + e->size);
			break;
		case A_SEGMENT_UNMAP:
			rc = pieces_cut(&sn->maps, e->addr, e->addr + e->size, note_gap, sn);
			break;
		default:
			break;
		}
		if (e->addr + e->size < e->addr && rc >= 0)
			rc = fail(sn, -EBADMSG, "device_traces[%u][%zu]: addr + size overflows",
			          sn->ordinal, i);
	}
	if (rc == -ENOMEM)
		rc = fail(sn, rc, "out of memory");
	if (rc >= 0)
		rc = final_state(sn, segments, &blocks, &segs);
	io_map_release(&blocks);
	io_map_release(&segs);
	io_map_release(&pending);
	return rc;
}

/* ---- pass 2: the events ------------------------------------------------------------ */

struct unmap_ctx {
	struct snap *sn;
	uint64_t ts, stream;
};

static int unmap_part(void *arg, enum cut_part part, uint64_t s, uint64_t e)
{
	struct unmap_ctx *u = arg;

	if (part == CUT_GAP)
		return 0; /* already reconstructed as mapped before */
	return alloc_event(u->sn, part == CUT_PIECE ? MT_EVENT_FREE : MT_EVENT_ALLOC, u->ts, s,
	                   e - s, u->stream, MT_LAYER_DRIVER, MT_MEM_VMM, NULL, 0);
}

/* A string-valued field that holds for a run of entries becomes a range. */
struct run {
	const char *field;
	const struct io_value *value; /* current, NULL when none */
	uint64_t start;
};

static bool run_value_set(const struct io_value *v)
{
	return v && v->type == IO_STR && v->n && !io_is_str(v, "N/A");
}

static int run_step(struct snap *sn, struct run *r, const struct io_value *v, uint64_t ts)
{
	int rc = 0;

	if (!run_value_set(v))
		v = NULL;
	if (r->value && (!v || v->n != r->value->n || memcmp(v->s, r->value->s, v->n))) {
		rc = range_event(sn, r->start, ts, r->value->s, r->value->n, r->field, 0);
		r->value = NULL;
	}
	if (!r->value && v) {
		r->value = v;
		r->start = ts;
	}
	return rc;
}

static int write_events(struct snap *sn)
{
	struct run runs[2] = { { "user_metadata", NULL, 0 }, { "compile_context", NULL, 0 } };
	uint64_t t = sn->n ? sn->e[0].ts : sn->t0;
	int rc = 0;

	/* Segments first, then blocks: what was live at the first entry. */
	for (int layer = MT_LAYER_DRIVER; layer <= MT_LAYER_REQUEST; layer++)
		for (size_t i = 0; i < sn->nbefore && rc >= 0; i++) {
			const struct live_before *b = &sn->before[i];
			if (b->layer != layer)
				continue;
			rc = alloc_event(sn, MT_EVENT_ALLOC, t, b->addr, b->size, b->stream,
			                 b->layer, b->mem_kind, b->frames, 0);
			if (b->mem_kind == MT_MEM_VMM && rc >= 0 &&
			    pieces_insert(&sn->maps, b->addr, b->addr + b->size) < 0)
				rc = fail(sn, -ENOMEM, "out of memory");
			sn->im->res->reconstructed++;
			if (layer == MT_LAYER_REQUEST)
				sn->im->res->reconstructed_bytes += b->size;
		}
	if (sn->nbefore) {
		sn->im->res->partial = true;
		if (t > sn->history_from)
			sn->history_from = t;
	}
	for (size_t i = 0; i < sn->n && rc >= 0; i++) {
		const struct entry *e = &sn->e[i];
		struct mt_event ev = { .kind = MT_EVENT_ALLOC_FAILED, .ts = e->ts };
		struct unmap_ctx u = { sn, e->ts, e->stream };

		switch (e->action) {
		case A_ALLOC:
			rc = alloc_event(sn, MT_EVENT_ALLOC, e->ts, e->addr, e->size, e->stream,
			                 MT_LAYER_REQUEST, MT_MEM_DEVICE, e->frames, 0);
			break;
		case A_FREE_REQUESTED:
			rc = alloc_event(sn, MT_EVENT_FREE, e->ts, e->addr, e->size, e->stream,
			                 MT_LAYER_REQUEST, MT_MEM_DEVICE, NULL, sn->delay[i]);
			break;
		case A_SEGMENT_ALLOC:
		case A_SEGMENT_FREE:
			rc = alloc_event(
			        sn, e->action == A_SEGMENT_ALLOC ? MT_EVENT_ALLOC : MT_EVENT_FREE,
			        e->ts, e->addr, e->size, e->stream, MT_LAYER_DRIVER, MT_MEM_DEVICE,
			        e->frames, 0);
			break;
		case A_SEGMENT_MAP:
			rc = pieces_cut(&sn->maps, e->addr, e->addr + e->size, unmap_part, &u);
			if (rc >= 0)
				rc = alloc_event(sn, MT_EVENT_ALLOC, e->ts, e->addr, e->size,
				                 e->stream, MT_LAYER_DRIVER, MT_MEM_VMM, e->frames,
				                 0);
			if (rc >= 0 && pieces_insert(&sn->maps, e->addr, e->addr + e->size) < 0)
				rc = -ENOMEM;
			break;
		case A_SEGMENT_UNMAP:
			rc = pieces_cut(&sn->maps, e->addr, e->addr + e->size, unmap_part, &u);
			break;
		case A_OOM:
			ev.failed.bytes = e->size;
			ev.failed.free_bytes = e->device_free;
			ev.failed.stream = e->stream;
			ev.failed.error = 2; /* cudaErrorMemoryAllocation */
			ev.failed.layer = MT_LAYER_REQUEST;
			ev.failed.api = MT_API_TORCH;
			rc = site_of(sn, e->frames, &ev.failed.site);
			if (rc >= 0)
				rc = append(sn, &ev);
			break;
		case A_SNAPSHOT:
			rc = range_event(sn, e->ts, e->ts, "snapshot", 8, SNAPSHOT_DOMAIN, 0);
			break;
		default:
			break;
		}
		if (rc >= 0)
			rc = run_step(sn, &runs[0], e->user_metadata, e->ts);
		if (rc >= 0)
			rc = run_step(sn, &runs[1], e->compile_context, e->ts);
		if (sn->im->progress && (i & 0xffff) == 0)
			sn->im->progress(sn->im->progress_arg, sn->im->res->entries + i,
			                 sn->im->res->entries + sn->n);
	}
	for (int k = 0; k < 2 && rc >= 0; k++)
		rc = run_step(sn, &runs[k], NULL, sn->n ? sn->e[sn->n - 1].ts : t);
	if (rc == -ENOMEM)
		rc = fail(sn, rc, "out of memory");
	return rc;
}

/* ---- external annotations ----------------------------------------------------------- */

/* record_function START/END pairs of one device as ranges. */
static int annotations(struct snap *sn, const struct io_value *list)
{
	struct open {
		const struct io_value *name;
		uint64_t start;
	} *stack = NULL;
	size_t depth = 0, cap = 0, n;
	struct io_value *const *a = io_items(list, &n);
	int rc = 0;

	for (size_t i = 0; i < n && rc >= 0; i++) {
		const struct io_value *name = io_get(a[i], "name");
		const struct io_value *stage = io_get(a[i], "stage");
		uint64_t dev = 0, us = 0;

		get_u64(a[i], "device", &dev);
		if (dev != sn->ordinal || !name || name->type != IO_STR ||
		    !get_u64(a[i], "time_us", &us) || us > UINT64_MAX / 1000)
			continue;
		if (io_is_str(stage, "START")) {
			if (mt_array_grow((void **)&stack, &cap, depth, sizeof(*stack)) < 0) {
				rc = fail(sn, -ENOMEM, "out of memory");
				break;
			}
			stack[depth++] = (struct open){ name, us * 1000 };
		} else if (io_is_str(stage, "END")) {
			size_t k = depth;
			while (k > 0 && (stack[k - 1].name->n != name->n ||
			                 memcmp(stack[k - 1].name->s, name->s, name->n)))
				k--;
			if (!k)
				continue;
			rc = range_event(sn, stack[k - 1].start, us * 1000, name->s, name->n,
			                 "annotation", (uint32_t)(k - 1));
			memmove(stack + k - 1, stack + k, (depth - k) * sizeof(*stack));
			depth--;
		}
	}
	for (size_t k = 0; k < depth && rc >= 0; k++)
		rc = range_event(sn, stack[k].start, MT_TIME_UNKNOWN, stack[k].name->s,
		                 stack[k].name->n, "annotation", (uint32_t)k);
	free(stack);
	return rc;
}

/* ---- one device, the whole snapshot --------------------------------------------------- */

static int import_device(struct snap *sn, const struct io_value *trace,
                         const struct io_value *segments, const struct io_value *annots)
{
	struct mt_device d = { .ordinal = sn->ordinal,
		               .name = "",
		               .uuid = "",
		               .driver_version = "",
		               .cuda_version = "" };
	uint64_t last = 0;
	bool have = false;
	int rc;

	sn->entries = io_items(trace, &sn->n);
	sn->nbefore = 0;
	sn->maps.n = 0;
	rc = sn->s->add_device(sn->s, &d, &sn->device);
	if (rc < 0)
		return sink_failed(sn, rc);
	free(sn->e);
	free(sn->delay);
	sn->e = calloc(sn->n ? sn->n : 1, sizeof(*sn->e));
	sn->delay = calloc(sn->n ? sn->n : 1, sizeof(*sn->delay));
	if (!sn->e || !sn->delay)
		return fail(sn, -ENOMEM, "out of memory");
	for (size_t i = 0; i < sn->n; i++)
		if ((rc = read_entry(sn, i, &last, &have)) < 0)
			return rc;
	if ((rc = plan(sn, segments)) < 0)
		return rc;
	sn->maps.n = 0;
	if ((rc = write_events(sn)) < 0)
		return rc;
	if ((rc = annotations(sn, annots)) < 0)
		return rc;
	sn->im->res->entries += sn->n;
	return 0;
}

/* The earliest first-entry time of any device (0 when no device has
 * entries with times). */
static uint64_t first_time(const struct io_value *traces)
{
	struct io_value *const *tv;
	uint64_t t0 = 0, us;
	bool any = false;
	size_t n;

	tv = io_items(traces, &n);
	for (size_t d = 0; d < n; d++) {
		size_t ne;
		struct io_value *const *ev = io_items(tv[d], &ne);
		if (ne && ev[0] && get_u64(ev[0], "time_us", &us) && us <= UINT64_MAX / 1000 &&
		    (!any || us * 1000 < t0)) {
			t0 = us * 1000;
			any = true;
		}
	}
	return t0;
}

/* The highest device ordinal that segments name, plus one. */
static size_t segment_devices(const struct io_value *segments)
{
	struct io_value *const *sv;
	size_t n, count = 0;
	uint64_t dev;

	sv = io_items(segments, &n);
	for (size_t i = 0; i < n; i++)
		if (get_u64(sv[i], "device", &dev) && dev < 1024 && dev + 1 > count)
			count = (size_t)dev + 1;
		else if (!io_get(sv[i], "device") && count == 0)
			count = 1;
	return count;
}

static int set_meta(struct snap *sn, const struct io_value *settings)
{
	char buf[32];
	int rc;

	if (settings && settings->type == IO_DICT) {
		json_t *j = io_to_json(settings);
		char *text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		rc = text ? sn->s->set_meta(sn->s, "allocator_settings", text) : 0;
		free(text);
		json_decref(j);
		if (rc < 0)
			return sink_failed(sn, rc);
	}
	if ((rc = sn->s->set_meta(sn->s, "stacks", sn->any_frames ? "python" : "none")) < 0)
		return sink_failed(sn, rc);
	if (sn->im->res->partial) {
		sn->im->res->history_from = sn->history_from;
		snprintf(buf, sizeof(buf), "%" PRIu64, sn->history_from);
		if ((rc = sn->s->set_meta(sn->s, "history_from", buf)) < 0)
			return sink_failed(sn, rc);
	}
	return 0;
}

int io_snapshot_to_events(struct io_import *im, const struct io_value *root)
{
	struct snap sn = { .im = im, .s = im->sink };
	const struct io_value *segments = root, *traces = NULL, *annots = NULL;
	struct mt_process p = { .command_line = im->path, .hostname = "" };
	size_t ntraces, ndev;
	int rc;

	if (root && root->type == IO_DICT) {
		segments = io_get(root, "segments");
		traces = io_get(root, "device_traces");
		annots = io_get(root, "external_annotations");
		if (!segments && !traces)
			return fail(&sn, -EBADMSG,
			            "a dict without segments or device_traces (not a "
			            "PyTorch memory snapshot)");
	} else if (!root || root->type != IO_LIST) {
		return fail(&sn, -EBADMSG,
		            "neither a dict nor a list of segments (not a PyTorch "
		            "memory snapshot)");
	}
	if (segments && segments->type != IO_LIST)
		return fail(&sn, -EBADMSG, "segments is not a list");
	if (traces && traces->type != IO_LIST)
		return fail(&sn, -EBADMSG, "device_traces is not a list");
	io_items(traces, &ntraces);
	ndev = segment_devices(segments);
	if (ntraces > ndev)
		ndev = ntraces;
	sn.t0 = first_time(traces);
	im->res->first_ts = sn.t0;
	p.start_ns = sn.t0;
	rc = sn.s->add_process(sn.s, &p, &sn.process);
	if (rc < 0)
		return sink_failed(&sn, rc);
	for (sn.ordinal = 0; sn.ordinal < ndev && rc >= 0; sn.ordinal++) {
		const struct io_value *trace = NULL;
		size_t ne = 0, nseg = 0;
		struct io_value *const *tv = io_items(traces, &ntraces);
		struct io_value *const *sv = io_items(segments, &nseg);
		bool used = false;
		uint64_t dev;

		if (sn.ordinal < ntraces) {
			trace = tv[sn.ordinal];
			if (!trace || trace->type != IO_LIST) {
				rc = fail(&sn, -EBADMSG, "device_traces[%u] is not a list",
				          sn.ordinal);
				break;
			}
			io_items(trace, &ne);
		}
		for (size_t i = 0; i < nseg && !used; i++)
			used = (get_u64(sv[i], "device", &dev) ? dev : 0) == sn.ordinal;
		if (ne || used)
			rc = import_device(&sn, trace, segments, annots);
	}
	if (rc >= 0)
		rc = set_meta(&sn,
		              root->type == IO_DICT ? io_get(root, "allocator_settings") : NULL);
	io_map_release(&sn.sites);
	free(sn.site);
	free(sn.e);
	free(sn.delay);
	free(sn.maps.v);
	free(sn.before);
	return rc;
}
