#include "config.h"

/* writer.c — appends to a trace: metadata rows, interned strings, events
 * batched per (process, device, kind) into chunks, each chunk committed in
 * its own transaction (WAL mode, busy timeout), and saved replays. Several
 * processes may write one trace at once: row ids come from SQLite, strings
 * are interned with INSERT OR IGNORE + SELECT so every writer agrees. */

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "chunk-codec-private.h"
#include "memtrace-format.h"
#include "schema-private.h"

#define DEFAULT_CHUNK_EVENTS 65536

/* Events waiting to become a chunk of one (process, device, kind). */
struct buffer {
	uint32_t process;
	uint32_t device;
	unsigned kind;
	struct mt_event *events;
	size_t n, cap;
	size_t stored;       /* events[0, stored) are in the open chunk row */
	int64_t open_row;    /* the open chunk's row id, 0 = none yet */
	uint64_t pending_ts; /* smallest ts of events[stored, n), UINT64_MAX if none */
};

/* A process this writer appends events of, and its open_writer key's time. */
struct mark {
	uint32_t process;
	uint64_t max_ts;  /* largest ts appended for it */
	uint64_t covered; /* the time its key holds */
};

/* Interned string cache: open addressing, power-of-two capacity. */
struct intern_slot {
	uint64_t hash;
	char *text;
	uint32_t id;
};

enum statement {
	ST_CHUNK,
	ST_CHUNK_REPLACE,
	ST_META,
	ST_META_ADD,
	ST_META_GET,
	ST_META_DELETE,
	ST_PROCESS,
	ST_PROCESS_CAPTURE,
	ST_DEVICE_INSERT,
	ST_DEVICE_FIND,
	ST_STRING_INSERT,
	ST_STRING_FIND,
	ST_REPLAY,
	ST_COUNT,
};

static const char *const statement_sql[ST_COUNT] = {
	[ST_CHUNK] = "INSERT INTO chunks (process, device, kind, first_ts, last_ts, first_seq,"
	             " count, codec, raw_bytes, layers, blob)"
	             " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	[ST_CHUNK_REPLACE] = "UPDATE chunks SET first_ts = ?4, last_ts = ?5, first_seq = ?6,"
	                     " count = ?7, codec = ?8, raw_bytes = ?9, layers = ?10, blob = ?11"
	                     " WHERE id = ?12 AND process = ?1 AND device = ?2 AND kind = ?3",
	[ST_META] = "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
	/* one statement, so that processes adding at once lose nothing */
	[ST_META_ADD] = "INSERT INTO meta (key, value) VALUES (?1, CAST(?2 AS TEXT))"
	                " ON CONFLICT (key) DO UPDATE SET"
	                " value = CAST(CAST(value AS INTEGER) + ?2 AS TEXT)",
	[ST_META_GET] = "SELECT value FROM meta WHERE key = ?",
	[ST_META_DELETE] = "DELETE FROM meta WHERE key = ?",
	[ST_PROCESS] = "INSERT INTO processes (parent, pid, start_ns, command_line, hostname,"
	               " capture) VALUES (?, ?, ?, ?, ?, ?)",
	[ST_PROCESS_CAPTURE] = "UPDATE processes SET capture = ?2 WHERE id = ?1",
	[ST_DEVICE_INSERT] = "INSERT OR IGNORE INTO devices (ordinal, total_bytes, name, uuid,"
	                     " driver_version, cuda_version, pci_bus_id, driver_reserved_bytes)"
	                     " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
	[ST_DEVICE_FIND] = "SELECT id FROM devices WHERE uuid = ? AND uuid <> ''",
	[ST_STRING_INSERT] = "INSERT OR IGNORE INTO strings (value) VALUES (?)",
	[ST_STRING_FIND] = "SELECT id FROM strings WHERE value = ?",
	[ST_REPLAY] = "INSERT INTO replays (device, created_ns, policy, backend, params,"
	              " result_json, series_codec, series) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
};

struct mt_writer {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *st[ST_COUNT];
	struct buffer *buffers;
	size_t n_buffers, cap_buffers, last_buffer;
	size_t chunk_events;
	uint64_t next_seq, appended, written;
	int64_t number;     /* N of the open_writer.N.P keys, 0 until events come */
	struct mark *marks; /* one per process this writer appended events of */
	size_t n_marks, cap_marks;
	struct intern_slot *interned;
	size_t n_interned, cap_interned;
	char message[FMT_MESSAGE_MAX];
};

struct mt_writer *mt_writer_new(void)
{
	struct mt_writer *w = calloc(1, sizeof(*w));
	if (w)
		w->chunk_events = DEFAULT_CHUNK_EVENTS;
	return w;
}

/* Records an SQLite failure of `what` as the writer's message. */
static int sql_fail(struct mt_writer *w, int rc, const char *what)
{
	int err = fmt_sqlite_errno(rc);
	if (err == -EBADMSG && rc != SQLITE_NOTADB && rc != SQLITE_CORRUPT)
		err = -EIO;
	return mt_fail(w->message, FMT_MESSAGE_MAX, err, "%s: %s: %s", w->path ? w->path : "trace",
	               what, sqlite3_errmsg(w->db));
}

/* Runs one statement whose result rows are ignored. */
static int exec(struct mt_writer *w, const char *sql)
{
	int rc = sqlite3_exec(w->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : sql_fail(w, rc, sql);
}

/* Steps a prepared statement to completion (or its first row when row is
 * set) and resets it; returns 0 or a negative errno. */
static int step(struct mt_writer *w, enum statement s, const char *what, int64_t *row)
{
	sqlite3_stmt *st = w->st[s];
	int rc = sqlite3_step(st);
	int ok = rc == SQLITE_DONE || (row && rc == SQLITE_ROW);
	if (ok && row)
		*row = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	int err = ok ? 0 : sql_fail(w, rc, what);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return err;
}

static void bind_text(sqlite3_stmt *st, int col, const char *s)
{
	sqlite3_bind_text(st, col, s ? s : "", -1, SQLITE_TRANSIENT);
}

/* Opens the database, sets WAL and creates or checks the schema. */
static int open_db(struct mt_writer *w, unsigned flags)
{
	struct stat st;
	int exists = stat(w->path, &st) == 0;
	if (!exists && !(flags & MT_WRITER_CREATE))
		return mt_fail(w->message, FMT_MESSAGE_MAX, -ENOENT, "%s: %s", w->path,
		               strerror(ENOENT));
	/* A file another writer is creating right now may still be shorter
	 * than an SQLite header; SQLite itself refuses non-databases then. */
	if (exists && (!(flags & MT_WRITER_CREATE) || st.st_size >= 512)) {
		int err = fmt_schema_check_file(w->path, w->message);
		if (err < 0)
			return err;
	}
	int oflags = SQLITE_OPEN_READWRITE | (flags & MT_WRITER_CREATE ? SQLITE_OPEN_CREATE : 0);
	int rc = sqlite3_open_v2(w->path, &w->db, oflags, NULL);
	if (rc != SQLITE_OK) {
		int err = fmt_sqlite_errno(rc);
		return mt_fail(w->message, FMT_MESSAGE_MAX, err == -EBADMSG ? -EIO : err, "%s: %s",
		               w->path, w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc));
	}
	sqlite3_busy_timeout(w->db, FMT_BUSY_TIMEOUT_MS);
	/* Switching to WAL can report SQLITE_BUSY at once, without the busy
	 * handler, while another process is switching the same new file. */
	for (int waited_ms = 0;; waited_ms += 10) {
		rc = sqlite3_exec(w->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
		if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= FMT_BUSY_TIMEOUT_MS)
			break;
		sqlite3_sleep(10);
	}
	if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)
		return mt_fail(w->message, FMT_MESSAGE_MAX, -EBADMSG,
		               "%s is not a memtrace trace (%s)", w->path, sqlite3_errstr(rc));
	int err = rc == SQLITE_OK ? exec(w, "PRAGMA synchronous = NORMAL") : sql_fail(w, rc, "WAL");
	if (err < 0)
		return err;

	/* Creation and check in one write transaction, so processes opening a
	 * new trace at once create the schema exactly once. */
	err = exec(w, "BEGIN IMMEDIATE");
	if (err < 0)
		return err;
	int empty;
	err = fmt_schema_check(w->db, w->path, &empty, w->message);
	if (err < 0 && empty)
		err = fmt_schema_create(w->db, w->path, w->message);
	else if (err == 0)
		err = fmt_schema_add_later_columns(w->db, w->path, w->message);
	if (err == 0)
		err = exec(w, "COMMIT");
	if (err < 0)
		sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}

int mt_writer_open(struct mt_writer *w, const char *path, unsigned flags)
{
	if (!w || !path || w->db)
		return -EINVAL;
	w->message[0] = '\0';
	w->path = strdup(path);
	if (!w->path)
		return -ENOMEM;
	int err = open_db(w, flags);
	for (int s = 0; err == 0 && s < ST_COUNT; s++) {
		int rc = sqlite3_prepare_v3(w->db, statement_sql[s], -1, SQLITE_PREPARE_PERSISTENT,
		                            &w->st[s], NULL);
		if (rc != SQLITE_OK)
			err = mt_fail(w->message, FMT_MESSAGE_MAX, -EBADMSG,
			              "%s is not a memtrace trace (%s)", path,
			              sqlite3_errmsg(w->db));
	}
	if (err == 0)
		w->message[0] = '\0'; /* the check of a new, empty file left one */
	if (err < 0) {
		for (int s = 0; s < ST_COUNT; s++) {
			sqlite3_finalize(w->st[s]);
			w->st[s] = NULL;
		}
		sqlite3_close(w->db);
		w->db = NULL;
		free(w->path);
		w->path = NULL;
	}
	return err;
}

/* Starts a call: the message is "" unless this call fails. */
static int check_open(struct mt_writer *w)
{
	if (!w)
		return -EINVAL;
	w->message[0] = '\0';
	if (!w->db)
		return mt_fail(w->message, FMT_MESSAGE_MAX, -EINVAL, "the writer is not open");
	return 0;
}

int mt_writer_set_meta(struct mt_writer *w, const char *key, const char *value)
{
	int err = check_open(w);
	if (err < 0)
		return err;
	if (!key || !value)
		return mt_fail(w->message, FMT_MESSAGE_MAX, -EINVAL,
		               "meta key and value must be given");
	bind_text(w->st[ST_META], 1, key);
	bind_text(w->st[ST_META], 2, value);
	return step(w, ST_META, "cannot set meta", NULL);
}

int mt_writer_add_meta_count(struct mt_writer *w, const char *key, uint64_t delta)
{
	int err = check_open(w);
	if (err < 0)
		return err;
	if (!key)
		return mt_fail(w->message, FMT_MESSAGE_MAX, -EINVAL, "meta key must be given");
	bind_text(w->st[ST_META_ADD], 1, key);
	sqlite3_bind_int64(w->st[ST_META_ADD], 2, (sqlite3_int64)delta);
	return step(w, ST_META_ADD, "cannot add to meta", NULL);
}

int mt_writer_add_process(struct mt_writer *w, const struct mt_process *p, uint32_t *id)
{
	int err = check_open(w);
	if (err < 0)
		return err;
	if (!p || !id)
		return mt_fail(w->message, FMT_MESSAGE_MAX, -EINVAL, "no process given");
	sqlite3_stmt *st = w->st[ST_PROCESS];
	sqlite3_bind_int64(st, 1, p->parent);
	sqlite3_bind_int64(st, 2, p->pid);
	sqlite3_bind_int64(st, 3, fmt_u64_to_sql(p->start_ns));
	bind_text(st, 4, p->command_line);
	bind_text(st, 5, p->hostname);
	bind_text(st, 6, p->capture);
	err = step(w, ST_PROCESS, "cannot add a process", NULL);
	if (err == 0)
		*id = (uint32_t)sqlite3_last_insert_rowid(w->db);
	return err;
}

int mt_writer_set_process_capture(struct mt_writer *w, uint32_t id, const char *capture)
{
	int err = check_open(w);
	if (err < 0)
		return err;
	sqlite3_bind_int64(w->st[ST_PROCESS_CAPTURE], 1, id);
	bind_text(w->st[ST_PROCESS_CAPTURE], 2, capture);
	err = step(w, ST_PROCESS_CAPTURE, "cannot set a process's capture", NULL);
	if (err == 0 && sqlite3_changes(w->db) != 1)
		err = mt_fail(w->message, FMT_MESSAGE_MAX, -ENOENT, "%s: no process row %u",
		              w->path, id);
	return err;
}

int mt_writer_add_device(struct mt_writer *w, const struct mt_device *d, uint32_t *id)
{
	int err = check_open(w);
	if (err < 0)
		return err;
	if (!d || !id)
		return mt_fail(w->message, FMT_MESSAGE_MAX, -EINVAL, "no device given");
	sqlite3_stmt *st = w->st[ST_DEVICE_INSERT];
	sqlite3_bind_int64(st, 1, d->ordinal);
	sqlite3_bind_int64(st, 2, fmt_u64_to_sql(d->total_bytes));
	bind_text(st, 3, d->name);
	bind_text(st, 4, d->uuid);
	bind_text(st, 5, d->driver_version);
	bind_text(st, 6, d->cuda_version);
	bind_text(st, 7, d->pci_bus_id);
	sqlite3_bind_int64(st, 8, fmt_u64_to_sql(d->driver_reserved_bytes));
	err = step(w, ST_DEVICE_INSERT, "cannot add a device", NULL);
	if (err < 0)
		return err;
	if (sqlite3_changes(w->db) > 0) {
		*id = (uint32_t)sqlite3_last_insert_rowid(w->db);
		return 0;
	}
	/* Ignored: a row with this uuid exists. */
	int64_t row;
	bind_text(w->st[ST_DEVICE_FIND], 1, d->uuid);
	err = step(w, ST_DEVICE_FIND, "cannot find a device", &row);
	if (err == 0 && row <= 0)
		err = mt_fail(w->message, FMT_MESSAGE_MAX, -EIO, "%s: device %s vanished", w->path,
		              d->uuid);
	if (err == 0)
		*id = (uint32_t)row;
	return err;
}

static uint64_t hash_step(uint64_t h, const char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	h = (h ^ v) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 32);
}

/* Kernel names (C++ templates of several hundred bytes) are interned once
 * per launch record, so this hash is on the recording thread's path: a byte
 * a step (FNV) took about 1 us for 700 bytes. It takes eight bytes a step in
 * four independent lanes. It only places strings in the in-memory table and
 * is never stored. */
static uint64_t hash_string(const char *s)
{
	size_t len = strlen(s), i = 0;
	uint64_t lane[4] = { len, len + 1, len + 2, len + 3 }, h, v = 0;
	for (; i + 32 <= len; i += 32)
		for (int k = 0; k < 4; k++)
			lane[k] = hash_step(lane[k], s + i + 8 * k);
	h = lane[0] ^ (lane[1] << 16 | lane[1] >> 48) ^ (lane[2] << 32 | lane[2] >> 32) ^
	    (lane[3] << 48 | lane[3] >> 16);
	for (; i + 8 <= len; i += 8)
		h = hash_step(h, s + i);
	memcpy(&v, s + i, len - i);
	h = (h ^ v ^ 0x9e3779b97f4a7c15ull) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 29);
}

/* Slot of s in the cache, or the empty slot where it would go. */
static struct intern_slot *intern_slot(struct mt_writer *w, const char *s, uint64_t h)
{
	size_t mask = w->cap_interned - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct intern_slot *slot = &w->interned[i];
		if (!slot->text || (slot->hash == h && strcmp(slot->text, s) == 0))
			return slot;
	}
}

static int intern_grow(struct mt_writer *w)
{
	size_t old_cap = w->cap_interned;
	struct intern_slot *old = w->interned;
	size_t cap = old_cap ? old_cap * 2 : 256;
	w->interned = calloc(cap, sizeof(*w->interned));
	if (!w->interned) {
		w->interned = old;
		return -ENOMEM;
	}
	w->cap_interned = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].text)
			*intern_slot(w, old[i].text, old[i].hash) = old[i];
	free(old);
	return 0;
}

int mt_writer_intern(struct mt_writer *w, const char *s, uint32_t *id)
{
	int err = check_open(w);
	if (err < 0)
		return err;
	if (!s || !id)
		return mt_fail(w->message, FMT_MESSAGE_MAX, -EINVAL, "no string given");
	if ((w->n_interned + 1) * 2 > w->cap_interned && intern_grow(w) < 0)
		return mt_fail(w->message, FMT_MESSAGE_MAX, -ENOMEM, "out of memory");
	uint64_t h = hash_string(s);
	struct intern_slot *slot = intern_slot(w, s, h);
	if (slot->text) {
		*id = slot->id;
		return 0;
	}
	bind_text(w->st[ST_STRING_INSERT], 1, s);
	err = step(w, ST_STRING_INSERT, "cannot intern a string", NULL);
	int64_t row = 0;
	if (err == 0) {
		bind_text(w->st[ST_STRING_FIND], 1, s);
		err = step(w, ST_STRING_FIND, "cannot intern a string", &row);
	}
	if (err == 0 && (row <= 0 || row > UINT32_MAX))
		err = mt_fail(w->message, FMT_MESSAGE_MAX, -EIO, "%s: string id out of range",
		              w->path);
	if (err < 0)
		return err;
	char *copy = strdup(s);
	if (!copy)
		return mt_fail(w->message, FMT_MESSAGE_MAX, -ENOMEM, "out of memory");
	*slot = (struct intern_slot){ .hash = h, .text = copy, .id = (uint32_t)row };
	w->n_interned++;
	*id = (uint32_t)row;
	return 0;
}

void mt_writer_set_chunk_events(struct mt_writer *w, size_t n)
{
	if (!w)
		return;
	w->chunk_events = n < 1 ? 1 : n > MT_CHUNK_MAX_EVENTS ? MT_CHUNK_MAX_EVENTS : n;
}

/* ---- coverage: how far a writer's events are committed (FORMAT.md
 * "Incomplete traces"). For each process it appends events of, a writer
 * keeps the meta key open_writer.N.P (N its number from the meta count
 * "writers", P the process row) holding a time: every event of P it
 * appended with a smaller ts is in a committed chunk. Closing with nothing
 * left uncommitted deletes the keys; a writer that is killed leaves them,
 * and readers use only the events of P before that time. */

/* Smallest ts of events[from, n) of b, UINT64_MAX if none. */
static uint64_t smallest_ts(const struct buffer *b, size_t from)
{
	uint64_t t = UINT64_MAX;
	for (size_t i = from; i < b->n; i++)
		t = b->events[i].ts < t ? b->events[i].ts : t;
	return t;
}

/* The ts below which every event of m's process appended so far is
 * committed. */
static uint64_t covered_to(const struct mt_writer *w, const struct mark *m)
{
	uint64_t t = UINT64_MAX;
	for (size_t i = 0; i < w->n_buffers; i++)
		if (w->buffers[i].process == m->process && w->buffers[i].pending_ts < t)
			t = w->buffers[i].pending_ts;
	if (t == UINT64_MAX) /* nothing pending: everything appended is in */
		t = m->max_ts == UINT64_MAX ? UINT64_MAX - 1 : m->max_ts + 1;
	return t;
}

static void mark_key(const struct mt_writer *w, const struct mark *m, char *key, size_t len)
{
	snprintf(key, len, "open_writer.%lld.%" PRIu32, (long long)w->number, m->process);
}

static int set_mark(struct mt_writer *w, struct mark *m, uint64_t t)
{
	char key[64], value[24];
	mark_key(w, m, key, sizeof(key));
	snprintf(value, sizeof(value), "%" PRIu64, t);
	bind_text(w->st[ST_META], 1, key);
	bind_text(w->st[ST_META], 2, value);
	int err = step(w, ST_META, "cannot record what is committed", NULL);
	if (err == 0)
		m->covered = t;
	return err;
}

/* This writer's number N, taken from the meta count "writers". */
static int take_number(struct mt_writer *w)
{
	int err = exec(w, "BEGIN IMMEDIATE");
	if (err < 0)
		return err;
	bind_text(w->st[ST_META_ADD], 1, "writers");
	sqlite3_bind_int64(w->st[ST_META_ADD], 2, 1);
	err = step(w, ST_META_ADD, "cannot count writers", NULL);
	if (err == 0) {
		bind_text(w->st[ST_META_GET], 1, "writers");
		err = step(w, ST_META_GET, "cannot count writers", &w->number);
	}
	if (err == 0)
		err = exec(w, "COMMIT");
	if (err < 0) {
		sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
		w->number = 0;
	}
	return err;
}

/* The mark of ev's process, made (with the key set to ev's ts: nothing of
 * the process is committed yet) before its first event. */
static struct mark *process_mark(struct mt_writer *w, const struct mt_event *ev, int *err)
{
	for (size_t i = 0; i < w->n_marks; i++)
		if (w->marks[i].process == ev->process)
			return &w->marks[i];
	if (!w->number && (*err = take_number(w)) < 0)
		return NULL;
	if (w->n_marks == w->cap_marks) {
		size_t cap = w->cap_marks ? 2 * w->cap_marks : 4;
		struct mark *nm = realloc(w->marks, cap * sizeof(*nm));
		if (!nm) {
			*err = mt_fail(w->message, FMT_MESSAGE_MAX, -ENOMEM, "out of memory");
			return NULL;
		}
		w->marks = nm;
		w->cap_marks = cap;
	}
	struct mark *m = &w->marks[w->n_marks];
	*m = (struct mark){ .process = ev->process, .max_ts = ev->ts };
	if ((*err = set_mark(w, m, ev->ts)) < 0)
		return NULL;
	w->n_marks++;
	return m;
}

/* After a commit: moves each process's time on. A failure here leaves an
 * older, smaller time, which is still true. */
static int update_coverage(struct mt_writer *w)
{
	int err = 0;
	for (size_t i = 0; err == 0 && i < w->n_marks; i++) {
		uint64_t t = covered_to(w, &w->marks[i]);
		if (t != w->marks[i].covered)
			err = set_mark(w, &w->marks[i], t);
	}
	return err;
}

/* Stores the first `count` events of b as the buffer's open chunk, in one
 * transaction: the first store of a chunk inserts its row, later stores
 * replace that row with the longer chunk. Periodic flushes thus stay crash
 * safe (each one commits) while chunks still grow long enough to compress
 * well. With `close`, the chunk is closed: its events leave the buffer and
 * the next store starts a new row. On failure the buffer and the row are
 * unchanged. */
static int store_chunk(struct mt_writer *w, struct buffer *b, size_t count, bool close)
{
	const struct mt_event *e = b->events;
	uint64_t first_ts = UINT64_MAX, last_ts = 0, first_seq = UINT64_MAX;
	uint32_t layers = 0;
	for (size_t i = 0; i < count; i++) {
		first_ts = e[i].ts < first_ts ? e[i].ts : first_ts;
		last_ts = e[i].ts > last_ts ? e[i].ts : last_ts;
		first_seq = e[i].seq < first_seq ? e[i].seq : first_seq;
		if (b->kind == MT_EVENT_ALLOC || b->kind == MT_EVENT_FREE)
			layers |= 1u << (e[i].alloc.layer & 31);
	}
	void *blob;
	size_t blob_len;
	int err = mt_chunk_encode(b->kind, e, count, &blob, &blob_len);
	if (err < 0)
		return mt_fail(w->message, FMT_MESSAGE_MAX, err, "%s: cannot encode a chunk: %s",
		               w->path, strerror(-err));
	unsigned kind;
	uint64_t n, raw_len = 0;
	fmt_chunk_blob_info(blob, blob_len, &kind, &n, &raw_len);
	enum statement which = b->open_row ? ST_CHUNK_REPLACE : ST_CHUNK;
	sqlite3_stmt *st = w->st[which];
	sqlite3_bind_int64(st, 1, b->process);
	sqlite3_bind_int64(st, 2, b->device);
	sqlite3_bind_int64(st, 3, b->kind);
	sqlite3_bind_int64(st, 4, fmt_u64_to_sql(first_ts));
	sqlite3_bind_int64(st, 5, fmt_u64_to_sql(last_ts));
	sqlite3_bind_int64(st, 6, fmt_u64_to_sql(first_seq));
	sqlite3_bind_int64(st, 7, (int64_t)count);
	sqlite3_bind_int64(st, 8, MT_CODEC_COLUMNS_ZSTD);
	sqlite3_bind_int64(st, 9, fmt_u64_to_sql(raw_len));
	sqlite3_bind_int64(st, 10, layers);
	sqlite3_bind_blob(st, 11, blob, (int)blob_len, SQLITE_STATIC);
	if (b->open_row)
		sqlite3_bind_int64(st, 12, b->open_row);
	/* In autocommit mode the statement is its own transaction. */
	err = step(w, which, "cannot write a chunk", NULL);
	free(blob);
	if (err == 0 && b->open_row && sqlite3_changes(w->db) != 1)
		err = mt_fail(w->message, FMT_MESSAGE_MAX, -EIO,
		              "%s: chunk %lld vanished while being written", w->path,
		              (long long)b->open_row);
	if (err < 0)
		return err;
	if (!b->open_row)
		b->open_row = sqlite3_last_insert_rowid(w->db);
	w->written += count - b->stored;
	b->stored = count;
	if (close) {
		b->n -= count;
		memmove(b->events, b->events + count, b->n * sizeof(*b->events));
		b->stored = 0;
		b->open_row = 0;
	}
	b->pending_ts = smallest_ts(b, b->stored);
	return update_coverage(w);
}

static struct buffer *find_buffer(struct mt_writer *w, const struct mt_event *ev)
{
	if (w->last_buffer < w->n_buffers) {
		struct buffer *b = &w->buffers[w->last_buffer];
		if (b->process == ev->process && b->device == ev->device && b->kind == ev->kind)
			return b;
	}
	for (size_t i = 0; i < w->n_buffers; i++) {
		struct buffer *b = &w->buffers[i];
		if (b->process == ev->process && b->device == ev->device && b->kind == ev->kind) {
			w->last_buffer = i;
			return b;
		}
	}
	if (w->n_buffers == w->cap_buffers) {
		size_t cap = w->cap_buffers ? w->cap_buffers * 2 : 16;
		struct buffer *nb = realloc(w->buffers, cap * sizeof(*nb));
		if (!nb)
			return NULL;
		w->buffers = nb;
		w->cap_buffers = cap;
	}
	w->last_buffer = w->n_buffers++;
	struct buffer *b = &w->buffers[w->last_buffer];
	*b = (struct buffer){ .process = ev->process,
		              .device = ev->device,
		              .kind = ev->kind,
		              .pending_ts = UINT64_MAX };
	return b;
}

int mt_writer_append(struct mt_writer *w, const struct mt_event *ev)
{
	int err = check_open(w);
	if (err < 0)
		return err;
	if (!ev || !mt_event_kind_name(ev->kind))
		return mt_fail(w->message, FMT_MESSAGE_MAX, -EINVAL, "bad event kind %u",
		               ev ? ev->kind : 0);
	struct mark *m = process_mark(w, ev, &err);
	if (!m)
		return err;
	struct buffer *b = find_buffer(w, ev);
	if (!b)
		return mt_fail(w->message, FMT_MESSAGE_MAX, -ENOMEM, "out of memory");
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		struct mt_event *ne = realloc(b->events, cap * sizeof(*ne));
		if (!ne)
			return mt_fail(w->message, FMT_MESSAGE_MAX, -ENOMEM, "out of memory");
		b->events = ne;
		b->cap = cap;
	}
	struct mt_event *dst = &b->events[b->n++];
	*dst = *ev;
	dst->seq = w->next_seq++;
	w->appended++;
	b->pending_ts = ev->ts < b->pending_ts ? ev->ts : b->pending_ts;
	m->max_ts = ev->ts > m->max_ts ? ev->ts : m->max_ts;
	if (b->n >= w->chunk_events)
		return store_chunk(w, b, w->chunk_events, true);
	return 0;
}

/* A flush closes an open chunk once it holds a quarter of the chunk size.
 * Every flush re-encodes the open chunk whole: a program that fills a full
 * chunk in ten flushes had each event encoded about five times by the
 * recording thread. At that rate a quarter fills in two or three flushes,
 * so each event is encoded about twice; at lower rates an event is encoded
 * more often, but the chunk re-encoded at each flush is never more than a
 * quarter of its old size. Chunks of 16 384 alloc and free events take 4-6 %
 * more bytes than full ones on the sample traces. */
int mt_writer_flush(struct mt_writer *w)
{
	int err = check_open(w);
	for (size_t i = 0; err == 0 && i < w->n_buffers; i++) {
		size_t close_at = (w->chunk_events + 3) / 4;
		struct buffer *b = &w->buffers[i];
		while (err == 0 && b->n > b->stored) {
			size_t count = b->n < w->chunk_events ? b->n : w->chunk_events;
			err = store_chunk(w, b, count, count >= close_at);
		}
	}
	return err;
}

uint64_t mt_writer_events_appended(const struct mt_writer *w)
{
	return w ? w->appended : 0;
}

uint64_t mt_writer_events_written(const struct mt_writer *w)
{
	return w ? w->written : 0;
}

const char *mt_writer_message(const struct mt_writer *w)
{
	return w ? w->message : "";
}

/* The series as little-endian u64 triples (docs/FORMAT.md "replays"). */
static unsigned char *series_blob(const struct mt_series_point *s, size_t n)
{
	unsigned char *out = malloc(n * 24 + 1), *p = out;
	for (size_t i = 0; out && i < n; i++) {
		uint64_t v[3] = { s[i].ts, s[i].allocated, s[i].reserved };
		for (int k = 0; k < 3; k++)
			for (int b = 0; b < 8; b++)
				*p++ = (unsigned char)(v[k] >> (8 * b));
	}
	return out;
}

int mt_writer_save_replay(struct mt_writer *w, const struct mt_replay_record *rec, int64_t *id)
{
	int err = check_open(w);
	if (err < 0)
		return err;
	if (!rec || !id || (rec->series_len > 0 && !rec->series) ||
	    rec->series_len > (size_t)INT32_MAX / 24)
		return mt_fail(w->message, FMT_MESSAGE_MAX, -EINVAL, "bad replay record");
	unsigned char *blob = series_blob(rec->series, rec->series_len);
	if (!blob)
		return mt_fail(w->message, FMT_MESSAGE_MAX, -ENOMEM, "out of memory");
	sqlite3_stmt *st = w->st[ST_REPLAY];
	sqlite3_bind_int64(st, 1, rec->device);
	sqlite3_bind_int64(st, 2, fmt_u64_to_sql(rec->created_ns));
	bind_text(st, 3, rec->policy);
	bind_text(st, 4, rec->backend);
	bind_text(st, 5, rec->params);
	bind_text(st, 6, rec->result_json);
	sqlite3_bind_int64(st, 7, 0);
	sqlite3_bind_blob(st, 8, blob, (int)(rec->series_len * 24), SQLITE_STATIC);
	err = step(w, ST_REPLAY, "cannot save a replay", NULL);
	free(blob);
	if (err == 0)
		*id = sqlite3_last_insert_rowid(w->db);
	return err;
}

void mt_writer_free(struct mt_writer *w)
{
	if (!w)
		return;
	/* everything appended is committed: this writer's part is complete */
	for (size_t i = 0; w->db && w->written == w->appended && i < w->n_marks; i++) {
		char key[64];
		mark_key(w, &w->marks[i], key, sizeof(key));
		bind_text(w->st[ST_META_DELETE], 1, key);
		step(w, ST_META_DELETE, "cannot close", NULL);
	}
	free(w->marks);
	for (int s = 0; s < ST_COUNT; s++)
		sqlite3_finalize(w->st[s]);
	/* The last writer to close, with everything committed, leaves the file
	 * in rollback-journal mode: readers, who open it read-only and cannot
	 * remove a -wal or -shm, then create none beside the trace. While
	 * another connection has it open this fails at once and WAL stays. */
	if (w->db && w->written == w->appended) {
		sqlite3_busy_timeout(w->db, 0);
		sqlite3_exec(w->db, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
	}
	sqlite3_close(w->db);
	for (size_t i = 0; i < w->n_buffers; i++)
		free(w->buffers[i].events);
	free(w->buffers);
	for (size_t i = 0; i < w->cap_interned; i++)
		free(w->interned[i].text);
	free(w->interned);
	free(w->path);
	free(w);
}
