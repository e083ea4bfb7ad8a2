/* report-text.c — memtrace report for people: one device's report as text.
 * Every figure is one README.md's glossary defines. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "memtrace-common.h"
#include "report-print.h"

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

static const char *what(const struct mt_report *rep)
{
	return rep->data.layer == MT_LAYER_REQUEST ? "tensors" : "allocations";
}

/* "site  in RANGE", "in RANGE", or "(no call site or range)" for a. */
static const char *where(const struct mt_report *rep, const struct mt_report_alloc *a, char *buf,
                         size_t len)
{
	char site[512], range[256];
	const char *s = cli_report_site(rep, a->l->site, true, site, sizeof(site));

	if (a->range)
		mt_range_label(rep->data.r, a->range->name, a->range->domain, range, sizeof(range));
	snprintf(buf, len, "%s%s%s",
	         s          ? s
	         : a->range ? ""
	                    : "(no call site or range)",
	         a->range ? (s ? "  in " : "in ") : "", a->range ? range : "");
	return buf;
}

static void print_allocs(const struct mt_report *rep, const struct mt_report_alloc *v, size_t n,
                         uint64_t at)
{
	char b[32], c[32], w[1024];
	size_t k;

	printf("    # %10s %9s %6s  %s\n", "size", "age", "stream", "call site, NVTX range");
	for (k = 0; k < n; k++) {
		const struct mt_lifetime *l = v[k].l;

		if (l->flags & MT_LIFETIME_NO_ALLOC)
			snprintf(c, sizeof(c), "before");
		else
			dur(at >= l->start ? at - l->start : 0, c);
		printf("  %3zu %10s %9s %6" PRIu64 "  %s\n", k + 1, sz(l->bytes, b), c, l->stream,
		       where(rep, &v[k], w, sizeof(w)));
	}
}

static void print_groups(const struct mt_report *rep, bool by_site)
{
	size_t k, n = rep->ngroups < rep->top ? rep->ngroups : rep->top;
	char b[32], c[32], w[1024];

	printf("    # %10s %7s %10s  %s\n", "bytes", "count", "largest",
	       by_site ? "call site (else NVTX range)" : "NVTX range");
	for (k = 0; k < n; k++) {
		const struct mt_report_group *g = &rep->groups[k];
		const char *key = g->key;

		if (g->is_site)
			key = mt_site_shorten(g->key, rep->program_dir, w, sizeof(w));
		printf("  %3zu %10s %7" PRIu64 " %10s  %s\n", k + 1, sz(g->bytes, b), g->count,
		       sz(g->largest.l->bytes, c),
		       *key      ? key
		       : by_site ? "(no call site or range)"
		                 : "(outside NVTX ranges)");
	}
	if (n < rep->ngroups)
		printf("  ... %zu more (--top N shows more)\n", rep->ngroups - n);
}

static void print_live(const struct mt_report *rep, const struct mt_report_options *opt)
{
	enum mt_report_by by = opt->by;
	char a[32], b[32];

	if (!rep->live_at_count)
		return;
	printf("\nLive at +%s: %s in %" PRIu64 " %s, ", dur(cli_report_since(rep, rep->at), a),
	       sz(rep->live_at_bytes, b), rep->live_at_count, what(rep));
	if (by == MT_REPORT_BY_TENSOR) {
		printf("the %zu largest:\n", rep->ntensors);
		print_allocs(rep, rep->tensors, rep->ntensors, rep->at);
		return;
	}
	printf("by %s (%zu group%s):\n", by == MT_REPORT_BY_SITE ? "call site" : "NVTX range",
	       rep->ngroups, rep->ngroups == 1 ? "" : "s");
	print_groups(rep, by == MT_REPORT_BY_SITE);
}

/* The parts of an anatomy, one a line, with prefix before each. */
static void print_parts(const struct mt_anatomy *a, const char *prefix)
{
	char b[32];
	unsigned i;

	printf("%s%10s  %6s  %s\n", prefix, sz(a->used_bytes, b), "100.0%",
	       "device memory in use (the reading: what nvidia-smi shows)");
	for (i = 0; i < MT_PART_COUNT; i++) {
		int64_t v = a->part[i];

		if (!a->cache_known && (i == MT_PART_CACHE || i == MT_PART_FRAGMENTATION)) {
			printf("%s%10s  %6s  %s\n", prefix, "unknown", "",
			       mt_anatomy_part_label(i, a->layer));
			continue;
		}
		printf("%s%s%9s  %5.1f%%  %s\n", prefix, v < 0 ? "-" : " ",
		       sz(v < 0 ? (uint64_t)-v : (uint64_t)v, b),
		       pct((double)v, (double)a->used_bytes), mt_anatomy_part_label(i, a->layer));
	}
}

static void print_anatomy(const struct mt_report *rep, bool at_set)
{
	const struct mt_anatomy *a = &rep->anatomy;
	char b[32], reading[256];

	printf("\nAnatomy at +%s (%s)", dur(cli_report_since(rep, a->at), b),
	       at_set ? "as asked" : "peak of live bytes");
	if (!a->available) {
		printf(": not available: %s\n", a->why);
		return;
	}
	printf(", against %s:\n", mt_anatomy_reading(a, rep->data.t0, reading, sizeof(reading)));
	print_parts(a, "  ");
	if (!a->cache_known)
		printf("  no allocator segments recorded (an as-is capture sees only the driver):\n"
		       "  the framework's segments count as live allocations, its cache is "
		       "unknown\n");
	if (a->part[MT_PART_UNEXPLAINED] < 0)
		printf("  unexplained is negative: the driver's count lags the recorded events\n");
	if (a->process_bytes)
		printf("  this process: %s (nvidia-smi's per-process figure), of which CUDA "
		       "context and libraries %.1f%%\n",
		       sz(a->process_bytes, b),
		       pct((double)a->part[MT_PART_CONTEXT], (double)a->process_bytes));
}

/* The library-internal range names left out, if any. */
static void print_library_ranges(const struct mt_report *rep)
{
	size_t n = rep->data.library_names;

	if (n)
		printf("  %zu range name%s that libraries open for their own work (cub::, "
		       "cuBLAS...) "
		       "left out: --all-ranges shows %s\n",
		       n, n == 1 ? "" : "s", n == 1 ? "it" : "them");
}

static void print_ranges(const struct mt_report *rep)
{
	char name[256], b[32], c[32], d[32];
	size_t i, n = rep->nranges < rep->top ? rep->nranges : rep->top;
	int width = 5; /* "range" */

	if (!rep->nranges) {
		printf("\nNVTX ranges: none recorded%s\n",
		       rep->data.library_names ? " but libraries' own" : "");
		print_library_ranges(rep);
		return;
	}
	for (i = 0; i < n; i++) {
		int len = (int)strlen(mt_range_label(rep->data.r, rep->ranges[i].name,
		                                     rep->ranges[i].domain, name, sizeof(name)));

		width = len > width ? len : width;
	}
	width = width > 60 ? 60 : width;
	printf("\nNVTX ranges by bytes allocated inside them (%zu of %zu names):\n", n,
	       rep->nranges);
	printf("  %-*s %9s %12s %10s %10s  %s\n", width, "range", "instances", "allocations",
	       "allocated", "peak live", "peak at");
	for (i = 0; i < n; i++) {
		const struct mt_range_stats *s = &rep->ranges[i];

		mt_range_label(rep->data.r, s->name, s->domain, name, sizeof(name));
		printf("  %-*.*s %9" PRIu64 " %12" PRIu64 " %10s %10s  +%s\n", width, width, name,
		       s->instances, s->allocations, sz(s->bytes_allocated, b), sz(s->peak_live, c),
		       dur(cli_report_since(rep, s->peak_at), d));
	}
	print_library_ranges(rep);
}

/* ---- OOMs ---- */

static const char *free_text(uint64_t free_bytes, char *buf)
{
	return free_bytes == UINT64_MAX ? "unknown" : sz(free_bytes, buf);
}

static void print_oom_summary(const struct mt_report *rep)
{
	const struct mt_report_oom *first = &rep->ooms[0], *last = &rep->ooms[rep->nooms - 1];
	char a[32], b[32], c[32];

	printf("\nOut of memory: %zu OOM%s the program saw, ", rep->nooms,
	       rep->nooms == 1 ? "" : "s");
	if (rep->nooms == 1)
		printf("at +%s\n", dur(cli_report_since(rep, first->f->ts), a));
	else
		printf("from +%s to +%s\n", dur(cli_report_since(rep, first->f->ts), a),
		       dur(cli_report_since(rep, last->f->ts), b));
	/* the kinds of failure there were, none named with a count of 0 */
	const struct {
		size_t n;
		const char *one, *many;
	} kinds[] = {
		{ rep->framework_failures, "raised by the framework", "raised by the framework" },
		{ rep->driver_attempts, "failed driver attempt behind the OOMs",
		  "failed driver attempts behind the OOMs" },
		{ rep->nooms - rep->framework_failures,
		  "driver call of a process without recorded requests",
		  "driver calls of processes without recorded requests" },
		{ rep->recovered_attempts, "driver attempt the framework recovered from",
		  "driver attempts the framework recovered from" },
	};
	const char *sep = ": ";
	printf("  %zu failed allocation%s", rep->data.nfails, rep->data.nfails == 1 ? "" : "s");
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (kinds[k].n) {
			printf("%s%zu %s", sep, kinds[k].n,
			       kinds[k].n == 1 ? kinds[k].one : kinds[k].many);
			sep = ", ";
		}
	printf("\n");
	printf("  the first: %s requested, %s free on the device (the driver, at that moment)\n",
	       sz(first->f->bytes, a), free_text(first->free_bytes, c));
}

/* "policy" or "policy:params" of a saved replay. */
static const char *spec(const struct mt_report_replay *p, char *buf, size_t len)
{
	const char *params = p->rec->params ? p->rec->params : "";

	snprintf(buf, len, "%s%s%s", p->rec->policy, *params ? ":" : "", params);
	return buf;
}

/* "its replay ran out of memory before", naming the capacity it ran
 * against when saved. */
static const char *ran_out(const struct mt_report_replay *p, char *buf, size_t len)
{
	char size[32];

	if (p->capacity)
		snprintf(buf, len, "its replay at %s ran out of memory before",
		         sz(p->capacity, size));
	else
		snprintf(buf, len, "its replay ran out of memory before");
	return buf;
}

/* Which saved replays held the OOM (o's room is known), and which not. */
static void print_held(const struct mt_report *rep, const struct mt_report_oom *o)
{
	char a[32], b[32], name[160], why[96];
	size_t k, n;

	printf("    held by ");
	for (k = 0, n = 0; k < rep->nreplays; k++)
		if (o->verdicts[k].held)
			printf("%s%s (%s to spare)", n++ ? ", " : "",
			       spec(&rep->replays[k], name, sizeof(name)),
			       sz(o->room - o->verdicts[k].needs, a));
	printf("%s\n    not held by ", n ? "" : "no saved policy");
	for (k = 0, n = 0; k < rep->nreplays; k++) {
		const struct mt_oom_verdict *v = &o->verdicts[k];

		if (v->held)
			continue;
		printf("%s%s ", n++ ? ", " : "", spec(&rep->replays[k], name, sizeof(name)));
		if (v->needs == UINT64_MAX)
			printf("(%s)", ran_out(&rep->replays[k], why, sizeof(why)));
		else
			printf("(needs %s, %s more)", sz(v->needs, a), sz(v->needs - o->room, b));
	}
	printf("%s\n", n ? "" : "any saved policy");
}

static void print_verdicts(const struct mt_report *rep, const struct mt_report_oom *o)
{
	char a[32], name[160], why[96];
	size_t k;

	if (!rep->nreplays) {
		printf("    policies: no saved replays (memtrace replay --policy all saves "
		       "them)\n");
		return;
	}
	if (!o->room_known) { /* what each needs; none is judged */
		printf("    what each saved policy needs:");
		for (k = 0; k < rep->nreplays; k++) {
			const struct mt_oom_verdict *v = &o->verdicts[k];

			printf("%s %s (%s)", k ? "," : "",
			       spec(&rep->replays[k], name, sizeof(name)),
			       v->needs == UINT64_MAX ? ran_out(&rep->replays[k], why, sizeof(why))
			                              : sz(v->needs, a));
		}
		printf("\n");
	} else {
		print_held(rep, o);
	}
	if (o->smallest != (size_t)-1)
		printf("    smallest capacity that would have held it: %s (%s)\n",
		       sz(o->verdicts[o->smallest].needs, a),
		       spec(&rep->replays[o->smallest], name, sizeof(name)));
}

/* What ran at a moment (mt_moment_context), under a heading: the kernel,
 * its words saying whether its time is the GPU's or the launch's, and the
 * NVTX range. Nothing for a trace without kernels or ranges. */
static void print_context(const struct mt_report *rep, const struct mt_moment_context *c,
                          const char *indent, const char *heading)
{
	const char *name = c->kernel ? mt_reader_string(rep->data.r, c->kernel) : NULL;
	char a[32], range[256], where[64], last[80], other[64] = "";
	bool kernels = c->kernel || c->times != MT_KERNEL_TIMES_GPU;
	bool launch = c->times == MT_KERNEL_TIMES_LAUNCH;

	if (!kernels && !rep->data.nranges)
		return;
	printf("%s%s\n", indent, heading);
	/* where: the kernel's stream; last: where it is the last */
	if (c->kernel && c->elsewhere) {
		snprintf(where, sizeof(where), "on another stream (%" PRIu64 ")", c->kernel_stream);
		snprintf(last, sizeof(last), "in the process, %s", where);
		snprintf(other, sizeof(other), "; stream %" PRIu64 " %s none before", c->stream,
		         launch ? "launched" : "ran");
	} else {
		snprintf(where, sizeof(where), "on stream %" PRIu64, c->kernel_stream);
		snprintf(last, sizeof(last), "%s", where);
	}
	if (c->times == MT_KERNEL_TIMES_NONE)
		printf("%s  kernel      not recorded (--kernels none)\n", indent);
	else if (!c->kernel && kernels)
		printf("%s  kernel      none %s before it\n", indent,
		       launch ? "launched" : "recorded");
	else if (c->kernel) {
		size_t n = strlen(name ? name : "");
		printf("%s  kernel      %.100s%s\n", indent, name ? name : "(unnamed)",
		       n > 100 ? "..." : "");
		if (launch)
			printf("%s              the last launched %s, %s before%s (launch times: "
			       "recorded with --kernels launch)\n",
			       indent, last, dur(c->at - c->kernel_ts, a), other);
		else if (c->running)
			printf("%s              running on the GPU %s%s\n", indent, where, other);
		else
			printf("%s              the last to run %s, ended %s before%s\n", indent,
			       last, dur(c->at - c->kernel_end, a), other);
	}
	if (rep->data.nranges)
		printf("%s  NVTX range  %s\n", indent,
		       c->range ? mt_range_label(rep->data.r, c->range->name, c->range->domain,
		                                 range, sizeof(range))
		                : "none open");
}

static void print_oom(const struct mt_report *rep, size_t i)
{
	const struct mt_report_oom *o = &rep->ooms[i];
	const struct mt_analysis *d = &rep->data;
	char a[32], b[32], c[32], frame[512], reading[256];
	const char *site = cli_report_site(rep, o->f->site, true, frame, sizeof(frame));
	size_t k;

	printf("\n  OOM %zu at +%s: %s requested (%s, stream %" PRIu64 ")%s%s\n", i + 1,
	       dur(cli_report_since(rep, o->f->ts), a), sz(o->f->bytes, b), mt_api_name(o->f->api),
	       o->f->stream, site ? " at " : "", site ? site : "");
	if (o->attempts)
		printf("    %zu failed driver attempt%s behind it; ", o->attempts,
		       o->attempts == 1 ? "" : "s");
	else
		printf("    no failed driver attempt behind it; ");
	printf("%s free on the device (the driver)\n", free_text(o->free_bytes, c));
	if (!o->detailed)
		return;
	printf("    live %s", sz(o->live_bytes, a));
	for (k = 0; k < o->nlargest; k++)
		printf("%s %s", k ? "," : " (largest", sz(o->largest[k].l->bytes, b));
	printf("%s; reserved by the allocator %s\n", o->nlargest ? ")" : "",
	       d->layer == MT_LAYER_REQUEST && !d->nseg_all ? "unknown" : sz(o->reserved, b));
	print_context(rep, &o->context, "    ", "at that moment:");
	if (o->anatomy.available) {
		printf("    anatomy against %s:\n",
		       mt_anatomy_reading(&o->anatomy, d->t0, reading, sizeof(reading)));
		print_parts(&o->anatomy, "    ");
	} else {
		printf("    anatomy: not available: %s\n", o->anatomy.why);
	}
	if (!o->room_known) {
		printf("    room for the allocator unknown: the trace does not record the "
		       "device's memory\n");
		printf("    lower bound %s (live + the request)\n", sz(o->lower_bound, a));
	} else {
		printf("    room for the allocator %s (%s)\n", sz(o->room, a),
		       o->room_from_reading ? "the device less what the reading shows outside it"
		                            : "the device total: no reading");
		printf("    lower bound %s (live + the request): %s\n", sz(o->lower_bound, a),
		       o->lower_bound <= o->room ? "an allocator that wastes nothing holds it"
		                                 : "no allocator holds it in this room");
	}
	print_verdicts(rep, o);
}

/* The allocator a PyTorch snapshot's run used (import keeps its settings),
 * and the replay policy that models it. */
static void print_allocator(struct mt_reader *r)
{
	const char *text = mt_reader_meta(r, "allocator_settings");
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;
	json_t *e = json_object_get(j, "expandable_segments");

	if (json_is_boolean(e))
		printf("allocator: PyTorch's caching allocator%s (replay --policy %s)\n",
		       json_is_true(e) ? " with expandable segments" : "",
		       json_is_true(e) ? "expandable" : "caching");
	json_decref(j);
}

static void print_ooms(const struct mt_report *rep)
{
	size_t i;

	if (!rep->nooms) {
		printf("\nOut of memory: none");
		if (rep->recovered_attempts)
			printf(" (%zu failed driver attempt%s the framework recovered from)",
			       rep->recovered_attempts, rep->recovered_attempts == 1 ? "" : "s");
		printf("\n");
		return;
	}
	print_oom_summary(rep);
	for (i = 0; i < rep->nooms; i++)
		print_oom(rep, i);
	if (rep->nooms > MT_REPORT_OOM_DETAILED)
		printf("  (the first %d OOMs explained in full)\n", MT_REPORT_OOM_DETAILED);
}

void cli_report_text(const struct mt_report *rep, const struct mt_report_options *opt)
{
	const struct mt_analysis *d = &rep->data;
	const char *capture = mt_reader_meta(d->r, "capture");
	char a[32], b[32], label[64];

	printf("%s \u00b7 %s \u00b7 %s \u00b7 capture: %s \u00b7 %s layer\n",
	       mt_analyze_device_label(d->dev, label, sizeof(label)),
	       d->dev->name && *d->dev->name ? d->dev->name : "unknown GPU",
	       sz(d->dev->total_bytes, a), capture && *capture ? capture : "unknown",
	       mt_layer_name(d->layer));
	if (mt_reader_meta(d->r, "history_from"))
		printf("partial history from +%s (what was live then is reconstructed)\n",
		       dur(cli_report_since(
		                   rep, strtoull(mt_reader_meta(d->r, "history_from"), NULL, 10)),
		           a));
	print_allocator(d->r);
	if (rep->peak_bytes) {
		printf("\nPeak live %s: %s at +%s (%.1f%% of the device)\n", what(rep),
		       sz(rep->peak_bytes, a), dur(cli_report_since(rep, rep->peak_at), b),
		       pct((double)rep->peak_bytes, (double)d->dev->total_bytes));
		printf("Attributed: %.1f%% of the peak has a call site or an NVTX range\n",
		       100.0 * rep->attributed_fraction);
	} else {
		printf("\nPeak live %s: nothing allocated\n", what(rep));
	}
	if (rep->peak_bytes || opt->at_set) {
		char heading[64];
		snprintf(heading, sizeof(heading), "\n%s +%s:", opt->at_set ? "At" : "At the peak,",
		         dur(cli_report_since(rep, rep->at), a));
		print_context(rep, &rep->context, "", heading);
	}
	print_anatomy(rep, opt->at_set);
	print_live(rep, opt);
	print_ranges(rep);
	printf("\nNever freed: %" PRIu64 " %s, %s\n", rep->never_freed_count, what(rep),
	       sz(rep->never_freed_bytes, a));
	if (rep->nnever_freed)
		print_allocs(rep, rep->never_freed, rep->nnever_freed, d->t1);
	print_ooms(rep);
}
