/* memtrace record — run a program and record its GPU memory events. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli-util.h"
#include "commands.h"
#include "memtrace-common.h"
#include "memtrace-recorder.h"

static const char usage_text[] =
        "Usage: memtrace record [-o FILE] [--capture requests|as-is]\n"
        "                       [--kernels gpu|launch|none] [--sample-ms N]\n"
        "                       [--stacks python|native|none]\n"
        "                       [--] PROG [ARGS...]\n"
        "\n"
        "Runs PROG with the memtrace injection library (CUPTI) loaded into it and\n"
        "records every allocation and free, failed allocations, kernels, copies,\n"
        "NVTX ranges and the device memory in use into a trace. PROG runs as usual;\n"
        "its exit status is memtrace's exit status (128+N if killed by signal N,\n"
        "127 if PROG cannot be started, 2 for a usage error before it starts).\n"
        "Child processes (fork/exec, torchrun workers, DDP ranks) record into the\n"
        "same trace, one process row each, whatever starts them (a shell, env, make,\n"
        "python -m, uv run, torchrun, accelerate): every Python process gets the\n"
        "PyTorch hook through PYTHONPATH (a program's own PYTHONPATH and\n"
        "sitecustomize keep working). Each process's row says what was captured of\n"
        "its requests; a process whose PyTorch allocator was not hooked is recorded\n"
        "as segments only, and named in a warning after the run.\n"
        "\n"
        "Options:\n"
        "  -o, --output FILE   trace to write (default memtrace.db); a trace already\n"
        "                      there is kept as FILE.1 (FILE.2, ...: none is ever\n"
        "                      replaced), anything else there stops record. '%p' in\n"
        "                      FILE becomes the process id: one trace per process\n"
        "  --capture MODE      requests (default): also record each framework's own\n"
        "                      requests — PyTorch through its allocator hook (a small\n"
        "                      bridge built once per PyTorch version), JAX and\n"
        "                      TensorFlow through their platform allocators (slower);\n"
        "                      as-is: only what reaches the driver (what nvidia-smi sees)\n"
        "  --kernels MODE      how kernels come onto the timeline: launch (default):\n"
        "                      each kernel at the time its launch call returned on\n"
        "                      the CPU, from launch callbacks (name, stream; no GPU\n"
        "                      times); gpu: CUPTI's kernel records, each with its\n"
        "                      GPU start and end (costs a launch-bound loop about\n"
        "                      1 us more a launch); none: no kernel, copy or set\n"
        "                      records. With launch and gpu, copies and sets are\n"
        "                      recorded with their GPU start and end\n"
        "  --no-kernels        the same as --kernels none\n"
        "  --sample-ms N       sample device memory in use every N ms (default 50;\n"
        "                      0 = never)\n"
        "  --stacks KIND       call site of each allocation, interned in the trace:\n"
        "                      python (the allocating thread's Python frames),\n"
        "                      native (return addresses named with dladdr) or none\n"
        "                      (the default: call sites add 1-6% to the step time\n"
        "                      of a launch-bound PyTorch loop)\n"
        "  -h, --help          show this help\n"
        "\n"
        "Environment: MEMTRACE_CUPTI_PATH names the folder holding libcupti.so when\n"
        "it is not under CUDA_HOME or /usr/local/cuda; MEMTRACE_INJECT_PATH the\n"
        "injection library; MEMTRACE_CACHE_DIR where the PyTorch bridge is cached\n"
        "(default ~/.cache/memtrace).\n";

/* One line per process whose requests are not in the trace: which process,
 * and why (its capture label). */
static void warn_segments_only(const struct mt_record_summary *s)
{
	for (size_t i = 0; i < s->n_segments_only; i++) {
		const struct mt_record_process *p = &s->segments_only[i];
		fprintf(stderr, "memtrace record: warning: process %lld (%.60s%s): %s\n",
		        (long long)p->pid, p->command_line,
		        strlen(p->command_line) > 60 ? "..." : "", p->capture);
	}
}

/* Settles the trace's capture label and reads its summary; false (after
 * one error line) when it cannot be read back. */
static bool read_back(const char *path, struct mt_record_summary *s)
{
	char err[512];

	if (mt_record_settle_capture(path, err, sizeof(err)) < 0 ||
	    mt_record_summarize(path, s, err, sizeof(err)) < 0) {
		cli_error("record", "cannot read back %s: %s", path, err);
		return false;
	}
	return true;
}

static void print_summary(const char *path)
{
	struct mt_record_summary s;
	char a[32], b[32];
	bool first = true;

	if (!read_back(path, &s))
		return;
	fprintf(stderr, "memtrace record: %s (%s), %zu process%s, capture %s\n", path,
	        mt_size_format(s.file_bytes, a, sizeof(a)), s.processes,
	        s.processes == 1 ? "" : "es", s.capture[0] ? s.capture : "unknown");
	fprintf(stderr, "  events:");
	for (unsigned k = 1; k <= MT_EVENT_KIND_MAX; k++) {
		if (!s.events[k])
			continue;
		fprintf(stderr, "%s %llu %s", first ? "" : ",", (unsigned long long)s.events[k],
		        mt_event_kind_name(k));
		first = false;
	}
	fprintf(stderr, "%s\n", first ? " none" : "");
	fprintf(stderr, "  peak live: %s (%s layer); dropped records: %llu\n",
	        mt_size_format(s.peak_live, b, sizeof(b)), mt_layer_name(s.peak_layer),
	        (unsigned long long)s.dropped);
	warn_segments_only(&s);
	mt_record_summary_release(&s);
}

/* What the run wrote: a summary of its trace, or with '%p' the files and
 * the processes in them recorded as segments only. */
static void report_run(struct mt_record_run *run)
{
	const char *const *paths;
	size_t n = mt_record_written(run, &paths);
	struct mt_record_summary s;

	if (!strstr(mt_record_output(run), "%p")) {
		if (n)
			print_summary(paths[0]);
		else
			fprintf(stderr, "memtrace record: no trace written (the program did not "
			                "start CUDA)\n");
		return;
	}
	fprintf(stderr, "memtrace record: one trace per process: %s (%zu file%s)\n",
	        mt_record_output(run), n, n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		if (!read_back(paths[i], &s))
			continue;
		warn_segments_only(&s);
		mt_record_summary_release(&s);
	}
}

int cli_cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "capture", required_argument, NULL, 'c' },
		{ "kernels", required_argument, NULL, 'K' },
		{ "no-kernels", no_argument, NULL, 'k' },
		{ "sample-ms", required_argument, NULL, 's' },
		{ "stacks", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mt_record_options opts = { .capture = MT_CAPTURE_REQUESTS,
		                          .kernels = MT_RECORD_KERNELS_LAUNCH,
		                          .sample_ms = 50 };
	struct mt_record_run *run = NULL;
	char err[1024];
	uint64_t ms;
	int c, status = 0, rc;

	opts.self = argv[0];
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			opts.output = optarg;
			break;
		case 'c':
			if (!strcmp(optarg, "requests"))
				opts.capture = MT_CAPTURE_REQUESTS;
			else if (!strcmp(optarg, "as-is"))
				opts.capture = MT_CAPTURE_AS_IS;
			else
				return cli_usage_error(
				        "record", "--capture must be requests or as-is, not '%s'",
				        optarg);
			break;
		case 'K':
			if (mt_record_kernels_parse(optarg, &opts.kernels) < 0)
				return cli_usage_error(
				        "record", "--kernels must be gpu, launch or none, not '%s'",
				        optarg);
			break;
		case 'k':
			opts.kernels = MT_RECORD_KERNELS_NONE;
			break;
		case 's':
			if ((rc = cli_parse_u64("record", "--sample-ms", optarg, &ms)) !=
			    CLI_EXIT_OK)
				return rc;
			if (ms > 60000)
				return cli_usage_error("record",
				                       "--sample-ms must be at most 60000");
			opts.sample_ms = (unsigned)ms;
			break;
		case 'S':
			if (!strcmp(optarg, "python"))
				opts.stacks = MT_RECORD_STACKS_PYTHON;
			else if (!strcmp(optarg, "native"))
				opts.stacks = MT_RECORD_STACKS_NATIVE;
			else if (!strcmp(optarg, "none"))
				opts.stacks = MT_RECORD_STACKS_NONE;
			else
				return cli_usage_error(
				        "record",
				        "--stacks must be python, native or none, not '%s'",
				        optarg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return CLI_EXIT_OK;
		default:
			return cli_usage_error("record", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("record", "no program to record");
	if (opts.output && !*opts.output)
		return cli_usage_error("record", "-o needs a file name");
	if (mt_record_prepare(&opts, argv + optind, &run, err, sizeof(err)) < 0) {
		cli_error("record", "%s", err);
		return CLI_EXIT_FAILURE;
	}
	if (mt_record_exec(run, &status, err, sizeof(err)) < 0) {
		cli_error("record", "%s", err);
		mt_record_run_free(run);
		return 127;
	}
	report_run(run);
	mt_record_run_free(run);
	return status;
}
