#include "config.h"

/* schema.c — the SQLite schema of format v1 (docs/FORMAT.md "Tables"): creating
 * it, recognising a memtrace trace and refusing newer versions. */

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memtrace-format.h"
#include "schema-private.h"

static const char schema_sql[] =
        "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);"
        "CREATE TABLE processes (id INTEGER PRIMARY KEY, parent INTEGER NOT NULL DEFAULT 0,"
        " pid INTEGER NOT NULL, start_ns INTEGER NOT NULL, command_line TEXT NOT NULL,"
        " hostname TEXT NOT NULL, capture TEXT NOT NULL DEFAULT '');"
        "CREATE TABLE devices (id INTEGER PRIMARY KEY, ordinal INTEGER NOT NULL,"
        " total_bytes INTEGER NOT NULL, name TEXT NOT NULL, uuid TEXT NOT NULL,"
        " driver_version TEXT NOT NULL, cuda_version TEXT NOT NULL,"
        " pci_bus_id TEXT NOT NULL DEFAULT '',"
        " driver_reserved_bytes INTEGER NOT NULL DEFAULT 0);"
        "CREATE UNIQUE INDEX devices_uuid ON devices (uuid) WHERE uuid <> '';"
        "CREATE TABLE strings (id INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE);"
        "CREATE TABLE chunks (id INTEGER PRIMARY KEY, process INTEGER NOT NULL,"
        " device INTEGER NOT NULL, kind INTEGER NOT NULL, first_ts INTEGER NOT NULL,"
        " last_ts INTEGER NOT NULL, first_seq INTEGER NOT NULL, count INTEGER NOT NULL,"
        " codec INTEGER NOT NULL, raw_bytes INTEGER NOT NULL, layers INTEGER NOT NULL,"
        " blob BLOB NOT NULL);"
        "CREATE INDEX chunks_kind_device_ts ON chunks (kind, device, first_ts);"
        "CREATE TABLE replays (id INTEGER PRIMARY KEY, device INTEGER NOT NULL,"
        " created_ns INTEGER NOT NULL, policy TEXT NOT NULL, backend TEXT NOT NULL,"
        " params TEXT NOT NULL, result_json TEXT NOT NULL, series_codec INTEGER NOT NULL,"
        " series BLOB NOT NULL);";

/* Columns added to version 1 after its first traces were written: a reader
 * takes '' where a trace lacks them, a writer adds them before it writes. */
static const struct {
	const char *table, *column, *declaration;
} later_columns[] = {
	{ "processes", "capture", "TEXT NOT NULL DEFAULT ''" },
	{ "devices", "pci_bus_id", "TEXT NOT NULL DEFAULT ''" },
	{ "devices", "driver_reserved_bytes", "INTEGER NOT NULL DEFAULT 0" },
};

static const char *const required_tables[] = { "meta",    "processes", "devices",
	                                       "strings", "chunks",    "replays" };
#define N_REQUIRED (sizeof(required_tables) / sizeof(required_tables[0]))

int fmt_sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
	case SQLITE_FORMAT:
	case SQLITE_SCHEMA:
	case SQLITE_ERROR:
		return -EBADMSG;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	default:
		return -EIO;
	}
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* True when path-wal exists and is not empty. */
static int has_wal(const char *path)
{
	size_t len = strlen(path);
	char *wal = malloc(len + 5);
	if (!wal)
		return 1;
	memcpy(wal, path, len);
	memcpy(wal + len, "-wal", 5);
	struct stat st;
	int ok = stat(wal, &st) == 0 && st.st_size > 0;
	free(wal);
	return ok;
}

int fmt_schema_check_file(const char *path, char *msg)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		int e = errno;
		return mt_fail(msg, FMT_MESSAGE_MAX, e == ENOENT ? -ENOENT : -e, "%s: %s", path,
		               strerror(e));
	}
	if (!S_ISREG(st.st_mode))
		return mt_fail(msg, FMT_MESSAGE_MAX, -EBADMSG,
		               "%s is not a memtrace trace (not a regular file)", path);
	if (st.st_size == 0)
		return mt_fail(msg, FMT_MESSAGE_MAX, -EBADMSG,
		               "%s is not a memtrace trace (empty file)", path);
	unsigned char h[100];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return mt_fail(msg, FMT_MESSAGE_MAX, -e, "%s: %s", path, strerror(e));
	}
	ssize_t got = read(fd, h, sizeof(h));
	close(fd);
	if (got < (ssize_t)sizeof(h) || memcmp(h, "SQLite format 3", 16) != 0)
		return mt_fail(msg, FMT_MESSAGE_MAX, -EBADMSG,
		               "%s is not a memtrace trace (not an SQLite database)", path);
	/* The page count in the header is valid when its "version valid for"
	 * matches the change counter (SQLite file format, section 1.3.7). */
	uint32_t page_size = (uint32_t)h[16] << 8 | h[17];
	uint64_t page_bytes = page_size == 1 ? 65536 : page_size;
	uint64_t pages = be32(h + 28);
	if (be32(h + 92) == be32(h + 24) && pages * page_bytes > (uint64_t)st.st_size &&
	    !has_wal(path))
		return mt_fail(msg, FMT_MESSAGE_MAX, -EBADMSG,
		               "%s is not a memtrace trace (file cut short: %llu of %llu bytes)",
		               path, (unsigned long long)st.st_size,
		               (unsigned long long)(pages * page_bytes));
	return 0;
}

int fmt_schema_check(sqlite3 *db, const char *path, int *empty, char *msg)
{
	sqlite3_stmt *st = NULL;
	int found[N_REQUIRED] = { 0 };
	int tables = 0, rc;
	*empty = 0;
	rc = sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &st,
	                        NULL);
	while (fmt_step_row(st, &rc)) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		tables++;
		for (size_t i = 0; name && i < N_REQUIRED; i++)
			if (strcmp(name, required_tables[i]) == 0)
				found[i] = 1;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		int err = fmt_sqlite_errno(rc);
		if (err == -EBADMSG)
			return mt_fail(msg, FMT_MESSAGE_MAX, err, "%s is not a memtrace trace (%s)",
			               path, sqlite3_errstr(rc));
		return mt_fail(msg, FMT_MESSAGE_MAX, err, "%s: %s", path, sqlite3_errmsg(db));
	}
	if (tables == 0) {
		*empty = 1;
		return mt_fail(msg, FMT_MESSAGE_MAX, -EBADMSG,
		               "%s is not a memtrace trace (empty database)", path);
	}
	for (size_t i = 0; i < N_REQUIRED; i++)
		if (!found[i])
			return mt_fail(msg, FMT_MESSAGE_MAX, -EBADMSG,
			               "%s is not a memtrace trace (no %s table)", path,
			               required_tables[i]);

	rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'format_version'", -1, &st,
	                        NULL);
	if (rc != SQLITE_OK)
		return mt_fail(msg, FMT_MESSAGE_MAX, fmt_sqlite_errno(rc),
		               "%s is not a memtrace trace (%s)", path, sqlite3_errmsg(db));
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		int err = rc == SQLITE_DONE ? -EBADMSG : fmt_sqlite_errno(rc);
		sqlite3_finalize(st);
		return mt_fail(msg, FMT_MESSAGE_MAX, err, "%s is not a memtrace trace (%s)", path,
		               rc == SQLITE_DONE ? "no format_version in meta"
		                                 : sqlite3_errstr(rc));
	}
	const char *text = (const char *)sqlite3_column_text(st, 0);
	char *endp = NULL;
	long long version = text ? strtoll(text, &endp, 10) : 0;
	int bad = !text || endp == text || *endp != '\0';
	sqlite3_finalize(st);
	if (bad || version < 1)
		return mt_fail(msg, FMT_MESSAGE_MAX, -EBADMSG,
		               "%s is not a memtrace trace (bad format_version in meta)", path);
	if (version > MT_FORMAT_VERSION)
		return mt_fail(
		        msg, FMT_MESSAGE_MAX, -ENOTSUP,
		        "%s was written by format version %lld; this memtrace reads up to %d", path,
		        version, MT_FORMAT_VERSION);
	return 0;
}

int fmt_schema_create(sqlite3 *db, const char *path, char *msg)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, schema_sql, NULL, NULL, &err);
	if (rc == SQLITE_OK) {
		sqlite3_free(err);
		err = NULL;
		char sql[256];
		snprintf(sql, sizeof(sql),
		         "INSERT INTO meta (key, value) VALUES ('format_version', '%d'),"
		         " ('memtrace_version', '%s')",
		         MT_FORMAT_VERSION, MT_VERSION);
		rc = sqlite3_exec(db, sql, NULL, NULL, &err);
	}
	if (rc != SQLITE_OK) {
		int e = mt_fail(msg, FMT_MESSAGE_MAX, fmt_sqlite_errno(rc),
		                "%s: cannot create the schema: %s", path,
		                err ? err : sqlite3_errstr(rc));
		sqlite3_free(err);
		return e == -EBADMSG ? -EIO : e;
	}
	return 0;
}

bool fmt_schema_has_column(sqlite3 *db, const char *table, const char *column)
{
	sqlite3_stmt *st = NULL;
	bool found = false;
	int rc = sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1,
	                            &st, NULL);

	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
		found = sqlite3_step(st) == SQLITE_ROW;
	}
	sqlite3_finalize(st);
	return found;
}

int fmt_schema_add_later_columns(sqlite3 *db, const char *path, char *msg)
{
	for (size_t i = 0; i < sizeof(later_columns) / sizeof(later_columns[0]); i++) {
		char sql[256];
		char *err = NULL;
		int rc;

		if (fmt_schema_has_column(db, later_columns[i].table, later_columns[i].column))
			continue;
		snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s",
		         later_columns[i].table, later_columns[i].column,
		         later_columns[i].declaration);
		rc = sqlite3_exec(db, sql, NULL, NULL, &err);
		if (rc != SQLITE_OK) {
			int e = mt_fail(msg, FMT_MESSAGE_MAX, fmt_sqlite_errno(rc),
			                "%s: cannot add column %s.%s: %s", path,
			                later_columns[i].table, later_columns[i].column,
			                err ? err : sqlite3_errstr(rc));
			sqlite3_free(err);
			return e == -EBADMSG ? -EIO : e;
		}
	}
	return 0;
}
