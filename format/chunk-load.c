#include "config.h"

/* chunk-load.c — one chunk's events, read from its blob and confirmed
 * against its index row: a row is never trusted for what its chunk does
 * not say (docs/FORMAT.md "Reading"). */

#include <errno.h>

#include "chunk-codec-private.h"
#include "reader-private.h"

int fmt_chunk_load(struct mt_reader *r, const struct fmt_chunk_row *c, struct mt_event **events,
                   size_t *capacity)
{
	sqlite3_stmt *st = r->blob_stmt;
	const char *why;
	int rc, err;

	if (c->codec != MT_CODEC_COLUMNS_ZSTD)
		return fmt_chunk_corrupt(r, c->id, "unknown codec");
	if (c->count > MT_CHUNK_MAX_EVENTS)
		return fmt_chunk_corrupt(r, c->id, "too many events");
	sqlite3_bind_int64(st, 1, c->id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		if (rc == SQLITE_DONE)
			return fmt_chunk_corrupt(r, c->id, "row vanished");
		if (fmt_sqlite_errno(rc) == -EBADMSG)
			return fmt_chunk_corrupt(r, c->id, sqlite3_errstr(rc));
		return fmt_reader_sql_fail(r, rc, "cannot read a chunk");
	}
	err = fmt_chunk_decode_why(c->kind, sqlite3_column_blob(st, 0),
	                           (size_t)sqlite3_column_bytes(st, 0), (size_t)c->count,
	                           c->process, c->device, events, capacity, &why);
	sqlite3_reset(st);
	if (err == -EBADMSG)
		return fmt_chunk_corrupt(r, c->id, why);
	if (err < 0)
		return mt_fail(r->message, FMT_MESSAGE_MAX, err, "%s: cannot decode chunk %lld",
		               r->path, (long long)c->id);
	if (c->count > 0 &&
	    ((*events)[0].ts != c->first_ts || (*events)[c->count - 1].ts != c->last_ts))
		return fmt_chunk_corrupt(r, c->id, "timestamps differ from its index row");
	return 0;
}
