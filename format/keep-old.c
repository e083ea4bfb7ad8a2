/* keep-old.c — an existing trace is kept, never overwritten: FILE becomes
 * FILE.old together with its SQLite side files, so that what a killed
 * writer left in FILE-wal is still read from FILE.old.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "memtrace-format.h"

int mt_trace_keep_old(const char *path)
{
	static const char *const sides[] = { "-wal", "-shm" };
	char old[PATH_MAX + 16], side[PATH_MAX + 16], old_side[PATH_MAX + 32];

	if (access(path, F_OK) != 0)
		return 0;
	if ((size_t)snprintf(old, sizeof(old), "%s.old", path) >= sizeof(old))
		return -ENAMETOOLONG;
	for (size_t i = 0; i < sizeof(sides) / sizeof(sides[0]); i++) {
		snprintf(side, sizeof(side), "%s%s", path, sides[i]);
		snprintf(old_side, sizeof(old_side), "%s%s", old, sides[i]);
		unlink(old_side);
		if (access(side, F_OK) == 0 && rename(side, old_side) != 0)
			return -errno;
	}
	return rename(path, old) == 0 ? 0 : -errno;
}
