#include "config.h"

/* reader-messages.c — the reader's one-line messages for what goes wrong
 * below it: an SQLite failure, a corrupt chunk. */

#include <errno.h>

#include "reader-private.h"

int fmt_reader_sql_fail(struct mt_reader *r, int rc, const char *what)
{
	int err = fmt_sqlite_errno(rc);
	if (err == -ENOENT)
		err = -EIO;
	return mt_fail(r->message, FMT_MESSAGE_MAX, err, "%s: %s: %s", r->path, what,
	               sqlite3_errmsg(r->db));
}

int fmt_chunk_corrupt(struct mt_reader *r, int64_t id, const char *why)
{
	return mt_fail(r->message, FMT_MESSAGE_MAX, -EBADMSG, "%s: chunk %lld is corrupt (%s)",
	               r->path, (long long)id, why);
}
