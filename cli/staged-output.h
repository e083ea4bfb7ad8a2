/* staged-output.h — a file written under a temporary name beside its
 * final one and renamed into place only when complete, so that a failed
 * import or export leaves nothing under the output name (and an existing
 * trace there is kept as NAME.N, as every command keeps traces; anything
 * else there is refused).
 */
#ifndef MEMTRACE_CLI_STAGED_OUTPUT_H
#define MEMTRACE_CLI_STAGED_OUTPUT_H

#include <limits.h>

struct cli_staged {
	char path[PATH_MAX];     /* the final name */
	char tmp[PATH_MAX + 16]; /* where it is written */
};

/* Creates an empty file under a fresh temporary name in path's folder
 * (permissions as the umask allows). Refuses a path that exists and is not
 * a regular file (a device, a pipe, a symbolic link). Prints one error line
 * and returns CLI_EXIT_FAILURE, or CLI_EXIT_OK. */
int cli_staged_begin(const char *cmd, struct cli_staged *s, const char *path);

/* Keeps an existing trace at the final name as NAME.N (cli_keep_old), then renames the
 * temporary file (and SQLite side files left beside it) into place. Prints
 * one error line and returns CLI_EXIT_FAILURE (the temporary file is
 * removed), or CLI_EXIT_OK. */
int cli_staged_commit(const char *cmd, struct cli_staged *s);

/* Removes the temporary file and its SQLite side files. */
void cli_staged_abort(struct cli_staged *s);

#endif
