/* reader-private.h — the reader handle, shared by reader.c (open, tables,
 * statistics, replays), iter.c (the ordered merge over chunks) and
 * lifetimes.c (alloc/free pairing, peak live bytes). */
#ifndef MEMTRACE_READER_PRIVATE_H
#define MEMTRACE_READER_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "memtrace-format.h"
#include "schema-private.h"

struct string_row {
	uint32_t id;
	char *text;
};

struct mt_reader {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *blob_stmt; /* SELECT blob FROM chunks WHERE id = ? */
	char **meta;             /* key, value, key, value, ... */
	size_t n_meta;
	struct mt_process *processes;
	size_t n_processes;
	struct mt_device *devices;
	size_t n_devices;
	struct string_row *strings; /* sorted by id, loaded on first use */
	size_t n_strings;
	int strings_loaded;
	struct mt_replay_record *replays; /* loaded on first use */
	size_t n_replays;
	int replays_loaded;
	char message[FMT_MESSAGE_MAX];
};

/* Records an SQLite failure while doing `what` as the reader's message and
 * returns its errno (-EBADMSG for a corrupt database). */
int fmt_reader_sql_fail(struct mt_reader *r, int rc, const char *what);

/* Starts a call on an open reader: -EINVAL if r is NULL or not open, else
 * 0 with the message cleared (it is "" unless this call fails). */
static inline int fmt_reader_ready(struct mt_reader *r)
{
	if (!r || !r->db)
		return -EINVAL;
	r->message[0] = '\0';
	return 0;
}

#endif
