/* cli-util.h — what every memtrace subcommand shares: exit codes, the
 * one-line error format, the default trace path, opening a trace for
 * reading, JSON output, size options and progress on a terminal.
 * Only cli/ prints or exits; the modules below it never do.
 */
#ifndef MEMTRACE_CLI_UTIL_H
#define MEMTRACE_CLI_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "memtrace-format.h"

enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAILURE = 1,
	CLI_EXIT_USAGE = 2,
};

/* The trace used when a command names none. */
#define CLI_DEFAULT_TRACE "memtrace.db"

/* Prints "memtrace CMD: MESSAGE" as one line on stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints a usage error ("memtrace CMD: MESSAGE (see memtrace CMD --help)")
 * and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Opens path (CLI_DEFAULT_TRACE when NULL) for reading. On failure prints
 * one line naming the file and the reason and returns CLI_EXIT_FAILURE;
 * on success stores the reader in *out and returns CLI_EXIT_OK. */
int cli_open_trace(const char *cmd, const char *path, struct mt_reader **out);

/* Parses a size option; on garbage prints one usage line naming the option
 * and returns CLI_EXIT_USAGE, else CLI_EXIT_OK. */
int cli_parse_size(const char *cmd, const char *option, const char *text, uint64_t *bytes);

/* Parses a non-negative integer option the same way. */
int cli_parse_u64(const char *cmd, const char *option, const char *text, uint64_t *value);

/* Parses a count option: an integer, exponent form or a decimal suffix
 * K, M, G, T ("1000000", "1e6", "10M", "2.5k"); binary units and a B suffix
 * are refused, as are fractions of one. Usage line and CLI_EXIT_USAGE on
 * garbage, else CLI_EXIT_OK. */
int cli_parse_count(const char *cmd, const char *option, const char *text, uint64_t *value);

/* Parses a time since the start of a trace: "1.5" (seconds), "1.5s",
 * "300ms", "20us", "100ns" into ns (as render --at and report --at take
 * it). Returns 0, or -EINVAL for anything else (negative, garbage). */
int cli_parse_time(const char *text, uint64_t *ns);

/* Reports a getopt_long failure (c is what getopt_long returned: '?' for
 * an unknown option, ':' for a missing value; the optstring must start
 * with ':') as one usage line; returns CLI_EXIT_USAGE. */
int cli_bad_option(const char *cmd, int c, char **argv);

/* The command line of a subcommand (argv[0] is its name) as the user typed
 * it, "memtrace " and argv joined by spaces, for the command_line meta;
 * malloc'd, NULL when out of memory. */
char *cli_command_line(int argc, char **argv);

/* Before a command writes a new trace at path: an existing trace there is
 * kept (with its -wal and -shm files) as path.N, the first free number, and
 * a note says so on stderr; anything else there (a folder, a file that is
 * not a trace) is left alone. Returns CLI_EXIT_OK, or prints one error line
 * and returns CLI_EXIT_FAILURE. */
int cli_keep_old(const char *cmd, const char *path);

/* Before a picture is written at path (which then replaces a plain file of
 * that name, as any tool's output does): a memtrace trace there is kept as
 * path.N, as cli_keep_old does; a folder, a link, or a file that starts as
 * an SQLite database but is no readable trace is left alone and refused.
 * Prints one line and returns CLI_EXIT_FAILURE, or CLI_EXIT_OK. */
int cli_keep_trace_before_picture(const char *cmd, const char *path);

/* For an incomplete trace (mt_reader_incomplete: a writer stopped without
 * closing it), one line saying so and what the reader leaves out, for info
 * and report: "incomplete: a writer stopped without closing the trace; only
 * the events before +2.01 s are used". Returns 1 with the line, 0 for a
 * complete trace (line ""). */
int cli_incomplete_note(struct mt_reader *r, char *line, size_t len);

/* Prints a JSON value (steals the reference) on stdout with indentation and
 * a trailing newline. Returns CLI_EXIT_OK, or CLI_EXIT_FAILURE if value is
 * NULL (out of memory) or stdout fails. */
int cli_print_json(json_t *value);

/* Progress on long work, shown only when stderr is a terminal: a single
 * line redrawn at most ten times a second. cli_progress_done clears it. */
struct cli_progress {
	const char *what;
	uint64_t total;
	uint64_t last_draw_ns;
	bool enabled;
};
void cli_progress_start(struct cli_progress *p, const char *what, uint64_t total);
void cli_progress_update(struct cli_progress *p, uint64_t done);
void cli_progress_done(struct cli_progress *p);
/* The same as a library's progress callback: arg is a started
 * struct cli_progress; total replaces its total. */
void cli_progress_callback(void *arg, uint64_t done, uint64_t total);

/* The longest policy spec ("NAME:key=value,...") a command keeps. */
#define CLI_POLICY_SPEC 128

/* Reads a --policy argument into at most max specs: "all" (every policy),
 * or a comma-separated list of NAME or NAME:key=value,key=value (a token
 * with '=' and no ':' is one more parameter of the spec before it). An
 * unknown name or a bad list prints one usage line naming the valid
 * policies and returns CLI_EXIT_USAGE, else CLI_EXIT_OK. */
int cli_policy_specs(const char *cmd, const char *arg, char specs[][CLI_POLICY_SPEC], size_t max,
                     size_t *n);

/* For a command this build or this version does not have yet: prints
 * "memtrace CMD: not built yet (WHY)" and returns CLI_EXIT_FAILURE. */
int cli_not_built(const char *cmd, const char *why);

#endif
