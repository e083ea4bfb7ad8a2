/* memtrace export — a trace in another tool's format (Perfetto, Chrome
 * JSON, a PyTorch snapshot, CSV, an RMM log, MiniMalloc, folded stacks),
 * through the interop module. A file is written under a temporary name
 * and renamed into place when complete; "-o -" streams to stdout. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli-util.h"
#include "commands.h"
#include "memtrace-analyze.h"
#include "memtrace-interop.h"
#include "staged-output.h"

#define CMD "export"

static void usage(void)
{
	fputs("Usage: memtrace export [TRACE] -o FILE [--format NAME] [--device N]\n"
	      "                       [--kernels] [--at TIME] [--policy NAME]\n"
	      "\n"
	      "Writes a trace (default memtrace.db) in another tool's format. The format\n"
	      "follows from FILE's extension, or --format names it. Formats:\n",
	      stdout);
	for (size_t i = 0; i < mt_interop_format_count(); i++) {
		const struct mt_interop_format *f = mt_interop_format_at(i);
		if (mt_interop_format_exports(f))
			printf("  %-11s%-43s %.*s\n", mt_interop_format_name(f),
			       mt_interop_format_description(f),
			       (int)strcspn(mt_interop_format_extensions(f), " "),
			       mt_interop_format_extensions(f));
	}
	fputs("\n"
	      "Exports stream: they hold what is live at once, not the whole trace.\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output FILE  the file to write; an existing file is kept as FILE.old;\n"
	      "                     '-' writes to stdout (then --format is needed)\n"
	      "  -f, --format NAME  write this format whatever FILE's extension\n"
	      "  -d, --device N     only device N, the CUDA device number the program saw (as\n"
	      "                     report and info name it)\n"
	      "      --kernels      perfetto, chrome: kernels as slices too\n"
	      "      --at TIME      folded, snapshot --policy: the moment, since the\n"
	      "                     device's first memory event: 1.5 (seconds), 1.5s,\n"
	      "                     300ms, 20us, 100ns (default: the peak of live bytes;\n"
	      "                     with --policy, of the policy's reserved bytes)\n"
	      "      --policy NAME  snapshot: the segments of this replay policy (as\n"
	      "                     memtrace replay names it), simulated on one device,\n"
	      "                     instead of the recorded allocator's: memory_viz's\n"
	      "                     segment_plot shows them\n"
	      "  -h, --help         this help\n",
	      stdout);
}

/* ordinal: the --device given (the CUDA device number the program saw),
 * else -1: every device. */
static int export(const char *trace, FILE *out, const char *name, struct mt_export_options *opt,
                  int64_t ordinal)
{
	struct mt_export_result res;
	struct cli_progress bar;
	struct mt_reader *r;
	char err[512] = "";
	int rc = cli_open_trace(CMD, trace, &r);

	if (rc)
		return rc;
	if (ordinal >= 0 && mt_analyze_device_by_ordinal(r, (unsigned)ordinal, &opt->device, err,
	                                                 sizeof(err)) < 0) {
		mt_reader_free(r);
		return cli_usage_error(CMD, "--device: %s", err);
	}
	cli_progress_start(&bar, "exporting", 0);
	opt->progress = cli_progress_callback;
	opt->progress_arg = &bar;
	rc = mt_export_file(r, out, opt, &res, err, sizeof(err));
	cli_progress_done(&bar);
	mt_reader_free(r);
	if (rc < 0) {
		cli_error(CMD, "%s", *err ? err : strerror(-rc));
		return CLI_EXIT_FAILURE;
	}
	if (fflush(out) == EOF || ferror(out)) {
		cli_error(CMD, "%s: %s", name, strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

int cli_cmd_export(int argc, char **argv)
{
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "device", required_argument, NULL, 'd' },
		{ "kernels", no_argument, NULL, 'k' },
		{ "at", required_argument, NULL, 'a' },
		{ "policy", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mt_export_options opt = { 0 };
	const char *path = NULL, *trace;
	struct cli_staged staged;
	uint64_t device = 0;
	int64_t ordinal = -1; /* every device */
	struct stat st;
	FILE *out;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:f:d:h", options, NULL)) != -1) {
		rc = CLI_EXIT_OK;
		switch (c) {
		case 'o':
			path = optarg;
			break;
		case 'f':
			opt.format = mt_interop_format_find(optarg);
			if (!opt.format || !mt_interop_format_exports(opt.format))
				return cli_usage_error(CMD, "'%s' is not a format memtrace exports",
				                       optarg);
			break;
		case 'd':
			rc = cli_parse_u64(CMD, "--device", optarg, &device);
			if (!rc && device > UINT32_MAX)
				return cli_usage_error(CMD, "--device: '%s' is out of range",
				                       optarg);
			ordinal = (int64_t)device;
			break;
		case 'k':
			opt.kernels = true;
			break;
		case 'a':
			if (cli_parse_time(optarg, &opt.at) < 0)
				return cli_usage_error(
				        CMD, "--at: '%s' is not a time (1.5s, 300ms)", optarg);
			opt.at_set = true;
			break;
		case 'p':
			opt.policy = optarg;
			break;
		case 'h':
			usage();
			return CLI_EXIT_OK;
		default:
			return cli_bad_option(CMD, c, argv);
		}
		if (rc)
			return rc;
	}
	if (argc - optind > 1)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind + 1]);
	trace = optind < argc ? argv[optind] : CLI_DEFAULT_TRACE;
	if (!path || !*path)
		return cli_usage_error(CMD, "where to? (-o FILE)");
	if (!opt.format && !strcmp(path, "-"))
		return cli_usage_error(CMD, "-o -: name the format with --format");
	if (!opt.format && !(opt.format = mt_interop_format_for_path(path)))
		return cli_usage_error(CMD,
		                       "no format follows from the name '%s': name one with "
		                       "--format",
		                       path);
	if (opt.policy && strcmp(mt_interop_format_name(opt.format), "snapshot"))
		return cli_usage_error(CMD, "--policy applies to the snapshot format");

	if (!strcmp(path, "-"))
		return export(trace, stdout, "stdout", &opt, ordinal);
	/* a device or a pipe (/dev/null, /dev/stdout, a FIFO) is written
	 * as it is: there is nothing to stage or keep */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		if (!(out = fopen(path, "wb"))) {
			cli_error(CMD, "%s: %s", path, strerror(errno));
			return CLI_EXIT_FAILURE;
		}
		rc = export(trace, out, path, &opt, ordinal);
		if (fclose(out) == EOF && rc == CLI_EXIT_OK) {
			cli_error(CMD, "%s: %s", path, strerror(errno));
			rc = CLI_EXIT_FAILURE;
		}
		return rc;
	}
	if ((rc = cli_staged_begin(CMD, &staged, path)) != CLI_EXIT_OK)
		return rc;
	out = fopen(staged.tmp, "wb");
	if (!out) {
		cli_error(CMD, "%s: %s", staged.tmp, strerror(errno));
		cli_staged_abort(&staged);
		return CLI_EXIT_FAILURE;
	}
	rc = export(trace, out, path, &opt, ordinal);
	if (fclose(out) == EOF && rc == CLI_EXIT_OK) {
		cli_error(CMD, "%s: %s", path, strerror(errno));
		rc = CLI_EXIT_FAILURE;
	}
	if (rc == CLI_EXIT_OK)
		return cli_staged_commit(CMD, &staged);
	cli_staged_abort(&staged);
	return rc;
}
