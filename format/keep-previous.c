/* keep-previous.c — an existing trace is kept, never overwritten, and
 * nothing that is not a trace is touched: before a command writes a new
 * trace at FILE, a memtrace trace there moves to FILE.N (the first free
 * number, so earlier ones stay) together with its SQLite side files, so
 * that what a killed writer left in FILE-wal is still read from FILE.N.
 * A folder, a link or a file that is not a readable trace makes the
 * command stop instead. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "memtrace-common.h"
#include "memtrace-format.h"

int mt_trace_keep_previous(const char *path, char *kept, size_t keptlen, char *err, size_t errlen)
{
	static const char *const sides[] = { "-wal", "-shm" };
	struct mt_reader *r;
	struct stat st;
	int rc;

	if (!path || !kept || !keptlen)
		return mt_fail(err, errlen, -EINVAL, "no trace path given");
	kept[0] = '\0';
	if (lstat(path, &st) != 0)
		return errno == ENOENT
		               ? 0
		               : mt_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return mt_fail(err, errlen, -EEXIST,
		               "%s exists and is %s, not a trace; not replacing it", path,
		               S_ISDIR(st.st_mode)   ? "a folder"
		               : S_ISLNK(st.st_mode) ? "a symbolic link"
		                                     : "not a regular file");
	r = mt_reader_new();
	if (!r)
		return mt_fail(err, errlen, -ENOMEM, "out of memory");
	rc = mt_reader_open(r, path);
	if (rc < 0 && rc != -ENOTSUP) /* a newer version's trace is kept too */
		rc = mt_fail(err, errlen, -EEXIST, "%s; not replacing it", mt_reader_message(r));
	mt_reader_free(r);
	if (rc < 0 && rc != -ENOTSUP)
		return rc;
	rc = mt_keep_numbered(path, sides, sizeof(sides) / sizeof(sides[0]), kept, keptlen);
	if (rc < 0)
		return mt_fail(err, errlen, rc, "cannot keep the existing %s as %s: %s", path, kept,
		               strerror(-rc));
	return 1;
}
