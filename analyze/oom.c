/* oom.c — failed allocations explained: what was live, the largest live
 * allocations, how much the allocator could have held (the device less the
 * sampled use outside it), and which saved replays of the device would have
 * fit in that.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analyze-private.h"

/* The first failures explained in full (each one a pass over the
 * allocations); later ones keep their recorded figures. */
#define DETAILED 100

static uint64_t json_u64(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
	                                                       : 0;
}

static bool same_spec(const struct mt_replay_record *a, const struct mt_replay_record *b)
{
	return !strcmp(a->policy, b->policy) &&
	       !strcmp(a->params ? a->params : "", b->params ? b->params : "");
}

/* The latest saved replay of the device per policy and parameters, in the
 * order each was first saved. */
static int saved_replays(struct mt_report *rep)
{
	const struct mt_replay_record *recs = NULL;
	size_t n = 0, i, j;
	int rc = mt_reader_replays(rep->data.r, &recs, &n);

	if (rc < 0)
		return rc;
	rep->replays = calloc(n ? n : 1, sizeof(*rep->replays));
	if (!rep->replays)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		json_t *root;

		if (recs[i].device != rep->data.device)
			continue;
		for (j = 0; j < rep->nreplays && !same_spec(rep->replays[j].rec, &recs[i]); j++)
			;
		if (j == rep->nreplays)
			rep->nreplays++;
		root = recs[i].result_json ? json_loads(recs[i].result_json, 0, NULL) : NULL;
		rep->replays[j] =
		        (struct mt_report_replay){ &recs[i], json_u64(root, "peak_reserved"),
			                           json_u64(root, "oom_count") };
		json_decref(root);
	}
	return 0;
}

static bool live_then(const struct mt_lifetime *l, const void *data)
{
	return mt_lifetime_live_at(l, *(const uint64_t *)data);
}

static int explain(struct mt_report *rep, struct mt_report_oom *o, char *err, size_t errlen)
{
	const struct mt_analysis *d = &rep->data;
	struct mt_anatomy a;
	size_t j;
	int rc;

	o->live_bytes = mt_live_at(d->live, d->nlive, o->f->ts);
	o->nlargest = an_largest(rep, live_then, &o->f->ts, o->largest, MT_REPORT_OOM_LARGEST);
	rc = mt_anatomy_compute(&a, d->live, d->nlive, d->layer, d->seg, d->nseg, d->samples,
	                        d->nsamples, o->f->ts, err, errlen);
	if (rc < 0)
		return rc;
	o->budget = d->dev->total_bytes;
	if (a.available) {
		uint64_t outside =
		        (uint64_t)(a.part[MT_PART_OTHER_PROCESSES] + a.part[MT_PART_CONTEXT]);

		o->budget = outside < o->budget ? o->budget - outside : 0;
		o->budget_sampled = true;
	}
	for (j = 0; j < rep->nreplays; j++)
		o->fits[j] = rep->replays[j].oom_count == 0 &&
		             rep->replays[j].peak_reserved <= o->budget;
	return 0;
}

int an_ooms(struct mt_report *rep, char *err, size_t errlen)
{
	const struct mt_analysis *d = &rep->data;
	size_t i;
	int rc = saved_replays(rep);

	if (rc < 0)
		return an_fail(err, errlen, rc, "%s",
		               rc == -ENOMEM ? "out of memory" : mt_reader_message(d->r));
	rep->ooms = calloc(d->nfails ? d->nfails : 1, sizeof(*rep->ooms));
	if (!rep->ooms)
		return an_fail(err, errlen, -ENOMEM, "out of memory");
	rep->nooms = d->nfails;
	for (i = 0; i < d->nfails; i++) {
		struct mt_report_oom *o = &rep->ooms[i];

		o->f = &d->fails[i];
		o->fits = calloc(rep->nreplays ? rep->nreplays : 1, sizeof(*o->fits));
		if (!o->fits)
			return an_fail(err, errlen, -ENOMEM, "out of memory");
		o->detailed = i < DETAILED;
		if (o->detailed && (rc = explain(rep, o, err, errlen)) < 0)
			return rc;
	}
	return 0;
}
