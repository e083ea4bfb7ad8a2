/* memtrace synth — writes a synthetic trace (synth/synth.c) for tests,
 * benchmarks and trying the other commands without a GPU. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli-util.h"
#include "commands.h"
#include "memtrace-common.h"
#include "memtrace-synth.h"

#define CMD "synth"

static const char *const pattern_names[] = {
	[MT_SYNTH_TRAIN] = "train",
	[MT_SYNTH_RANDOM] = "random",
	[MT_SYNTH_SMALL] = "small",
};

static void usage(void)
{
	fputs("Usage: memtrace synth [--pattern train|random|small] [--events N] [--seed S]\n"
	      "                      [-o TRACE]\n"
	      "\n"
	      "Writes a synthetic trace with the structure of a real capture, the same for\n"
	      "the same seed.\n"
	      "\n"
	      "Options:\n"
	      "  -p, --pattern NAME  train (default): a transformer training loop - weights\n"
	      "                      kept for the whole run, activations freed in reverse\n"
	      "                      during backward, gradients, Adam states, temporaries,\n"
	      "                      kernels, forward/backward/optimizer ranges and the\n"
	      "                      caching allocator's segments;\n"
	      "                      random: sizes log-uniform from 512 B to 256 MiB with\n"
	      "                      random lifetimes; small: swarms of allocations < 1 MiB\n"
	      "  -n, --events N      about N alloc and free events (default 1M, at most\n"
	      "                      10G); N is a whole number, in exponent form or with a\n"
	      "                      decimal suffix K, M, G: 1000000, 1e6, 10M\n"
	      "  -s, --seed S        random seed, a whole number (default 1)\n"
	      "  -o, --output TRACE  the trace to write (default memtrace.db); an existing\n"
	      "                      trace there is kept as TRACE.1 (TRACE.2 when TRACE.1\n"
	      "                      exists, and so on: none is ever replaced); anything\n"
	      "                      else there (a folder, another file) stops synth\n"
	      "  -h, --help          this help\n",
	      stdout);
}

static int parse_pattern(const char *text, unsigned *pattern)
{
	for (unsigned i = 0; i < sizeof(pattern_names) / sizeof(pattern_names[0]); i++)
		if (!strcmp(text, pattern_names[i])) {
			*pattern = i;
			return CLI_EXIT_OK;
		}
	return cli_usage_error(CMD, "unknown pattern '%s' (train, random or small)", text);
}

/* Prints "TRACE: N alloc/free events, N kernels, ... (PATTERN, seed S), SIZE". */
static int print_summary(const char *path, unsigned pattern, uint64_t seed)
{
	struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { 0 };
	struct mt_reader *r;
	char size[32];
	uint64_t blob = 0;
	int rc = cli_open_trace(CMD, path, &r);

	if (rc)
		return rc;
	if (mt_reader_kind_stats(r, &q, stats) < 0) {
		cli_error(CMD, "%s", mt_reader_message(r));
		mt_reader_free(r);
		return CLI_EXIT_FAILURE;
	}
	for (unsigned k = 1; k <= MT_EVENT_KIND_MAX; k++)
		blob += stats[k].blob_bytes;
	printf("%s: %" PRIu64 " alloc/free events, %" PRIu64 " kernels, %" PRIu64
	       " ranges (%s, seed %" PRIu64 "), %s compressed\n",
	       path, stats[MT_EVENT_ALLOC].events + stats[MT_EVENT_FREE].events,
	       stats[MT_EVENT_KERNEL].events, stats[MT_EVENT_RANGE].events, pattern_names[pattern],
	       seed, mt_size_format(blob, size, sizeof(size)));
	mt_reader_free(r);
	return CLI_EXIT_OK;
}

static int write_trace(const char *path, unsigned pattern, uint64_t events, uint64_t seed,
                       const char *command_line)
{
	struct mt_writer *w = mt_writer_new();
	int rc;

	if (!w) {
		cli_error(CMD, "out of memory");
		return CLI_EXIT_FAILURE;
	}
	rc = mt_writer_open(w, path, MT_WRITER_CREATE);
	if (!rc)
		rc = mt_writer_set_meta(w, "command_line", command_line);
	if (!rc)
		rc = mt_synth_write(w, pattern, events, seed);
	if (!rc)
		rc = mt_writer_flush(w);
	if (rc < 0) {
		const char *msg = mt_writer_message(w);
		if (*msg)
			cli_error(CMD, "%s", msg);
		else
			cli_error(CMD, "%s: %s", path, strerror(-rc));
	}
	mt_writer_free(w);
	return rc < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

int cli_cmd_synth(int argc, char **argv)
{
	static const struct option options[] = {
		{ "pattern", required_argument, NULL, 'p' },
		{ "events", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = CLI_DEFAULT_TRACE;
	unsigned pattern = MT_SYNTH_TRAIN;
	uint64_t events = 1000000, seed = 1;
	char *command_line;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":p:n:s:o:h", options, NULL)) != -1) {
		rc = CLI_EXIT_OK;
		switch (c) {
		case 'p':
			rc = parse_pattern(optarg, &pattern);
			break;
		case 'n':
			rc = cli_parse_count(CMD, "--events", optarg, &events);
			if (!rc && events > MT_SYNTH_MAX_EVENTS)
				rc = cli_usage_error(CMD,
				                     "--events: %s is more than synth writes (10G)",
				                     optarg);
			break;
		case 's':
			rc = cli_parse_u64(CMD, "--seed", optarg, &seed);
			break;
		case 'o':
			path = optarg;
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
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	if (!*path)
		return cli_usage_error(CMD, "--output: empty path");

	rc = cli_keep_old(CMD, path);
	if (rc)
		return rc;
	command_line = cli_command_line(argc, argv);
	if (!command_line) {
		cli_error(CMD, "out of memory");
		return CLI_EXIT_FAILURE;
	}
	rc = write_trace(path, pattern, events, seed, command_line);
	free(command_line);
	return rc ? rc : print_summary(path, pattern, seed);
}
