/* compare.c — two runs of a program side by side (mt_compare_build): each
 * run's report (mt_report_build) joined by name: NVTX ranges by
 * their name, allocations by the frame that names their call site (else
 * their innermost range), and what was allocated in one run only by call
 * site and requested size.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze-private.h"

/* Named totals of both runs, found by name (a small open hash table). */
struct table {
	struct mt_compare_site *v;
	size_t n, cap;
	size_t *slot; /* index + 1, 0 = empty */
	size_t nslots;
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static struct mt_compare_site *entry(struct table *t, const char *name)
{
	size_t i;

	if ((t->n + 1) * 2 > t->nslots) {
		size_t ns = t->nslots ? t->nslots * 2 : 256, k;
		size_t *slot = calloc(ns, sizeof(*slot));

		if (!slot)
			return NULL;
		for (k = 0; k < t->n; k++) {
			for (i = hash(t->v[k].name) & (ns - 1); slot[i]; i = (i + 1) & (ns - 1))
				;
			slot[i] = k + 1;
		}
		free(t->slot);
		t->slot = slot;
		t->nslots = ns;
	}
	for (i = hash(name) & (t->nslots - 1); t->slot[i]; i = (i + 1) & (t->nslots - 1))
		if (!strcmp(t->v[t->slot[i] - 1].name, name))
			return &t->v[t->slot[i] - 1];
	if (mt_array_grow((void **)&t->v, &t->cap, t->n, sizeof(*t->v)) < 0)
		return NULL;
	memset(&t->v[t->n], 0, sizeof(t->v[t->n]));
	snprintf(t->v[t->n].name, sizeof(t->v[t->n].name), "%s", name);
	t->slot[i] = ++t->n;
	return &t->v[t->n - 1];
}

static const char *str(struct mt_reader *r, uint32_t id)
{
	const char *s = id ? mt_reader_string(r, id) : NULL;

	return s && *s ? s : NULL;
}

/* The name of lifetime i of rep: its call-site frame, else its range. */
static const char *site_name(const struct mt_report *rep, size_t i, char *buf, size_t len)
{
	const struct mt_lifetime *l = &rep->data.live[i];
	const char *stack = str(rep->data.r, l->site);
	size_t k = mt_site_display_index(stack);
	const struct mt_range *g = rep->range_of ? rep->range_of[i] : NULL;

	if (k != (size_t)-1)
		return mt_site_frame(stack, k, buf, len);
	if (g) {
		const char *name = str(rep->data.r, g->name);
		snprintf(buf, len, "in %s", name ? name : "(unnamed)");
		return buf;
	}
	return "(no call site or range)";
}

static uint64_t peak_reserved(const struct mt_report *rep)
{
	const struct mt_analysis *d = &rep->data;
	uint64_t bytes = 0, at;

	if (d->layer == MT_LAYER_REQUEST && d->nseg) {
		if (mt_peak_moment(d->seg, d->nseg, &bytes, &at) < 0)
			return 0;
		return bytes;
	}
	return rep->peak_bytes; /* the driver layer itself, or nothing known */
}

static void fill_run(struct mt_compare_run *run, const struct mt_report *rep)
{
	const struct mt_analysis *d = &rep->data;
	size_t i;

	run->device = d->device;
	run->layer = d->layer;
	run->peak_live = rep->peak_bytes;
	run->peak_live_at = rep->peak_at - d->t0;
	run->peak_reserved = peak_reserved(rep);
	run->allocations = d->nlive;
	for (i = 0; i < d->nlive; i++)
		run->bytes_allocated += d->live[i].bytes;
	run->nooms = rep->nooms;
	for (i = 0; i < rep->nooms && i < MT_COMPARE_OOMS; i++) {
		run->oom[i].at = rep->ooms[i].f->ts - d->t0;
		run->oom[i].bytes = rep->ooms[i].f->bytes;
	}
}

static int join_ranges(struct mt_compare *c, const struct mt_report rep[2])
{
	struct table t = { 0 };
	size_t i;
	int side, rc = 0;

	for (side = 0; side < 2 && rc == 0; side++)
		for (i = 0; i < rep[side].nranges; i++) {
			const struct mt_range_stats *s = &rep[side].ranges[i];
			const char *name = str(rep[side].data.r, s->name);
			struct mt_compare_site *e = entry(&t, name ? name : "(unnamed)");

			if (!e) {
				rc = -ENOMEM;
				break;
			}
			/* count: instances, bytes: bytes allocated (peak and
			 * allocations follow below from the reports) */
			e->count[side] = s->instances;
			e->bytes[side] = s->bytes_allocated;
		}
	if (rc == 0 && t.n) {
		c->ranges = calloc(t.n, sizeof(*c->ranges));
		if (!c->ranges)
			rc = -ENOMEM;
	}
	for (i = 0; rc == 0 && i < t.n; i++) {
		struct mt_compare_range *g = &c->ranges[i];

		snprintf(g->name, sizeof(g->name), "%.127s", t.v[i].name);
		for (side = 0; side < 2; side++) {
			size_t k;

			g->instances[side] = t.v[i].count[side];
			g->bytes_allocated[side] = t.v[i].bytes[side];
			for (k = 0; k < rep[side].nranges; k++) {
				const struct mt_range_stats *s = &rep[side].ranges[k];
				const char *name = str(rep[side].data.r, s->name);

				if (!strcmp(name ? name : "(unnamed)", g->name)) {
					g->allocations[side] = s->allocations;
					g->peak_live[side] = s->peak_live;
				}
			}
		}
	}
	c->nranges = rc == 0 ? t.n : 0;
	free(t.v);
	free(t.slot);
	return rc;
}

static uint64_t larger(const uint64_t v[2])
{
	return v[0] > v[1] ? v[0] : v[1];
}

static int by_range_bytes(const void *x, const void *y)
{
	uint64_t a = larger(((const struct mt_compare_range *)x)->bytes_allocated);
	uint64_t b = larger(((const struct mt_compare_range *)y)->bytes_allocated);

	return a > b ? -1 : a < b;
}

static uint64_t change(const struct mt_compare_site *s)
{
	return s->bytes[1] > s->bytes[0] ? s->bytes[1] - s->bytes[0] : s->bytes[0] - s->bytes[1];
}

static int by_change(const void *x, const void *y)
{
	uint64_t a = change(x), b = change(y);

	if (a != b)
		return a > b ? -1 : 1;
	return strcmp(((const struct mt_compare_site *)x)->name,
	              ((const struct mt_compare_site *)y)->name);
}

static int by_bytes_alone(const void *x, const void *y)
{
	const struct mt_compare_site *a = x, *b = y;
	uint64_t va = a->bytes[0] + a->bytes[1], vb = b->bytes[0] + b->bytes[1];

	if (va != vb)
		return va > vb ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Bytes live at each run's peak per name, the most changed first. */
static int join_at_peak(struct mt_compare *c, const struct mt_report rep[2])
{
	struct table t = { 0 };
	char buf[512];
	size_t i;
	int side;

	for (side = 0; side < 2; side++)
		for (i = 0; i < rep[side].data.nlive; i++) {
			const struct mt_lifetime *l = &rep[side].data.live[i];
			struct mt_compare_site *e;

			if (!mt_lifetime_live_at(l, rep[side].peak_at))
				continue;
			e = entry(&t, site_name(&rep[side], i, buf, sizeof(buf)));
			if (!e)
				goto oom;
			e->bytes[side] += l->bytes;
			e->count[side]++;
		}
	qsort(t.v, t.n, sizeof(*t.v), by_change);
	c->at_peak = t.v;
	c->nat_peak = t.n < MT_COMPARE_TOP ? t.n : MT_COMPARE_TOP;
	free(t.slot);
	return 0;
oom:
	free(t.v);
	free(t.slot);
	return -ENOMEM;
}

/* (call site, size) pairs allocated in one run only. */
static int join_only(struct mt_compare *c, const struct mt_report rep[2])
{
	struct table t = { 0 };
	char buf[512], key[600];
	size_t i, k;
	int side;

	for (side = 0; side < 2; side++)
		for (i = 0; i < rep[side].data.nlive; i++) {
			const struct mt_lifetime *l = &rep[side].data.live[i];
			struct mt_compare_site *e;

			const char *name = site_name(&rep[side], i, buf, sizeof(buf));

			snprintf(key, sizeof(key), "%llu B %s%s", (unsigned long long)l->bytes,
			         name[0] == '(' || !strncmp(name, "in ", 3) ? "" : "at ", name);
			if (!(e = entry(&t, key)))
				goto oom;
			e->bytes[side] += l->bytes;
			e->count[side]++;
		}
	for (side = 0; side < 2; side++) {
		c->only[side] = calloc(t.n ? t.n : 1, sizeof(*c->only[side]));
		if (!c->only[side])
			goto oom;
		for (k = 0; k < t.n; k++)
			if (t.v[k].count[side] && !t.v[k].count[1 - side]) {
				c->only[side][c->nonly[side]++] = t.v[k];
				c->only_count[side] += t.v[k].count[side];
				c->only_bytes[side] += t.v[k].bytes[side];
			}
		qsort(c->only[side], c->nonly[side], sizeof(*c->only[side]), by_bytes_alone);
	}
	free(t.v);
	free(t.slot);
	return 0;
oom:
	free(t.v);
	free(t.slot);
	return -ENOMEM;
}

int mt_compare_build(struct mt_compare *c, struct mt_reader *a, struct mt_reader *b, char *err,
                     size_t errlen)
{
	struct mt_report rep[2];
	struct mt_report_options opt = { 0 };
	struct mt_reader *r[2] = { a, b };
	int side, rc = 0;

	memset(c, 0, sizeof(*c));
	memset(rep, 0, sizeof(rep));
	for (side = 0; side < 2 && rc == 0; side++) {
		rc = mt_report_build(&rep[side], r[side], 0, &opt, err, errlen);
		if (rc == 0)
			fill_run(&c->run[side], &rep[side]);
	}
	if (rc == 0 &&
	    (join_ranges(c, rep) < 0 || join_at_peak(c, rep) < 0 || join_only(c, rep) < 0))
		rc = an_fail(err, errlen, -ENOMEM, "out of memory");
	if (rc == 0)
		qsort(c->ranges, c->nranges, sizeof(*c->ranges), by_range_bytes);
	for (side = 0; side < 2; side++)
		mt_report_release(&rep[side]);
	if (rc < 0)
		mt_compare_release(c);
	return rc;
}

void mt_compare_release(struct mt_compare *c)
{
	free(c->ranges);
	free(c->at_peak);
	free(c->only[0]);
	free(c->only[1]);
	memset(c, 0, sizeof(*c));
}
