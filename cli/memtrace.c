/* memtrace — GPU memory trace recorder, replayer and viewer: the dispatcher. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli-util.h"
#include "commands.h"

/* A subcommand of the registry (cli/meson.build); run is NULL for one this
 * build lacks, missing says why. */
struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	const char *missing;
};

static const struct command commands[] = {
#define BUILT(name, summary) { #name, cli_cmd_##name, summary, NULL },
#define MISSING(name, summary, why) { #name, NULL, summary, why },
	CLI_COMMANDS(BUILT, MISSING)
#undef BUILT
#undef MISSING
};

static int run(const struct command *c, int argc, char **argv)
{
	return c->run ? c->run(argc, argv) : cli_not_built(c->name, c->missing);
}

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
					return run(&commands[i], 2, sub_argv);
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
			return run(&commands[i], argc - 1, argv + 1);
	fprintf(stderr, "memtrace: unknown command '%s' (see memtrace --help)\n", argv[1]);
	return CLI_EXIT_USAGE;
}
