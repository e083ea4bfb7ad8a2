/* test-incomplete.c — incomplete traces: a writer with events not yet all
 * committed (still writing, killed, or closed after a failed flush) leaves
 * the trace incomplete up to the smallest ts it has not committed, and
 * readers use only the events before it: iteration, lifetimes and peaks,
 * per-kind statistics (a chunk across the end counted up to it). A writer
 * that closes with everything committed leaves it complete. Times worked
 * out by hand from the events below. */
#include "config.h"

#include <errno.h>

#include <sqlite3.h>

#include "test-events.h"

static char path[256];

static struct mt_writer *new_writer(void)
{
	struct mt_writer *w = mt_writer_new();
	struct mt_process p = { .pid = 1 };
	struct mt_device d = { .uuid = "GPU-i" };
	uint32_t id;

	REQUIRE(mt_writer_open(w, path, MT_WRITER_CREATE) == 0);
	REQUIRE(mt_writer_add_process(w, &p, &id) == 0 && id == 1);
	REQUIRE(mt_writer_add_device(w, &d, &id) == 0 && id == 1);
	mt_writer_set_chunk_events(w, 4);
	return w;
}

static void put_as(struct mt_writer *w, uint32_t process, unsigned kind, uint64_t ts,
                   uint64_t address)
{
	struct mt_event ev = { .kind = (uint8_t)kind, .ts = ts, .process = process, .device = 1 };

	ev.alloc.address = address;
	ev.alloc.bytes = 100;
	ev.alloc.layer = MT_LAYER_REQUEST;
	REQUIRE(mt_writer_append(w, &ev) == 0);
}

static void put(struct mt_writer *w, unsigned kind, uint64_t ts, uint64_t address)
{
	put_as(w, 1, kind, ts, address);
}

/* What a reader opened now sees: the incomplete flag and end, the number
 * of events iterated, alloc statistics and the request-layer peak. */
struct seen {
	int incomplete;
	uint64_t until, events, allocs, alloc_last, peak;
};

static struct seen look(void)
{
	struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
	struct mt_reader *r = mt_reader_new();
	struct seen s = { 0 };
	struct mt_iter *it;
	struct mt_event ev;
	uint64_t at;

	REQUIRE(mt_reader_open(r, path) == 0);
	s.incomplete = mt_reader_incomplete(r, &s.until);
	REQUIRE(mt_reader_iter(r, NULL, &it) == 0);
	while (mt_iter_next(it, &ev) == 1)
		s.events++;
	mt_iter_free(it);
	REQUIRE(mt_reader_kind_stats(r, NULL, st) == 0);
	s.allocs = st[MT_EVENT_ALLOC].events;
	s.alloc_last = st[MT_EVENT_ALLOC].last_ts;
	REQUIRE(mt_reader_peak_live(r, NULL, MT_LAYER_REQUEST, &s.peak, &at) == 0);
	mt_reader_free(r);
	return s;
}

/* Allocs at 10, 20, 30, 40 with frees at 15 and 25 between them: the
 * fourth alloc fills a chunk of 4 (committed) while the frees wait in their
 * buffer, and so does a last alloc at 50: only what is before 15 is sure,
 * one alloc of 100 bytes. A flush commits all: complete up to 51 (the
 * largest ts + 1) while the writer is open; closing makes it complete. */
static void test_writer_open_and_closed(void)
{
	struct mt_writer *w;
	struct seen s;

	remove_trace(path);
	w = new_writer();
	put(w, MT_EVENT_ALLOC, 10, 10);
	put(w, MT_EVENT_FREE, 15, 10);
	put(w, MT_EVENT_ALLOC, 20, 20);
	put(w, MT_EVENT_FREE, 25, 20);
	put(w, MT_EVENT_ALLOC, 30, 30);
	put(w, MT_EVENT_ALLOC, 40, 40);
	put(w, MT_EVENT_ALLOC, 50, 50);
	s = look();
	CHECKF(s.incomplete == 1 && s.until == 15, "incomplete %d until %" PRIu64, s.incomplete,
	       s.until);
	CHECKF(s.events == 1 && s.allocs == 1 && s.alloc_last == 10 && s.peak == 100,
	       "%" PRIu64 " events, %" PRIu64 " allocs to %" PRIu64 ", peak %" PRIu64, s.events,
	       s.allocs, s.alloc_last, s.peak);

	REQUIRE(mt_writer_flush(w) == 0);
	s = look();
	CHECKF(s.incomplete == 1 && s.until == 51, "after a flush: %d until %" PRIu64, s.incomplete,
	       s.until);
	CHECKF(s.events == 7 && s.allocs == 5 && s.peak == 300,
	       "after a flush: %" PRIu64 " events, %" PRIu64 " allocs, peak %" PRIu64, s.events,
	       s.allocs, s.peak);

	mt_writer_free(w);
	s = look();
	CHECKF(s.incomplete == 0 && s.until == MT_TIME_UNKNOWN && s.events == 7,
	       "closed: %d until %" PRIu64 ", %" PRIu64 " events", s.incomplete, s.until, s.events);
}

/* A writer closed after a failed flush lost events: the trace stays
 * incomplete. */
static void test_failed_flush_stays_incomplete(void)
{
	struct mt_writer *w;
	sqlite3 *db;
	struct seen s;

	remove_trace(path);
	w = new_writer();
	put(w, MT_EVENT_ALLOC, 10, 1);
	REQUIRE(mt_writer_flush(w) == 0);
	put(w, MT_EVENT_ALLOC, 20, 2);
	REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
	REQUIRE(sqlite3_exec(db,
	                     "CREATE TRIGGER refuse_insert BEFORE INSERT ON chunks BEGIN"
	                     " SELECT RAISE(ABORT, 'disk full'); END;"
	                     "CREATE TRIGGER refuse_update BEFORE UPDATE ON chunks BEGIN"
	                     " SELECT RAISE(ABORT, 'disk full'); END",
	                     NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK(mt_writer_flush(w) < 0);
	mt_writer_free(w);
	s = look();
	CHECKF(s.incomplete == 1 && s.until == 11 && s.events == 1,
	       "%d until %" PRIu64 ", %" PRIu64 " events", s.incomplete, s.until, s.events);
}

/* Two writers (two processes) of one trace: each process has its own end,
 * the trace is incomplete until both closed. */
static void test_two_writers(void)
{
	struct mt_process p = { .pid = 2 };
	struct mt_writer *a, *b;
	struct seen s;
	uint32_t second;

	remove_trace(path);
	a = new_writer();
	b = mt_writer_new();
	REQUIRE(mt_writer_open(b, path, 0) == 0);
	REQUIRE(mt_writer_add_process(b, &p, &second) == 0);
	put(a, MT_EVENT_ALLOC, 100, 1);
	put_as(b, second, MT_EVENT_ALLOC, 200, 2);
	REQUIRE(mt_writer_flush(b) == 0);
	s = look();
	CHECKF(s.incomplete == 1 && s.until == 100 && s.events == 1,
	       "%d until %" PRIu64 ", %" PRIu64 " events", s.incomplete, s.until, s.events);
	REQUIRE(mt_writer_flush(a) == 0);
	s = look();
	/* b's process is complete up to 201: its event at 200 counts */
	CHECKF(s.incomplete == 1 && s.until == 101 && s.events == 2,
	       "%d until %" PRIu64 ", %" PRIu64 " events", s.incomplete, s.until, s.events);
	mt_writer_free(a);
	s = look();
	CHECKF(s.incomplete == 1 && s.until == 201 && s.events == 2,
	       "%d until %" PRIu64 ", %" PRIu64 " events", s.incomplete, s.until, s.events);
	mt_writer_free(b);
	s = look();
	CHECK(s.incomplete == 0 && s.events == 2);
}

/* A writer that appends nothing (a replay saving its results) leaves no
 * mark; a mark that is not a time, or names no process, is corrupt. */
static void test_marks(void)
{
	struct mt_reader *r = mt_reader_new();
	struct mt_writer *w;
	sqlite3 *db;
	uint64_t until;

	remove_trace(path);
	w = new_writer();
	mt_writer_free(w);
	REQUIRE(mt_reader_open(r, path) == 0);
	CHECK(mt_reader_incomplete(r, &until) == 0 && mt_reader_meta(r, "writers") == NULL);
	mt_reader_free(r);

	REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
	REQUIRE(sqlite3_exec(db,
	                     "INSERT INTO meta VALUES ('open_writer.7.1', 'soon');"
	                     "INSERT INTO meta VALUES ('open_writer.8.5', '10')",
	                     NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	r = mt_reader_new();
	CHECK(mt_reader_open(r, path) == -EBADMSG);
	CHECKF(strstr(mt_reader_message(r), "meta open_writer.7.1 = 'soon' is not") != NULL, "'%s'",
	       mt_reader_message(r));
	mt_reader_free(r);
	REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
	REQUIRE(sqlite3_exec(db, "DELETE FROM meta WHERE key = 'open_writer.7.1'", NULL, NULL,
	                     NULL) == SQLITE_OK);
	sqlite3_close(db);
	r = mt_reader_new();
	CHECK(mt_reader_open(r, path) == -EBADMSG);
	CHECKF(strstr(mt_reader_message(r), "meta open_writer.8.5 names no process") != NULL,
	       "'%s'", mt_reader_message(r));
	mt_reader_free(r);
}

int main(void)
{
	temp_trace(path, sizeof(path), "incomplete");
	TEST(test_writer_open_and_closed);
	TEST(test_failed_flush_stays_incomplete);
	TEST(test_two_writers);
	TEST(test_marks);
	remove_trace(path);
	return check_done();
}
