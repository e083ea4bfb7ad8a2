/* memtrace report — what used the GPU memory: per device the peak of live
 * bytes and when, the anatomy of the memory in use at a moment, the largest
 * allocations live then with call site and NVTX range, bytes per NVTX range,
 * allocations never freed and every failed allocation explained. The
 * analyses are analyze/'s; this file parses arguments and prints (text or
 * --json). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli-util.h"
#include "commands.h"
#include "memtrace-analyze.h"
#include "memtrace-common.h"

#define CMD "report"
/* traces with more events than this show progress on a terminal */
#define PROGRESS_EVENTS 1000000

static void usage(void)
{
	fputs("Usage: memtrace report [TRACE] [--json] [--at peak|TIME]\n"
	      "\n"
	      "Explains what used the GPU memory in TRACE (default memtrace.db), per device:\n"
	      "  - peak live bytes (requests if the trace has them, else driver allocations)\n"
	      "    and when;\n"
	      "  - the anatomy of the device memory in use at the moment: what is outside\n"
	      "    the process (other processes, the driver's reserve), CUDA context and\n"
	      "    libraries, allocator cache, fragmentation, live allocations and what\n"
	      "    is unexplained - parts that add up to a sample (the nearest taken while\n"
	      "    the allocator held the same segments, else the nearest, measured at\n"
	      "    its time);\n"
	      "  - call sites come from memtrace record --stacks python (Python lines)\n"
	      "    or --stacks native; frames inside PyTorch are skipped when naming an\n"
	      "    allocation;\n"
	      "  - the 20 largest allocations live at the moment, with size, age, stream,\n"
	      "    call site and the innermost NVTX range open when each was made;\n"
	      "  - per NVTX range name: bytes allocated inside it and peak live bytes;\n"
	      "  - allocations never freed;\n"
	      "  - every failed allocation (OOM): what was live, and which saved replays\n"
	      "    (memtrace replay) would have fit.\n"
	      "\n"
	      "Options:\n"
	      "  --at peak|TIME  the moment for the anatomy and the largest allocations\n"
	      "                  (default: the peak of live bytes); TIME is since the start\n"
	      "                  of the device's events: 1.5 (seconds), 1.5s, 300ms, 20us,\n"
	      "                  100ns\n"
	      "  --json          one JSON object instead of text\n"
	      "  -h, --help      this help\n",
	      stdout);
}

static void on_progress(void *data, uint64_t done, uint64_t total)
{
	struct cli_progress *p = data;

	p->total = total;
	cli_progress_update(p, done);
}

/* ---- words shared by text and JSON ---- */

static const char *str(struct mt_reader *r, uint32_t id)
{
	const char *s = id ? mt_reader_string(r, id) : NULL;

	return s && *s ? s : NULL;
}

/* The frame that names an allocation, or NULL. */
static const char *site_frame(struct mt_reader *r, uint32_t site, char *buf, size_t len)
{
	const char *stack = str(r, site);
	size_t i = mt_site_display_index(stack);

	return i == (size_t)-1 ? NULL : mt_site_frame(stack, i, buf, len);
}

static void range_name(struct mt_reader *r, uint32_t name, uint32_t domain, char *buf, size_t len)
{
	const char *n = str(r, name), *d = str(r, domain);

	snprintf(buf, len, "%s%s%s%s", n ? n : "(unnamed)", d ? " [" : "", d ? d : "",
	         d ? "]" : "");
}

static uint64_t since(const struct mt_device_report *rep, uint64_t ts)
{
	return ts > rep->data.t0 ? ts - rep->data.t0 : 0;
}

/* ---- text ---- */

static const char *sz(uint64_t bytes, char *buf)
{
	return mt_size_format(bytes, buf, 32);
}

static const char *dur(uint64_t ns, char *buf)
{
	return mt_duration_format(ns, buf, 32);
}

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0.0;
}

static void print_alloc_line(const struct mt_device_report *rep, size_t k,
                             const struct mt_report_alloc *a, uint64_t at)
{
	struct mt_reader *r = rep->data.r;
	const struct mt_lifetime *l = a->l;
	char b[32], c[32], frame[512], range[256];
	const char *site = site_frame(r, l->site, frame, sizeof(frame));

	if (l->flags & MT_LIFETIME_NO_ALLOC)
		snprintf(c, sizeof(c), "before");
	else
		dur(at >= l->start ? at - l->start : 0, c);
	if (a->range)
		range_name(r, a->range->name, a->range->domain, range, sizeof(range));
	printf("  %3zu %10s %9s %6" PRIu64 "  %s%s%s\n", k + 1, sz(l->bytes, b), c, l->stream,
	       site       ? site
	       : a->range ? ""
	                  : "(no call site or range)",
	       a->range ? (site ? "  in " : "in ") : "", a->range ? range : "");
}

static void print_allocs(const struct mt_device_report *rep, const struct mt_report_alloc *v,
                         size_t n, uint64_t at, bool ages)
{
	size_t k;

	printf("    # %10s %9s %6s  %s\n", "size", ages ? "age" : "", "stream",
	       "call site, NVTX range");
	for (k = 0; k < n; k++)
		print_alloc_line(rep, k, &v[k], at);
}

static void print_anatomy(const struct mt_device_report *rep, bool at_set)
{
	const struct mt_anatomy *a = &rep->anatomy;
	char b[32], c[32];
	unsigned i;

	printf("\nAnatomy at +%s (%s)", dur(since(rep, a->at), b),
	       at_set ? "as asked" : "peak of live bytes");
	if (!a->available) {
		printf(": not available: %s\n", a->why);
		return;
	}
	if (a->measured_at == a->at)
		printf(", against the sample at +%s (same segments):\n",
		       dur(since(rep, a->sample_ts), c));
	else
		printf(", measured at the nearest sample, +%s:\n",
		       dur(since(rep, a->sample_ts), c));
	printf("  %10s  %6s  %s\n", sz(a->used_bytes, b), "100.0%",
	       "device memory in use (sampled: what nvidia-smi shows)");
	for (i = 0; i < MT_PART_COUNT; i++) {
		int64_t v = a->part[i];
		bool unknown =
		        !a->cache_known && (i == MT_PART_CACHE || i == MT_PART_FRAGMENTATION);

		if (unknown) {
			printf("  %10s  %6s  %s\n", "unknown", "",
			       mt_anatomy_part_label(i, a->layer));
			continue;
		}
		printf("  %s%9s  %5.1f%%  %s\n", v < 0 ? "-" : " ",
		       sz(v < 0 ? (uint64_t)-v : (uint64_t)v, b),
		       pct((double)v, (double)a->used_bytes), mt_anatomy_part_label(i, a->layer));
	}
	if (!a->cache_known)
		printf("  no allocator segments recorded (an as-is capture sees only the driver):\n"
		       "  the framework's segments count as live allocations, its cache is "
		       "unknown\n");
	if (a->part[MT_PART_UNEXPLAINED] < 0)
		printf("  unexplained is negative: the driver's count lags the recorded events\n");
	if (a->process_bytes)
		printf("  this process: %s (nvidia-smi's per-process figure), of which CUDA "
		       "context "
		       "and libraries %.1f%%\n",
		       sz(a->process_bytes, b),
		       pct((double)a->part[MT_PART_CONTEXT], (double)a->process_bytes));
}

static void print_ranges(const struct mt_device_report *rep)
{
	char name[256], b[32], c[32], d[32];
	size_t i, n = rep->nranges < MT_REPORT_TOP ? rep->nranges : MT_REPORT_TOP;
	int width = 5; /* "range" */

	for (i = 0; i < n; i++) {
		int len;
		range_name(rep->data.r, rep->ranges[i].name, rep->ranges[i].domain, name,
		           sizeof(name));
		len = (int)strlen(name);
		width = len > width ? len : width;
	}
	width = width > 60 ? 60 : width;
	if (!rep->nranges) {
		printf("\nNVTX ranges: none recorded\n");
		return;
	}
	printf("\nNVTX ranges by bytes allocated inside them (%zu of %zu names):\n", n,
	       rep->nranges);
	printf("  %-*s %9s %12s %10s %10s  %s\n", width, "range", "instances", "allocations",
	       "allocated", "peak live", "peak at");
	for (i = 0; i < n; i++) {
		const struct mt_range_stats *s = &rep->ranges[i];

		range_name(rep->data.r, s->name, s->domain, name, sizeof(name));
		printf("  %-*.*s %9" PRIu64 " %12" PRIu64 " %10s %10s  +%s\n", width, width, name,
		       s->instances, s->allocations, sz(s->bytes_allocated, b), sz(s->peak_live, c),
		       dur(since(rep, s->peak_at), d));
	}
}

static void print_oom(const struct mt_device_report *rep, const struct mt_report_oom *o)
{
	const struct mt_device_data *d = &rep->data;
	char a[32], b[32], c[32], frame[512];
	const char *site = site_frame(d->r, o->f->site, frame, sizeof(frame));
	size_t k;

	printf("  at +%s: %s requested (%s, error %" PRIu32 ")%s%s, %s free on the device\n",
	       dur(since(rep, o->f->ts), a), sz(o->f->bytes, b), mt_api_name(o->f->api),
	       o->f->error, site ? " at " : "", site ? site : "", sz(o->f->free_bytes, c));
	if (!o->detailed)
		return;
	printf("    %s live then", sz(o->live_bytes, a));
	for (k = 0; k < o->nlargest; k++)
		printf("%s %s", k ? "," : "; largest", sz(o->largest[k].l->bytes, b));
	printf("\n    the allocator could have held %s (%s)\n", sz(o->budget, a),
	       o->budget_sampled ? "the device less the sampled use outside the allocator"
	                         : "the device total: no sample");
	if (!rep->nreplays) {
		printf("    no saved replays; run memtrace replay --policy all\n");
		return;
	}
	for (k = 0; k < rep->nreplays; k++) {
		const struct mt_report_replay *p = &rep->replays[k];

		printf("    %-24s peak reserved %10s, %" PRIu64 " OOMs: %s\n", p->rec->policy,
		       sz(p->peak_reserved, a), p->oom_count,
		       o->fits[k] ? "would have fit" : "would not have fit");
	}
}

static void print_device(const struct mt_device_report *rep, bool at_set)
{
	const struct mt_device_data *d = &rep->data;
	const char *capture = mt_reader_meta(d->r, "capture");
	const char *what = d->layer == MT_LAYER_REQUEST ? "tensors" : "allocations";
	char a[32], b[32];
	size_t i;

	printf("device %" PRIu32 " \u00b7 %s \u00b7 %s \u00b7 capture: %s \u00b7 %s layer\n",
	       d->device, d->dev->name && *d->dev->name ? d->dev->name : "unknown GPU",
	       sz(d->dev->total_bytes, a), capture && *capture ? capture : "unknown",
	       mt_layer_name(d->layer));
	if (rep->peak_bytes)
		printf("\nPeak live %s: %s at +%s (%.1f%% of the device)\n", what,
		       sz(rep->peak_bytes, a), dur(since(rep, rep->peak_at), b),
		       pct((double)rep->peak_bytes, (double)d->dev->total_bytes));
	else
		printf("\nPeak live %s: nothing allocated\n", what);
	if (rep->peak_bytes)
		printf("Attributed: %.1f%% of the peak has a call site or an NVTX range\n",
		       100.0 * rep->attributed_fraction);
	print_anatomy(rep, at_set);
	if (rep->ntop) {
		printf("\nLargest %s live at +%s (%zu, %s live in all):\n", what,
		       dur(since(rep, rep->at), a), rep->ntop, sz(rep->live_at_bytes, b));
		print_allocs(rep, rep->top, rep->ntop, rep->at, true);
	}
	print_ranges(rep);
	printf("\nNever freed: %" PRIu64 " %s, %s\n", rep->never_freed_count, what,
	       sz(rep->never_freed_bytes, a));
	if (rep->nnever_freed)
		print_allocs(rep, rep->never_freed, rep->nnever_freed, d->t1, true);
	printf("\nFailed allocations (OOM): %s\n", rep->nooms ? "" : "none");
	for (i = 0; i < rep->nooms; i++)
		print_oom(rep, &rep->ooms[i]);
}

/* ---- JSON ---- */

static json_t *jint(uint64_t v)
{
	return v > INT64_MAX ? json_null() : json_integer((json_int_t)v);
}

static json_t *jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *alloc_json(const struct mt_device_report *rep, const struct mt_report_alloc *a,
                          uint64_t at)
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
	json_object_set_new(o, "start_ns", born ? jint(since(rep, l->start)) : json_null());
	json_object_set_new(o, "age_ns",
	                    born && at >= l->start ? jint(at - l->start) : json_null());
	json_object_set_new(o, "stream", jint(l->stream));
	json_object_set_new(o, "process", jint(l->process));
	json_object_set_new(o, "address", jint(l->address));
	json_object_set_new(o, "site", jstr(site_frame(r, l->site, frame, sizeof(frame))));
	json_object_set_new(o, "stack", frames);
	if (a->range)
		range_name(r, a->range->name, 0, name, sizeof(name));
	json_object_set_new(o, "range", a->range ? json_string(name) : json_null());
	json_object_set_new(o, "range_domain", jstr(a->range ? str(r, a->range->domain) : NULL));
	return o;
}

static json_t *allocs_json(const struct mt_device_report *rep, const struct mt_report_alloc *v,
                           size_t n, uint64_t at)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(arr, alloc_json(rep, &v[i], at));
	return arr;
}

static json_t *anatomy_json(const struct mt_device_report *rep)
{
	const struct mt_anatomy *a = &rep->anatomy;
	json_t *o, *parts;
	unsigned i;

	if (!a->available)
		return json_null();
	o = json_object();
	parts = json_object();
	json_object_set_new(o, "at_ns", jint(since(rep, a->at)));
	json_object_set_new(o, "measured_at_ns", jint(since(rep, a->measured_at)));
	json_object_set_new(o, "sample_at_ns", jint(since(rep, a->sample_ts)));
	json_object_set_new(o, "sampled_bytes", jint(a->used_bytes));
	json_object_set_new(o, "process_bytes",
	                    a->process_bytes ? jint(a->process_bytes) : json_null());
	json_object_set_new(o, "allocator_cache_known", json_boolean(a->cache_known));
	for (i = 0; i < MT_PART_COUNT; i++)
		json_object_set_new(parts, mt_anatomy_part_key(i), json_integer(a->part[i]));
	json_object_set_new(o, "parts", parts);
	return o;
}

static json_t *ranges_json(const struct mt_device_report *rep)
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
		                       s->peak_live ? jint(since(rep, s->peak_at)) : json_null()));
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

static json_t *ooms_json(const struct mt_device_report *rep)
{
	json_t *arr = json_array();
	char frame[1024];
	size_t i, k;

	for (i = 0; i < rep->nooms; i++) {
		const struct mt_report_oom *o = &rep->ooms[i];
		json_t *j = json_object();

		json_object_set_new(j, "at_ns", jint(since(rep, o->f->ts)));
		json_object_set_new(j, "request_bytes", jint(o->f->bytes));
		json_object_set_new(j, "free_bytes", jint(o->f->free_bytes));
		json_object_set_new(j, "api", json_string(mt_api_name(o->f->api)));
		json_object_set_new(j, "error", jint(o->f->error));
		json_object_set_new(
		        j, "site", jstr(site_frame(rep->data.r, o->f->site, frame, sizeof(frame))));
		json_object_set_new(j, "detailed", json_boolean(o->detailed));
		if (o->detailed) {
			json_t *fits = json_array();

			json_object_set_new(j, "live_bytes", jint(o->live_bytes));
			json_object_set_new(j, "largest_live",
			                    allocs_json(rep, o->largest, o->nlargest, o->f->ts));
			json_object_set_new(j, "budget_bytes", jint(o->budget));
			json_object_set_new(j, "budget_sampled", json_boolean(o->budget_sampled));
			for (k = 0; k < rep->nreplays; k++) {
				json_t *p = replay_json(&rep->replays[k]);

				json_object_set_new(p, "fits", json_boolean(o->fits[k]));
				json_array_append_new(fits, p);
			}
			json_object_set_new(j, "replays", fits);
		}
		json_array_append_new(arr, j);
	}
	return arr;
}

static json_t *device_json(const struct mt_device_report *rep, bool at_set)
{
	const struct mt_device_data *d = &rep->data;
	json_t *o = json_object(), *saved = json_array();
	size_t k;

	json_object_set_new(o, "device", jint(d->device));
	json_object_set_new(o, "name", jstr(d->dev->name));
	json_object_set_new(o, "total_bytes", jint(d->dev->total_bytes));
	json_object_set_new(o, "layer", json_string(mt_layer_name(d->layer)));
	json_object_set_new(o, "start_ts", jint(d->t0));
	json_object_set_new(o, "peak_live_bytes", jint(rep->peak_bytes));
	json_object_set_new(o, "peak_at_ns", jint(since(rep, rep->peak_at)));
	json_object_set_new(o, "at_ns", jint(since(rep, rep->at)));
	json_object_set_new(o, "anatomy", anatomy_json(rep));
	if (!rep->anatomy.available)
		json_object_set_new(o, "anatomy_unavailable", json_string(rep->anatomy.why));
	json_object_set_new(o, "top_at_peak",
	                    allocs_json(rep, rep->top_peak, rep->ntop_peak, rep->peak_at));
	if (at_set) {
		json_object_set_new(o, "live_at_bytes", jint(rep->live_at_bytes));
		json_object_set_new(o, "top_at", allocs_json(rep, rep->top, rep->ntop, rep->at));
	}
	json_object_set_new(o, "attributed_bytes", jint(rep->attributed_bytes));
	json_object_set_new(o, "attributed_fraction", json_real(rep->attributed_fraction));
	json_object_set_new(o, "ranges", ranges_json(rep));
	json_object_set_new(
	        o, "never_freed",
	        json_pack("{s:o, s:o, s:o}", "count", jint(rep->never_freed_count), "bytes",
	                  jint(rep->never_freed_bytes), "largest",
	                  allocs_json(rep, rep->never_freed, rep->nnever_freed, d->t1)));
	for (k = 0; k < rep->nreplays; k++)
		json_array_append_new(saved, replay_json(&rep->replays[k]));
	json_object_set_new(o, "saved_replays", saved);
	json_object_set_new(o, "ooms", ooms_json(rep));
	return o;
}

/* ---- the command ---- */

static uint64_t trace_events(struct mt_reader *r)
{
	struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { 0 };
	uint64_t n = 0;
	unsigned k;

	if (mt_reader_kind_stats(r, &q, st) < 0)
		return 0;
	for (k = 1; k <= MT_EVENT_KIND_MAX; k++)
		n += st[k].events;
	return n;
}

static int report(struct mt_reader *r, const char *path, bool json,
                  const struct mt_report_options *base)
{
	struct mt_report_options opt = *base;
	struct cli_progress prog;
	uint32_t *ids = NULL;
	size_t n = 0, i;
	json_t *top = NULL, *devices = NULL;
	char err[512], note[160];
	int rc = mt_analyze_devices(r, &ids, &n, err, sizeof(err));

	if (rc < 0) {
		cli_error(CMD, "%s", err);
		return CLI_EXIT_FAILURE;
	}
	if (!n) {
		free(ids);
		cli_error(CMD, "%s holds no allocations", path);
		return CLI_EXIT_FAILURE;
	}
	cli_incomplete_note(r, note, sizeof(note));
	cli_progress_start(&prog, "report", 100);
	prog.enabled = prog.enabled && trace_events(r) > PROGRESS_EVENTS;
	opt.progress = on_progress;
	opt.progress_data = &prog;
	if (json) {
		top = json_object();
		devices = json_array();
		json_object_set_new(top, "trace", json_string(path));
		json_object_set_new(top, "capture", jstr(mt_reader_meta(r, "capture")));
		json_object_set_new(top, "complete", json_boolean(!*note));
	}
	for (i = 0; i < n && rc == 0; i++) {
		struct mt_device_report rep;

		rc = mt_device_report_build(&rep, r, ids[i], &opt, err, sizeof(err));
		if (rc < 0)
			break;
		cli_progress_done(&prog);
		if (json) {
			json_t *d = device_json(&rep, opt.at_set);

			if (i == 0)
				json_object_update(top, d);
			json_array_append_new(devices, d);
		} else {
			if (i == 0)
				printf("memtrace report: %s\n%s%s", path, note, *note ? "\n" : "");
			printf("\n");
			print_device(&rep, opt.at_set);
		}
		mt_device_report_release(&rep);
	}
	cli_progress_done(&prog);
	free(ids);
	if (rc < 0) {
		json_decref(top);
		json_decref(devices);
		cli_error(CMD, "%s", err);
		return rc == -ERANGE ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
	}
	if (json) {
		json_object_set_new(top, "devices", devices);
		return cli_print_json(top);
	}
	return fflush(stdout) == EOF ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

int mt_cmd_report(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "at", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mt_report_options opt = { 0 };
	const char *path = CLI_DEFAULT_TRACE;
	struct mt_reader *r = NULL;
	bool json = false;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'a':
			if (!strcmp(optarg, "peak")) {
				opt.at_set = false;
				break;
			}
			if (cli_parse_time(optarg, &opt.at) < 0)
				return cli_usage_error(
				        CMD, "--at: '%s' is not peak or a time (1.5s, 300ms)",
				        optarg);
			opt.at_set = true;
			break;
		case 'h':
			usage();
			return CLI_EXIT_OK;
		default:
			return cli_bad_option(CMD, c, argv);
		}
	}
	if (argc - optind > 1)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind + 1]);
	if (optind < argc)
		path = argv[optind];
	rc = cli_open_trace(CMD, path, &r);
	if (rc)
		return rc;
	rc = report(r, path, json, &opt);
	mt_reader_free(r);
	return rc;
}
