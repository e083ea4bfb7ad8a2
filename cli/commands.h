/* commands.h — the memtrace subcommands.
 *
 * Each subcommand lives in its own cli/cmd-NAME.c: it parses its arguments
 * (argv[0] is the subcommand's name), calls the modules' public APIs, prints,
 * and returns the process exit status: 0 success, 1 runtime failure, 2 usage.
 */
#ifndef MEMTRACE_CLI_COMMANDS_H
#define MEMTRACE_CLI_COMMANDS_H

int mt_cmd_record(int argc, char **argv);
int mt_cmd_replay(int argc, char **argv);
int mt_cmd_render(int argc, char **argv);
int mt_cmd_report(int argc, char **argv);
int mt_cmd_export(int argc, char **argv);
int mt_cmd_import(int argc, char **argv);
int mt_cmd_info(int argc, char **argv);
int mt_cmd_synth(int argc, char **argv);
int mt_cmd_compare(int argc, char **argv);

#endif
