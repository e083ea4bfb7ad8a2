/* data.c — one device's data for the analyses: lifetimes of the request
 * and driver layers, samples, the NVTX ranges of the device's processes and
 * failed allocations. A survey streams every allocation once for the
 * figures that need them all (the peak, what was live at each sample...);
 * a second pass keeps the lifetimes live at chosen moments, or all.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze-private.h"

/* Every event of the query, handed to fn. */
static int walk(struct mt_reader *r, const struct mt_query *q,
                int (*fn)(void *data, const struct mt_event *ev), void *data)
{
	struct mt_iter *it = NULL;
	struct mt_event ev;
	int rc;

	rc = mt_reader_iter(r, q, &it);
	while (rc >= 0 && (rc = mt_iter_next(it, &ev)) == 1)
		rc = fn(data, &ev);
	mt_iter_free(it);
	return rc < 0 ? rc : 0;
}

struct samples {
	struct mt_sample *v;
	size_t n, cap;
};

static int add_sample(void *data, const struct mt_event *ev)
{
	struct samples *s = data;

	if (mt_array_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v)) < 0)
		return -ENOMEM;
	s->v[s->n++] =
	        (struct mt_sample){ ev->ts, ev->sample.used_bytes, ev->sample.process_bytes };
	return 0;
}

int mt_samples_load(struct mt_reader *r, uint32_t device, struct mt_sample **out, size_t *n)
{
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_SAMPLE), .device = device };
	struct samples s = { 0 };
	int rc = walk(r, &q, add_sample, &s);

	if (rc < 0) {
		free(s.v);
		return rc;
	}
	*out = s.v;
	*n = s.n;
	return 0;
}

/* The processes with allocations on the device, and the events we keep. */
struct collect {
	struct mt_analysis *d;
	uint32_t *procs;
	size_t nprocs;
	size_t cap;
	size_t range_cap, fail_cap; /* of d->ranges and d->fails */
	bool all_ranges;
	uint32_t *dropped; /* names of the library ranges left out */
	size_t dropped_cap;
};

static bool has_process(const struct collect *c, uint32_t p)
{
	size_t i;

	for (i = 0; i < c->nprocs; i++)
		if (c->procs[i] == p)
			return true;
	return false;
}

static int note_process(struct collect *c, uint32_t p)
{
	if (has_process(c, p))
		return 0;
	if (mt_array_grow((void **)&c->procs, &c->cap, c->nprocs, sizeof(*c->procs)) < 0)
		return -ENOMEM;
	c->procs[c->nprocs++] = p;
	return 0;
}

/* Leaves out a library's own range, noting its name once. */
static int drop_library_range(struct collect *c, const struct mt_event *ev, bool *dropped)
{
	const char *name = mt_reader_string(c->d->r, ev->range.name);
	const char *domain = mt_reader_string(c->d->r, ev->range.domain);
	size_t i;

	*dropped = !c->all_ranges && an_range_is_library(name, domain);
	if (!*dropped)
		return 0;
	for (i = 0; i < c->d->library_names; i++)
		if (c->dropped[i] == ev->range.name)
			return 0;
	if (mt_array_grow((void **)&c->dropped, &c->dropped_cap, i, sizeof(*c->dropped)) < 0)
		return -ENOMEM;
	c->dropped[c->d->library_names++] = ev->range.name;
	return 0;
}

static int add_range(void *data, const struct mt_event *ev)
{
	struct collect *c = data;
	struct mt_analysis *d = c->d;
	bool dropped;

	if (!has_process(c, ev->process))
		return 0;
	if (drop_library_range(c, ev, &dropped) < 0)
		return -ENOMEM;
	if (dropped)
		return 0;
	if (mt_array_grow((void **)&d->ranges, &c->range_cap, d->nranges, sizeof(*d->ranges)) < 0)
		return -ENOMEM;
	d->ranges[d->nranges++] = (struct mt_range){
		.start = ev->ts,
		.end = ev->range.end,
		.process = ev->process,
		.name = ev->range.name,
		.domain = ev->range.domain,
		.thread = ev->range.thread,
		.depth = ev->range.depth,
	};
	return 0;
}

static int add_fail(void *data, const struct mt_event *ev)
{
	struct collect *c = data;
	struct mt_analysis *d = c->d;

	if (mt_array_grow((void **)&d->fails, &c->fail_cap, d->nfails, sizeof(*d->fails)) < 0)
		return -ENOMEM;
	d->fails[d->nfails++] = (struct mt_failure){
		.ts = ev->ts,
		.bytes = ev->failed.bytes,
		.free_bytes = ev->failed.free_bytes,
		.stream = ev->failed.stream,
		.process = ev->process,
		.site = ev->failed.site,
		.error = ev->failed.error,
		.layer = ev->failed.layer,
		.api = ev->failed.api,
	};
	return note_process(c, ev->process);
}

/* ---- the survey: one pass over every allocation ---- */

/* A set of string ids (0 is none and never added). */
struct idset {
	uint32_t *v;
	size_t cap, n;
};

static int idset_add(struct idset *s, uint32_t id)
{
	size_t mask, i;

	if (!id)
		return 0;
	if ((s->n + 1) * 2 > s->cap) {
		struct idset bigger = { .cap = s->cap ? s->cap * 2 : 256, .n = s->n };

		bigger.v = calloc(bigger.cap, sizeof(*bigger.v));
		if (!bigger.v)
			return -ENOMEM;
		for (i = 0; i < s->cap; i++)
			if (s->v[i]) {
				size_t j = (s->v[i] * 0x9e3779b9u) & (bigger.cap - 1);

				while (bigger.v[j])
					j = (j + 1) & (bigger.cap - 1);
				bigger.v[j] = s->v[i];
			}
		free(s->v);
		*s = bigger;
	}
	mask = s->cap - 1;
	for (i = (id * 0x9e3779b9u) & mask; s->v[i]; i = (i + 1) & mask)
		if (s->v[i] == id)
			return 0;
	s->v[i] = id;
	s->n++;
	return 0;
}

/* One layer's running figures: d the bytes allocated less the bytes freed
 * so far (the bytes live less those live from before the trace, which
 * are only known at the end), its largest value after a moment and the
 * first moment it was reached. */
struct layer_survey {
	uint64_t lifetimes, orphan_bytes, first;
	int64_t d, best;
	uint64_t best_at;
	bool any, have_best;
	struct idset sites;
};

struct survey {
	struct mt_analysis *d;
	struct collect *c;
	struct mt_pairing *pairing;
	struct layer_survey layer[2];
	size_t next_sample, next_fail, resolved_fails;
	uint64_t now;
	bool started;
	struct idset requesters;
};

/* After the last event of the moment `now`. */
static void moment_done(struct survey *s)
{
	unsigned k;

	for (k = 0; k < 2; k++) {
		struct layer_survey *l = &s->layer[k];

		if (l->any && (!l->have_best || l->d > l->best)) {
			l->best = l->d;
			l->best_at = s->now;
			l->have_best = true;
		}
	}
}

static void samples_before(struct survey *s, uint64_t ts)
{
	struct mt_analysis *d = s->d;

	for (; s->next_sample < d->nsamples && d->samples[s->next_sample].ts < ts; s->next_sample++)
		d->driver_at_sample[s->next_sample] = (uint64_t)s->layer[MT_LAYER_DRIVER].d;
}

/* A driver-layer allocation of process p at ts: the failures of p before
 * it that wait for their next one have it. */
static void driver_allocated(struct survey *s, uint32_t p, uint64_t ts)
{
	struct mt_analysis *d = s->d;
	size_t i;

	for (; s->next_fail < d->nfails && d->fails[s->next_fail].ts < ts; s->next_fail++)
		;
	for (i = s->resolved_fails; i < s->next_fail; i++)
		if (d->fail_next_driver[i] == UINT64_MAX && d->fails[i].process == p)
			d->fail_next_driver[i] = ts;
	while (s->resolved_fails < s->next_fail &&
	       d->fail_next_driver[s->resolved_fails] != UINT64_MAX)
		s->resolved_fails++;
}

static int survey_step(struct survey *s, const struct mt_event *ev)
{
	struct mt_pair_step st;
	struct layer_survey *l;
	int rc;

	if (!s->started || ev->ts != s->now) {
		if (s->started)
			moment_done(s);
		samples_before(s, ev->ts);
		s->now = ev->ts;
		s->started = true;
	}
	rc = mt_pairing_step(s->pairing, ev, &st);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	l = &s->layer[st.layer];
	if (!l->any)
		l->first = ev->ts;
	l->any = true;
	if (st.kind == MT_PAIR_BORN) {
		l->lifetimes++;
		l->d += (int64_t)st.live.l.bytes;
		if (st.layer == MT_LAYER_DRIVER)
			driver_allocated(s, ev->process, ev->ts);
	} else {
		l->d -= (int64_t)st.live.l.bytes;
	}
	if (st.kind == MT_PAIR_ORPHAN) {
		l->lifetimes++;
		l->orphan_bytes += st.live.l.bytes;
	}
	if (st.kind == MT_PAIR_DIED)
		return 0;
	if (idset_add(&l->sites, st.live.l.site) < 0 ||
	    (st.layer == MT_LAYER_REQUEST && idset_add(&s->requesters, ev->process + 1) < 0))
		return -ENOMEM;
	return note_process(s->c, ev->process);
}

/* The set's ids, in no particular order, into *out. */
static int idset_list(const struct idset *set, uint32_t **out, size_t *n, uint32_t minus)
{
	size_t i;

	*n = 0;
	*out = malloc((set->n + 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (i = 0; i < set->cap; i++)
		if (set->v[i])
			(*out)[(*n)++] = set->v[i] - minus;
	return 0;
}

/* The pass's figures into d, once it is over. */
static int survey_finish(struct survey *s)
{
	struct mt_analysis *d = s->d;
	struct layer_survey *drv = &s->layer[MT_LAYER_DRIVER], *l;
	size_t i;

	if (s->started)
		moment_done(s);
	samples_before(s, UINT64_MAX);
	for (i = 0; i < d->nsamples; i++)
		d->driver_at_sample[i] += drv->orphan_bytes;
	d->layer = s->layer[MT_LAYER_REQUEST].lifetimes ? MT_LAYER_REQUEST : MT_LAYER_DRIVER;
	l = &s->layer[d->layer];
	d->nlive_all = l->lifetimes;
	d->nseg_all = d->layer == MT_LAYER_REQUEST ? drv->lifetimes : 0;
	d->orphan_bytes = l->orphan_bytes;
	d->seg_orphan_bytes = d->layer == MT_LAYER_REQUEST ? drv->orphan_bytes : 0;
	/* as mt_peak_moment: the first moment with the most bytes live,
	 * the first event when nothing is ever live */
	if (l->any && (int64_t)l->orphan_bytes + l->best > 0) {
		d->peak_bytes = l->orphan_bytes + (uint64_t)l->best;
		d->peak_at = l->best_at;
	} else {
		d->peak_bytes = 0;
		d->peak_at = l->any ? l->first : 0;
	}
	for (i = 0; i < d->nfails; i++)
		if (idset_add(&l->sites, d->fails[i].site) < 0)
			return -ENOMEM;
	if (idset_list(&l->sites, &d->sites, &d->nsites, 0) < 0)
		return -ENOMEM;
	if (d->layer != MT_LAYER_REQUEST)
		return 0;
	return idset_list(&s->requesters, &d->request_processes, &d->nrequest_processes, 1);
}

static int survey_pass(struct mt_analysis *d, struct collect *c)
{
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE),
		              .device = d->device };
	struct survey s = { .d = d, .c = c, .pairing = mt_pairing_new() };
	struct mt_iter *it = NULL;
	struct mt_event ev;
	size_t i;
	int rc;

	d->driver_at_sample = calloc(d->nsamples + 1, sizeof(*d->driver_at_sample));
	d->fail_next_driver = malloc((d->nfails + 1) * sizeof(*d->fail_next_driver));
	if (!d->driver_at_sample || !d->fail_next_driver || !s.pairing) {
		mt_pairing_free(s.pairing);
		return -ENOMEM;
	}
	for (i = 0; i < d->nfails; i++)
		d->fail_next_driver[i] = UINT64_MAX;
	rc = mt_reader_iter(d->r, &q, &it);
	while (rc >= 0 && (rc = mt_iter_next(it, &ev)) == 1)
		rc = survey_step(&s, &ev);
	mt_iter_free(it);
	if (rc >= 0)
		rc = survey_finish(&s);
	mt_pairing_free(s.pairing);
	for (i = 0; i < 2; i++)
		free(s.layer[i].sites.v);
	free(s.requesters.v);
	return rc < 0 ? rc : 0;
}

int mt_analysis_survey(struct mt_analysis *d, struct mt_reader *r, uint32_t device, bool all_ranges,
                       char *err, size_t errlen)
{
	struct mt_query fq = { .kinds = MT_KIND_BIT(MT_EVENT_ALLOC_FAILED), .device = device };
	struct mt_query rq = { .kinds = MT_KIND_BIT(MT_EVENT_RANGE) };
	struct collect c = { .d = d, .all_ranges = all_ranges };
	int rc;

	memset(d, 0, sizeof(*d));
	d->r = r;
	if (device == 0) {
		uint32_t *ids = NULL;
		size_t n = 0;

		rc = mt_analyze_devices(r, &ids, &n, err, errlen);
		if (rc < 0)
			return rc;
		device = n ? ids[0] : 0;
		free(ids);
		if (!device)
			return an_fail(err, errlen, -ENOENT, "the trace holds no allocations");
	}
	d->device = device;
	fq.device = device;
	d->dev = mt_reader_device_by_id(r, device);
	if (!d->dev)
		return an_fail(err, errlen, -EINVAL, "the trace has no device %u", device);
	rc = mt_analyze_span(r, device, &d->t0, &d->t1);
	if (rc == 0)
		rc = walk(r, &fq, add_fail, &c);
	if (rc == 0)
		rc = mt_samples_load(r, device, &d->samples, &d->nsamples);
	if (rc == 0)
		rc = survey_pass(d, &c);
	if (rc == 0)
		rc = walk(r, &rq, add_range, &c);
	free(c.procs);
	free(c.dropped);
	if (rc < 0) {
		rc = an_reader_fail(r, rc, err, errlen);
		mt_analysis_release(d);
	}
	return rc;
}

/* ---- keeping the lifetimes live at moments ---- */

struct kept {
	struct mt_lifetime l;
	uint64_t index;
	size_t tag;
};

struct keep {
	struct mt_analysis *d;
	struct mt_pairing *pairing;
	const uint64_t *moments; /* ascending */
	size_t nmoments, next;
	bool all;
	struct kept *v[2];
	size_t n[2], cap[2];
	int rc;
};

static bool wanted(const struct keep *k, unsigned layer)
{
	return layer == k->d->layer ||
	       (k->d->layer == MT_LAYER_REQUEST && layer == MT_LAYER_DRIVER);
}

static void push(struct keep *k, unsigned layer, const struct mt_live *live)
{
	if (k->rc < 0 || !wanted(k, layer))
		return;
	if (mt_array_grow((void **)&k->v[layer], &k->cap[layer], k->n[layer],
	                  sizeof(*k->v[layer])) < 0) {
		k->rc = -ENOMEM;
		return;
	}
	k->v[layer][k->n[layer]++] = (struct kept){ live->l, live->index, live->tag };
}

static void mark(void *data, struct mt_live *live)
{
	(void)data;
	live->marked = true;
}

static void keep_rest(void *data, struct mt_live *live)
{
	struct keep *k = data;

	push(k, live->l.layer, live);
}

/* Marks what is live at every moment before ts. */
static void moments_before(struct keep *k, uint64_t ts)
{
	bool any = false;

	for (; k->next < k->nmoments && k->moments[k->next] < ts; k->next++)
		any = true;
	if (any)
		mt_pairing_each(k->pairing, mark, k);
}

static int by_index(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

/* The kept lifetimes of a layer, in index order, into *out (and their tags). */
static int settle(struct keep *k, unsigned layer, struct mt_lifetime **out, size_t *n,
                  size_t **tags)
{
	size_t i, m = k->n[layer];

	if (m)
		qsort(k->v[layer], m, sizeof(*k->v[layer]), by_index);
	*out = malloc((m + 1) * sizeof(**out));
	if (tags)
		*tags = malloc((m + 1) * sizeof(**tags));
	if (!*out || (tags && !*tags))
		return -ENOMEM;
	for (i = 0; i < m; i++) {
		(*out)[i] = k->v[layer][i].l;
		if (tags)
			(*tags)[i] = k->v[layer][i].tag;
	}
	*n = m;
	return 0;
}

static int keep_step(struct keep *k, const struct an_observer *obs, const struct mt_event *ev)
{
	struct mt_pair_step st;
	int rc = mt_pairing_step(k->pairing, ev, &st);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (obs && (rc = obs->step(obs->data, k->pairing, &st, ev->ts)) < 0)
		return rc;
	if (st.kind == MT_PAIR_DIED && (k->all || st.live.marked))
		push(k, st.layer, &st.live);
	else if (st.kind == MT_PAIR_ORPHAN && (k->all || (k->nmoments && k->moments[0] < ev->ts)))
		push(k, st.layer, &st.live);
	return k->rc;
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int an_keep(struct mt_analysis *d, const uint64_t *moments, size_t n, const struct an_observer *obs,
            size_t **tags)
{
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE),
		              .device = d->device };
	struct keep k = { .d = d, .all = !moments, .nmoments = n, .pairing = mt_pairing_new() };
	uint64_t *sorted = malloc((n + 1) * sizeof(*sorted)), now = 0;
	struct mt_iter *it = NULL;
	struct mt_event ev;
	bool started = false;
	int rc = -ENOMEM;

	if (!sorted || !k.pairing) {
		free(sorted);
		mt_pairing_free(k.pairing);
		return -ENOMEM;
	}
	if (n)
		memcpy(sorted, moments, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), by_value);
	k.moments = sorted;
	rc = mt_reader_iter(d->r, &q, &it);
	while (rc >= 0 && (rc = mt_iter_next(it, &ev)) == 1) {
		if (started && ev.ts != now && obs &&
		    (rc = obs->moment_end(obs->data, k.pairing, now)) < 0)
			break;
		moments_before(&k, ev.ts);
		now = ev.ts;
		started = true;
		rc = keep_step(&k, obs, &ev);
	}
	mt_iter_free(it);
	if (rc >= 0 && started && obs)
		rc = obs->moment_end(obs->data, k.pairing, now);
	if (rc >= 0) {
		moments_before(&k, UINT64_MAX);
		mt_pairing_each(k.pairing, keep_rest, &k);
		rc = k.rc;
	}
	if (rc >= 0)
		rc = settle(&k, d->layer, &d->live, &d->nlive, tags);
	if (rc >= 0 && d->layer == MT_LAYER_REQUEST)
		rc = settle(&k, MT_LAYER_DRIVER, &d->seg, &d->nseg, NULL);
	mt_pairing_free(k.pairing);
	free(k.v[0]);
	free(k.v[1]);
	free(sorted);
	return rc < 0 ? rc : 0;
}

int mt_analysis_keep(struct mt_analysis *d, const uint64_t *moments, size_t n, char *err,
                     size_t errlen)
{
	int rc = an_keep(d, moments, n, NULL, NULL);

	return rc < 0 ? an_reader_fail(d->r, rc, err, errlen) : 0;
}

int mt_analysis_load(struct mt_analysis *d, struct mt_reader *r, uint32_t device, bool all_ranges,
                     char *err, size_t errlen)
{
	int rc = mt_analysis_survey(d, r, device, all_ranges, err, errlen);

	if (rc == 0 && (rc = mt_analysis_keep(d, NULL, 0, err, errlen)) < 0)
		mt_analysis_release(d);
	return rc;
}

struct walk {
	const struct mt_analysis *d;
	int (*fn)(void *data, const struct mt_walk_step *st);
	void *data;
	int rc;
};

static void never_freed(void *data, struct mt_live *live)
{
	struct walk *w = data;
	struct mt_walk_step st = { MT_WALK_NEVER_FREED, &live->l, live->index, NULL };

	if (w->rc >= 0)
		w->rc = w->fn(w->data, &st);
}

int mt_analysis_walk(const struct mt_analysis *d, uint32_t kinds,
                     int (*fn)(void *data, const struct mt_walk_step *st), void *data)
{
	struct mt_query q = { .kinds = kinds | MT_KIND_BIT(MT_EVENT_ALLOC) |
		                       MT_KIND_BIT(MT_EVENT_FREE),
		              .device = d->device };
	struct mt_pairing *p = mt_pairing_new();
	struct walk w = { d, fn, data, 0 };
	struct mt_iter *it = NULL;
	struct mt_event ev;
	int rc = p ? mt_reader_iter(d->r, &q, &it) : -ENOMEM;

	while (rc >= 0 && (rc = mt_iter_next(it, &ev)) == 1) {
		struct mt_walk_step st = { MT_WALK_EVENT, NULL, 0, &ev };
		struct mt_pair_step step;

		if (ev.kind == MT_EVENT_ALLOC || ev.kind == MT_EVENT_FREE) {
			rc = mt_pairing_step(p, &ev, &step);
			if (rc != 0 || (step.layer != d->layer && d->layer != MT_LAYER_REQUEST)) {
				rc = rc < 0 ? rc : 0;
				continue;
			}
			st.kind = step.kind == MT_PAIR_BORN   ? MT_WALK_ALLOC
			          : step.kind == MT_PAIR_DIED ? MT_WALK_FREE
			                                      : MT_WALK_ORPHAN;
			st.l = &step.live.l;
			st.index = step.live.index;
		} else if (!(kinds & MT_KIND_BIT(ev.kind))) {
			continue;
		}
		rc = fn(data, &st);
	}
	mt_iter_free(it);
	if (rc >= 0)
		mt_pairing_each(p, never_freed, &w);
	mt_pairing_free(p);
	return rc < 0 ? rc : w.rc < 0 ? w.rc : 0;
}

size_t mt_analysis_nearest_sample(const struct mt_analysis *d, uint64_t ts)
{
	return an_nearest_sample(d->samples, d->nsamples, ts);
}

void mt_analysis_release(struct mt_analysis *d)
{
	free(d->live);
	free(d->seg);
	free(d->samples);
	free(d->ranges);
	free(d->fails);
	free(d->driver_at_sample);
	free(d->fail_next_driver);
	free(d->request_processes);
	free(d->sites);
	memset(d, 0, sizeof(*d));
}
