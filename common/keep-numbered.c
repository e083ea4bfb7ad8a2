/* keep-numbered.c — moving a file aside without ever replacing another: the
 * file and its side files go to the first free numbered name, each with a
 * rename that refuses to replace what is there (renameat2 RENAME_NOREPLACE,
 * or link and unlink where the file system lacks it), so two processes
 * keeping files at once never overwrite each other's. */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "memtrace-common.h"

/* The most generations looked at before giving up (-EEXIST). */
#define MAX_GENERATION 100000

/* rename(from, to) that fails with EEXIST instead of replacing to. */
static int rename_noreplace(const char *from, const char *to)
{
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (link(from, to) != 0)
		return -errno;
	return unlink(from) == 0 ? 0 : -errno;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0 || errno != ENOENT;
}

/* name = base + suffix; -ENAMETOOLONG when it does not fit. */
static int join(char *name, size_t len, const char *base, const char *suffix)
{
	return (size_t)snprintf(name, len, "%s%s", base, suffix) < len ? 0 : -ENAMETOOLONG;
}

/* Moves path + suffixes[i] to to + suffixes[i] for the side files (those
 * that exist) and then path to `to`; on failure puts back what moved. */
static int move_set(const char *path, const char *to, const char *const *suffixes,
                    size_t n_suffixes)
{
	char from_side[4096], to_side[4096];
	size_t moved = 0;
	int rc = 0;

	/* side files first: a crash in between leaves the file beside the
	 * side files it needs under one of the two names, never a journal
	 * beside a file it does not belong to */
	for (; moved < n_suffixes; moved++) {
		if ((rc = join(from_side, sizeof(from_side), path, suffixes[moved])) < 0 ||
		    (rc = join(to_side, sizeof(to_side), to, suffixes[moved])) < 0)
			break;
		rc = rename_noreplace(from_side, to_side);
		if (rc == -ENOENT) {
			rc = 0;
			continue;
		}
		if (rc < 0)
			break;
	}
	if (rc == 0)
		rc = rename_noreplace(path, to);
	if (rc < 0) {
		while (moved-- > 0) {
			join(from_side, sizeof(from_side), path, suffixes[moved]);
			join(to_side, sizeof(to_side), to, suffixes[moved]);
			rename_noreplace(to_side, from_side);
		}
	}
	return rc;
}

int mt_keep_numbered(const char *path, const char *const *suffixes, size_t n_suffixes, char *kept,
                     size_t keptlen)
{
	char to[4096], side[4096];

	if (!path || !*path || !kept || !keptlen)
		return -EINVAL;
	if (!exists(path))
		return -ENOENT;
	for (unsigned n = 1; n <= MAX_GENERATION; n++) {
		bool taken;
		int rc;

		if ((size_t)snprintf(to, sizeof(to), "%s.%u", path, n) >= sizeof(to) ||
		    (size_t)snprintf(kept, keptlen, "%s", to) >= keptlen)
			return -ENAMETOOLONG;
		taken = exists(to);
		for (size_t i = 0; !taken && i < n_suffixes; i++) {
			if (join(side, sizeof(side), to, suffixes[i]) < 0)
				return -ENAMETOOLONG;
			taken = exists(side);
		}
		if (taken)
			continue;
		rc = move_set(path, to, suffixes, n_suffixes);
		if (rc != -EEXIST) /* another process took this number meanwhile */
			return rc;
	}
	return -EEXIST;
}
