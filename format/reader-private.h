/* reader-private.h — the reader handle, shared by reader.c (open, tables,
 * statistics, replays), reader-messages.c and reader-lookup.c (its
 * messages and lookups), index-check.c (what the chunk index may hold),
 * chunk-load.c (a chunk's events, checked against its row), iter.c (the
 * ordered merge over chunks) and lifetimes.c (alloc/free pairing, peak live
 * bytes). */
#ifndef MEMTRACE_READER_PRIVATE_H
#define MEMTRACE_READER_PRIVATE_H

#include <errno.h>
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
	uint64_t *complete_until; /* per process row (index as processes): its events
	                             before it are complete; MT_TIME_UNKNOWN: all */
	uint64_t earliest_until;  /* the smallest of them */
	char message[FMT_MESSAGE_MAX];
};

/* Records an SQLite failure while doing `what` as the reader's message and
 * returns its errno (-EBADMSG for a corrupt database). */
int fmt_reader_sql_fail(struct mt_reader *r, int rc, const char *what);

/* The element with this id in an array of n elements of `size` bytes sorted
 * by the uint32_t id at byte `offset` of each (the reader's processes,
 * devices and strings), or NULL. */
const void *fmt_find_id(const void *base, size_t n, size_t size, size_t offset, uint32_t id);

/* The time before which the events of this process are complete
 * (mt_reader_incomplete), MT_TIME_UNKNOWN when all are. */
uint64_t fmt_complete_until(const struct mt_reader *r, uint32_t process);

/* A row of the chunks table, without its blob. */
struct fmt_chunk_row {
	int64_t id;
	uint32_t process;
	uint32_t device;
	unsigned kind;
	int64_t codec;
	uint64_t first_ts;
	uint64_t last_ts;
	uint64_t count;
};

/* Sets the reader's message to "PATH: chunk ID is corrupt (why)" and
 * returns -EBADMSG. */
int fmt_chunk_corrupt(struct mt_reader *r, int64_t id, const char *why);

/* Checks the chunk index when a trace is opened (docs/FORMAT.md "Reading"):
 * every row has a known kind and codec, 1..MT_CHUNK_MAX_EVENTS events,
 * first_ts <= last_ts, a process and a device that are rows of their
 * tables, and no other row of the same process, device and kind starts at
 * the same seq. Returns 0 or -EBADMSG naming the first bad chunk. */
int fmt_index_check(struct mt_reader *r);

/* Reads and decodes chunk c into *events, a buffer the caller keeps and
 * reuses (*capacity events; NULL and 0 at first), and confirms its row:
 * the blob's kind and count, and its first and last ts. Returns 0, or
 * -EBADMSG naming the chunk, or another negative errno, with the message. */
int fmt_chunk_load(struct mt_reader *r, const struct fmt_chunk_row *c, struct mt_event **events,
                   size_t *capacity);

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
