/* schema-private.h — the SQLite side shared by the writer and the reader:
 * schema v1 creation and checks, opening a trace, and the one-line error
 * messages the handles keep. */
#ifndef MEMTRACE_SCHEMA_PRIVATE_H
#define MEMTRACE_SCHEMA_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "memtrace-common.h"

/* Room for a handle's one-line message (mt_fail). */
#define FMT_MESSAGE_MAX 512

/* Busy timeout of every connection: long enough for several recording
 * processes to take turns committing chunks. */
#define FMT_BUSY_TIMEOUT_MS 10000

/* errno for an SQLite result code: -EBADMSG for corrupt or non-database
 * files, -ENOMEM, -ENOENT for files that cannot be opened, else -EIO. */
int fmt_sqlite_errno(int rc);

/* Checks a file before SQLite sees it: -ENOENT missing, -EBADMSG empty, not
 * a regular file, no SQLite header or cut short (the header's page count
 * says it is longer and no -wal file holds the rest). */
int fmt_schema_check_file(const char *path, char *msg);

/* Checks that db is a memtrace trace this version can read: the schema's
 * tables exist and meta's format_version is 1..MT_FORMAT_VERSION. *empty is
 * set when the database holds no table at all (a new file). */
int fmt_schema_check(sqlite3 *db, const char *path, int *empty, char *msg);

/* Creates the v1 schema in an empty database (inside the caller's
 * transaction) and sets format_version and memtrace_version. */
int fmt_schema_create(sqlite3 *db, const char *path, char *msg);

/* Whether TABLE has COLUMN (false also when it cannot be told). */
bool fmt_schema_has_column(sqlite3 *db, const char *table, const char *column);

/* Adds the columns that version 1 gained after its first traces (docs/FORMAT.md,
 * "Compatibility") to a trace that lacks them; inside the caller's write
 * transaction. Returns 0 or a negative errno with a message. */
int fmt_schema_add_later_columns(sqlite3 *db, const char *path, char *msg);

/* Stores a uint64_t in an INTEGER column (two's complement for values past
 * INT64_MAX) and reads it back. */
static inline int64_t fmt_u64_to_sql(uint64_t v)
{
	return (int64_t)v;
}

static inline uint64_t fmt_u64_from_sql(sqlite3_stmt *st, int col)
{
	return (uint64_t)sqlite3_column_int64(st, col);
}

/* Steps st while *rc says the statement is still good (prepared or on a
 * row); true while it yields rows. Loops read
 * `while (fmt_step_row(st, &rc))` and end with rc SQLITE_DONE on success. */
static inline int fmt_step_row(sqlite3_stmt *st, int *rc)
{
	if (*rc != SQLITE_OK && *rc != SQLITE_ROW)
		return 0;
	*rc = sqlite3_step(st);
	return *rc == SQLITE_ROW;
}

#endif
