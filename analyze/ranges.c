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
 *
 * The sweep watches the pass that keeps the lifetimes the report lists
 * (an_keep): allocations and frees stream past, each moment's gathered
 * until its end; the ranges are in memory.
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

/* An allocation of the moment being gathered. */
struct made {
	uint64_t index, bytes, address;
	uint32_t process, device;
	bool freed; /* freed at the same moment: never live, counts nowhere */
};

/* Range opens in (start, depth) order: an inner range that starts with its
 * parent comes after it. */
struct opening {
	uint64_t start;
	uint32_t depth;
	size_t idx;
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
	/* the ranges' opens and closes in time order, and how far done */
	struct opening *opens;
	struct an_timed *closes;
	size_t no, nc, op, c;
	/* the moment being gathered */
	struct made *made;
	size_t nmade, madecap;
	uint64_t freed;
	uint64_t done, total, step;
};

static struct stack *stack_of(struct sweep *s, uint32_t process)
{
	size_t i;

	for (i = 0; i < s->nstacks; i++)
		if (s->stacks[i].process == process)
			return &s->stacks[i];
	if (mt_array_grow((void **)&s->stacks, &s->stackcap, s->nstacks, sizeof(*s->stacks)) < 0)
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

	if (!st || mt_array_grow((void **)&st->v, &st->cap, st->n, sizeof(*st->v)) < 0)
		return -ENOMEM;
	st->v[st->n++] = r;
	s->rep->ranges[key].instances++;
	note_peak(s, key, g->start);
	for (i = 0; i < s->nopen; i++)
		if (s->open[i].process == g->process && s->open[i].key == key) {
			s->open[i].count++;
			return 0;
		}
	if (mt_array_grow((void **)&s->open, &s->opencap, s->nopen, sizeof(*s->open)) < 0)
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

static int allocate(struct sweep *s, struct mt_pairing *p, const struct made *m, uint64_t ts)
{
	const struct mt_range *ranges = s->rep->data.ranges;
	struct stack *st = stack_of(s, m->process);
	struct mt_live *live;
	size_t k;

	if (!st)
		return -ENOMEM;
	while (st->n && ranges[st->v[st->n - 1]].end != MT_TIME_UNKNOWN &&
	       ranges[st->v[st->n - 1]].end <= ts)
		st->n--;
	live = mt_pairing_find(p, s->rep->data.layer, m->index, m->process, m->device, m->address);
	if (live)
		live->tag = st->n ? st->v[st->n - 1] + 1 : 0;
	if (!m->freed)
		s->live += (int64_t)m->bytes;
	for (k = 0; k < s->nopen; k++) {
		struct mt_range_stats *rs = &s->rep->ranges[s->open[k].key];

		if (s->open[k].process == m->process) {
			rs->allocations++;
			rs->bytes_allocated += m->bytes;
		}
		note_peak(s, s->open[k].key, ts);
	}
	return 0;
}

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

/* The ranges' opens and closes, each in time order. */
static int order_ranges(struct sweep *s)
{
	const struct mt_analysis *d = &s->rep->data;
	size_t i;

	s->closes = malloc((d->nranges + 1) * sizeof(*s->closes));
	s->opens = malloc((d->nranges + 1) * sizeof(*s->opens));
	if (!s->closes || !s->opens)
		return -ENOMEM;
	for (i = 0; i < d->nranges; i++) {
		s->opens[s->no++] = (struct opening){ d->ranges[i].start, d->ranges[i].depth, i };
		if (d->ranges[i].end != MT_TIME_UNKNOWN)
			s->closes[s->nc++] = (struct an_timed){ d->ranges[i].end, i };
	}
	if (s->no)
		qsort(s->opens, s->no, sizeof(*s->opens), open_order);
	return an_sort_timed(s->closes, s->nc);
}

/* The ranges' closes, then opens, of every moment before ts. */
static int ranges_before(struct sweep *s, uint64_t ts)
{
	int rc = 0;

	while (rc == 0 && ((s->c < s->nc && s->closes[s->c].t < ts) ||
	                   (s->op < s->no && s->opens[s->op].start < ts))) {
		uint64_t t = UINT64_MAX;

		if (s->c < s->nc && s->closes[s->c].t < t)
			t = s->closes[s->c].t;
		if (s->op < s->no && s->opens[s->op].start < t)
			t = s->opens[s->op].start;
		for (; s->c < s->nc && s->closes[s->c].t == t; s->c++)
			close_range(s, s->closes[s->c].v);
		for (; rc == 0 && s->op < s->no && s->opens[s->op].start == t; s->op++)
			rc = open_range(s, s->opens[s->op].idx);
	}
	return rc;
}

static int on_step(void *data, struct mt_pairing *p, const struct mt_pair_step *st, uint64_t ts)
{
	struct sweep *s = data;
	size_t i;

	(void)p;
	if (s->opt && s->opt->progress && ++s->done % s->step == 0)
		s->opt->progress(s->opt->progress_data, s->done, s->total);
	if (st->layer != s->rep->data.layer)
		return 0;
	switch (st->kind) {
	case MT_PAIR_BORN:
		if (mt_array_grow((void **)&s->made, &s->madecap, s->nmade, sizeof(*s->made)) < 0)
			return -ENOMEM;
		s->made[s->nmade++] =
		        (struct made){ st->live.index,     st->live.l.bytes,  st->live.l.address,
			               st->live.l.process, st->live.l.device, false };
		break;
	case MT_PAIR_DIED:
		if (st->live.l.start != ts) {
			s->freed += st->live.l.bytes;
			break;
		}
		for (i = s->nmade; i-- > 0;)
			if (s->made[i].index == st->live.index) {
				s->made[i].freed = true;
				break;
			}
		break;
	case MT_PAIR_ORPHAN:
		s->freed += st->live.l.bytes;
		break;
	}
	return 0;
}

static int on_moment_end(void *data, struct mt_pairing *p, uint64_t ts)
{
	struct sweep *s = data;
	size_t i;
	int rc = ranges_before(s, ts);

	for (; s->c < s->nc && s->closes[s->c].t == ts; s->c++)
		close_range(s, s->closes[s->c].v);
	s->live -= (int64_t)s->freed;
	for (; rc == 0 && s->op < s->no && s->opens[s->op].start == ts; s->op++)
		rc = open_range(s, s->opens[s->op].idx);
	for (i = 0; rc == 0 && i < s->nmade; i++)
		rc = allocate(s, p, &s->made[i], ts);
	s->nmade = 0;
	s->freed = 0;
	return rc;
}

int an_ranges_sweep(struct mt_report *rep, const struct mt_report_options *opt,
                    const uint64_t *moments, size_t nmoments, char *err, size_t errlen)
{
	struct mt_analysis *d = &rep->data;
	struct sweep s = { .rep = rep, .opt = opt, .live = (int64_t)d->orphan_bytes };
	struct an_observer obs = { on_step, on_moment_end, &s };
	struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
	size_t *tags = NULL, i;
	int rc = -ENOMEM;

	if (an_device_stats(d->r, d->device, st) == 0)
		s.total = st[MT_EVENT_ALLOC].events + st[MT_EVENT_FREE].events;
	s.step = s.total / 100 + 1;
	s.key = malloc((d->nranges + 1) * sizeof(*s.key));
	if (!s.key || name_keys(rep, s.key) < 0 || order_ranges(&s) < 0)
		goto out;
	rc = an_keep(d, moments, nmoments, &obs, &tags);
	if (rc == 0)
		rc = ranges_before(&s, UINT64_MAX);
	if (rc == 0 && !(rep->range_of = calloc(d->nlive + 1, sizeof(*rep->range_of))))
		rc = -ENOMEM;
	for (i = 0; rc == 0 && i < d->nlive; i++)
		rep->range_of[i] = tags[i] ? &d->ranges[tags[i] - 1] : NULL;
	if (rc == 0 && rep->nranges)
		qsort(rep->ranges, rep->nranges, sizeof(*rep->ranges), by_bytes);
out:
	for (i = 0; i < s.nstacks; i++)
		free(s.stacks[i].v);
	free(s.stacks);
	free(s.open);
	free(s.key);
	free(s.made);
	free(s.opens);
	free(s.closes);
	free(tags);
	if (rc == -ENOMEM)
		return an_fail(err, errlen, rc, "out of memory");
	return rc < 0 ? an_reader_fail(d->r, rc, err, errlen) : 0;
}
