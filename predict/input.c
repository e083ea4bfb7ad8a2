/* input.c — one input of a prediction: the request stream of one device of
 * a trace, each request with the token it is aligned by (call site, memory
 * kind, stream numbered by first use, name of the innermost NVTX range open
 * in its process when it was made) and the events that synthesis copies. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-common.h"
#include "memtrace-analyze.h"
#include "predict-private.h"

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

/* FNV-1a of the interned string's text, cached by id; 0 for id 0. */
struct string_hashes {
	uint64_t *h;
	size_t cap;
};

static int string_hash(struct mt_reader *r, struct string_hashes *c, uint32_t id, uint64_t *out)
{
	*out = 0;
	if (!id)
		return 0;
	if (id >= c->cap) {
		size_t old = c->cap;
		if (mt_array_grow((void **)&c->h, &c->cap, (size_t)id, sizeof(uint64_t)) < 0)
			return -ENOMEM;
		memset(c->h + old, 0, (c->cap - old) * sizeof(uint64_t));
	}
	if (!c->h[id]) {
		const char *s = mt_reader_string(r, id);
		uint64_t h = 0xcbf29ce484222325ull;
		for (; s && *s; s++)
			h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
		c->h[id] = h | 1;
	}
	*out = c->h[id];
	return 0;
}

/* NVTX ranges of every process, in start order, and per process the ranges
 * open at the walk's time (innermost last). */
struct range_walk {
	struct mt_range_event *ev;
	uint64_t *start;
	uint32_t *process;
	size_t n, cap, next;
	struct {
		uint32_t *open;
		size_t n, cap;
	} * proc;
	size_t nproc;
};

static int load_ranges(struct mt_reader *r, struct range_walk *w)
{
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_RANGE) };
	struct mt_iter *it = NULL;
	struct mt_event ev;
	size_t cap2 = 0, cap3 = 0;
	int rc = mt_reader_iter(r, &q, &it);
	while (rc == 0 && (rc = mt_iter_next(it, &ev)) > 0) {
		if (mt_array_grow((void **)&w->ev, &w->cap, w->n, sizeof(*w->ev)) < 0 ||
		    mt_array_grow((void **)&w->start, &cap2, w->n, sizeof(uint64_t)) < 0 ||
		    mt_array_grow((void **)&w->process, &cap3, w->n, sizeof(uint32_t)) < 0) {
			rc = -ENOMEM;
			break;
		}
		w->ev[w->n] = ev.range;
		w->start[w->n] = ev.ts;
		w->process[w->n++] = ev.process;
		rc = 0;
	}
	mt_iter_free(it);
	return rc;
}

/* The name of the innermost range of `process` open at ts (0 if none);
 * calls come in ascending ts. */
static int innermost_range(struct range_walk *w, uint32_t process, uint64_t ts, uint32_t *name)
{
	for (; w->next < w->n && w->start[w->next] <= ts; w->next++) {
		uint32_t p = w->process[w->next];
		if (p >= w->nproc) {
			void *q = realloc(w->proc, ((size_t)p + 1) * sizeof(*w->proc));
			if (!q)
				return -ENOMEM;
			w->proc = q;
			memset(w->proc + w->nproc, 0,
			       ((size_t)p + 1 - w->nproc) * sizeof(*w->proc));
			w->nproc = (size_t)p + 1;
		}
		if (mt_array_grow((void **)&w->proc[p].open, &w->proc[p].cap, w->proc[p].n,
		                  sizeof(uint32_t)) < 0)
			return -ENOMEM;
		w->proc[p].open[w->proc[p].n++] = (uint32_t)w->next;
	}
	*name = 0;
	if (process >= w->nproc)
		return 0;
	/* the latest started range still open; closed ones above it go */
	while (w->proc[process].n) {
		const struct mt_range_event *e =
		        &w->ev[w->proc[process].open[w->proc[process].n - 1]];
		if (e->end > ts) {
			*name = e->name;
			break;
		}
		w->proc[process].n--;
	}
	return 0;
}

static void range_walk_release(struct range_walk *w)
{
	for (size_t i = 0; i < w->nproc; i++)
		free(w->proc[i].open);
	free(w->proc);
	free(w->ev);
	free(w->start);
	free(w->process);
}

/* Builder state besides the input itself. */
struct loader {
	struct pr_input *pi;
	size_t req_cap, ev_cap;
	struct string_hashes hashes;
	struct range_walk ranges;
	struct pr_pairs live;
	uint64_t *stream_ids;
	size_t nstreams, stream_cap;
};

static int stream_index(struct loader *l, uint64_t stream, uint32_t *index)
{
	for (size_t i = 0; i < l->nstreams; i++)
		if (l->stream_ids[i] == stream) {
			*index = (uint32_t)i;
			return 0;
		}
	if (mt_array_grow((void **)&l->stream_ids, &l->stream_cap, l->nstreams, sizeof(uint64_t)) <
	    0)
		return -ENOMEM;
	l->stream_ids[l->nstreams] = stream;
	*index = (uint32_t)l->nstreams++;
	return 0;
}

/* Sizes the arrays for the device's alloc and free events (every layer's:
 * an upper bound), as the chunk index counts them. */
static int size_arrays(struct loader *l)
{
	struct pr_input *pi = l->pi;
	struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { .device = pi->device };
	int rc = mt_reader_kind_stats(pi->reader, &q, st);
	if (rc < 0)
		return rc;
	size_t allocs = (size_t)st[MT_EVENT_ALLOC].events + 1;
	l->ev_cap = 2 * allocs; /* every request allocated and freed once at most */
	l->req_cap = allocs;
	if (!(pi->key = malloc(allocs * sizeof(*pi->key))) ||
	    !(pi->bytes = malloc(allocs * sizeof(*pi->bytes))) ||
	    !(pi->stream = malloc(allocs * sizeof(*pi->stream))) ||
	    !(pi->site = malloc(allocs * sizeof(*pi->site))) ||
	    !(pi->range = malloc(allocs * sizeof(*pi->range))) ||
	    !(pi->stream_index = malloc(allocs * sizeof(*pi->stream_index))) ||
	    !(pi->ev = malloc(l->ev_cap * sizeof(*pi->ev))))
		return -ENOMEM;
	return 0;
}

static int push_event(struct loader *l, uint64_t ts, uint64_t reuse_delay, uint32_t request,
                      bool is_free)
{
	struct pr_input *pi = l->pi;
	if (pi->nev == l->ev_cap)
		return -EOVERFLOW; /* more events than the chunk index counts */
	pi->ev[pi->nev++] = (struct pr_event){ ts, reuse_delay, request, is_free };
	return 0;
}

static int add_alloc(struct loader *l, const struct mt_event *ev)
{
	struct pr_input *pi = l->pi;
	uint64_t site_hash, range_hash;
	uint32_t range_name, sindex;
	int rc;
	if (pi->nreq >= PR_NONE)
		return -E2BIG;
	if (pi->nreq == l->req_cap)
		return -EOVERFLOW; /* more events than the chunk index counts */
	if ((rc = string_hash(pi->reader, &l->hashes, ev->alloc.site, &site_hash)) < 0 ||
	    (rc = innermost_range(&l->ranges, ev->process, ev->ts, &range_name)) < 0 ||
	    (rc = string_hash(pi->reader, &l->hashes, range_name, &range_hash)) < 0 ||
	    (rc = stream_index(l, ev->alloc.stream, &sindex)) < 0)
		return rc;
	size_t r = pi->nreq++;
	pi->key[r] = mix(site_hash ^ mix(range_hash + 0x9e3779b97f4a7c15ull) ^
	                 mix(((uint64_t)sindex << 8) | ev->alloc.mem_kind));
	pi->bytes[r] = ev->alloc.bytes;
	pi->stream[r] = ev->alloc.stream;
	pi->site[r] = ev->alloc.site;
	pi->range[r] = range_name;
	pi->stream_index[r] = sindex;
	uint32_t prev;
	if ((rc = pr_pairs_put(&l->live, pr_pairs_key(ev->process, ev->alloc.address), (uint32_t)r,
	                       &prev)) < 0)
		return rc;
	/* an alloc at an address still live: the earlier request ended (a lost free) */
	if (prev != PR_NONE && (rc = push_event(l, ev->ts, 0, prev, true)) < 0)
		return rc;
	return push_event(l, ev->ts, 0, (uint32_t)r, false);
}

static int add_event(struct loader *l, const struct mt_event *ev)
{
	if (ev->alloc.layer != l->pi->layer) {
		l->pi->vmm |= ev->kind == MT_EVENT_ALLOC && ev->alloc.mem_kind == MT_MEM_VMM;
		return 0;
	}
	if (ev->kind == MT_EVENT_ALLOC)
		return add_alloc(l, ev);
	uint32_t r = pr_pairs_take(&l->live, pr_pairs_key(ev->process, ev->alloc.address));
	if (r == PR_NONE)
		return 0; /* freed, never seen allocated */
	return push_event(l, ev->ts, ev->alloc.reuse_delay, r, true);
}

static int first_device(struct mt_reader *r, uint32_t *device, char *err, size_t errlen)
{
	uint32_t *ids = NULL;
	size_t n = 0;
	int rc = mt_analyze_devices(r, &ids, &n, err, errlen);
	if (rc == 0)
		*device = n ? ids[0] : 0;
	free(ids);
	return rc;
}

int pr_input_load(struct pr_input *pi, const struct mt_predict_input *in, char *err, size_t errlen)
{
	struct loader l = { .pi = pi };
	struct mt_iter *it = NULL;
	struct mt_event ev;
	int rc;

	memset(pi, 0, sizeof(*pi));
	pi->reader = in->reader;
	pi->device = in->device;
	if (!(pi->name = strdup(in->name ? in->name : "")))
		return mt_fail(err, errlen, -ENOMEM, "out of memory");
	if ((rc = mt_reader_request_layer(in->reader, &pi->layer)) < 0)
		return mt_fail(err, errlen, rc, "%s", mt_reader_message(in->reader));
	if (!pi->device && (rc = first_device(in->reader, &pi->device, err, errlen)) < 0)
		return rc;
	if (!pi->device || !mt_reader_device_by_id(in->reader, pi->device))
		return mt_fail(err, errlen, -ENOENT, "%s: %s", pi->name,
		               pi->device ? "no such device" : "no allocations");
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE),
		              .device = pi->device };
	if ((rc = size_arrays(&l)) < 0 || (rc = load_ranges(in->reader, &l.ranges)) < 0 ||
	    (rc = mt_reader_iter(in->reader, &q, &it)) < 0)
		goto out;
	while ((rc = mt_iter_next(it, &ev)) > 0)
		if ((rc = add_event(&l, &ev)) < 0)
			goto out;
	if (rc == 0 && !pi->nreq)
		rc = -ENOENT;
out:
	mt_iter_free(it);
	range_walk_release(&l.ranges);
	pr_pairs_release(&l.live);
	free(l.hashes.h);
	free(l.stream_ids);
	if (rc == -ENOENT)
		return mt_fail(err, errlen, rc, "%s: no allocations on device %u", pi->name,
		               pi->device);
	if (rc == -EOVERFLOW)
		return mt_fail(err, errlen, -EBADMSG,
		               "%s: more events than its chunk index counts (corrupt)", pi->name);
	if (rc == -ENOMEM || rc == -E2BIG)
		return mt_fail(err, errlen, rc, "%s: %s", pi->name, strerror(-rc));
	if (rc < 0)
		return mt_fail(err, errlen, rc, "%s", mt_reader_message(in->reader));
	pi->info.name = pi->name;
	pi->info.size = in->size;
	pi->info.requests = pi->nreq;
	return 0;
}

void pr_input_release(struct pr_input *pi)
{
	free(pi->name);
	free(pi->key);
	free(pi->bytes);
	free(pi->stream);
	free(pi->site);
	free(pi->range);
	free(pi->stream_index);
	free(pi->ev);
	mt_request_stream_free(pi->recorded);
	memset(pi, 0, sizeof(*pi));
}

char *pr_input_describe(const struct pr_input *pi, size_t r, char *buf, size_t len)
{
	char frame[256] = "no call site", size[32];
	const char *stack = pi->site[r] ? mt_reader_string(pi->reader, pi->site[r]) : NULL;
	size_t f = stack ? mt_site_display_index(stack) : (size_t)-1;
	if (f != (size_t)-1)
		mt_site_frame(stack, f, frame, sizeof(frame));
	const char *range = pi->range[r] ? mt_reader_string(pi->reader, pi->range[r]) : NULL;
	snprintf(buf, len, "request #%zu (%s, %s%s%s, stream %u, %s)", r, frame,
	         range ? "range '" : "no NVTX range", range ? range : "", range ? "'" : "",
	         pi->stream_index[r], mt_size_format(pi->bytes[r], size, sizeof(size)));
	return buf;
}
