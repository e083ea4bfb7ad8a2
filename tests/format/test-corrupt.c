/* test-corrupt.c — bad files at the API level: missing (-ENOENT), empty,
 * not a database, cut short, a schema without memtrace's tables (-EBADMSG),
 * a newer format version (-ENOTSUP, for the reader and the writer), chunks
 * with flipped bytes, a wrong count or an unknown codec (-EBADMSG naming
 * the chunk), index rows their chunks do not confirm, and random damage
 * anywhere in the file: never a crash. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "test-events.h"

static char good[256], bad[256];

static void write_good(void)
{
	struct mt_writer *w = mt_writer_new();
	REQUIRE(mt_writer_open(w, good, MT_WRITER_CREATE) == 0);
	uint32_t p, d;
	struct mt_process proc = { .pid = 1 };
	struct mt_device dev = { .uuid = "GPU-c" };
	REQUIRE(mt_writer_add_process(w, &proc, &p) == 0 && mt_writer_add_device(w, &dev, &d) == 0);
	mt_writer_set_chunk_events(w, 500);
	uint64_t s = 3;
	for (uint64_t i = 0; i < 3000; i++) {
		struct mt_event ev = { .kind = (uint8_t)(i % 3 ? MT_EVENT_ALLOC : MT_EVENT_KERNEL),
			               .ts = 100 * i,
			               .process = p,
			               .device = d };
		random_payload(&ev, &s);
		REQUIRE(mt_writer_append(w, &ev) == 0);
	}
	REQUIRE(mt_writer_flush(w) == 0);
	mt_writer_free(w);
}

static void write_file(const char *path, const void *data, size_t len)
{
	remove_trace(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

static unsigned char *read_file(const char *path, size_t *len)
{
	struct stat st;
	REQUIRE(stat(path, &st) == 0);
	unsigned char *buf = malloc((size_t)st.st_size + 1);
	int fd = open(path, O_RDONLY);
	REQUIRE(fd >= 0 && buf);
	REQUIRE(read(fd, buf, (size_t)st.st_size) == st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* Opens path; returns the errno and checks the message mentions `words`. */
static int open_fails(const char *path, const char *words)
{
	struct mt_reader *r = mt_reader_new();
	int rc = mt_reader_open(r, path);
	if (words) {
		CHECKF(strstr(mt_reader_message(r), words) != NULL, "message '%s' lacks '%s'",
		       mt_reader_message(r), words);
		CHECK(strstr(mt_reader_message(r), path) != NULL);
		CHECK(strchr(mt_reader_message(r), '\n') == NULL);
	}
	mt_reader_free(r);
	return rc;
}

/* Opens and reads every event and the lifetimes; returns the first error. */
static int read_everything(const char *path, char *message, size_t len)
{
	struct mt_reader *r = mt_reader_new();
	int rc = mt_reader_open(r, path);
	if (rc == 0) {
		struct mt_iter *it;
		struct mt_event ev;
		rc = mt_reader_iter(r, NULL, &it);
		while (rc == 0 && (rc = mt_iter_next(it, &ev)) == 1)
			rc = 0;
		mt_iter_free(it);
	}
	if (rc == 0) {
		struct mt_lifetime *l = NULL;
		size_t n;
		rc = mt_reader_lifetimes(r, NULL, MT_LAYER_DRIVER, &l, &n);
		free(l);
	}
	snprintf(message, len, "%s", mt_reader_message(r));
	mt_reader_free(r);
	return rc;
}

static void sql(const char *path, const char *statement)
{
	sqlite3 *db;
	REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
	REQUIRE(sqlite3_exec(db, statement, NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
}

/* Copies the good trace to bad. */
static void copy_good(void)
{
	size_t len;
	unsigned char *data = read_file(good, &len);
	write_file(bad, data, len);
	free(data);
}

static void test_chunk_damage(void)
{
	char msg[600], sqltext[300];
	/* A byte flipped in the middle of chunk 2's blob. */
	copy_good();
	sqlite3 *db;
	REQUIRE(sqlite3_open(bad, &db) == SQLITE_OK);
	sqlite3_stmt *st;
	REQUIRE(sqlite3_prepare_v2(db, "SELECT blob FROM chunks WHERE id = 2", -1, &st, NULL) == 0);
	REQUIRE(sqlite3_step(st) == SQLITE_ROW);
	size_t len = (size_t)sqlite3_column_bytes(st, 0);
	unsigned char *blob = malloc(len);
	REQUIRE(blob);
	memcpy(blob, sqlite3_column_blob(st, 0), len);
	sqlite3_finalize(st);
	for (size_t at = 0; at < len; at += len / 7 + 1) {
		blob[at] ^= 0x10;
		REQUIRE(sqlite3_prepare_v2(db, "UPDATE chunks SET blob = ? WHERE id = 2", -1, &st,
		                           NULL) == 0);
		sqlite3_bind_blob(st, 1, blob, (int)len, SQLITE_STATIC);
		REQUIRE(sqlite3_step(st) == SQLITE_DONE);
		sqlite3_finalize(st);
		blob[at] ^= 0x10;
		sqlite3_close(db);
		CHECKF(read_everything(bad, msg, sizeof(msg)) == -EBADMSG &&
		               strstr(msg, "chunk 2 "),
		       "byte %zu of chunk 2 flipped: '%s'", at, msg);
		REQUIRE(sqlite3_open(bad, &db) == SQLITE_OK);
	}
	sqlite3_close(db);
	free(blob);

	static const char *const edits[] = {
		"UPDATE chunks SET count = count + 1 WHERE id = 3",
		"UPDATE chunks SET codec = 9 WHERE id = 3",
		"UPDATE chunks SET blob = x'0102' WHERE id = 3",
		"UPDATE chunks SET blob = substr(blob, 1, length(blob) - 3) WHERE id = 3",
		"UPDATE chunks SET first_ts = first_ts + 1 WHERE id = 3",
		"UPDATE chunks SET kind = 4 WHERE id = 3",
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		copy_good();
		snprintf(sqltext, sizeof(sqltext), "%s", edits[i]);
		sql(bad, sqltext);
		int rc = read_everything(bad, msg, sizeof(msg));
		CHECKF(rc == -EBADMSG && strstr(msg, "chunk 3 ") != NULL, "%s: rc %d, '%s'",
		       edits[i], rc, msg);
	}
}

static void test_random_damage(void)
{
	size_t len;
	unsigned char *data = read_file(good, &len);
	uint64_t s = 11;
	char msg[600];
	for (int round = 0; round < 60; round++) {
		unsigned char *copy = malloc(len);
		REQUIRE(copy);
		memcpy(copy, data, len);
		for (int k = 0; k < 1 + round % 8; k++)
			copy[mt_splitmix64(&s) % len] ^=
			        (unsigned char)(1 + mt_splitmix64(&s) % 255);
		write_file(bad, copy, len);
		int rc = read_everything(bad, msg, sizeof(msg));
		CHECKF(rc == 0 || rc == -EBADMSG || rc == -EIO || rc == -ENOTSUP, "round %d: rc %d",
		       round, rc);
		if (rc < 0)
			CHECKF(msg[0] != '\0' && !strchr(msg, '\n'), "round %d: message '%s'",
			       round, msg);
		free(copy);
	}
	free(data);
}

/* Opens bad after an edit of good's chunk index; checks the open fails
 * with a message naming chunk `id` and saying `why`. */
static void index_refused(const char *edit, int64_t id, const char *why)
{
	char want[64];
	struct mt_reader *r = mt_reader_new();
	int rc;

	copy_good();
	sql(bad, edit);
	rc = mt_reader_open(r, bad);
	snprintf(want, sizeof(want), "chunk %lld is corrupt (", (long long)id);
	CHECKF(rc == -EBADMSG && strstr(mt_reader_message(r), want) &&
	               strstr(mt_reader_message(r), why),
	       "%s: rc %d, '%s'", edit, rc, mt_reader_message(r));
	mt_reader_free(r);
}

/* A row the chunk does not confirm is corrupt when the trace is opened:
 * an unknown kind or codec, an impossible count or span, a process or
 * device that is no row, a copy of another row (it would count its events
 * twice). */
static void test_index_rows(void)
{
	index_refused("UPDATE chunks SET kind = 42 WHERE id = 3", 3, "unknown kind 42");
	index_refused("UPDATE chunks SET kind = 0 WHERE id = 4", 4, "unknown kind 0");
	index_refused("UPDATE chunks SET codec = 9 WHERE id = 3", 3, "unknown codec 9");
	index_refused("UPDATE chunks SET count = 0 WHERE id = 2", 2, "a count of 0 events");
	index_refused("UPDATE chunks SET count = 2000000 WHERE id = 2", 2, "2000000 events");
	index_refused("UPDATE chunks SET first_ts = last_ts + 1 WHERE id = 5", 5,
	              "first_ts after last_ts");
	index_refused("UPDATE chunks SET process = 77 WHERE id = 3", 3,
	              "its process 77 is not in the processes table");
	index_refused("UPDATE chunks SET device = 0 WHERE id = 6", 6,
	              "its device 0 is not in the devices table");
	index_refused("INSERT INTO chunks (process, device, kind, first_ts, last_ts, first_seq,"
	              " count, codec, raw_bytes, layers, blob) SELECT process, device, kind,"
	              " first_ts, last_ts, first_seq, count, codec, raw_bytes, layers, blob"
	              " FROM chunks WHERE id = 2",
	              7, "a copy of chunk 2");
}

/* Times a row claims beyond its events (a last_ts near 2^64, a first_ts
 * of 0) are corrupt for the per-kind statistics too, which read the index
 * only: they decode the chunks that hold each kind's first and last time. */
static void test_index_times(void)
{
	static const char *const edits[] = {
		"UPDATE chunks SET last_ts = -5 WHERE id = 3", /* 2^64 - 5 */
		"UPDATE chunks SET first_ts = 0 WHERE id = 4",
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
		struct mt_reader *r = mt_reader_new();
		int rc;

		copy_good();
		sql(bad, edits[i]);
		rc = mt_reader_open(r, bad);
		REQUIRE(rc == 0);
		rc = mt_reader_kind_stats(r, NULL, stats);
		CHECKF(rc == -EBADMSG &&
		               strstr(mt_reader_message(r), "is corrupt (timestamps differ"),
		       "%s: rc %d, '%s'", edits[i], rc, mt_reader_message(r));
		mt_reader_free(r);
	}
}

/* Missing, empty and non-database files; the writer refuses a file that
 * is not a trace and leaves it alone. */
static void test_not_a_trace(void)
{
	remove_trace(bad);
	CHECK(open_fails(bad, "No such file") == -ENOENT);
	write_file(bad, "", 0);
	CHECK(open_fails(bad, "not a memtrace trace (empty file)") == -EBADMSG);
	const char text[] = "alloc,free\n1,2\n";
	write_file(bad, text, sizeof(text));
	CHECK(open_fails(bad, "not a memtrace trace (not an SQLite database)") == -EBADMSG);
	struct mt_writer *w = mt_writer_new();
	CHECK(mt_writer_open(w, bad, MT_WRITER_CREATE) == -EBADMSG);
	CHECK(strstr(mt_writer_message(w), "not a memtrace trace") != NULL);
	mt_writer_free(w);
	size_t len;
	unsigned char *after = read_file(bad, &len);
	CHECK(len == sizeof(text) && memcmp(after, text, len) == 0);
	free(after);
}

/* Cut short: at half, and inside the header. */
static void test_cut_short(void)
{
	size_t len;
	unsigned char *data = read_file(good, &len);
	write_file(bad, data, len / 2);
	CHECK(open_fails(bad, "not a memtrace trace") == -EBADMSG);
	write_file(bad, data, 50);
	CHECK(open_fails(bad, "not a memtrace trace") == -EBADMSG);
	free(data);
}

static void test_other_database(void)
{
	remove_trace(bad);
	sql(bad, "CREATE TABLE meta (key TEXT, value TEXT);"
	         "INSERT INTO meta VALUES ('format_version', '1')");
	CHECK(open_fails(bad, "not a memtrace trace (no processes table)") == -EBADMSG);
	remove_trace(bad);
	sql(bad, "CREATE TABLE t (x)");
	CHECK(open_fails(bad, "not a memtrace trace") == -EBADMSG);
}

static void test_newer_version(void)
{
	copy_good();
	sql(bad, "UPDATE meta SET value = '2' WHERE key = 'format_version'");
	CHECK(open_fails(bad, "written by format version 2; this memtrace reads up to 1") ==
	      -ENOTSUP);
	struct mt_writer *w = mt_writer_new();
	CHECK(mt_writer_open(w, bad, 0) == -ENOTSUP);
	mt_writer_free(w);
	copy_good();
	sql(bad, "UPDATE meta SET value = 'one' WHERE key = 'format_version'");
	CHECK(open_fails(bad, "format_version") == -EBADMSG);
}

int main(void)
{
	char msg[600];

	temp_trace(good, sizeof(good), "good");
	temp_trace(bad, sizeof(bad), "bad");
	remove_trace(good);
	write_good();
	REQUIRE(read_everything(good, msg, sizeof(msg)) == 0);

	TEST(test_not_a_trace);
	TEST(test_cut_short);
	TEST(test_other_database);
	TEST(test_newer_version);
	TEST(test_chunk_damage);
	TEST(test_index_rows);
	TEST(test_index_times);
	TEST(test_random_damage);
	remove_trace(good);
	remove_trace(bad);
	return check_done();
}
