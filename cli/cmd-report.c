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
#include "report-print.h"

#define CMD "report"
/* the longest list --top asks for */
#define MAX_TOP 100000
/* traces with more events than this show progress on a terminal */
#define PROGRESS_EVENTS 1000000

static void usage(void)
{
	fputs("Usage: memtrace report [TRACE] [--at peak|TIME] [--by site|range|tensor] [--top N]\n"
	      "                       [--all-ranges] [--json]\n"
	      "\n"
	      "Explains what used the GPU memory in TRACE (default memtrace.db), per device\n"
	      "(named by the CUDA device number the program saw). Every figure is defined\n"
	      "once, in README.md's glossary:\n"
	      "  - peak live bytes (requests if the trace has them, else driver allocations)\n"
	      "    and when;\n"
	      "  - the anatomy of the device memory in use at the moment: what is outside\n"
	      "    the process (other processes, the driver's reserve), CUDA context and\n"
	      "    libraries, allocator cache, fragmentation, live allocations and what\n"
	      "    is unexplained - parts that add up to a reading of the device (the\n"
	      "    nearest taken while the allocator held the same segments, else the\n"
	      "    nearest, every part measured at its time), named with how far it lies\n"
	      "    from the moment;\n"
	      "  - the allocations live at the moment, grouped by call site (else NVTX\n"
	      "    range) with counts and bytes, or by range, or one by one with size,\n"
	      "    age, stream, call site and range; call sites come from memtrace record\n"
	      "    --stacks python (Python lines) or --stacks native, frames inside\n"
	      "    PyTorch are skipped, paths are shortened to the program's folder or\n"
	      "    the installed package;\n"
	      "  - per NVTX range name: bytes allocated inside it and peak live bytes\n"
	      "    (ranges libraries open for their own work left out);\n"
	      "  - allocations never freed;\n"
	      "  - out of memory: one OOM per error the program saw, the framework's\n"
	      "    failure with the driver attempts behind it: a summary, then each with\n"
	      "    what was live and reserved, the anatomy then, the room the allocator\n"
	      "    had, the lower bound, and which saved replays (memtrace replay) would\n"
	      "    have held it, with how much to spare.\n"
	      "\n"
	      "Options:\n"
	      "  --at peak|TIME  the moment for the anatomy and the live allocations\n"
	      "                  (default: the peak of live bytes); TIME is since the start\n"
	      "                  of the device's events: 1.5 (seconds), 1.5s, 300ms, 20us,\n"
	      "                  100ns\n"
	      "  --by site|range|tensor\n"
	      "                  how the live allocations are listed (default: site)\n"
	      "  --top N         rows of each list (default 20)\n"
	      "  --all-ranges    keep the NVTX ranges libraries open for their own work\n"
	      "                  (cub::, thrust::, cuBLAS, cuDNN), left out by default\n"
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
	const char *capture, *history;
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
	opt.only_listed = true;
	if (json) {
		top = json_object();
		devices = json_array();
		json_object_set_new(top, "trace", json_string(path));
		capture = mt_reader_meta(r, "capture");
		json_object_set_new(top, "capture", capture ? json_string(capture) : json_null());
		history = mt_reader_meta(r, "history_from");
		json_object_set_new(top, "history_from_ns",
		                    history ? json_integer((json_int_t)strtoull(history, NULL, 10))
		                            : json_null());
		json_object_set_new(top, "complete", json_boolean(!*note));
	}
	for (i = 0; i < n && rc == 0; i++) {
		struct mt_report rep;

		rc = mt_report_build(&rep, r, ids[i], &opt, err, sizeof(err));
		if (rc < 0)
			break;
		cli_progress_done(&prog);
		if (json) {
			json_t *d = cli_report_json(&rep, &opt);

			if (i == 0)
				json_object_update(top, d);
			json_array_append_new(devices, d);
		} else {
			if (i == 0)
				printf("memtrace report: %s\n%s%s", path, note, *note ? "\n" : "");
			printf("\n");
			cli_report_text(&rep, &opt);
		}
		mt_report_release(&rep);
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

int cli_cmd_report(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "at", required_argument, NULL, 'a' },
		{ "all-ranges", no_argument, NULL, 'r' },
		{ "top", required_argument, NULL, 't' },
		{ "by", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mt_report_options opt = { 0 };
	const char *path = CLI_DEFAULT_TRACE;
	struct mt_reader *r = NULL;
	bool json = false;
	uint64_t top;
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
		case 'r':
			opt.all_ranges = true;
			break;
		case 't':
			if ((rc = cli_parse_u64(CMD, "--top", optarg, &top)) != CLI_EXIT_OK)
				return rc;
			if (top == 0 || top > MAX_TOP)
				return cli_usage_error(CMD, "--top: '%s' is not between 1 and %d",
				                       optarg, MAX_TOP);
			opt.top = (size_t)top;
			break;
		case 'b':
			if (!strcmp(optarg, "site"))
				opt.by = MT_REPORT_BY_SITE;
			else if (!strcmp(optarg, "range"))
				opt.by = MT_REPORT_BY_RANGE;
			else if (!strcmp(optarg, "tensor"))
				opt.by = MT_REPORT_BY_TENSOR;
			else
				return cli_usage_error(
				        CMD, "--by: '%s' is not site, range or tensor", optarg);
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
