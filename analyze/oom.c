/* oom.c — out-of-memory errors as the program saw them.
 *
 * A framework's failure (PyTorch raising OutOfMemoryError, recorded on the
 * request layer) is one OOM, and the failed driver calls of its process
 * that led to it — since the process's last successful driver allocation
 * and its previous such failure — are its attempts. A failed driver call
 * in a process whose framework recorded its requests, not followed by such
 * a failure but by a successful driver allocation, is one the framework
 * recovered from (it freed its cache and retried). Any other failed driver
 * call is an OOM the program saw; repeated failures of one size with no
 * success between them are one, retried.
 *
 * Each OOM (the first MT_REPORT_OOM_DETAILED in full) is explained with
 * the figures README.md's glossary defines: what was live and reserved,
 * the anatomy at that moment, the room the allocator had, the lower bound,
 * and per saved replay of the device (memtrace replay) whether the policy
 * would have held it and with how much to spare.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analyze-private.h"

#define PAGE (2ull << 20) /* a request's room is counted in 2 MiB pages */

static json_t *json_get_path(json_t *root, const char *a, const char *b)
{
	json_t *v = json_object_get(root, a);

	return b ? json_object_get(v, b) : v;
}

static uint64_t json_u64(json_t *root, const char *a, const char *b, uint64_t fallback)
{
	json_t *v = json_get_path(root, a, b);

	return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t)json_integer_value(v)
	                                                        : fallback;
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
		rep->replays[j] = (struct mt_report_replay){
			&recs[i], json_u64(root, "peak_reserved", NULL, 0),
			json_u64(root, "oom_count", NULL, 0), json_u64(root, "capacity", "bytes", 0)
		};
		json_decref(root);
	}
	return 0;
}

/* ---- which failures are OOMs ---- */

/* Whether the process of failure k allocated driver memory after it, at
 * or before ts. */
static bool success_by(const struct mt_analysis *d, size_t k, uint64_t ts)
{
	return d->fail_next_driver[k] != UINT64_MAX && d->fail_next_driver[k] <= ts;
}

static bool has_requests(const struct mt_analysis *d, uint32_t p)
{
	size_t i;

	for (i = 0; d->layer == MT_LAYER_REQUEST && i < d->nrequest_processes; i++)
		if (d->request_processes[i] == p)
			return true;
	return false;
}

/* The time of the next failure of failure i's process, else the end. */
static uint64_t next_failure(const struct mt_analysis *d, size_t i)
{
	size_t j;

	for (j = i + 1; j < d->nfails; j++)
		if (d->fails[j].process == d->fails[i].process)
			return d->fails[j].ts;
	return UINT64_MAX;
}

#define UNSET ((size_t)-1)

/* seen[i]: for a failure the program saw, i; for an attempt behind an OOM
 * or a retry, the index of that OOM's failure; UNSET for one recovered. */
static void classify(const struct mt_analysis *d, size_t *seen)
{
	const struct mt_failure *f = d->fails;
	size_t i, j;

	for (i = 0; i < d->nfails; i++)
		seen[i] = UNSET;
	/* the framework's failures and the driver attempts behind them */
	for (i = 0; i < d->nfails; i++) {
		if (f[i].layer != MT_LAYER_REQUEST)
			continue;
		seen[i] = i;
		for (j = i; j-- > 0;) {
			if (f[j].process != f[i].process || seen[j] != UNSET)
				continue;
			if (f[j].layer == MT_LAYER_REQUEST || success_by(d, j, f[i].ts))
				break;
			seen[j] = i;
		}
	}
	/* driver failures no framework failure claimed: recovered from when
	 * the framework's process allocated driver memory after them */
	for (i = 0; i < d->nfails; i++) {
		if (f[i].layer == MT_LAYER_REQUEST || seen[i] != UNSET)
			continue;
		if (has_requests(d, f[i].process) && success_by(d, i, next_failure(d, i)))
			continue;
		seen[i] = i;
		for (j = i; j-- > 0;) /* the process's previous OOM: a retry of it? */
			if (f[j].process == f[i].process && seen[j] == j) {
				if (f[j].bytes == f[i].bytes && f[j].layer != MT_LAYER_REQUEST &&
				    !success_by(d, j, f[i].ts))
					seen[i] = j;
				break;
			}
	}
}

int mt_failure_roles(const struct mt_analysis *d, struct mt_report_failure *roles, size_t *nooms)
{
	size_t *seen = malloc((d->nfails ? d->nfails : 1) * sizeof(*seen)), i, k = 0;

	if (!seen)
		return -ENOMEM;
	classify(d, seen);
	for (i = 0; i < d->nfails; i++)
		if (seen[i] == i)
			roles[i] = (struct mt_report_failure){ MT_FAILURE_OOM, k++ };
		else if (seen[i] == UNSET)
			roles[i] = (struct mt_report_failure){ MT_FAILURE_RECOVERED, 0 };
	/* attempts point at their OOM, which comes after them or before */
	for (i = 0; i < d->nfails; i++)
		if (seen[i] != i && seen[i] != UNSET)
			roles[i] = (struct mt_report_failure){ MT_FAILURE_ATTEMPT,
				                               roles[seen[i]].oom };
	*nooms = k;
	free(seen);
	return 0;
}

/* rep->failures, rep->ooms and the counts of each role. */
static int roles(struct mt_report *rep)
{
	const struct mt_analysis *d = &rep->data;
	size_t i;

	rep->failures = calloc(d->nfails ? d->nfails : 1, sizeof(*rep->failures));
	if (!rep->failures || mt_failure_roles(d, rep->failures, &rep->nooms) < 0)
		return -ENOMEM;
	rep->ooms = calloc(rep->nooms ? rep->nooms : 1, sizeof(*rep->ooms));
	if (!rep->ooms)
		return -ENOMEM;
	for (i = 0; i < d->nfails; i++) {
		const struct mt_report_failure *r = &rep->failures[i];
		struct mt_report_oom *o = &rep->ooms[r->oom];

		switch (r->role) {
		case MT_FAILURE_OOM:
			o->f = &d->fails[i];
			o->free_bytes = UINT64_MAX;
			rep->framework_failures += d->fails[i].layer == MT_LAYER_REQUEST;
			break;
		case MT_FAILURE_RECOVERED:
			rep->recovered_attempts++;
			break;
		case MT_FAILURE_ATTEMPT:
			o->attempts++;
			rep->driver_attempts++;
			break;
		}
	}
	/* the free memory the driver reported at the last attempt, in time
	 * order (an attempt may come after its OOM's failure: a retry) */
	for (i = 0; i < d->nfails; i++)
		if (rep->failures[i].role == MT_FAILURE_ATTEMPT &&
		    d->fails[i].free_bytes != UINT64_MAX)
			rep->ooms[rep->failures[i].oom].free_bytes = d->fails[i].free_bytes;
	return 0;
}

/* ---- each OOM explained ---- */

static bool live_then(const struct mt_lifetime *l, const void *data)
{
	return mt_lifetime_live_at(l, *(const uint64_t *)data);
}

/* What saved replay p needs to hold a request of `bytes` at ts (see
 * struct mt_oom_verdict); UINT64_MAX when its replay ran out of memory
 * at or before ts (it did not hold what came before). */
static uint64_t needs(const struct mt_report_replay *p, uint64_t ts, uint64_t bytes)
{
	const struct mt_replay_record *rec = p->rec;
	uint64_t peak = 0;
	size_t i;

	if (p->oom_count) {
		json_t *root = rec->result_json ? json_loads(rec->result_json, 0, NULL) : NULL;
		uint64_t first = json_u64(root, "first_oom", "ts", 0);

		json_decref(root);
		if (first <= ts)
			return UINT64_MAX;
	}
	for (i = 0; i < rec->series_len && rec->series[i].ts <= ts; i++)
		if (rec->series[i].reserved > peak)
			peak = rec->series[i].reserved;
	return peak + (bytes + PAGE - 1) / PAGE * PAGE;
}

static int explain(struct mt_report *rep, struct mt_report_oom *o, char *err, size_t errlen)
{
	const struct mt_analysis *d = &rep->data;
	uint64_t ts = o->f->ts;
	size_t j;
	int rc;

	o->live_bytes = mt_live_at(d->live, d->nlive, ts);
	o->reserved =
	        d->layer == MT_LAYER_REQUEST ? mt_live_at(d->seg, d->nseg, ts) : o->live_bytes;
	o->lower_bound = o->live_bytes + o->f->bytes;
	o->nlargest = an_largest(rep, live_then, &ts, o->largest, MT_REPORT_OOM_LARGEST);
	rc = mt_analysis_anatomy(d, ts, &o->anatomy, err, errlen);
	if (rc == 0)
		rc = mt_moment_context(d, o->f->process, o->f->stream, ts, &o->context, err,
		                       errlen);
	if (rc < 0)
		return rc;
	o->room = d->dev->total_bytes;
	o->room_known = o->room > 0;
	if (o->room_known && o->anatomy.available) {
		uint64_t outside = (uint64_t)(o->anatomy.part[MT_PART_OTHER_PROCESSES] +
		                              o->anatomy.part[MT_PART_CONTEXT]);

		o->room = outside < o->room ? o->room - outside : 0;
		o->room_from_reading = true;
	}
	o->verdicts = calloc(rep->nreplays ? rep->nreplays : 1, sizeof(*o->verdicts));
	if (!o->verdicts)
		return an_fail(err, errlen, -ENOMEM, "out of memory");
	o->smallest = (size_t)-1;
	for (j = 0; j < rep->nreplays; j++) {
		struct mt_oom_verdict *v = &o->verdicts[j];

		v->needs = needs(&rep->replays[j], ts, o->f->bytes);
		v->held = o->room_known && v->needs <= o->room;
		if (v->needs != UINT64_MAX &&
		    (o->smallest == (size_t)-1 || v->needs < o->verdicts[o->smallest].needs))
			o->smallest = j;
	}
	return 0;
}

int an_ooms_find(struct mt_report *rep, char *err, size_t errlen)
{
	size_t i;
	int rc = saved_replays(rep);

	if (rc < 0)
		return an_reader_fail(rep->data.r, rc, err, errlen);
	if (roles(rep) < 0)
		return an_fail(err, errlen, -ENOMEM, "out of memory");
	for (i = 0; i < rep->nooms; i++) {
		struct mt_report_oom *o = &rep->ooms[i];

		if (o->free_bytes == UINT64_MAX) /* no attempt said */
			o->free_bytes = o->f->free_bytes;
		o->detailed = i < MT_REPORT_OOM_DETAILED;
	}
	return 0;
}

int an_ooms_explain(struct mt_report *rep, char *err, size_t errlen)
{
	size_t i;
	int rc;

	for (i = 0; i < rep->nooms; i++)
		if (rep->ooms[i].detailed && (rc = explain(rep, &rep->ooms[i], err, errlen)) < 0)
			return rc;
	return 0;
}
