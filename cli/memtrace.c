/* memtrace — GPU memory trace recorder, replayer and viewer: the dispatcher. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli-util.h"
#include "commands.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "record", mt_cmd_record, "run a CUDA program and record its GPU memory events" },
	{ "replay", mt_cmd_replay, "replay a trace through allocator policies (GPU or simulated)" },
	{ "render", mt_cmd_render, "draw a timeline, segment map, policy comparison or anatomy" },
	{ "report", mt_cmd_report, "explain what used the memory: peak, top allocations, phases" },
	{ "compare", mt_cmd_compare, "compare two runs: peaks, phases, call sites, OOMs" },
	{ "info", mt_cmd_info, "summarise a trace: devices, processes, event counts, peak" },
	{ "export", mt_cmd_export, "write a trace as Perfetto JSON, CSV, RMM log or MiniMalloc" },
	{ "import", mt_cmd_import, "turn a PyTorch memory snapshot or an RMM log into a trace" },
	{ "synth", mt_cmd_synth, "write a synthetic trace (training loop, random, small)" },
};

static void usage(FILE *out)
{
	size_t i;

	fputs("Usage: memtrace COMMAND [OPTIONS] [ARGS]\n"
	      "\n"
	      "Where did my GPU memory go? memtrace records a CUDA program's allocations,\n"
	      "frees, kernels and phases, replays them through other allocators, and draws\n"
	      "what happened.\n"
	      "\n"
	      "Commands:\n",
	      out);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fputs("\n"
	      "The trace defaults to memtrace.db in the current folder.\n"
	      "'memtrace COMMAND --help' describes a command. Exit status: 0 success,\n"
	      "1 failure, 2 usage error.\n",
	      out);
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		if (argc > 2 && !strcmp(argv[1], "help")) {
			char help[] = "--help";
			char *sub_argv[] = { argv[2], help, NULL };
			for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
				if (!strcmp(argv[2], commands[i].name))
					return commands[i].run(2, sub_argv);
			fprintf(stderr, "memtrace: unknown command '%s' (see memtrace --help)\n",
			        argv[2]);
			return CLI_EXIT_USAGE;
		}
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("memtrace %s (trace format %d)\n", MT_VERSION, MT_FORMAT_VERSION);
		return CLI_EXIT_OK;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "memtrace: unknown command '%s' (see memtrace --help)\n", argv[1]);
	return CLI_EXIT_USAGE;
}
