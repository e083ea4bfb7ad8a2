/* ranges.c — NVTX ranges and allocations: one sweep over the device's
 * allocations, frees and range opens and closes, in time order, that gives
 * every allocation the innermost range open in its process when it was made
 * (the open range that started last: threads differ, an autograd thread's
 * operator under emit_nvtx starts after the main thread's "backward"), and
 * per range name the bytes allocated inside it and the most bytes live
 * while it was open.
 *
 * At one moment the sweep closes ranges, then frees, then opens ranges, then
 * allocates: a range [start, end) holds the allocations made at start and
 * not those made at end, like a lifetime.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze-private.h"

/* A range name (and domain) and the range's index, for giving names keys. */
struct named {
	uint32_t name, domain;
	size_t idx;
};

static int by_name(const void *a, const void *b)
{
	const struct named *x = a, *y = b;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* key[i] of every range, and one stats row per distinct (name, domain). */
static int name_keys(struct mt_report *rep, size_t *key)
{
	const struct mt_analysis *d = &rep->data;
	struct named *v = malloc((d->nranges ? d->nranges : 1) * sizeof(*v));
	size_t i, k = 0;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < d->nranges; i++)
		v[i] = (struct named){ d->ranges[i].name, d->ranges[i].domain, i };
	if (d->nranges)
		qsort(v, d->nranges, sizeof(*v), by_name);
	rep->ranges = calloc(d->nranges ? d->nranges : 1, sizeof(*rep->ranges));
	if (!rep->ranges) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < d->nranges; i++) {
		if (i == 0 || v[i].name != v[i - 1].name || v[i].domain != v[i - 1].domain) {
			rep->ranges[k].name = v[i].name;
			rep->ranges[k].domain = v[i].domain;
			k++;
		}
		key[v[i].idx] = k - 1;
	}
	rep->nranges = k;
	free(v);
	return 0;
}

/* Ranges of one name open in one process. */
struct open_name {
	uint32_t process;
	size_t key, count;
};

/* Per process: its ranges opened so far, in opening order (the top is the
 * innermost unless it has ended: ended ones are popped lazily). */
struct stack {
	uint32_t process;
	size_t *v;
	size_t n, cap;
};

struct sweep {
	struct mt_report *rep;
	const struct mt_report_options *opt;
	size_t *key;
	struct open_name *open;
	size_t nopen, opencap;
	struct stack *stacks;
	size_t nstacks, stackcap;
	int64_t live;
};

static struct stack *stack_of(struct sweep *s, uint32_t process)
{
	size_t i;

	for (i = 0; i < s->nstacks; i++)
		if (s->stacks[i].process == process)
			return &s->stacks[i];
	if (an_grow((void **)&s->stacks, &s->stackcap, s->nstacks, sizeof(*s->stacks)) < 0)
		return NULL;
	s->stacks[s->nstacks] = (struct stack){ .process = process };
	return &s->stacks[s->nstacks++];
}

static void note_peak(struct sweep *s, size_t key, uint64_t ts)
{
	struct mt_range_stats *st = &s->rep->ranges[key];

	if (s->live > 0 && (uint64_t)s->live > st->peak_live) {
		st->peak_live = (uint64_t)s->live;
		st->peak_at = ts;
	}
}

static int open_range(struct sweep *s, size_t r)
{
	const struct mt_range *g = &s->rep->data.ranges[r];
	struct stack *st = stack_of(s, g->process);
	size_t i, key = s->key[r];

	if (!st || an_grow((void **)&st->v, &st->cap, st->n, sizeof(*st->v)) < 0)
		return -ENOMEM;
	st->v[st->n++] = r;
	s->rep->ranges[key].instances++;
	note_peak(s, key, g->start);
	for (i = 0; i < s->nopen; i++)
		if (s->open[i].process == g->process && s->open[i].key == key) {
			s->open[i].count++;
			return 0;
		}
	if (an_grow((void **)&s->open, &s->opencap, s->nopen, sizeof(*s->open)) < 0)
		return -ENOMEM;
	s->open[s->nopen++] = (struct open_name){ g->process, key, 1 };
	return 0;
}

static void close_range(struct sweep *s, size_t r)
{
	const struct mt_range *g = &s->rep->data.ranges[r];
	size_t i;

	for (i = 0; i < s->nopen; i++)
		if (s->open[i].process == g->process && s->open[i].key == s->key[r]) {
			if (--s->open[i].count == 0)
				s->open[i] = s->open[--s->nopen];
			return;
		}
}

static int allocate(struct sweep *s, size_t i)
{
	const struct mt_lifetime *l = &s->rep->data.live[i];
	const struct mt_range *ranges = s->rep->data.ranges;
	struct stack *st = stack_of(s, l->process);
	size_t k;

	if (!st)
		return -ENOMEM;
	while (st->n && ranges[st->v[st->n - 1]].end != MT_TIME_UNKNOWN &&
	       ranges[st->v[st->n - 1]].end <= l->start)
		st->n--;
	s->rep->range_of[i] = st->n ? &ranges[st->v[st->n - 1]] : NULL;
	if (l->end != l->start)
		s->live += (int64_t)l->bytes;
	for (k = 0; k < s->nopen; k++) {
		struct mt_range_stats *rs = &s->rep->ranges[s->open[k].key];

		if (s->open[k].process == l->process) {
			rs->allocations++;
			rs->bytes_allocated += l->bytes;
		}
		note_peak(s, s->open[k].key, l->start);
	}
	return 0;
}

/* Range opens in (start, depth) order: an inner range that starts with its
 * parent comes after it. */
struct opening {
	uint64_t start;
	uint32_t depth;
	size_t idx;
};

static int open_order(const void *a, const void *b)
{
	const struct opening *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int by_bytes(const void *a, const void *b)
{
	const struct mt_range_stats *x = a, *y = b;

	if (x->bytes_allocated != y->bytes_allocated)
		return x->bytes_allocated > y->bytes_allocated ? -1 : 1;
	if (x->peak_live != y->peak_live)
		return x->peak_live > y->peak_live ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* The four event streams, each in time order. */
struct streams {
	struct an_timed *allocs, *frees, *closes;
	struct opening *opens;
	size_t na, nf, nc, no;
};

static int build_streams(struct sweep *s, struct streams *e)
{
	const struct mt_analysis *d = &s->rep->data;
	size_t i;

	e->allocs = malloc((d->nlive + 1) * sizeof(*e->allocs));
	e->frees = malloc((d->nlive + 1) * sizeof(*e->frees));
	e->closes = malloc((d->nranges + 1) * sizeof(*e->closes));
	e->opens = malloc((d->nranges + 1) * sizeof(*e->opens));
	if (!e->allocs || !e->frees || !e->closes || !e->opens)
		return -ENOMEM;
	for (i = 0; i < d->nlive; i++) {
		const struct mt_lifetime *l = &d->live[i];

		if (l->flags & MT_LIFETIME_NO_ALLOC)
			s->live += (int64_t)l->bytes; /* live from before the trace */
		else
			e->allocs[e->na++] = (struct an_timed){ l->start, i };
		if (l->end != MT_TIME_UNKNOWN &&
		    (l->flags & MT_LIFETIME_NO_ALLOC || l->end != l->start))
			e->frees[e->nf++] = (struct an_timed){ l->end, l->bytes };
	}
	for (i = 0; i < d->nranges; i++) {
		e->opens[e->no++] = (struct opening){ d->ranges[i].start, d->ranges[i].depth, i };
		if (d->ranges[i].end != MT_TIME_UNKNOWN)
			e->closes[e->nc++] = (struct an_timed){ d->ranges[i].end, i };
	}
	if (e->no)
		qsort(e->opens, e->no, sizeof(*e->opens), open_order);
	if (an_sort_timed(e->allocs, e->na) < 0 || an_sort_timed(e->frees, e->nf) < 0 ||
	    an_sort_timed(e->closes, e->nc) < 0)
		return -ENOMEM;
	return 0;
}

static int run(struct sweep *s, struct streams *e)
{
	size_t a = 0, f = 0, c = 0, op = 0;
	uint64_t total = e->na + e->nf + e->nc + e->no, done = 0, step = total / 100 + 1;
	int rc = 0;

	while (rc == 0 && (a < e->na || f < e->nf || c < e->nc || op < e->no)) {
		uint64_t t = UINT64_MAX;

		if (c < e->nc && e->closes[c].t < t)
			t = e->closes[c].t;
		if (f < e->nf && e->frees[f].t < t)
			t = e->frees[f].t;
		if (op < e->no && e->opens[op].start < t)
			t = e->opens[op].start;
		if (a < e->na && e->allocs[a].t < t)
			t = e->allocs[a].t;
		for (; c < e->nc && e->closes[c].t == t; c++, done++)
			close_range(s, e->closes[c].v);
		for (; f < e->nf && e->frees[f].t == t; f++, done++)
			s->live -= (int64_t)e->frees[f].v;
		for (; rc == 0 && op < e->no && e->opens[op].start == t; op++, done++)
			rc = open_range(s, e->opens[op].idx);
		for (; rc == 0 && a < e->na && e->allocs[a].t == t; a++, done++)
			rc = allocate(s, e->allocs[a].v);
		if (s->opt && s->opt->progress && done / step != (done - 1) / step)
			s->opt->progress(s->opt->progress_data, done, total);
	}
	return rc;
}

int an_ranges_sweep(struct mt_report *rep, const struct mt_report_options *opt, char *err,
                    size_t errlen)
{
	const struct mt_analysis *d = &rep->data;
	struct sweep s = { .rep = rep, .opt = opt };
	struct streams e = { 0 };
	size_t i;
	int rc = -ENOMEM;

	s.key = malloc((d->nranges + 1) * sizeof(*s.key));
	rep->range_of = calloc(d->nlive + 1, sizeof(*rep->range_of));
	if (!s.key || !rep->range_of || name_keys(rep, s.key) < 0)
		goto out;
	rc = build_streams(&s, &e);
	if (rc == 0)
		rc = run(&s, &e);
	if (rc == 0 && rep->nranges)
		qsort(rep->ranges, rep->nranges, sizeof(*rep->ranges), by_bytes);
out:
	for (i = 0; i < s.nstacks; i++)
		free(s.stacks[i].v);
	free(s.stacks);
	free(s.open);
	free(s.key);
	free(e.allocs);
	free(e.frees);
	free(e.closes);
	free(e.opens);
	return rc < 0 ? an_fail(err, errlen, rc, "out of memory") : 0;
}
