/* commands.h — the memtrace subcommands.
 *
 * The registry is the list in cli/meson.build (cli-commands.h, generated
 * from it, holds CLI_COMMANDS). Each subcommand lives in its own
 * cli/cmd-NAME.c: it parses its arguments (argv[0] is the subcommand's
 * name), calls the modules' public APIs, prints, and returns the process
 * exit status: 0 success, 1 runtime failure, 2 usage.
 */
#ifndef MEMTRACE_CLI_COMMANDS_H
#define MEMTRACE_CLI_COMMANDS_H

#include "cli-commands.h"

#define CLI_DECLARE(name, summary) int cli_cmd_##name(int argc, char **argv);
#define CLI_SKIP(name, summary, why)
CLI_COMMANDS(CLI_DECLARE, CLI_SKIP)
#undef CLI_DECLARE
#undef CLI_SKIP

#endif
