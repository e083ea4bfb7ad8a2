/* staged-output.c — write under a temporary name, rename into place when
 * complete. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli-util.h"
#include "staged-output.h"

static const char *const sides[] = { "-wal", "-shm" };

int cli_staged_begin(const char *cmd, struct cli_staged *s, const char *path)
{
	const char *slash = strrchr(path, '/');
	mode_t mask;
	int fd;

	struct stat st;

	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		cli_error(cmd, "%s: not a regular file", path);
		return CLI_EXIT_FAILURE;
	}
	if ((size_t)snprintf(s->path, sizeof(s->path), "%s", path) >= sizeof(s->path)) {
		cli_error(cmd, "%s: path too long", path);
		return CLI_EXIT_FAILURE;
	}
	/* .NAME.XXXXXX in the same folder: rename stays on one file system */
	snprintf(s->tmp, sizeof(s->tmp), "%.*s.%s.XXXXXX", slash ? (int)(slash - path + 1) : 0,
	         path, slash ? slash + 1 : path);
	fd = mkstemp(s->tmp);
	if (fd < 0) {
		cli_error(cmd, "cannot create a file beside %s: %s", path, strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) < 0 || close(fd) < 0) {
		cli_error(cmd, "%s: %s", s->tmp, strerror(errno));
		unlink(s->tmp);
		return CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

int cli_staged_commit(const char *cmd, struct cli_staged *s)
{
	char from[PATH_MAX + 32], to[PATH_MAX + 32];
	int rc = cli_keep_old(cmd, s->path);

	for (size_t i = 0; rc == CLI_EXIT_OK && i < sizeof(sides) / sizeof(sides[0]); i++) {
		snprintf(from, sizeof(from), "%s%s", s->tmp, sides[i]);
		snprintf(to, sizeof(to), "%s%s", s->path, sides[i]);
		if (rename(from, to) < 0 && errno != ENOENT) {
			cli_error(cmd, "cannot rename %s to %s: %s", from, to, strerror(errno));
			rc = CLI_EXIT_FAILURE;
		}
	}
	if (rc == CLI_EXIT_OK && rename(s->tmp, s->path) < 0) {
		cli_error(cmd, "cannot rename %s to %s: %s", s->tmp, s->path, strerror(errno));
		rc = CLI_EXIT_FAILURE;
	}
	if (rc != CLI_EXIT_OK)
		cli_staged_abort(s);
	return rc;
}

void cli_staged_abort(struct cli_staged *s)
{
	char side[PATH_MAX + 32];

	for (size_t i = 0; i < sizeof(sides) / sizeof(sides[0]); i++) {
		snprintf(side, sizeof(side), "%s%s", s->tmp, sides[i]);
		unlink(side);
	}
	unlink(s->tmp);
}
