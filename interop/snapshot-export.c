/* snapshot-export.c — a trace as a PyTorch memory snapshot (protocol-4
 * pickle) that memory_viz (torch.cuda._memory_viz trace_plot/segment_plot,
 * MemoryViz.js) opens: the structure snapshot-import.c reads.
 *
 * device_traces: per device (the CUDA ordinal, or the device's position
 * when two exported devices share an ordinal), in trace order: the request
 * layer's allocs become "alloc"; its frees "free_requested" and, after the
 * reuse delay, "free_completed"; the driver layer's allocations (the
 * allocator's segments; pinned host memory left out) "segment_alloc/free",
 * or "segment_map/unmap" for VMM; failed allocations "oom". Memory_viz
 * draws every block inside a segment: a block that no segment holds (a
 * trace without a request layer, an RMM log) gets a segment of its own,
 * allocated and freed with it. Call sites become frames (written once per
 * site and referred to through the memo).
 * segments: what is live at the end, each segment's blocks tiling it (block
 * sizes rounded up to 512 bytes, PyTorch's smallest block, where the space
 * allows; the rest "inactive").
 * external_annotations: every range as a START and an END.
 * allocator_settings: the imported snapshot's, when the trace has them.
 * Memory is bounded by what is live at once, not by the trace.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "interop-private.h"
#include "memtrace-analyze.h"
#include "memtrace-replay.h"

#define BATCH 1000 /* list items per APPENDS, as Python's pickler writes */
#define MIN_BLOCK 512
#define SMALL_SEGMENT (2u << 20)

enum pend { PEND_FREE_COMPLETED = 0, PEND_SEGMENT_FREE = 1, PEND_ANNOTATION_END = 2 };

struct span {
	uint64_t start, end;
};

struct final {
	int64_t index; /* in device_traces */
	struct io_live_entry *segs, *blocks;
	size_t nsegs, nblocks, segcap, blockcap;
};

struct sx {
	struct io_export *x;
	struct io_pickler *pk;
	struct io_map frames;  /* site id → memo index of its frames list */
	uint32_t empty_frames; /* memo index of [] + 1; 0 until written */
	unsigned batch[8];     /* items in the open APPENDS batch per list depth */
	int depth;
	unsigned blocks_layer; /* the request layer */
	/* the device being written */
	int64_t index;
	struct io_live *live;
	struct span *segs; /* live segments, by address */
	size_t nsegs, segcap;
	struct io_map synthetic; /* blocks given a segment of their own */
	struct io_pending pending;
	struct final *finals; /* one per device written */
	struct final *cur;    /* the device being written */
	size_t nfinals;
};

/* ---- lists written in batches ------------------------------------------------ */

static void list_begin(struct sx *s)
{
	io_pk_empty_list(s->pk);
	io_pk_mark(s->pk);
	s->batch[++s->depth] = 0;
}

/* After each item. */
static void list_item(struct sx *s)
{
	if (++s->batch[s->depth] == BATCH) {
		io_pk_appends(s->pk);
		io_pk_mark(s->pk);
		s->batch[s->depth] = 0;
	}
}

static void list_end(struct sx *s)
{
	io_pk_appends(s->pk);
	s->depth--;
}

/* ---- frames ----------------------------------------------------------------------- */

/* Splits one frame "path:line:function" (the first ":digits:" ends the
 * path); a frame without one is a function name on an unknown line. */
static void write_frame(struct sx *s, const char *f, size_t n)
{
	size_t i, j;
	uint64_t line = 0;

	for (i = 0; i < n; i++) {
		if (f[i] != ':')
			continue;
		for (j = i + 1; j < n && f[j] >= '0' && f[j] <= '9'; j++)
			;
		if (j > i + 1 && j < n && f[j] == ':')
			break;
	}
	io_pk_empty_dict(s->pk);
	io_pk_mark(s->pk);
	io_pk_key(s->pk, "filename");
	if (i < n) {
		io_pk_str(s->pk, f, i);
		for (size_t k = i + 1; f[k] != ':'; k++)
			line = line * 10 + (uint64_t)(f[k] - '0');
	} else {
		io_pk_cstr(s->pk, "??");
	}
	io_pk_key(s->pk, "line");
	io_pk_uint(s->pk, line);
	io_pk_key(s->pk, "name");
	if (i < n) {
		size_t name = i + 1 + strspn(f + i + 1, "0123456789") + 1;
		io_pk_str(s->pk, f + name, n - name);
	} else {
		io_pk_str(s->pk, f, n);
	}
	io_pk_setitems(s->pk);
}

/* Writes [] (once; a reference to it afterwards). */
static void write_empty_frames(struct sx *s)
{
	if (s->empty_frames) {
		io_pk_get(s->pk, s->empty_frames - 1);
		return;
	}
	io_pk_empty_list(s->pk);
	s->empty_frames = io_pk_memoize(s->pk) + 1;
}

/* Writes the frames list of a call site, or a reference to it. */
static int write_frames(struct sx *s, uint32_t site)
{
	const char *stack = site ? mt_reader_string(s->x->r, site) : NULL;
	uint64_t memo;

	if (!stack || !*stack) {
		write_empty_frames(s);
		return 0;
	}
	if (io_map_get(&s->frames, site, 0, &memo)) {
		io_pk_get(s->pk, (uint32_t)memo);
		return 0;
	}
	io_pk_empty_list(s->pk);
	io_pk_mark(s->pk);
	for (const char *p = stack; *p;) {
		size_t n = strcspn(p, "\n");
		if (n)
			write_frame(s, p, n);
		p += n;
		p += *p == '\n';
	}
	io_pk_appends(s->pk);
	memo = io_pk_memoize(s->pk);
	return io_map_put(&s->frames, site, 0, memo);
}

/* ---- trace entries ------------------------------------------------------------------ */

static int entry(struct sx *s, const char *action, uint64_t addr, uint64_t size, uint64_t stream,
                 uint64_t ts, uint32_t site)
{
	int rc;

	io_pk_empty_dict(s->pk);
	io_pk_mark(s->pk);
	io_pk_key(s->pk, "action");
	io_pk_key(s->pk, action);
	io_pk_key(s->pk, strcmp(action, "oom") ? "addr" : "device_free");
	io_pk_uint(s->pk, addr);
	io_pk_key(s->pk, "size");
	io_pk_uint(s->pk, size);
	io_pk_key(s->pk, "stream");
	io_pk_uint(s->pk, stream);
	io_pk_key(s->pk, "time_us");
	io_pk_uint(s->pk, ts / 1000);
	io_pk_key(s->pk, "frames");
	rc = write_frames(s, site);
	io_pk_setitems(s->pk);
	list_item(s);
	s->x->res->records++;
	return rc;
}

/* Writes the completions (and the frees of segments of their own) due by
 * ts. */
static int flush_pending(struct sx *s, uint64_t ts)
{
	struct io_pending_item p;
	int rc = 0;

	while (rc >= 0 && io_pending_pop(&s->pending, ts, &p))
		rc = entry(s, p.e == PEND_FREE_COMPLETED ? "free_completed" : "segment_free", p.a,
		           p.b, p.c, p.ts, p.d);
	return rc;
}

/* Live segments by address, for "is this block inside one". */
static size_t seg_index(const struct sx *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nsegs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->segs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo; /* first segment starting after addr */
}

static bool in_segment(const struct sx *s, uint64_t addr)
{
	size_t i = seg_index(s, addr);

	return i > 0 && addr < s->segs[i - 1].end;
}

static int seg_add(struct sx *s, uint64_t addr, uint64_t bytes)
{
	size_t i = seg_index(s, addr);

	if (mt_array_grow((void **)&s->segs, &s->segcap, s->nsegs, sizeof(*s->segs)) < 0)
		return -ENOMEM;
	memmove(s->segs + i + 1, s->segs + i, (s->nsegs - i) * sizeof(*s->segs));
	s->segs[i] = (struct span){ addr, addr + bytes };
	s->nsegs++;
	return 0;
}

static void seg_remove(struct sx *s, uint64_t addr)
{
	size_t i = seg_index(s, addr);

	if (i > 0 && s->segs[i - 1].start == addr) {
		memmove(s->segs + i - 1, s->segs + i, (s->nsegs - i) * sizeof(*s->segs));
		s->nsegs--;
	}
}

static uint64_t who(const struct mt_event *ev)
{
	return (uint64_t)ev->process << 32 | ev->device;
}

static int block_event(struct sx *s, const struct mt_event *ev)
{
	const struct mt_alloc_event *a = &ev->alloc;
	struct io_live_entry closed;
	uint64_t done;
	int rc;

	if (ev->kind == MT_EVENT_ALLOC) {
		if ((rc = io_live_apply(s->live, ev, NULL)) < 0)
			return rc;
		if (!in_segment(s, a->address)) {
			rc = entry(s, "segment_alloc", a->address, a->bytes, a->stream, ev->ts, 0);
			if (rc >= 0)
				rc = io_map_put(&s->synthetic, a->address, who(ev), a->bytes);
			if (rc < 0)
				return rc;
		}
		return entry(s, "alloc", a->address, a->bytes, a->stream, ev->ts, a->site);
	}
	rc = io_live_apply(s->live, ev, &closed);
	if (rc < 0)
		return rc;
	if (rc == 0)
		closed = (struct io_live_entry){ .bytes = a->bytes, .stream = a->stream };
	rc = entry(s, "free_requested", a->address, closed.bytes, closed.stream, ev->ts,
	           closed.site);
	done = ev->ts + a->reuse_delay;
	if (rc >= 0)
		rc = io_pending_push(&s->pending,
		                     (struct io_pending_item){ .ts = done,
		                                               .a = a->address,
		                                               .b = closed.bytes,
		                                               .c = closed.stream,
		                                               .d = closed.site,
		                                               .e = PEND_FREE_COMPLETED });
	if (rc >= 0 && io_map_take(&s->synthetic, a->address, who(ev), &closed.bytes))
		rc = io_pending_push(&s->pending,
		                     (struct io_pending_item){ .ts = done,
		                                               .a = a->address,
		                                               .b = closed.bytes,
		                                               .c = closed.stream,
		                                               .e = PEND_SEGMENT_FREE });
	/* no delay: completed at once, as the allocator logs it */
	if (rc >= 0 && !a->reuse_delay)
		rc = flush_pending(s, ev->ts);
	return rc;
}

static int segment_event(struct sx *s, const struct mt_event *ev)
{
	const struct mt_alloc_event *a = &ev->alloc;
	bool vmm = a->mem_kind == MT_MEM_VMM;
	struct io_live_entry closed;
	int rc = io_live_apply(s->live, ev, &closed);

	if (rc < 0)
		return rc;
	if (ev->kind == MT_EVENT_ALLOC) {
		if ((rc = seg_add(s, a->address, a->bytes)) < 0)
			return rc;
		return entry(s, vmm ? "segment_map" : "segment_alloc", a->address, a->bytes,
		             a->stream, ev->ts, a->site);
	}
	seg_remove(s, a->address);
	return entry(s, vmm ? "segment_unmap" : "segment_free", a->address,
	             rc ? closed.bytes : a->bytes, rc ? closed.stream : a->stream, ev->ts,
	             rc ? closed.site : 0);
}

static int device_entries(struct sx *s, uint32_t device)
{
	struct mt_export_options opt = *s->x->opt;
	struct io_export x = *s->x;
	struct mt_iter *it;
	struct mt_event ev;
	int rc;

	opt.device = device;
	x.opt = &opt;
	rc = io_export_iter(&x,
	                    MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE) |
	                            MT_KIND_BIT(MT_EVENT_ALLOC_FAILED),
	                    &it, NULL);
	while (rc >= 0 && (rc = io_export_next(&x, it, &ev)) > 0) {
		if ((rc = flush_pending(s, ev.ts)) < 0)
			break;
		if (ev.kind == MT_EVENT_ALLOC_FAILED) {
			if (ev.failed.layer == s->blocks_layer)
				rc = entry(s, "oom", ev.failed.free_bytes, ev.failed.bytes,
				           ev.failed.stream, ev.ts, ev.failed.site);
		} else if (ev.alloc.layer == s->blocks_layer) {
			rc = block_event(s, &ev);
		} else if (ev.alloc.layer == MT_LAYER_DRIVER &&
		           ev.alloc.mem_kind != MT_MEM_PINNED_HOST) {
			rc = segment_event(s, &ev);
		}
	}
	if (rc >= 0)
		rc = flush_pending(s, UINT64_MAX);
	mt_iter_free(it);
	if (rc == -ENOMEM)
		rc = mt_fail(s->x->err, s->x->errlen, rc, "out of memory");
	return rc;
}

/* ---- the final state ----------------------------------------------------------- */

static int keep_final(void *arg, const struct io_live_entry *e)
{
	struct sx *s = arg;
	struct final *f = s->cur;

	if (e->layer == s->blocks_layer) {
		if (mt_array_grow((void **)&f->blocks, &f->blockcap, f->nblocks, sizeof(*f->blocks)) < 0)
			return -ENOMEM;
		f->blocks[f->nblocks++] = *e;
	} else if (e->mem_kind != MT_MEM_PINNED_HOST) {
		if (mt_array_grow((void **)&f->segs, &f->segcap, f->nsegs, sizeof(*f->segs)) < 0)
			return -ENOMEM;
		f->segs[f->nsegs++] = *e;
	}
	return 0;
}

static int by_address(const void *x, const void *y)
{
	const struct io_live_entry *a = x, *b = y;

	return a->address < b->address ? -1 : a->address > b->address;
}

/* Writes one segment of the final state and the blocks inside it (from
 * *next on, by address); a block that starts outside it is left for the
 * caller. */
static int write_segment(struct sx *s, const struct final *f, const struct io_live_entry *seg,
                         size_t *next)
{
	uint64_t start = seg->address, end = seg->address + seg->bytes, at = start;
	uint64_t allocated = 0, requested = 0;
	size_t first = *next, last;
	int rc;

	for (last = first; last < f->nblocks && f->blocks[last].address < end; last++) {
		uint64_t size = f->blocks[last].bytes;
		requested += size;
		allocated += size;
	}
	io_pk_empty_dict(s->pk);
	io_pk_mark(s->pk);
	io_pk_key(s->pk, "device");
	io_pk_int(s->pk, f->index);
	io_pk_key(s->pk, "address");
	io_pk_uint(s->pk, start);
	io_pk_key(s->pk, "total_size");
	io_pk_uint(s->pk, seg->bytes);
	io_pk_key(s->pk, "allocated_size");
	io_pk_uint(s->pk, allocated);
	io_pk_key(s->pk, "active_size");
	io_pk_uint(s->pk, allocated);
	io_pk_key(s->pk, "requested_size");
	io_pk_uint(s->pk, requested);
	io_pk_key(s->pk, "stream");
	io_pk_uint(s->pk, seg->stream);
	io_pk_key(s->pk, "segment_type");
	io_pk_key(s->pk, seg->bytes <= SMALL_SEGMENT ? "small" : "large");
	io_pk_key(s->pk, "segment_pool_id");
	io_pk_int(s->pk, 0);
	io_pk_int(s->pk, 0);
	io_pk_tuple2(s->pk);
	io_pk_key(s->pk, "is_expandable");
	io_pk_bool(s->pk, seg->mem_kind == MT_MEM_VMM);
	io_pk_key(s->pk, "frames");
	if ((rc = write_frames(s, seg->site)) < 0)
		return rc;
	io_pk_key(s->pk, "blocks");
	list_begin(s);
	for (size_t i = first; i <= last && at < end; i++) {
		const struct io_live_entry *b = i < last ? &f->blocks[i] : NULL;
		uint64_t bstart = b ? b->address : end, size;
		if (b && (bstart < at || bstart + b->bytes > end))
			continue; /* overlaps the one before, or runs out of the segment */
		if (bstart > at) {
			io_pk_empty_dict(s->pk);
			io_pk_mark(s->pk);
			io_pk_key(s->pk, "address");
			io_pk_uint(s->pk, at);
			io_pk_key(s->pk, "size");
			io_pk_uint(s->pk, bstart - at);
			io_pk_key(s->pk, "requested_size");
			io_pk_int(s->pk, 0);
			io_pk_key(s->pk, "state");
			io_pk_key(s->pk, "inactive");
			io_pk_key(s->pk, "frames");
			write_empty_frames(s);
			io_pk_setitems(s->pk);
			list_item(s);
		}
		if (!b)
			break;
		size = (b->bytes + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
		if (i + 1 < last && f->blocks[i + 1].address < bstart + size)
			size = f->blocks[i + 1].address - bstart;
		if (bstart + size > end || size < b->bytes)
			size = b->bytes;
		io_pk_empty_dict(s->pk);
		io_pk_mark(s->pk);
		io_pk_key(s->pk, "address");
		io_pk_uint(s->pk, bstart);
		io_pk_key(s->pk, "size");
		io_pk_uint(s->pk, size);
		io_pk_key(s->pk, "requested_size");
		io_pk_uint(s->pk, b->bytes);
		io_pk_key(s->pk, "state");
		io_pk_key(s->pk, "active_allocated");
		io_pk_key(s->pk, "frames");
		if ((rc = write_frames(s, b->site)) < 0)
			return rc;
		io_pk_setitems(s->pk);
		list_item(s);
		at = bstart + size;
	}
	list_end(s);
	io_pk_setitems(s->pk);
	*next = last;
	return 0;
}

static int write_segments(struct sx *s)
{
	int rc = 0;

	list_begin(s);
	for (size_t d = 0; d < s->nfinals && rc >= 0; d++) {
		struct final *f = &s->finals[d];
		size_t next = 0, k = 0;

		qsort(f->segs, f->nsegs, sizeof(*f->segs), by_address);
		qsort(f->blocks, f->nblocks, sizeof(*f->blocks), by_address);
		while (rc >= 0 && (k < f->nsegs || next < f->nblocks)) {
			/* a block before the next segment starts lies in none: it
			 * gets a segment of its own */
			if (k == f->nsegs ||
			    (next < f->nblocks && f->blocks[next].address < f->segs[k].address)) {
				struct io_live_entry own = f->blocks[next];
				if (!own.bytes) {
					next++;
					continue;
				}
				own.site = 0;
				own.mem_kind = MT_MEM_DEVICE;
				rc = write_segment(s, f, &own, &next);
			} else {
				rc = write_segment(s, f, &f->segs[k++], &next);
			}
			list_item(s);
			s->x->res->records++;
		}
	}
	list_end(s);
	return rc;
}

/* ---- annotations and settings ---------------------------------------------------- */

static int annotation(struct sx *s, uint32_t name, const char *stage, int64_t index, uint64_t ts)
{
	io_pk_empty_dict(s->pk);
	io_pk_mark(s->pk);
	io_pk_key(s->pk, "name");
	io_pk_cstr(s->pk, mt_reader_string(s->x->r, name) ? mt_reader_string(s->x->r, name) : "");
	io_pk_key(s->pk, "stage");
	io_pk_key(s->pk, stage);
	io_pk_key(s->pk, "device");
	io_pk_int(s->pk, index);
	io_pk_key(s->pk, "time_us");
	io_pk_uint(s->pk, ts / 1000);
	io_pk_setitems(s->pk);
	list_item(s);
	s->x->res->records++;
	return 0;
}

static int64_t index_of(const struct sx *s, const uint32_t *ids, size_t n, uint32_t device)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == device)
			return s->finals[i].index;
	return -1;
}

static int write_annotations(struct sx *s, const uint32_t *ids, size_t n)
{
	struct io_pending ends = { 0 };
	struct io_pending_item p;
	struct mt_iter *it;
	struct mt_event ev;
	int rc = io_export_iter(s->x, MT_KIND_BIT(MT_EVENT_RANGE), &it, NULL);

	list_begin(s);
	while (rc >= 0 && (rc = io_export_next(s->x, it, &ev)) > 0) {
		int64_t index = index_of(s, ids, n, ev.device);
		while (io_pending_pop(&ends, ev.ts, &p))
			annotation(s, p.d, "END", (int64_t)p.a, p.ts);
		if (index < 0)
			continue;
		annotation(s, ev.range.name, "START", index, ev.ts);
		if (ev.range.end != MT_TIME_UNKNOWN &&
		    io_pending_push(&ends, (struct io_pending_item){ .ts = ev.range.end,
		                                                     .a = (uint64_t)index,
		                                                     .d = ev.range.name }) < 0)
			rc = mt_fail(s->x->err, s->x->errlen, -ENOMEM, "out of memory");
	}
	while (rc >= 0 && io_pending_pop(&ends, UINT64_MAX, &p))
		annotation(s, p.d, "END", (int64_t)p.a, p.ts);
	list_end(s);
	mt_iter_free(it);
	io_pending_release(&ends);
	return rc;
}

/* A JSON value (the imported allocator settings) as pickled data. */
static void pickle_json(struct sx *s, json_t *j, int depth)
{
	const char *key;
	json_t *v;

	switch (json_typeof(j)) {
	case JSON_OBJECT:
		io_pk_empty_dict(s->pk);
		if (depth > 8 || !json_object_size(j))
			return;
		io_pk_mark(s->pk);
		json_object_foreach(j, key, v)
		{
			io_pk_cstr(s->pk, key);
			pickle_json(s, v, depth + 1);
		}
		io_pk_setitems(s->pk);
		return;
	case JSON_STRING:
		io_pk_str(s->pk, json_string_value(j), json_string_length(j));
		return;
	case JSON_INTEGER:
		io_pk_int(s->pk, json_integer_value(j));
		return;
	case JSON_REAL:
		io_pk_float(s->pk, json_real_value(j));
		return;
	case JSON_TRUE:
	case JSON_FALSE:
		io_pk_bool(s->pk, json_is_true(j));
		return;
	default:
		io_pk_none(s->pk);
		return;
	}
}

/* ---- the whole file --------------------------------------------------------------- */

/* The devices to write and their index in device_traces. */
static int plan_devices(struct sx *s, uint32_t **ids, size_t *n)
{
	size_t count = mt_reader_device_count(s->x->r);
	bool distinct = true;

	*ids = calloc(count ? count : 1, sizeof(**ids));
	s->finals = calloc(count ? count : 1, sizeof(*s->finals));
	if (!*ids || !s->finals)
		return -ENOMEM;
	*n = 0;
	for (size_t i = 0; i < count; i++) {
		const struct mt_device *d = mt_reader_device(s->x->r, i);
		if (s->x->opt->device && d->id != s->x->opt->device)
			continue;
		for (size_t k = 0; k < *n; k++)
			distinct &= s->finals[k].index != d->ordinal;
		(*ids)[*n] = d->id;
		s->finals[(*n)++].index = d->ordinal;
	}
	for (size_t k = 0; !distinct && k < *n; k++)
		s->finals[k].index = (int64_t)k;
	return 0;
}

static int write_traces(struct sx *s, const uint32_t *ids, size_t n)
{
	int64_t last = -1;
	int rc = 0;

	for (size_t k = 0; k < n; k++)
		if (s->finals[k].index > last)
			last = s->finals[k].index;
	list_begin(s);
	for (int64_t index = 0; index <= last && rc >= 0; index++) {
		size_t k;
		for (k = 0; k < n && s->finals[k].index != index; k++)
			;
		list_begin(s);
		if (k < n) {
			s->index = index;
			s->nsegs = 0;
			io_map_release(&s->synthetic);
			io_live_free(s->live);
			s->live = io_live_new();
			s->cur = &s->finals[k];
			rc = s->live ? device_entries(s, ids[k]) : -ENOMEM;
			if (rc >= 0)
				rc = io_live_each(s->live, keep_final, s);
		}
		list_end(s);
		list_item(s);
	}
	list_end(s);
	return rc;
}

/* ---- a replayed policy's segments ------------------------------------------------- */

struct stop {
	struct sx *s;
	struct final *f;
	bool find_peak;
	uint64_t best, best_pos; /* peak reserved and where first reached */
	uint64_t until;          /* stop once the next event is later (MT_TIME_UNKNOWN: no) */
	uint64_t stop_pos;       /* else stop at this position */
	uint64_t at;             /* the moment written */
	uint64_t reserved;       /* the policy's reserved bytes then */
	bool walked;
	int rc;
};

static int walked(void *data, bool is_segment, const struct mt_policy_block *b)
{
	struct stop *st = data;
	struct final *f = st->f;
	struct io_live_entry e = { .address = b->address,
		                   .bytes = b->bytes,
		                   .stream = b->stream,
		                   .mem_kind = MT_MEM_DEVICE };

	if (is_segment) {
		e.layer = MT_LAYER_DRIVER;
		if (mt_array_grow((void **)&f->segs, &f->segcap, f->nsegs, sizeof(*f->segs)) < 0)
			return st->rc = -ENOMEM;
		f->segs[f->nsegs++] = e;
	} else if (b->allocated) {
		e.layer = (uint8_t)st->s->blocks_layer;
		if (mt_array_grow((void **)&f->blocks, &f->blockcap, f->nblocks, sizeof(*f->blocks)) < 0)
			return st->rc = -ENOMEM;
		f->blocks[f->nblocks++] = e;
	}
	return 0;
}

static int observe(void *data, const struct mt_replay_moment *m, struct mt_policy *p)
{
	struct stop *st = data;

	if (st->find_peak) {
		if (m->reserved > st->best) {
			st->best = m->reserved;
			st->best_pos = m->position;
		}
		return 0;
	}
	if (st->until != MT_TIME_UNKNOWN ? m->next_ts <= st->until : m->position < st->stop_pos)
		return 0;
	st->at = m->ts;
	st->reserved = m->reserved;
	st->walked = true;
	if (p->ops->walk(p, walked, st) != 0 && st->rc >= 0)
		st->rc = -EIO;
	return 1;
}

/* The replayed policy's segments and blocks at the option's moment (or its
 * peak of reserved bytes) into s->finals[0]. */
static int policy_state(struct sx *s, uint32_t device, struct stop *st)
{
	struct mt_replay_options opt = { .policy = s->x->opt->policy,
		                         .backend = MT_BACKEND_SIM,
		                         .device = device,
		                         .observe = observe,
		                         .observe_data = st };
	struct mt_request_stream *stream = NULL;
	struct mt_replay_result res;
	uint64_t t0 = 0, t1 = 0;
	int rc;

	st->s = s;
	st->f = &s->finals[0];
	st->until = MT_TIME_UNKNOWN;
	rc = mt_request_stream_load(&stream, s->x->r, device, s->x->err, s->x->errlen);
	if (rc >= 0 && s->x->opt->at_set) {
		rc = mt_analyze_span(s->x->r, device, &t0, &t1);
		st->until = t0 + s->x->opt->at;
	} else if (rc >= 0) {
		st->find_peak = true;
		rc = mt_replay_run(stream, &opt, &res, s->x->err, s->x->errlen);
		if (rc >= 0)
			mt_replay_result_release(&res);
		st->find_peak = false;
		st->stop_pos = st->best_pos;
	}
	if (rc >= 0)
		rc = mt_replay_run(stream, &opt, &res, s->x->err, s->x->errlen);
	if (rc >= 0)
		mt_replay_result_release(&res);
	if (rc >= 0 && st->rc < 0)
		rc = mt_fail(s->x->err, s->x->errlen, st->rc, "%s: walking the policy failed",
		             s->x->opt->policy);
	mt_request_stream_free(stream);
	return rc;
}

/* A snapshot of a replayed policy's segments at one moment: no device
 * traces (the policy places memory at addresses of its own), the segments
 * and their blocks, and what it is in "memtrace_replay". */
static int export_policy(struct sx *s, const uint32_t *ids, size_t n)
{
	struct stop st = { 0 };
	int rc;

	if (n != 1)
		return mt_fail(s->x->err, s->x->errlen, -EINVAL,
		               "a replayed policy's segments are one device's: name it with "
		               "--device (the trace has %zu)",
		               n);
	rc = policy_state(s, ids[0], &st);
	if (rc < 0)
		return rc;
	io_pk_empty_dict(s->pk);
	io_pk_mark(s->pk);
	io_pk_key(s->pk, "device_traces");
	list_begin(s);
	for (int64_t i = 0; i <= s->finals[0].index; i++) {
		list_begin(s);
		list_end(s);
		list_item(s);
	}
	list_end(s);
	io_pk_key(s->pk, "segments");
	s->nfinals = 1;
	rc = write_segments(s);
	io_pk_key(s->pk, "memtrace_replay");
	io_pk_empty_dict(s->pk);
	io_pk_mark(s->pk);
	io_pk_key(s->pk, "policy");
	io_pk_cstr(s->pk, s->x->opt->policy);
	io_pk_key(s->pk, "time_us");
	io_pk_uint(s->pk, st.at / 1000);
	io_pk_key(s->pk, "reserved");
	io_pk_uint(s->pk, st.reserved);
	io_pk_setitems(s->pk);
	io_pk_setitems(s->pk);
	io_pk_stop(s->pk);
	return rc;
}

int io_snapshot_export(struct io_export *x)
{
	struct sx s = { .x = x };
	const char *settings = mt_reader_meta(x->r, "allocator_settings");
	uint32_t *ids = NULL;
	size_t n = 0;
	int rc;

	s.pk = io_pickler_new(x->out);
	if (!s.pk || plan_devices(&s, &ids, &n) < 0) {
		rc = mt_fail(x->err, x->errlen, -ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = mt_reader_request_layer(x->r, &s.blocks_layer)) < 0) {
		rc = mt_fail(x->err, x->errlen, rc, "%s", mt_reader_message(x->r));
		goto out;
	}
	if (x->opt->policy) {
		rc = export_policy(&s, ids, n);
		goto out;
	}
	{
		struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
		struct mt_query q = { .device = x->opt->device };
		if (mt_reader_kind_stats(x->r, &q, stats) == 0)
			x->total = stats[MT_EVENT_ALLOC].events + stats[MT_EVENT_FREE].events +
			           stats[MT_EVENT_ALLOC_FAILED].events +
			           stats[MT_EVENT_RANGE].events;
	}
	io_pk_empty_dict(s.pk);
	io_pk_mark(s.pk);
	io_pk_key(s.pk, "device_traces");
	rc = write_traces(&s, ids, n);
	if (rc >= 0) {
		io_pk_key(s.pk, "segments");
		rc = write_segments(&s);
	}
	if (rc >= 0) {
		io_pk_key(s.pk, "external_annotations");
		rc = write_annotations(&s, ids, n);
	}
	if (rc >= 0 && settings) {
		json_t *j = json_loads(settings, 0, NULL);
		if (json_is_object(j)) {
			io_pk_key(s.pk, "allocator_settings");
			pickle_json(&s, j, 0);
		}
		json_decref(j);
	}
	io_pk_setitems(s.pk);
	io_pk_stop(s.pk);
	if (rc == -ENOMEM)
		rc = mt_fail(x->err, x->errlen, rc, "out of memory");
out:
	for (size_t k = 0; s.finals && k < n; k++) {
		free(s.finals[k].segs);
		free(s.finals[k].blocks);
	}
	free(s.finals);
	free(ids);
	free(s.segs);
	io_map_release(&s.frames);
	io_map_release(&s.synthetic);
	io_pending_release(&s.pending);
	io_live_free(s.live);
	io_pickler_free(s.pk);
	return rc;
}
