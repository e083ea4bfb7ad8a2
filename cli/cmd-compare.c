/* memtrace compare — two runs of the same program side by side: peaks,
 * NVTX ranges, the call sites whose bytes at the peak changed most, what
 * only one run allocated, and the OOMs of each (analyze's mt_compare_build;
 * this file parses arguments and prints, text or --json). */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli-util.h"
#include "commands.h"
#include "memtrace-analyze.h"
#include "memtrace-common.h"

#define CMD "compare"

static void usage(void)
{
	fputs("Usage: memtrace compare A.db B.db [--json]\n"
	      "\n"
	      "Compares two traces of the same program, say before and after enabling\n"
	      "activation checkpointing or changing the batch size (each its first device\n"
	      "with allocations):\n"
	      "  - peak live bytes (requests if the trace has them) and when, and peak\n"
	      "    reserved bytes (the allocator's segments, else driver allocations);\n"
	      "  - per NVTX range name: instances, allocations, bytes allocated inside\n"
	      "    and peak live bytes while open;\n"
	      "  - the call sites whose bytes live at the peak changed most (named by the\n"
	      "    Python line or frame that made them, else by their NVTX range);\n"
	      "  - allocations of a call site and size that only one run made;\n"
	      "  - the failed allocations (OOM) of each run.\n"
	      "`memtrace render A.db OUT.png --compare B.db` draws both timelines aligned\n"
	      "by phase.\n"
	      "\n"
	      "Options:\n"
	      "  --json      one JSON object instead of text\n"
	      "  -h, --help  this help\n",
	      stdout);
}

static const char *sz(uint64_t bytes, char *buf)
{
	return mt_size_format(bytes, buf, 32);
}

static const char *dur(uint64_t ns, char *buf)
{
	return mt_duration_format(ns, buf, 32);
}

/* "+1.23 GiB" / "-512 MiB" / "0 B" */
static const char *delta(uint64_t a, uint64_t b, char *buf)
{
	char s[32];

	if (a == b)
		return "0 B";
	snprintf(buf, 40, "%s%s", b > a ? "+" : "-", sz(b > a ? b - a : a - b, s));
	return buf;
}

static void print_text(const struct mt_compare *c, const char *pa, const char *pb)
{
	const struct mt_compare_run *A = &c->run[0], *B = &c->run[1];
	char x[32], y[32], z[40], w[32], v[32];
	size_t i;
	int side;

	printf("memtrace compare: A %s, B %s\n\n", pa, pb);
	printf("  %-22s %12s %12s %12s\n", "", "A", "B", "B - A");
	printf("  %-22s %12s %12s %12s\n", "peak live", sz(A->peak_live, x), sz(B->peak_live, y),
	       delta(A->peak_live, B->peak_live, z));
	printf("  %-22s %12s %12s\n", "  at", dur(A->peak_live_at, x), dur(B->peak_live_at, y));
	printf("  %-22s %12s %12s %12s\n", "peak reserved", sz(A->peak_reserved, x),
	       sz(B->peak_reserved, y), delta(A->peak_reserved, B->peak_reserved, z));
	printf("  %-22s %12" PRIu64 " %12" PRIu64 "\n", "allocations", A->allocations,
	       B->allocations);
	printf("  %-22s %12s %12s %12s\n", "bytes allocated", sz(A->bytes_allocated, x),
	       sz(B->bytes_allocated, y), delta(A->bytes_allocated, B->bytes_allocated, z));
	printf("  %-22s %12" PRIu64 " %12" PRIu64 "\n", "failed allocations", A->nooms, B->nooms);
	if (c->nranges) {
		printf("\nNVTX ranges (peak live while open; bytes allocated inside):\n");
		printf("  %-30s %10s %10s %12s  %10s %10s\n", "range", "A peak", "B peak", "B - A",
		       "A alloc.", "B alloc.");
		for (i = 0; i < c->nranges && i < MT_COMPARE_TOP; i++) {
			const struct mt_compare_range *g = &c->ranges[i];

			printf("  %-30.30s %10s %10s %12s  %10s %10s\n", g->name,
			       sz(g->peak_live[0], x), sz(g->peak_live[1], y),
			       delta(g->peak_live[0], g->peak_live[1], z),
			       sz(g->bytes_allocated[0], w), sz(g->bytes_allocated[1], v));
		}
	} else {
		printf("\nNVTX ranges: none recorded in either run\n");
	}
	printf("\nBytes live at each run's peak, by call site (most changed first):\n");
	printf("  %10s %10s %12s  %s\n", "A", "B", "B - A", "call site");
	for (i = 0; i < c->nat_peak; i++) {
		const struct mt_compare_site *s = &c->at_peak[i];

		printf("  %10s %10s %12s  %s\n", sz(s->bytes[0], x), sz(s->bytes[1], y),
		       delta(s->bytes[0], s->bytes[1], z), s->name);
	}
	for (side = 0; side < 2; side++) {
		printf("\nOnly in %s: %" PRIu64 " allocations, %s (call site and size)%s\n",
		       side ? "B" : "A", c->only_count[side], sz(c->only_bytes[side], x),
		       c->nonly[side] ? ":" : "");
		for (i = 0; i < c->nonly[side] && i < MT_COMPARE_TOP; i++) {
			const struct mt_compare_site *s = &c->only[side][i];

			printf("  %8" PRIu64 " x  %10s  %s\n", s->count[side],
			       sz(s->bytes[side], x), s->name);
		}
	}
	for (side = 0; side < 2; side++) {
		const struct mt_compare_run *run = &c->run[side];

		printf("\nFailed allocations in %s: %s", side ? "B" : "A",
		       run->nooms ? "" : "none\n");
		for (i = 0; i < run->nooms && i < MT_COMPARE_OOMS; i++)
			printf("%s%s at +%s", i ? ", " : "", sz(run->oom[i].bytes, x),
			       dur(run->oom[i].at, y));
		if (run->nooms)
			printf("%s\n", run->nooms > MT_COMPARE_OOMS ? ", ..." : "");
	}
}

static json_t *jint(uint64_t v)
{
	return v > INT64_MAX ? json_null() : json_integer((json_int_t)v);
}

static json_t *pair(const uint64_t v[2])
{
	return json_pack("[o, o]", jint(v[0]), jint(v[1]));
}

/* A run; its device named by the CUDA device number the program saw, as
 * report names it. */
static json_t *run_json(const struct mt_compare_run *run, const char *path, struct mt_reader *r)
{
	const struct mt_device *dev = mt_reader_device_by_id(r, run->device);
	json_t *ooms = json_array();
	size_t i;

	for (i = 0; i < run->nooms && i < MT_COMPARE_OOMS; i++)
		json_array_append_new(ooms, json_pack("{s:o, s:o}", "at_ns", jint(run->oom[i].at),
		                                      "request_bytes", jint(run->oom[i].bytes)));
	return json_pack("{s:s, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "trace", path,
	                 "device", dev ? jint(dev->ordinal) : json_null(), "layer",
	                 mt_layer_name(run->layer), "peak_live_bytes", jint(run->peak_live),
	                 "peak_at_ns", jint(run->peak_live_at), "peak_reserved_bytes",
	                 jint(run->peak_reserved), "allocations", jint(run->allocations),
	                 "bytes_allocated", jint(run->bytes_allocated), "oom_count",
	                 jint(run->nooms), "first_ooms", ooms);
}

static json_t *sites_json(const struct mt_compare_site *v, size_t n)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(arr, json_pack("{s:s, s:o, s:o}", "name", v[i].name, "bytes",
		                                     pair(v[i].bytes), "count", pair(v[i].count)));
	return arr;
}

static int print_json(const struct mt_compare *c, const char *pa, const char *pb,
                      struct mt_reader *a, struct mt_reader *b)
{
	json_t *ranges = json_array(), *only = json_array();
	size_t i;
	int side;

	for (i = 0; i < c->nranges; i++) {
		const struct mt_compare_range *g = &c->ranges[i];

		json_array_append_new(ranges, json_pack("{s:s, s:o, s:o, s:o, s:o}", "name",
		                                        g->name, "instances", pair(g->instances),
		                                        "allocations", pair(g->allocations),
		                                        "bytes_allocated", pair(g->bytes_allocated),
		                                        "peak_live_bytes", pair(g->peak_live)));
	}
	for (side = 0; side < 2; side++)
		json_array_append_new(
		        only, json_pack("{s:o, s:o, s:o}", "allocations", jint(c->only_count[side]),
		                        "bytes", jint(c->only_bytes[side]), "largest",
		                        sites_json(c->only[side], c->nonly[side] < MT_COMPARE_TOP
		                                                          ? c->nonly[side]
		                                                          : MT_COMPARE_TOP)));
	return cli_print_json(json_pack("{s:[o, o], s:o, s:o, s:o}", "runs",
	                                run_json(&c->run[0], pa, a), run_json(&c->run[1], pb, b),
	                                "ranges", ranges, "at_peak_by_site",
	                                sites_json(c->at_peak, c->nat_peak), "only_in", only));
}

int cli_cmd_compare(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mt_reader *a = NULL, *b = NULL;
	struct mt_compare c;
	bool json = false;
	char err[512];
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (opt) {
		case 'j':
			json = true;
			break;
		case 'h':
			usage();
			return CLI_EXIT_OK;
		default:
			return cli_bad_option(CMD, opt, argv);
		}
	}
	if (argc - optind != 2)
		return cli_usage_error(CMD,
		                       argc - optind < 2 ? "name two traces (A.db B.db)"
		                                         : "unexpected argument '%s'",
		                       argv[argc - 1]);
	rc = cli_open_trace(CMD, argv[optind], &a);
	if (rc == CLI_EXIT_OK)
		rc = cli_open_trace(CMD, argv[optind + 1], &b);
	if (rc == CLI_EXIT_OK && mt_compare_build(&c, a, b, err, sizeof(err)) < 0) {
		cli_error(CMD, "%s", err);
		rc = CLI_EXIT_FAILURE;
	} else if (rc == CLI_EXIT_OK) {
		if (json) {
			rc = print_json(&c, argv[optind], argv[optind + 1], a, b);
		} else {
			print_text(&c, argv[optind], argv[optind + 1]);
			rc = fflush(stdout) == EOF ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
		}
		mt_compare_release(&c);
	}
	mt_reader_free(a);
	mt_reader_free(b);
	return rc;
}
