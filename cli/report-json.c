/* report-json.c — memtrace report for scripts: one device's report as a
 * JSON object. Times are nanoseconds since the device's first event, sizes
 * bytes; unknown figures are null. */
#include "config.h"

#include <string.h>

#include "report-print.h"

static json_t *jint(uint64_t v)
{
	return v > INT64_MAX ? json_null() : json_integer((json_int_t)v);
}

static json_t *jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

static const char *str(struct mt_reader *r, uint32_t id)
{
	const char *s = id ? mt_reader_string(r, id) : NULL;

	return s && *s ? s : NULL;
}

static json_t *alloc_json(const struct mt_report *rep, const struct mt_report_alloc *a, uint64_t at)
{
	struct mt_reader *r = rep->data.r;
	const struct mt_lifetime *l = a->l;
	const char *stack = str(r, l->site);
	char frame[1024], name[256];
	json_t *o = json_object(), *frames = json_array();
	size_t i, n = mt_site_frame_count(stack);
	bool born = !(l->flags & MT_LIFETIME_NO_ALLOC);

	for (i = 0; i < n; i++)
		json_array_append_new(frames,
		                      json_string(mt_site_frame(stack, i, frame, sizeof(frame))));
	json_object_set_new(o, "bytes", jint(l->bytes));
	json_object_set_new(o, "start_ns",
	                    born ? jint(cli_report_since(rep, l->start)) : json_null());
	json_object_set_new(o, "age_ns",
	                    born && at >= l->start ? jint(at - l->start) : json_null());
	json_object_set_new(o, "stream", jint(l->stream));
	json_object_set_new(o, "process", jint(l->process));
	json_object_set_new(o, "address", jint(l->address));
	json_object_set_new(o, "site",
	                    jstr(cli_report_site(rep, l->site, false, frame, sizeof(frame))));
	json_object_set_new(o, "stack", frames);
	if (a->range)
		mt_range_label(r, a->range->name, 0, name, sizeof(name));
	json_object_set_new(o, "range", a->range ? json_string(name) : json_null());
	json_object_set_new(o, "range_domain", jstr(a->range ? str(r, a->range->domain) : NULL));
	return o;
}

/* What ran at a moment: kernel_times says what the kernel's times are
 * ("gpu": start and end on the GPU; "launch": when its launch call
 * returned; "none": not recorded); kernel null when none was found. */
static json_t *context_json(const struct mt_report *rep, const struct mt_moment_context *c)
{
	static const char *const times[] = { "gpu", "launch", "none" };
	struct mt_reader *r = rep->data.r;
	json_t *o = json_object(), *k = json_null();
	char name[256];

	if (c->kernel)
		k = json_pack("{s:o, s:o, s:o, s:o, s:b, s:b}", "name", jstr(str(r, c->kernel)),
		              "stream", jint(c->kernel_stream), "ts_ns",
		              jint(cli_report_since(rep, c->kernel_ts)), "end_ns",
		              jint(cli_report_since(rep, c->kernel_end)), "running", c->running,
		              "elsewhere", c->elsewhere);
	json_object_set_new(o, "kernel_times", json_string(times[c->times]));
	json_object_set_new(o, "kernel", k);
	if (c->range)
		mt_range_label(r, c->range->name, 0, name, sizeof(name));
	json_object_set_new(o, "range", c->range ? json_string(name) : json_null());
	json_object_set_new(o, "range_domain", jstr(c->range ? str(r, c->range->domain) : NULL));
	return o;
}

static json_t *allocs_json(const struct mt_report *rep, const struct mt_report_alloc *v, size_t n,
                           uint64_t at)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(arr, alloc_json(rep, &v[i], at));
	return arr;
}

static json_t *anatomy_json(const struct mt_report *rep, const struct mt_anatomy *a)
{
	json_t *o, *parts;
	unsigned i;

	if (!a->available)
		return json_null();
	o = json_object();
	parts = json_object();
	json_object_set_new(o, "at_ns", jint(cli_report_since(rep, a->at)));
	json_object_set_new(o, "measured_at_ns", jint(cli_report_since(rep, a->measured_at)));
	json_object_set_new(o, "reading_at_ns", jint(cli_report_since(rep, a->sample_ts)));
	json_object_set_new(o, "reading_offset_ns",
	                    json_integer((json_int_t)a->sample_ts - (json_int_t)a->at));
	json_object_set_new(o, "reading_same_segments", json_boolean(a->same_segments));
	json_object_set_new(o, "reading_bytes", jint(a->used_bytes));
	json_object_set_new(o, "process_bytes",
	                    a->process_bytes ? jint(a->process_bytes) : json_null());
	json_object_set_new(o, "allocator_cache_known", json_boolean(a->cache_known));
	for (i = 0; i < MT_PART_COUNT; i++)
		json_object_set_new(parts, mt_anatomy_part_key(i), json_integer(a->part[i]));
	json_object_set_new(o, "parts", parts);
	return o;
}

static json_t *groups_json(const struct mt_report *rep)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < rep->ngroups && i < rep->top; i++) {
		const struct mt_report_group *g = &rep->groups[i];

		json_array_append_new(arr, json_pack("{s:s, s:b, s:o, s:o, s:o}", "key", g->key,
		                                     "is_site", g->is_site, "count", jint(g->count),
		                                     "bytes", jint(g->bytes), "largest_bytes",
		                                     jint(g->largest.l->bytes)));
	}
	return arr;
}

static json_t *ranges_json(const struct mt_report *rep)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < rep->nranges; i++) {
		const struct mt_range_stats *s = &rep->ranges[i];

		json_array_append_new(
		        arr, json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "name",
		                       jstr(str(rep->data.r, s->name)), "domain",
		                       jstr(str(rep->data.r, s->domain)), "instances",
		                       jint(s->instances), "allocations", jint(s->allocations),
		                       "bytes_allocated", jint(s->bytes_allocated),
		                       "peak_live_bytes", jint(s->peak_live), "peak_at_ns",
		                       s->peak_live ? jint(cli_report_since(rep, s->peak_at))
		                                    : json_null()));
	}
	return arr;
}

static json_t *replay_json(const struct mt_report_replay *p)
{
	return json_pack("{s:s, s:s, s:s, s:o, s:o}", "policy", p->rec->policy, "params",
	                 p->rec->params ? p->rec->params : "", "backend",
	                 p->rec->backend ? p->rec->backend : "", "peak_reserved",
	                 jint(p->peak_reserved), "oom_count", jint(p->oom_count));
}

static json_t *failure_json(const struct mt_report *rep, const struct mt_failure *f)
{
	return json_pack("{s:o, s:o, s:s, s:s, s:o, s:o}", "at_ns",
	                 jint(cli_report_since(rep, f->ts)), "bytes", jint(f->bytes), "layer",
	                 mt_layer_name(f->layer), "api", mt_api_name(f->api), "error",
	                 jint(f->error), "free_bytes",
	                 f->free_bytes == UINT64_MAX ? json_null() : jint(f->free_bytes));
}

/* The saved replays' verdicts on o. */
static json_t *verdicts_json(const struct mt_report *rep, const struct mt_report_oom *o)
{
	json_t *arr = json_array();
	size_t k;

	for (k = 0; k < rep->nreplays; k++) {
		const struct mt_oom_verdict *v = &o->verdicts[k];
		json_t *p = replay_json(&rep->replays[k]);
		bool known = v->needs != UINT64_MAX;

		json_object_set_new(p, "held", o->room_known ? json_boolean(v->held) : json_null());
		json_object_set_new(p, "needs_bytes", known ? jint(v->needs) : json_null());
		json_object_set_new(p, "spare_bytes",
		                    v->held ? jint(o->room - v->needs) : json_null());
		json_array_append_new(arr, p);
	}
	return arr;
}

static json_t *oom_json(const struct mt_report *rep, size_t i)
{
	const struct mt_report_oom *o = &rep->ooms[i];
	const struct mt_analysis *d = &rep->data;
	json_t *j = failure_json(rep, o->f), *attempts = json_array();
	char frame[1024];
	size_t k;

	for (k = 0; k < d->nfails; k++)
		if (rep->failures[k].role == MT_FAILURE_ATTEMPT && rep->failures[k].oom == i)
			json_array_append_new(attempts, failure_json(rep, &d->fails[k]));
	json_object_set_new(j, "request_bytes", jint(o->f->bytes));
	json_object_set_new(j, "stream", jint(o->f->stream));
	json_object_set_new(j, "process", jint(o->f->process));
	json_object_set_new(j, "site",
	                    jstr(cli_report_site(rep, o->f->site, false, frame, sizeof(frame))));
	json_object_set_new(j, "attempts", attempts);
	json_object_set_new(j, "free_bytes",
	                    o->free_bytes == UINT64_MAX ? json_null() : jint(o->free_bytes));
	json_object_set_new(j, "detailed", json_boolean(o->detailed));
	if (!o->detailed)
		return j;
	json_object_set_new(j, "live_bytes", jint(o->live_bytes));
	json_object_set_new(j, "reserved_bytes",
	                    d->layer == MT_LAYER_REQUEST && !d->nseg_all ? json_null()
	                                                                 : jint(o->reserved));
	json_object_set_new(j, "largest_live", allocs_json(rep, o->largest, o->nlargest, o->f->ts));
	json_object_set_new(j, "anatomy", anatomy_json(rep, &o->anatomy));
	json_object_set_new(j, "context", context_json(rep, &o->context));
	json_object_set_new(j, "room_bytes", o->room_known ? jint(o->room) : json_null());
	json_object_set_new(j, "room_from_reading", json_boolean(o->room_from_reading));
	json_object_set_new(j, "lower_bound_bytes", jint(o->lower_bound));
	json_object_set_new(j, "replays", verdicts_json(rep, o));
	json_object_set_new(j, "smallest_capacity_bytes",
	                    o->smallest == (size_t)-1 ? json_null()
	                                              : jint(o->verdicts[o->smallest].needs));
	json_object_set_new(j, "smallest_capacity_policy",
	                    o->smallest == (size_t)-1
	                            ? json_null()
	                            : json_string(rep->replays[o->smallest].rec->policy));
	return j;
}

static json_t *ooms_json(const struct mt_report *rep)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < rep->nooms; i++)
		json_array_append_new(arr, oom_json(rep, i));
	return arr;
}

static json_t *oom_summary_json(const struct mt_report *rep)
{
	size_t n = rep->nooms;

	return json_pack(
	        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "count", jint(n), "first_at_ns",
	        n ? jint(cli_report_since(rep, rep->ooms[0].f->ts)) : json_null(), "last_at_ns",
	        n ? jint(cli_report_since(rep, rep->ooms[n - 1].f->ts)) : json_null(),
	        "failed_allocations", jint(rep->data.nfails), "framework_failures",
	        jint(rep->framework_failures), "driver_attempts", jint(rep->driver_attempts),
	        "recovered_attempts", jint(rep->recovered_attempts));
}

static const char *by_name(enum mt_report_by by)
{
	return by == MT_REPORT_BY_SITE ? "site" : by == MT_REPORT_BY_RANGE ? "range" : "tensor";
}

json_t *cli_report_json(const struct mt_report *rep, const struct mt_report_options *opt)
{
	const struct mt_analysis *d = &rep->data;
	json_t *o = json_object(), *saved = json_array();
	size_t k;

	json_object_set_new(o, "device", jint(d->dev->ordinal));
	json_object_set_new(o, "name", jstr(d->dev->name));
	json_object_set_new(o, "total_bytes", jint(d->dev->total_bytes));
	json_object_set_new(o, "layer", json_string(mt_layer_name(d->layer)));
	json_object_set_new(o, "start_ts", jint(d->t0));
	json_object_set_new(o, "peak_live_bytes", jint(rep->peak_bytes));
	json_object_set_new(o, "peak_at_ns", jint(cli_report_since(rep, rep->peak_at)));
	json_object_set_new(o, "at_ns", jint(cli_report_since(rep, rep->at)));
	json_object_set_new(o, "context", context_json(rep, &rep->context));
	json_object_set_new(o, "anatomy", anatomy_json(rep, &rep->anatomy));
	if (!rep->anatomy.available)
		json_object_set_new(o, "anatomy_unavailable", json_string(rep->anatomy.why));
	json_object_set_new(o, "top_at_peak",
	                    allocs_json(rep, rep->top_peak, rep->ntop_peak, rep->peak_at));
	json_object_set_new(o, "live_at_bytes", jint(rep->live_at_bytes));
	json_object_set_new(o, "live_at_count", jint(rep->live_at_count));
	if (opt->at_set)
		json_object_set_new(o, "top_at",
		                    allocs_json(rep, rep->tensors, rep->ntensors, rep->at));
	json_object_set_new(o, "by", json_string(by_name(opt->by)));
	if (opt->by != MT_REPORT_BY_TENSOR)
		json_object_set_new(o, "groups", groups_json(rep));
	json_object_set_new(o, "program_dir", json_string(rep->program_dir));
	json_object_set_new(o, "attributed_bytes", jint(rep->attributed_bytes));
	json_object_set_new(o, "attributed_fraction", json_real(rep->attributed_fraction));
	json_object_set_new(o, "ranges", ranges_json(rep));
	json_object_set_new(o, "library_range_names_left_out", jint(d->library_names));
	json_object_set_new(
	        o, "never_freed",
	        json_pack("{s:o, s:o, s:o}", "count", jint(rep->never_freed_count), "bytes",
	                  jint(rep->never_freed_bytes), "largest",
	                  allocs_json(rep, rep->never_freed, rep->nnever_freed, d->t1)));
	for (k = 0; k < rep->nreplays; k++)
		json_array_append_new(saved, replay_json(&rep->replays[k]));
	json_object_set_new(o, "saved_replays", saved);
	json_object_set_new(o, "oom_summary", oom_summary_json(rep));
	json_object_set_new(o, "ooms", ooms_json(rep));
	return o;
}
