#include "config.h"

/* reader.c — opens a trace read-only and answers everything that needs no
 * event decoding: meta, processes, devices, strings, per-kind statistics
 * from the chunk index and saved replays.
 *
 * Opening (docs/FORMAT.md "Reading"): a WAL database opened read-only needs its
 * -shm file. The reader first opens with SQLITE_OPEN_READONLY (works when
 * the -shm exists or can be created); failing that, read-write without
 * creating (SQLite then rebuilds the -shm from the -wal of a writer that was
 * killed; the reader never writes and never checkpoints on close); failing
 * that (a read-only folder), with immutable=1, which reads the main file
 * only and so misses chunks still in a -wal.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader-private.h"

enum open_mode {
	OPEN_READONLY,
	OPEN_NO_CREATE,
	OPEN_IMMUTABLE,
};

struct mt_reader *mt_reader_new(void)
{
	return calloc(1, sizeof(struct mt_reader));
}

static char *dup_column(sqlite3_stmt *st, int col)
{
	const char *s = (const char *)sqlite3_column_text(st, col);
	return strdup(s ? s : "");
}

/* "file:PATH?immutable=1" with PATH percent-encoded. */
static char *immutable_uri(const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	char *uri = malloc(strlen(path) * 3 + 32), *p = uri;
	if (!uri)
		return NULL;
	p += sprintf(p, "file:");
	for (const unsigned char *s = (const unsigned char *)path; *s; s++) {
		if (*s == '?' || *s == '#' || *s == '%' || *s < 0x21 || *s >= 0x7f) {
			*p++ = '%';
			*p++ = hex[*s >> 4];
			*p++ = hex[*s & 15];
		} else {
			*p++ = (char)*s;
		}
	}
	strcpy(p, "?immutable=1");
	return uri;
}

static int open_db(struct mt_reader *r, enum open_mode mode)
{
	int rc;
	if (mode == OPEN_IMMUTABLE) {
		char *uri = immutable_uri(r->path);
		if (!uri)
			return mt_fail(r->message, FMT_MESSAGE_MAX, -ENOMEM, "out of memory");
		rc = sqlite3_open_v2(uri, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
		free(uri);
	} else {
		int flags = mode == OPEN_READONLY ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
		rc = sqlite3_open_v2(r->path, &r->db, flags, NULL);
	}
	if (rc != SQLITE_OK) {
		int err = mt_fail(r->message, FMT_MESSAGE_MAX, -EIO, "%s: %s", r->path,
		                  r->db ? sqlite3_errmsg(r->db) : sqlite3_errstr(rc));
		sqlite3_close(r->db);
		r->db = NULL;
		return err;
	}
	sqlite3_busy_timeout(r->db, FMT_BUSY_TIMEOUT_MS);
	sqlite3_db_config(r->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	int empty;
	int err = fmt_schema_check(r->db, r->path, &empty, r->message);
	if (err == 0) {
		rc = sqlite3_prepare_v2(r->db, "SELECT blob FROM chunks WHERE id = ?", -1,
		                        &r->blob_stmt, NULL);
		if (rc != SQLITE_OK)
			err = mt_fail(r->message, FMT_MESSAGE_MAX, -EBADMSG,
			              "%s is not a memtrace trace (%s)", r->path,
			              sqlite3_errmsg(r->db));
	}
	if (err < 0) {
		sqlite3_close(r->db);
		r->db = NULL;
	}
	return err;
}

static int load_meta(struct mt_reader *r)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(r->db, "SELECT key, value FROM meta ORDER BY key", -1, &st,
	                            NULL);
	while (fmt_step_row(st, &rc)) {
		char **m = realloc(r->meta, (r->n_meta + 2) * sizeof(*m));
		if (!m) {
			rc = SQLITE_NOMEM;
			break;
		}
		r->meta = m;
		m[r->n_meta] = dup_column(st, 0);
		m[r->n_meta + 1] = dup_column(st, 1);
		r->n_meta += 2;
		if (!m[r->n_meta - 2] || !m[r->n_meta - 1])
			rc = SQLITE_NOMEM;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : fmt_reader_sql_fail(r, rc, "cannot read meta");
}

static int load_processes(struct mt_reader *r)
{
	sqlite3_stmt *st;
	/* a trace written before the capture column says nothing: '' */
	int rc = sqlite3_prepare_v2(r->db,
	                            fmt_schema_has_column(r->db, "processes", "capture")
	                                    ? "SELECT id, parent, pid, start_ns, command_line,"
	                                      " hostname, capture FROM processes ORDER BY id"
	                                    : "SELECT id, parent, pid, start_ns, command_line,"
	                                      " hostname, '' FROM processes ORDER BY id",
	                            -1, &st, NULL);
	while (fmt_step_row(st, &rc)) {
		struct mt_process *p = realloc(r->processes, (r->n_processes + 1) * sizeof(*p));
		if (!p) {
			rc = SQLITE_NOMEM;
			break;
		}
		r->processes = p;
		p += r->n_processes++;
		*p = (struct mt_process){
			.id = (uint32_t)sqlite3_column_int64(st, 0),
			.parent = (uint32_t)sqlite3_column_int64(st, 1),
			.pid = sqlite3_column_int64(st, 2),
			.start_ns = fmt_u64_from_sql(st, 3),
			.command_line = dup_column(st, 4),
			.hostname = dup_column(st, 5),
			.capture = dup_column(st, 6),
		};
		if (!p->command_line || !p->hostname || !p->capture)
			rc = SQLITE_NOMEM;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : fmt_reader_sql_fail(r, rc, "cannot read processes");
}

static int load_devices(struct mt_reader *r)
{
	char sql[256];
	sqlite3_stmt *st;
	int rc;

	/* a trace written before a later column reads its default */
	snprintf(sql, sizeof(sql),
	         "SELECT id, ordinal, total_bytes, name, uuid, driver_version, cuda_version,"
	         " %s, %s FROM devices ORDER BY id",
	         fmt_schema_has_column(r->db, "devices", "pci_bus_id") ? "pci_bus_id" : "''",
	         fmt_schema_has_column(r->db, "devices", "driver_reserved_bytes")
	                 ? "driver_reserved_bytes"
	                 : "0");
	rc = sqlite3_prepare_v2(r->db, sql, -1, &st, NULL);
	while (fmt_step_row(st, &rc)) {
		struct mt_device *d = realloc(r->devices, (r->n_devices + 1) * sizeof(*d));
		if (!d) {
			rc = SQLITE_NOMEM;
			break;
		}
		r->devices = d;
		d += r->n_devices++;
		*d = (struct mt_device){
			.id = (uint32_t)sqlite3_column_int64(st, 0),
			.ordinal = (uint32_t)sqlite3_column_int64(st, 1),
			.total_bytes = fmt_u64_from_sql(st, 2),
			.name = dup_column(st, 3),
			.uuid = dup_column(st, 4),
			.driver_version = dup_column(st, 5),
			.cuda_version = dup_column(st, 6),
			.pci_bus_id = dup_column(st, 7),
			.driver_reserved_bytes = fmt_u64_from_sql(st, 8),
		};
		if (!d->name || !d->uuid || !d->driver_version || !d->cuda_version ||
		    !d->pci_bus_id)
			rc = SQLITE_NOMEM;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : fmt_reader_sql_fail(r, rc, "cannot read devices");
}

/* What writers that did not close left (FORMAT.md "Incomplete traces"):
 * for each key open_writer.N.P, the events of process P are complete only
 * before its time; the smallest time over the keys of P counts. */
static int load_coverage(struct mt_reader *r)
{
	static const char prefix[] = "open_writer.";

	r->earliest_until = MT_TIME_UNKNOWN;
	r->complete_until = malloc((r->n_processes ? r->n_processes : 1) * sizeof(uint64_t));
	if (!r->complete_until)
		return mt_fail(r->message, FMT_MESSAGE_MAX, -ENOMEM, "out of memory");
	for (size_t i = 0; i < r->n_processes; i++)
		r->complete_until[i] = MT_TIME_UNKNOWN;
	for (size_t i = 0; i < r->n_meta; i += 2) {
		const char *key = r->meta[i], *v = r->meta[i + 1];
		unsigned long long n, process, t;
		const struct mt_process *p;
		char *end;
		int used = 0;

		if (strncmp(key, prefix, sizeof(prefix) - 1) != 0)
			continue;
		errno = 0;
		t = strtoull(v, &end, 10);
		if (sscanf(key + sizeof(prefix) - 1, "%llu.%llu%n", &n, &process, &used) != 2 ||
		    key[sizeof(prefix) - 1 + (size_t)used] || errno || end == v || *end ||
		    *v == '-' || t == MT_TIME_UNKNOWN)
			return mt_fail(r->message, FMT_MESSAGE_MAX, -EBADMSG,
			               "%s is corrupt (meta %s = '%s' is not a process's time)",
			               r->path, key, v);
		p = process <= UINT32_MAX
		            ? fmt_find_id(r->processes, r->n_processes, sizeof(*r->processes),
		                          offsetof(struct mt_process, id), (uint32_t)process)
		            : NULL;
		if (!p)
			return mt_fail(r->message, FMT_MESSAGE_MAX, -EBADMSG,
			               "%s is corrupt (meta %s names no process)", r->path, key);
		uint64_t *until = &r->complete_until[p - r->processes];
		*until = t < *until ? t : *until;
		r->earliest_until = t < r->earliest_until ? t : r->earliest_until;
	}
	return 0;
}

int mt_reader_incomplete(struct mt_reader *r, uint64_t *until)
{
	if (!until || fmt_reader_ready(r) < 0)
		return -EINVAL;
	*until = r->earliest_until;
	return r->earliest_until != MT_TIME_UNKNOWN;
}

static void free_tables(struct mt_reader *r)
{
	for (size_t i = 0; i < r->n_meta; i++)
		free(r->meta[i]);
	free(r->meta);
	r->meta = NULL;
	r->n_meta = 0;
	for (size_t i = 0; i < r->n_processes; i++) {
		free((char *)r->processes[i].command_line);
		free((char *)r->processes[i].hostname);
		free((char *)r->processes[i].capture);
	}
	free(r->processes);
	r->processes = NULL;
	r->n_processes = 0;
	for (size_t i = 0; i < r->n_devices; i++) {
		free((char *)r->devices[i].name);
		free((char *)r->devices[i].uuid);
		free((char *)r->devices[i].driver_version);
		free((char *)r->devices[i].cuda_version);
		free((char *)r->devices[i].pci_bus_id);
	}
	free(r->devices);
	r->devices = NULL;
	r->n_devices = 0;
	free(r->complete_until);
	r->complete_until = NULL;
}

int mt_reader_open(struct mt_reader *r, const char *path)
{
	if (!r || !path || r->db)
		return -EINVAL;
	r->message[0] = '\0';
	r->path = strdup(path);
	if (!r->path)
		return -ENOMEM;
	int err = fmt_schema_check_file(path, r->message);
	for (enum open_mode m = OPEN_READONLY; err == 0 && m <= OPEN_IMMUTABLE; m++) {
		err = open_db(r, m);
		if (err == 0 || err == -EBADMSG || err == -ENOTSUP || err == -ENOMEM)
			break;
		if (m < OPEN_IMMUTABLE)
			err = 0;
	}
	if (err == 0)
		err = load_meta(r);
	if (err == 0)
		err = load_processes(r);
	if (err == 0)
		err = load_devices(r);
	if (err == 0)
		err = load_coverage(r);
	if (err == 0)
		err = fmt_index_check(r);
	if (err < 0) {
		free_tables(r);
		sqlite3_finalize(r->blob_stmt);
		r->blob_stmt = NULL;
		sqlite3_close(r->db);
		r->db = NULL;
		free(r->path);
		r->path = NULL;
	}
	return err;
}

const char *mt_reader_message(const struct mt_reader *r)
{
	return r ? r->message : "";
}

static void free_replays(struct mt_reader *r)
{
	for (size_t i = 0; i < r->n_replays; i++) {
		struct mt_replay_record *rec = &r->replays[i];
		free((char *)rec->policy);
		free((char *)rec->backend);
		free((char *)rec->params);
		free((char *)rec->result_json);
		free((void *)rec->series);
	}
	free(r->replays);
	r->replays = NULL;
	r->n_replays = 0;
}

void mt_reader_free(struct mt_reader *r)
{
	if (!r)
		return;
	free_tables(r);
	for (size_t i = 0; i < r->n_strings; i++)
		free(r->strings[i].text);
	free(r->strings);
	free_replays(r);
	sqlite3_finalize(r->blob_stmt);
	sqlite3_close(r->db);
	free(r->path);
	free(r);
}

const char *mt_reader_meta(struct mt_reader *r, const char *key)
{
	for (size_t i = 0; r && key && i < r->n_meta; i += 2)
		if (strcmp(r->meta[i], key) == 0)
			return r->meta[i + 1];
	return NULL;
}

size_t mt_reader_process_count(struct mt_reader *r)
{
	return r ? r->n_processes : 0;
}

const struct mt_process *mt_reader_process(struct mt_reader *r, size_t i)
{
	return r && i < r->n_processes ? &r->processes[i] : NULL;
}

size_t mt_reader_device_count(struct mt_reader *r)
{
	return r ? r->n_devices : 0;
}

const struct mt_device *mt_reader_device(struct mt_reader *r, size_t i)
{
	return r && i < r->n_devices ? &r->devices[i] : NULL;
}

const struct mt_device *mt_reader_device_by_id(struct mt_reader *r, uint32_t id)
{
	return r ? fmt_find_id(r->devices, r->n_devices, sizeof(*r->devices),
	                       offsetof(struct mt_device, id), id)
	         : NULL;
}

static int load_strings(struct mt_reader *r)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int rc = sqlite3_prepare_v2(r->db, "SELECT id, value FROM strings ORDER BY id", -1, &st,
	                            NULL);
	while (fmt_step_row(st, &rc)) {
		if (r->n_strings == cap) {
			cap = cap ? cap * 2 : 256;
			struct string_row *s = realloc(r->strings, cap * sizeof(*s));
			if (!s) {
				rc = SQLITE_NOMEM;
				break;
			}
			r->strings = s;
		}
		struct string_row *row = &r->strings[r->n_strings];
		row->id = (uint32_t)sqlite3_column_int64(st, 0);
		row->text = dup_column(st, 1);
		if (!row->text) {
			rc = SQLITE_NOMEM;
			break;
		}
		r->n_strings++;
	}
	sqlite3_finalize(st);
	r->strings_loaded = 1;
	return rc == SQLITE_DONE ? 0 : fmt_reader_sql_fail(r, rc, "cannot read strings");
}

const char *mt_reader_string(struct mt_reader *r, uint32_t id)
{
	if (!r || !r->db)
		return NULL;
	if (id == 0)
		return "";
	if (!r->strings_loaded && load_strings(r) < 0)
		return NULL;
	const struct string_row *row = fmt_find_id(r->strings, r->n_strings, sizeof(*r->strings),
	                                           offsetof(struct string_row, id), id);
	return row ? row->text : NULL;
}

/* The first and last chunk of a kind: the rows whose times the statistics
 * report, confirmed by decoding them (a chunk cut at the end of a complete
 * span is confirmed when it is cut). */
struct kind_ends {
	struct fmt_chunk_row first, last;
	bool last_confirmed;
};

static struct fmt_chunk_row chunk_row(sqlite3_stmt *st)
{
	return (struct fmt_chunk_row){
		.id = sqlite3_column_int64(st, 5),
		.process = (uint32_t)sqlite3_column_int64(st, 6),
		.device = (uint32_t)sqlite3_column_int64(st, 7),
		.kind = (unsigned)sqlite3_column_int64(st, 0),
		.codec = sqlite3_column_int64(st, 8),
		.first_ts = fmt_u64_from_sql(st, 3),
		.last_ts = fmt_u64_from_sql(st, 4),
		.count = fmt_u64_from_sql(st, 1),
	};
}

/* Adds a chunk's count, bytes and times (those of its events before the
 * covered end: count and last_ts may be less than the row's). */
static void add_chunk(struct mt_kind_stats *s, struct kind_ends *e, const struct fmt_chunk_row *row,
                      uint64_t count, uint64_t last_ts, uint64_t blob_bytes, bool cut)
{
	if (!s->events || row->first_ts < s->first_ts) {
		s->first_ts = row->first_ts;
		e->first = *row;
	}
	if (!s->events || last_ts > s->last_ts) {
		s->last_ts = last_ts;
		e->last = *row;
		e->last_confirmed = cut;
	}
	s->events += count;
	s->chunks++;
	s->blob_bytes += blob_bytes;
}

/* The part of a chunk that straddles the end of its process's complete
 * span: its events before it. */
static int add_cut_chunk(struct mt_reader *r, struct mt_kind_stats *s, struct kind_ends *e,
                         const struct fmt_chunk_row *row, uint64_t blob_bytes,
                         struct mt_event **events, size_t *capacity)
{
	uint64_t until = fmt_complete_until(r, row->process);
	int err = fmt_chunk_load(r, row, events, capacity);
	size_t n = 0;

	if (err < 0)
		return err;
	while (n < row->count && (*events)[n].ts < until)
		n++;
	if (n > 0)
		add_chunk(s, e, row, n, (*events)[n - 1].ts, blob_bytes, true);
	return 0;
}

/* Decodes the chunks that hold each kind's first and last times, so that no
 * time reported rests on a row alone. */
static int confirm_ends(struct mt_reader *r, const struct mt_kind_stats *stats,
                        const struct kind_ends *ends, struct mt_event **events, size_t *capacity)
{
	int err = 0;

	for (unsigned k = 1; !err && k <= MT_EVENT_KIND_MAX; k++) {
		if (!stats[k].events)
			continue;
		err = fmt_chunk_load(r, &ends[k].first, events, capacity);
		if (!err && ends[k].last.id != ends[k].first.id && !ends[k].last_confirmed)
			err = fmt_chunk_load(r, &ends[k].last, events, capacity);
	}
	return err;
}

/* Rows whose chunks straddle the end of their process's complete span. */
struct cut_rows {
	struct fmt_chunk_row *row;
	uint64_t *blob_bytes;
	size_t n, cap;
};

static int push_cut(struct cut_rows *c, const struct fmt_chunk_row *row, uint64_t blob_bytes)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		struct fmt_chunk_row *nr = realloc(c->row, cap * sizeof(*nr));
		if (nr)
			c->row = nr;
		uint64_t *nb = nr ? realloc(c->blob_bytes, cap * sizeof(*nb)) : NULL;
		if (!nb)
			return -ENOMEM;
		c->blob_bytes = nb;
		c->cap = cap;
	}
	c->row[c->n] = *row;
	c->blob_bytes[c->n++] = blob_bytes;
	return 0;
}

/* Sums the index rows the query selects; chunks past the end of their
 * process's complete span are left out, those across it counted up to it. */
static int sum_rows(struct mt_reader *r, sqlite3_stmt *st, struct mt_kind_stats *stats,
                    struct kind_ends *ends, struct cut_rows *cut)
{
	int rc = SQLITE_OK;

	while (fmt_step_row(st, &rc)) {
		struct fmt_chunk_row row = chunk_row(st);
		uint64_t blob_bytes = fmt_u64_from_sql(st, 2);

		if (row.kind < 1 || row.kind > MT_EVENT_KIND_MAX) /* a row added since the open */
			return fmt_chunk_corrupt(r, row.id, "unknown kind");
		uint64_t until = fmt_complete_until(r, row.process);
		bool incomplete = until != MT_TIME_UNKNOWN;

		if (incomplete && row.first_ts >= until)
			continue;
		if (incomplete && row.last_ts >= until) {
			if (push_cut(cut, &row, blob_bytes) < 0)
				return mt_fail(r->message, FMT_MESSAGE_MAX, -ENOMEM,
				               "out of memory");
			continue;
		}
		add_chunk(&stats[row.kind], &ends[row.kind], &row, row.count, row.last_ts,
		          blob_bytes, false);
	}
	return rc == SQLITE_DONE ? 0 : fmt_reader_sql_fail(r, rc, "cannot read the chunk index");
}

int mt_reader_kind_stats(struct mt_reader *r, const struct mt_query *q,
                         struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1])
{
	struct kind_ends ends[MT_EVENT_KIND_MAX + 1];
	struct cut_rows cut = { 0 };
	struct mt_event *events = NULL;
	size_t capacity = 0;
	sqlite3_stmt *st;
	int err;

	if (!stats || fmt_reader_ready(r) < 0)
		return -EINVAL;
	for (unsigned k = 0; k <= MT_EVENT_KIND_MAX; k++)
		stats[k] = (struct mt_kind_stats){ .first_ts = MT_TIME_UNKNOWN };
	int rc = sqlite3_prepare_v2(r->db,
	                            "SELECT kind, count, length(blob), first_ts, last_ts, id,"
	                            " process, device, codec FROM chunks"
	                            " WHERE (?1 = 0 OR device = ?1) AND (?2 = 0 OR process = ?2)",
	                            -1, &st, NULL);
	if (rc != SQLITE_OK)
		return fmt_reader_sql_fail(r, rc, "cannot read the chunk index");
	sqlite3_bind_int64(st, 1, q ? q->device : 0);
	sqlite3_bind_int64(st, 2, q ? q->process : 0);
	err = sum_rows(r, st, stats, ends, &cut);
	sqlite3_finalize(st);
	for (size_t i = 0; !err && i < cut.n; i++)
		err = add_cut_chunk(r, &stats[cut.row[i].kind], &ends[cut.row[i].kind], &cut.row[i],
		                    cut.blob_bytes[i], &events, &capacity);
	if (!err)
		err = confirm_ends(r, stats, ends, &events, &capacity);
	free(cut.row);
	free(cut.blob_bytes);
	free(events);
	return err;
}

/* Decodes a replay's series blob (codec 0: little-endian u64 triples). */
static int load_series(struct mt_reader *r, struct mt_replay_record *rec, int codec,
                       const unsigned char *blob, size_t len)
{
	if (codec != 0 || len % 24 != 0)
		return mt_fail(r->message, FMT_MESSAGE_MAX, -EBADMSG,
		               "%s: replay %lld has a corrupt series", r->path, (long long)rec->id);
	size_t n = len / 24;
	struct mt_series_point *s = malloc((n ? n : 1) * sizeof(*s));
	if (!s)
		return mt_fail(r->message, FMT_MESSAGE_MAX, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		uint64_t v[3] = { 0, 0, 0 };
		for (int k = 0; k < 3; k++)
			for (int b = 0; b < 8; b++)
				v[k] |= (uint64_t)blob[i * 24 + k * 8 + b] << (8 * b);
		s[i] = (struct mt_series_point){ .ts = v[0], .allocated = v[1], .reserved = v[2] };
	}
	rec->series = s;
	rec->series_len = n;
	return 0;
}

static int load_replays(struct mt_reader *r)
{
	sqlite3_stmt *st;
	int err = 0;
	int rc = sqlite3_prepare_v2(r->db,
	                            "SELECT id, device, created_ns, policy, backend, params,"
	                            " result_json, series_codec, series FROM replays ORDER BY id",
	                            -1, &st, NULL);
	while (err == 0 && fmt_step_row(st, &rc)) {
		struct mt_replay_record *rec =
		        realloc(r->replays, (r->n_replays + 1) * sizeof(*rec));
		if (!rec) {
			rc = SQLITE_NOMEM;
			break;
		}
		r->replays = rec;
		rec += r->n_replays++;
		*rec = (struct mt_replay_record){
			.id = sqlite3_column_int64(st, 0),
			.device = (uint32_t)sqlite3_column_int64(st, 1),
			.created_ns = fmt_u64_from_sql(st, 2),
			.policy = dup_column(st, 3),
			.backend = dup_column(st, 4),
			.params = dup_column(st, 5),
			.result_json = dup_column(st, 6),
		};
		if (!rec->policy || !rec->backend || !rec->params || !rec->result_json)
			rc = SQLITE_NOMEM;
		else
			err = load_series(r, rec, sqlite3_column_int(st, 7),
			                  sqlite3_column_blob(st, 8),
			                  (size_t)sqlite3_column_bytes(st, 8));
	}
	sqlite3_finalize(st);
	if (err == 0 && rc != SQLITE_DONE)
		err = fmt_reader_sql_fail(r, rc, "cannot read replays");
	if (err < 0)
		free_replays(r);
	return err;
}

int mt_reader_replays(struct mt_reader *r, const struct mt_replay_record **out, size_t *n)
{
	if (!out || !n || fmt_reader_ready(r) < 0)
		return -EINVAL;
	if (!r->replays_loaded) {
		int err = load_replays(r);
		if (err < 0)
			return err;
		r->replays_loaded = 1;
	}
	*out = r->replays;
	*n = r->n_replays;
	return 0;
}
