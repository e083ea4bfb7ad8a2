/* policy-runs.c — policy results for the views: the trace's saved replays
 * (mt_reader_replays) where they exist, else replays under the sim backend
 * through the replay engine (mt_replay_run), one after the other, so that
 * the memory of one replay at a time is held; an offline policy whose
 * replay would hold more than the caller's budget (mt_plan_bytes_estimate)
 * is left out and said so.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "viewer-private.h"

void vw_specs_free(char **specs, size_t n)
{
	size_t i;

	for (i = 0; specs && i < n; i++)
		free(specs[i]);
	free(specs);
}

int vw_specs_split(const char *text, char ***specs, size_t *n)
{
	char **out = NULL, *copy = strdup(text ? text : ""), *tok, *save = NULL;
	size_t m = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char **grown;

		if (m > 0 && strchr(tok, '=') && !strchr(tok, ':')) {
			/* "k=v" continues the previous spec's parameters */
			size_t len = strlen(out[m - 1]) + strlen(tok) + 2;
			char *joined = malloc(len);

			if (!joined)
				goto oom;
			snprintf(joined, len, "%s,%s", out[m - 1], tok);
			free(out[m - 1]);
			out[m - 1] = joined;
			continue;
		}
		grown = realloc(out, (m + 1) * sizeof(*out));
		if (!grown)
			goto oom;
		out = grown;
		out[m] = strdup(tok);
		if (!out[m])
			goto oom;
		m++;
	}
	free(copy);
	*specs = out;
	*n = m;
	return 0;
oom:
	free(copy);
	vw_specs_free(out, m);
	return -ENOMEM;
}

void vw_policy_runs_free(struct vw_policy_run *runs, size_t n)
{
	size_t i;

	for (i = 0; runs && i < n; i++) {
		free(runs[i].reserved);
		free(runs[i].allocated);
	}
	free(runs);
}

static int copy_series(struct vw_policy_run *run, const struct mt_series_point *p, size_t n)
{
	size_t i;

	run->reserved = malloc((n ? n : 1) * sizeof(*run->reserved));
	run->allocated = malloc((n ? n : 1) * sizeof(*run->allocated));
	if (!run->reserved || !run->allocated)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		run->reserved[i] = (struct vw_point){ p[i].ts, p[i].reserved };
		run->allocated[i] = (struct vw_point){ p[i].ts, p[i].allocated };
	}
	run->npoints = n;
	return 0;
}

static uint64_t json_u64(json_t *obj, const char *key, uint64_t fallback)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? (uint64_t)json_integer_value(v) : fallback;
}

/* run->conditions from a saved result (cmd-replay.c writes its "capacity",
 * "options" and "memtrace_version"; older results lack them). */
static void saved_conditions(struct vw_policy_run *run, const char *backend, json_t *root)
{
	json_t *cap = json_object_get(root, "capacity"), *opt = json_object_get(root, "options");
	const char *source = json_string_value(json_object_get(cap, "source"));
	const char *limit = json_string_value(json_object_get(opt, "limit"));
	const char *version = json_string_value(json_object_get(root, "memtrace_version"));
	char size[32], what[96];

	mt_size_format(json_u64(cap, "bytes", 0), size, sizeof(size));
	if (!source)
		snprintf(what, sizeof(what), "capacity not saved (an older memtrace)");
	else if (!strcmp(source, "limit"))
		snprintf(what, sizeof(what), "capacity %s (--limit %.40s)", size,
		         limit ? limit : "?");
	else if (!strcmp(source, "recorded"))
		snprintf(what, sizeof(what), "capacity %s, the recorded card", size);
	else
		snprintf(what, sizeof(what), "no capacity limit%s", limit ? " (--limit none)" : "");
	snprintf(run->conditions, sizeof(run->conditions), "%s \u00b7 %s%s%s%s",
	         backend && *backend ? backend : "?", what,
	         json_is_true(json_object_get(opt, "find_min_capacity"))
	                 ? " \u00b7 --find-min-capacity"
	                 : "",
	         version ? " \u00b7 memtrace " : "", version ? version : "");
}

static int from_saved(struct vw_policy_run *run, const struct mt_replay_record *rec)
{
	uint64_t max_res = 0, max_alloc = 0;
	json_t *root;
	size_t i;

	snprintf(run->name, sizeof(run->name), "%s%s%s", rec->policy,
	         rec->params && *rec->params ? ":" : "", rec->params ? rec->params : "");
	run->saved = true;
	for (i = 0; i < rec->series_len; i++) {
		if (rec->series[i].reserved > max_res)
			max_res = rec->series[i].reserved;
		if (rec->series[i].allocated > max_alloc)
			max_alloc = rec->series[i].allocated;
	}
	/* the series is decimated: the result's own peaks are exact */
	root = rec->result_json ? json_loads(rec->result_json, 0, NULL) : NULL;
	run->peak_reserved = json_u64(root, "peak_reserved", max_res);
	run->peak_allocated = json_u64(root, "peak_allocated", max_alloc);
	run->oom_count = json_u64(root, "oom_count", 0);
	saved_conditions(run, rec->backend, root);
	json_decref(root);
	return copy_series(run, rec->series, rec->series_len);
}

/* Whether spec's policy keeps every request while it replays (offline). */
static bool offline(const char *spec)
{
	char name[96];
	const struct mt_policy_ops *ops;

	snprintf(name, sizeof(name), "%.*s", (int)strcspn(spec, ":"), spec);
	ops = mt_policy_find(name);
	return ops && ops->flags & MT_POLICY_OFFLINE;
}

bool vw_plan_over_budget(const struct mt_request_stream *stream, const char *spec, uint64_t budget,
                         uint64_t *requests, uint64_t *needs)
{
	*requests = mt_request_stream_requests(stream);
	*needs = mt_plan_bytes_estimate(*requests);
	return offline(spec) && *needs > budget;
}

int vw_plan_need_text(uint64_t requests, uint64_t needs, uint64_t budget, char *buf, size_t len)
{
	char n[32], b[32], r[32];

	mt_size_format(needs, n, sizeof(n));
	mt_size_format(budget, b, sizeof(b));
	if (requests >= 1000000)
		snprintf(r, sizeof(r), "%.1f M", (double)requests / 1e6);
	else
		snprintf(r, sizeof(r), "%llu", (unsigned long long)requests);
	return snprintf(buf, len, "%s requests would need ~%s, over the %s budget", r, n, b);
}

/* Leaves spec out rather than replay it when it would hold more than
 * budget bytes: true, with run filled in. */
static bool leave_out(struct vw_policy_run *run, const struct mt_request_stream *stream,
                      const char *spec, uint64_t budget)
{
	if (!vw_plan_over_budget(stream, spec, budget, &run->requests, &run->needs))
		return false;
	snprintf(run->name, sizeof(run->name), "%s", spec);
	run->left_out = true;
	run->budget = budget;
	return true;
}

void vw_policy_left_out_note(const struct vw_canvas *c, const struct vw_policy_run *run,
                             double width, char *buf, size_t len)
{
	char need[200], text[320];
	int why;

	vw_plan_need_text(run->requests, run->needs, run->budget, need, sizeof(need));
	why = snprintf(text, sizeof(text), "%s: not replayed (%s)", run->name, need);
	/* how to have it drawn, where there is room */
	snprintf(text + why, sizeof(text) - (size_t)why, "; `memtrace replay` saves it");
	if (vw_text_width(c, 0.9, false, text) > width)
		text[why] = '\0';
	vw_fit_text(c, 0.9, text, width, buf, len);
}

static int replay(struct vw_policy_run *run, const struct vw_trace *t,
                  struct mt_request_stream **stream, const char *spec, size_t points,
                  uint64_t budget, char *err, size_t errlen)
{
	struct mt_replay_options opt = {
		.policy = spec,
		.backend = MT_BACKEND_SIM,
		.device = t->device,
		.series_points = points,
	};
	struct mt_replay_result res;
	int rc;

	if (!*stream) {
		rc = mt_request_stream_load(stream, t->r, t->device, err, errlen);
		if (rc < 0)
			return rc;
	}
	if (leave_out(run, *stream, spec, budget))
		return 0;
	memset(&res, 0, sizeof(res));
	rc = mt_replay_run(*stream, &opt, &res, err, errlen);
	if (rc < 0)
		return rc;
	snprintf(run->name, sizeof(run->name), "%s", spec);
	run->peak_reserved = res.peak_reserved;
	run->peak_allocated = res.peak_allocated;
	run->oom_count = res.oom_count;
	snprintf(run->conditions, sizeof(run->conditions),
	         "sim \u00b7 no capacity limit \u00b7 memtrace %s", MT_VERSION);
	rc = copy_series(run, res.series, res.series_len);
	mt_replay_result_release(&res);
	return rc < 0 ? vw_fail(err, errlen, rc, "out of memory") : 0;
}

static bool same_spec(const struct mt_replay_record *rec, const char *spec)
{
	const char *colon = strchr(spec, ':');
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
	const char *params = colon ? colon + 1 : "";

	return strlen(rec->policy) == len && !strncmp(rec->policy, spec, len) &&
	       !strcmp(rec->params ? rec->params : "", params);
}

/* The latest saved replay of spec on the device, or NULL. */
static const struct mt_replay_record *find_saved(const struct mt_replay_record *recs, size_t n,
                                                 uint32_t device, const char *spec)
{
	const struct mt_replay_record *found = NULL;
	size_t i;

	for (i = 0; i < n; i++)
		if ((recs[i].device == device || recs[i].device == 0) && same_spec(&recs[i], spec))
			found = &recs[i];
	return found;
}

/* Specs to show when none were asked for: the saved ones of the device
 * (each once), else every policy. */
static int default_specs(const struct mt_replay_record *recs, size_t nrec, uint32_t device,
                         char ***specs, size_t *n)
{
	const struct mt_policy_ops *const *all = mt_policy_list();
	char **out = calloc(nrec + 64, sizeof(*out));
	size_t i, j, m = 0;

	if (!out)
		return -ENOMEM;
	for (i = 0; i < nrec; i++) {
		char spec[160];

		if (recs[i].device != device && recs[i].device != 0)
			continue;
		snprintf(spec, sizeof(spec), "%s%s%s", recs[i].policy,
		         recs[i].params && *recs[i].params ? ":" : "",
		         recs[i].params ? recs[i].params : "");
		for (j = 0; j < m && strcmp(out[j], spec); j++)
			;
		if (j == m && !(out[m++] = strdup(spec)))
			goto oom;
	}
	if (m == 0) { /* nothing saved: every policy */
		for (i = 0; all && all[i] && i < 64; i++)
			if (!(out[i] = strdup(all[i]->name)))
				goto oom;
		m = i;
	}
	*specs = out;
	*n = m;
	return 0;
oom:
	vw_specs_free(out, nrec + 64);
	return -ENOMEM;
}

/* Moves the runs left out after the others, each group in its order. */
static size_t left_out_last(struct vw_policy_run *runs, size_t n)
{
	size_t i, kept = 0;

	for (i = 0; i < n; i++)
		if (!runs[i].left_out) {
			struct vw_policy_run r = runs[i];

			memmove(&runs[kept + 1], &runs[kept], (i - kept) * sizeof(*runs));
			runs[kept++] = r;
		}
	return kept;
}

int vw_policy_runs(const struct vw_trace *t, const char *text, size_t points, uint64_t budget,
                   struct vw_policy_run **out, size_t *n, size_t *nleft, char *err, size_t errlen)
{
	const struct mt_replay_record *recs = NULL;
	struct mt_request_stream *stream = NULL;
	struct vw_policy_run *runs = NULL;
	char **specs = NULL;
	size_t nrec = 0, nspecs = 0, i;
	int rc;

	rc = mt_reader_replays(t->r, &recs, &nrec);
	if (rc < 0)
		return vw_fail(err, errlen, rc, "%s", mt_reader_message(t->r));
	rc = text ? vw_specs_split(text, &specs, &nspecs)
	          : default_specs(recs, nrec, t->device, &specs, &nspecs);
	if (rc < 0)
		return vw_fail(err, errlen, rc, "out of memory");
	runs = calloc(nspecs ? nspecs : 1, sizeof(*runs));
	if (!runs) {
		rc = vw_fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < nspecs && rc == 0; i++) {
		const struct mt_replay_record *rec = find_saved(recs, nrec, t->device, specs[i]);

		if (rec && from_saved(&runs[i], rec) < 0)
			rc = vw_fail(err, errlen, -ENOMEM, "out of memory");
		else if (!rec)
			rc = replay(&runs[i], t, &stream, specs[i], points, budget, err, errlen);
	}
	if (rc < 0) {
		vw_policy_runs_free(runs, nspecs);
		goto out;
	}
	*out = runs;
	*n = left_out_last(runs, nspecs);
	if (nleft)
		*nleft = nspecs - *n;
out:
	if (stream)
		mt_request_stream_free(stream);
	vw_specs_free(specs, nspecs);
	return rc;
}
