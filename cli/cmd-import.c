/* memtrace import — another tool's memory trace (a PyTorch memory
 * snapshot, an RMM log, an Nsight Systems SQLite export) as a memtrace
 * trace, through the interop module. The trace is written under a
 * temporary name and renamed into place when complete: a failed import
 * leaves nothing under the output name. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli-util.h"
#include "commands.h"
#include "memtrace-common.h"
#include "memtrace-interop.h"
#include "staged-output.h"

#define CMD "import"

static void usage(void)
{
	fputs("Usage: memtrace import FILE [-o TRACE] [--format NAME] [--json]\n"
	      "\n"
	      "Turns another tool's memory trace into a memtrace trace, which then\n"
	      "replays, reports and renders like a recorded one. The format is read from\n"
	      "the file's content; --format names it instead. Formats:\n",
	      stdout);
	for (size_t i = 0; i < mt_interop_format_count(); i++) {
		const struct mt_interop_format *f = mt_interop_format_at(i);
		if (mt_interop_format_imports(f))
			printf("  %-11s%s\n", mt_interop_format_name(f),
			       mt_interop_format_description(f));
	}
	fputs("\n"
	      "A PyTorch snapshot is the pickle torch.cuda.memory._dump_snapshot writes\n"
	      "(protocols 2 to 5; a pickle that would build Python objects is refused) or\n"
	      "the same structure as JSON. One whose history began after allocations\n"
	      "existed, or whose ring buffer (max_entries) wrapped, shows frees of blocks it\n"
	      "never allocated and final blocks it never allocated: those were live at the\n"
	      "first entry and are written as allocations at its time; info and report then\n"
	      "say \"partial history from T\".\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output TRACE  the trace to write (default memtrace.db); an existing\n"
	      "                      file is kept as TRACE.old\n"
	      "  -f, --format NAME   read FILE as this format\n"
	      "      --json          print what was imported as one JSON object\n"
	      "  -h, --help          this help\n",
	      stdout);
}

static int print_result(const char *in, const char *out, const struct mt_import_result *res,
                        bool json)
{
	char bytes[32], from[32];

	if (json) {
		json_t *o = json_object();
		json_object_set_new(o, "input", json_string(in));
		json_object_set_new(o, "trace", json_string(out));
		json_object_set_new(o, "format", json_string(mt_interop_format_name(res->format)));
		json_object_set_new(o, "entries", json_integer((json_int_t)res->entries));
		json_object_set_new(o, "events", json_integer((json_int_t)res->events));
		json_object_set_new(o, "skipped", json_integer((json_int_t)res->skipped));
		json_object_set_new(o, "clamped_times", json_integer((json_int_t)res->clamped));
		json_object_set_new(o, "partial_history", json_boolean(res->partial));
		json_object_set_new(o, "history_from_ns",
		                    res->partial ? json_integer((json_int_t)res->history_from)
		                                 : json_null());
		json_object_set_new(o, "reconstructed",
		                    json_integer((json_int_t)res->reconstructed));
		json_object_set_new(o, "reconstructed_bytes",
		                    json_integer((json_int_t)res->reconstructed_bytes));
		return cli_print_json(o);
	}
	printf("%s: %" PRIu64 " events from %" PRIu64 " entries of %s (%s)\n", out, res->events,
	       res->entries, in, mt_interop_format_name(res->format));
	if (res->partial)
		printf("partial history from +%s: %" PRIu64 " allocations (%s requested) were live "
		       "before the first entry\n",
		       mt_duration_format(res->history_from - res->first_ts, from, sizeof(from)),
		       res->reconstructed,
		       mt_size_format(res->reconstructed_bytes, bytes, sizeof(bytes)));
	if (res->skipped)
		printf("%" PRIu64 " entries not turned into events (unknown actions, frees "
		       "completed for requests before the first entry)\n",
		       res->skipped);
	if (res->clamped)
		printf("%" PRIu64 " times earlier than the entry before were raised to it\n",
		       res->clamped);
	return CLI_EXIT_OK;
}

static int import(const char *in, struct cli_staged *out, const struct mt_import_options *opt,
                  const char *command_line, struct mt_import_result *res)
{
	struct mt_writer *w = mt_writer_new();
	char err[512] = "";
	int rc;

	if (!w) {
		cli_error(CMD, "out of memory");
		return CLI_EXIT_FAILURE;
	}
	rc = mt_writer_open(w, out->tmp, MT_WRITER_CREATE);
	if (rc < 0)
		snprintf(err, sizeof(err), "%s", mt_writer_message(w));
	if (rc >= 0 && (rc = mt_writer_set_meta(w, "command_line", command_line)) < 0)
		snprintf(err, sizeof(err), "%s", mt_writer_message(w));
	if (rc >= 0)
		rc = mt_import_file(in, w, opt, res, err, sizeof(err));
	mt_writer_free(w);
	if (rc < 0) {
		cli_error(CMD, "%s", *err ? err : strerror(-rc));
		return CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

int cli_cmd_import(int argc, char **argv)
{
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mt_import_options opt = { 0 };
	struct mt_import_result res = { 0 };
	struct cli_progress bar;
	struct cli_staged out;
	const char *path = CLI_DEFAULT_TRACE;
	char *command_line;
	bool json = false;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:f:h", options, NULL)) != -1) {
		switch (c) {
		case 'o':
			path = optarg;
			break;
		case 'f':
			opt.format = mt_interop_format_find(optarg);
			if (!opt.format || !mt_interop_format_imports(opt.format))
				return cli_usage_error(CMD, "'%s' is not a format memtrace imports",
				                       optarg);
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage();
			return CLI_EXIT_OK;
		default:
			return cli_bad_option(CMD, c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error(CMD, "which file? (memtrace import FILE)");
	if (optind + 1 < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind + 1]);
	if (!*path)
		return cli_usage_error(CMD, "--output: empty path");

	command_line = cli_command_line(argc, argv);
	if (!command_line) {
		cli_error(CMD, "out of memory");
		return CLI_EXIT_FAILURE;
	}
	rc = cli_staged_begin(CMD, &out, path);
	if (rc == CLI_EXIT_OK) {
		cli_progress_start(&bar, "importing", 0);
		opt.progress = cli_progress_callback;
		opt.progress_arg = &bar;
		rc = import(argv[optind], &out, &opt, command_line, &res);
		cli_progress_done(&bar);
		if (rc == CLI_EXIT_OK)
			rc = cli_staged_commit(CMD, &out);
		else
			cli_staged_abort(&out);
	}
	free(command_line);
	return rc == CLI_EXIT_OK ? print_result(argv[optind], path, &res, json) : rc;
}
