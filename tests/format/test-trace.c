/* test-trace.c — writer to reader round trip: meta, processes, devices
 * (deduplicated by uuid), interned strings, events of every kind from
 * several processes and devices in many small chunks, read back in the
 * (ts, process, seq) order with kind, device, process and time-window
 * selections; per-kind statistics; saved replays. */
#include "config.h"

#include <errno.h>

#include <sqlite3.h>

#include "test-events.h"

#define N_EVENTS 20000

struct expected {
	struct mt_event *e;
	size_t n;
};

static char trace[256];
static struct expected written; /* every event, in (ts, process, seq) order */
static uint32_t proc_ids[2], dev_ids[2];
static struct mt_reader *reader;

static int order_cmp(const void *a, const void *b)
{
	const struct mt_event *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->process != y->process)
		return x->process < y->process ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int selected(const struct mt_query *q, const struct mt_event *e)
{
	return (!q->kinds || (q->kinds & MT_KIND_BIT(e->kind))) &&
	       (!q->device || q->device == e->device) &&
	       (!q->process || q->process == e->process) && e->ts >= q->from &&
	       (!q->to || e->ts < q->to);
}

/* Walks the query and compares with the sorted expected events. */
static void check_query(struct mt_reader *r, const struct expected *all, const struct mt_query *q)
{
	struct mt_iter *it;
	REQUIRE(mt_reader_iter(r, q, &it) == 0);
	struct mt_event ev;
	size_t i = 0;
	int rc;
	while ((rc = mt_iter_next(it, &ev)) == 1) {
		while (i < all->n && !selected(q, &all->e[i]))
			i++;
		CHECKF(i < all->n && events_equal(&all->e[i], &ev),
		       "query kinds %#x device %u process %u [%" PRIu64 ", %" PRIu64
		       "): event %zu differs",
		       q->kinds, q->device, q->process, q->from, q->to, i);
		if (check_failed())
			break;
		i++;
	}
	CHECK(rc == 0 || check_failed());
	while (i < all->n && !selected(q, &all->e[i]))
		i++;
	CHECK(i == all->n);
	mt_iter_free(it);
}

static void write_trace(const char *path, struct expected *all, uint32_t *procs, uint32_t *devs)
{
	struct mt_writer *w = mt_writer_new();
	REQUIRE(w);
	REQUIRE(mt_writer_open(w, path, 0) == -ENOENT);
	REQUIRE(*mt_writer_message(w) != '\0');
	REQUIRE(mt_writer_open(w, path, MT_WRITER_CREATE) == 0);
	REQUIRE(strcmp(mt_writer_message(w), "") == 0);
	REQUIRE(mt_writer_set_meta(w, "command_line", "python train.py") == 0);
	REQUIRE(mt_writer_set_meta(w, "capture", "as-is") == 0);
	REQUIRE(mt_writer_set_meta(w, "capture", "requests") == 0);

	struct mt_process p = {
		.pid = 100, .start_ns = 5, .command_line = "python train.py", .hostname = "node1"
	};
	REQUIRE(mt_writer_add_process(w, &p, &procs[0]) == 0);
	p.pid = 101;
	p.parent = procs[0];
	p.hostname = NULL; /* stored as "" */
	REQUIRE(mt_writer_add_process(w, &p, &procs[1]) == 0);
	REQUIRE(procs[0] > 0 && procs[1] > 0 && procs[0] != procs[1]);

	struct mt_device d = { .ordinal = 0,
		               .total_bytes = 80ull << 30,
		               .name = "H100",
		               .uuid = "GPU-aaaa",
		               .driver_version = "580",
		               .cuda_version = "13.0" };
	REQUIRE(mt_writer_add_device(w, &d, &devs[0]) == 0);
	d.uuid = "GPU-bbbb";
	d.ordinal = 1;
	REQUIRE(mt_writer_add_device(w, &d, &devs[1]) == 0);
	uint32_t again;
	d.uuid = "GPU-aaaa";
	REQUIRE(mt_writer_add_device(w, &d, &again) == 0);
	REQUIRE(again == devs[0] && devs[0] != devs[1]);

	uint32_t s1, s2, s3;
	REQUIRE(mt_writer_intern(w, "sgemm_kernel", &s1) == 0);
	REQUIRE(mt_writer_intern(w, "forward", &s2) == 0);
	REQUIRE(mt_writer_intern(w, "sgemm_kernel", &s3) == 0);
	REQUIRE(s1 > 0 && s2 > 0 && s1 != s2 && s1 == s3);
	/* Enough strings to make the cache grow. */
	for (int i = 0; i < 600; i++) {
		char name[32];
		snprintf(name, sizeof(name), "frame_%d", i);
		REQUIRE(mt_writer_intern(w, name, &s3) == 0);
	}
	REQUIRE(mt_writer_intern(w, "forward", &s3) == 0 && s3 == s2);

	mt_writer_set_chunk_events(w, 97);
	uint64_t s = 7, ts[2] = { 1000, 1000 };
	all->e = calloc(N_EVENTS, sizeof(*all->e));
	REQUIRE(all->e);
	for (size_t i = 0; i < N_EVENTS; i++) {
		struct mt_event *e = &all->e[i];
		int pi = (int)(mt_splitmix64(&s) % 2);
		e->kind = (uint8_t)(1 + mt_splitmix64(&s) % MT_EVENT_KIND_MAX);
		e->process = procs[pi];
		e->device = devs[mt_splitmix64(&s) % 2];
		ts[pi] += mt_splitmix64(&s) % 4 == 0 ? 0 : mt_splitmix64(&s) % 50;
		/* CUPTI delivers out of order now and then. */
		e->ts = mt_splitmix64(&s) % 10 == 0 && ts[pi] > 300
		                ? ts[pi] - mt_splitmix64(&s) % 300
		                : ts[pi];
		random_payload(e, &s);
		e->seq = 12345; /* ignored: the writer assigns it */
		REQUIRE(mt_writer_append(w, e) == 0);
		e->seq = i;
	}
	all->n = N_EVENTS;
	REQUIRE(mt_writer_events_appended(w) == N_EVENTS);
	REQUIRE(mt_writer_events_written(w) < N_EVENTS);
	REQUIRE(mt_writer_flush(w) == 0);
	REQUIRE(mt_writer_events_written(w) == N_EVENTS);

	struct mt_series_point series[3] = { { 10, 100, 200 },
		                             { 20, 150, 200 },
		                             { 30, UINT64_MAX, UINT64_MAX - 1 } };
	struct mt_replay_record rec = { .device = devs[0],
		                        .created_ns = 99,
		                        .policy = "bestfit",
		                        .backend = "sim",
		                        .params = "",
		                        .result_json = "{\"a\":1}",
		                        .series = series,
		                        .series_len = 3 };
	int64_t id1, id2;
	REQUIRE(mt_writer_save_replay(w, &rec, &id1) == 0);
	rec.policy = "caching";
	rec.series_len = 0;
	rec.series = NULL;
	REQUIRE(mt_writer_save_replay(w, &rec, &id2) == 0);
	REQUIRE(id2 > id1);
	mt_writer_free(w);
	qsort(all->e, all->n, sizeof(*all->e), order_cmp);
}

static void check_stats(struct mt_reader *r, const struct expected *all, uint32_t device)
{
	struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { .device = device, .kinds = 1 /* ignored */, .from = 5000 };
	CHECK(mt_reader_kind_stats(r, &q, st) == 0);
	for (unsigned k = 1; k <= MT_EVENT_KIND_MAX; k++) {
		uint64_t n = 0, first = MT_TIME_UNKNOWN, last = 0;
		for (size_t i = 0; i < all->n; i++) {
			const struct mt_event *e = &all->e[i];
			if (e->kind != k || (device && e->device != device))
				continue;
			n++;
			first = e->ts < first ? e->ts : first;
			last = e->ts > last ? e->ts : last;
		}
		CHECK(st[k].events == n);
		CHECK(st[k].first_ts == first && st[k].last_ts == last);
		CHECK(st[k].chunks > 0 && st[k].blob_bytes > 0);
	}
	CHECK(st[0].events == 0 && st[0].first_ts == MT_TIME_UNKNOWN);
}

static void sql(const char *path, const char *statement)
{
	sqlite3 *db;
	REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
	REQUIRE(sqlite3_exec(db, statement, NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
}

/* Rows of the chunks table as "count,count,..." in id order, and the
 * first row's id. */
static void chunk_rows(const char *path, char *out, size_t len, int64_t *first_id)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
	REQUIRE(sqlite3_prepare_v2(db, "SELECT id, count FROM chunks ORDER BY id", -1, &st, NULL) ==
	        SQLITE_OK);
	out[0] = '\0';
	*first_id = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (!*first_id)
			*first_id = sqlite3_column_int64(st, 0);
		snprintf(out + strlen(out), len - strlen(out), "%s%lld", out[0] ? "," : "",
		         (long long)sqlite3_column_int64(st, 1));
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* A writer on a new trace at `trace` with process 1 and device 1, which
 * the sample events below name. */
static struct mt_writer *new_trace(void)
{
	struct mt_writer *w = mt_writer_new();
	struct mt_process p = { .pid = 1 };
	struct mt_device d = { .uuid = "GPU-1" };
	uint32_t id;

	REQUIRE(mt_writer_open(w, trace, MT_WRITER_CREATE) == 0);
	REQUIRE(mt_writer_add_process(w, &p, &id) == 0 && id == 1);
	REQUIRE(mt_writer_add_device(w, &d, &id) == 0 && id == 1);
	return w;
}

static void append_samples(struct mt_writer *w, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++) {
		struct mt_event ev = {
			.kind = MT_EVENT_SAMPLE, .ts = i, .process = 1, .device = 1
		};
		ev.sample.used_bytes = i;
		REQUIRE(mt_writer_append(w, &ev) == 0);
	}
}

/* Events read back, checking that they are 0, 1, 2, ... in order. */
static uint64_t read_samples(const char *path)
{
	struct mt_reader *r = mt_reader_new();
	struct mt_iter *it;
	struct mt_event ev;
	uint64_t n = 0;
	REQUIRE(mt_reader_open(r, path) == 0);
	REQUIRE(mt_reader_iter(r, NULL, &it) == 0);
	while (mt_iter_next(it, &ev) == 1) {
		CHECKF(ev.sample.used_bytes == n, "sample %" PRIu64 " reads %" PRIu64, n,
		       ev.sample.used_bytes);
		n++;
	}
	mt_iter_free(it);
	mt_reader_free(r);
	return n;
}

/* Flushes commit every event, yet a chunk keeps growing in its row: with a
 * chunk size of 40, 4 events, flush, 4 more, flush give one row of 8 with
 * the same id. A failed replacement keeps both the old row and the buffer.
 * A flush that finds a quarter of the chunk size (10) closes the chunk, so
 * the events after it open a new row; an append that reaches the chunk size
 * closes that one. */
static void test_open_chunk_grows(void)
{
	char rows[64];
	int64_t id, id_before;
	remove_trace(trace);
	struct mt_writer *w = new_trace();
	mt_writer_set_chunk_events(w, 40);
	append_samples(w, 0, 4);
	CHECK(mt_writer_flush(w) == 0);
	chunk_rows(trace, rows, sizeof(rows), &id_before);
	CHECK(strcmp(rows, "4") == 0 && read_samples(trace) == 4);
	append_samples(w, 4, 8);
	CHECK(mt_writer_flush(w) == 0);
	chunk_rows(trace, rows, sizeof(rows), &id);
	CHECK(strcmp(rows, "8") == 0 && id == id_before && read_samples(trace) == 8);
	CHECK(mt_writer_flush(w) == 0); /* nothing new: no change */
	chunk_rows(trace, rows, sizeof(rows), &id);
	CHECK(strcmp(rows, "8") == 0);
	append_samples(w, 8, 9);
	sql(trace, "CREATE TRIGGER refuse BEFORE UPDATE ON chunks BEGIN"
	           " SELECT RAISE(ABORT, 'disk full'); END");
	CHECK(mt_writer_flush(w) < 0);
	chunk_rows(trace, rows, sizeof(rows), &id);
	CHECK(strcmp(rows, "8") == 0 && read_samples(trace) == 8);
	CHECK(mt_writer_events_written(w) == 8);
	sql(trace, "DROP TRIGGER refuse");
	append_samples(w, 9, 12);
	CHECK(mt_writer_flush(w) == 0);
	chunk_rows(trace, rows, sizeof(rows), &id);
	CHECK(strcmp(rows, "12") == 0 && id == id_before && read_samples(trace) == 12);
	append_samples(w, 12, 15);
	CHECK(mt_writer_flush(w) == 0); /* the closed chunk stays; a new row */
	chunk_rows(trace, rows, sizeof(rows), &id);
	CHECK(strcmp(rows, "12,3") == 0 && read_samples(trace) == 15);
	append_samples(w, 15, 60);
	chunk_rows(trace, rows, sizeof(rows), &id); /* 40 since the close: full */
	CHECK(strcmp(rows, "12,40") == 0);
	CHECK(mt_writer_flush(w) == 0);
	chunk_rows(trace, rows, sizeof(rows), &id);
	CHECK(strcmp(rows, "12,40,8") == 0 && read_samples(trace) == 60);
	CHECK(mt_writer_events_written(w) == 60);
	mt_writer_free(w);
	remove_trace(trace);
}

/* A flush that fails (a trigger refuses new chunks, as a full disk would)
 * keeps the events; the next flush writes them. */
static void test_failed_flush(void)
{
	remove_trace(trace);
	struct mt_writer *w = new_trace();
	for (uint64_t i = 0; i < 10; i++) {
		struct mt_event ev = {
			.kind = MT_EVENT_SAMPLE, .ts = i, .process = 1, .device = 1
		};
		ev.sample.used_bytes = i;
		REQUIRE(mt_writer_append(w, &ev) == 0);
	}
	sql(trace, "CREATE TRIGGER refuse BEFORE INSERT ON chunks BEGIN"
	           " SELECT RAISE(ABORT, 'disk full'); END");
	CHECK(mt_writer_flush(w) < 0);
	CHECK(strstr(mt_writer_message(w), "disk full") != NULL);
	CHECK(mt_writer_events_written(w) == 0 && mt_writer_events_appended(w) == 10);
	sql(trace, "DROP TRIGGER refuse");
	CHECK(mt_writer_flush(w) == 0);
	CHECK(mt_writer_events_written(w) == 10);
	CHECK(strcmp(mt_writer_message(w), "") == 0);
	mt_writer_free(w);

	struct mt_reader *r = mt_reader_new();
	REQUIRE(mt_reader_open(r, trace) == 0);
	struct mt_iter *it;
	REQUIRE(mt_reader_iter(r, NULL, &it) == 0);
	struct mt_event ev;
	uint64_t n = 0;
	while (mt_iter_next(it, &ev) == 1) {
		CHECK(ev.sample.used_bytes == n && ev.seq == n);
		n++;
	}
	CHECK(n == 10);
	mt_iter_free(it);
	mt_reader_free(r);
	remove_trace(trace);
}

static void test_tables(void)
{
	CHECK(strcmp(mt_reader_message(reader), "") == 0);
	CHECK(strcmp(mt_reader_meta(reader, "format_version"), "1") == 0);
	CHECK(strcmp(mt_reader_meta(reader, "capture"), "requests") == 0);
	CHECK(strcmp(mt_reader_meta(reader, "command_line"), "python train.py") == 0);
	CHECK(mt_reader_meta(reader, "nonexistent") == NULL);
	REQUIRE(mt_reader_process_count(reader) == 2);
	CHECK(mt_reader_process(reader, 0)->id == proc_ids[0] &&
	      mt_reader_process(reader, 1)->pid == 101);
	CHECK(mt_reader_process(reader, 1)->parent == proc_ids[0]);
	CHECK(strcmp(mt_reader_process(reader, 0)->hostname, "node1") == 0);
	CHECK(strcmp(mt_reader_process(reader, 1)->hostname, "") == 0);
	CHECK(mt_reader_process(reader, 2) == NULL);
	REQUIRE(mt_reader_device_count(reader) == 2);
	CHECK(strcmp(mt_reader_device_by_id(reader, dev_ids[1])->uuid, "GPU-bbbb") == 0);
	CHECK(mt_reader_device_by_id(reader, dev_ids[0])->total_bytes == 80ull << 30);
	CHECK(mt_reader_device_by_id(reader, 999) == NULL);
	CHECK(strcmp(mt_reader_string(reader, 0), "") == 0);
	CHECK(strcmp(mt_reader_string(reader, 1), "sgemm_kernel") == 0);
	CHECK(strcmp(mt_reader_string(reader, 2), "forward") == 0);
	CHECK(mt_reader_string(reader, 100000) == NULL);
}

static void test_queries(void)
{
	struct mt_query q = { 0 };
	check_query(reader, &written, &q);
	uint64_t s = 99;
	for (int i = 0; i < 40; i++) {
		q = (struct mt_query){ 0 };
		if (i % 2)
			q.kinds = (uint32_t)mt_splitmix64(&s) & 0x3fe;
		if (i % 3 == 0)
			q.device = dev_ids[mt_splitmix64(&s) % 2];
		if (i % 5 == 0)
			q.process = proc_ids[mt_splitmix64(&s) % 2];
		if (i % 4 != 3) {
			uint64_t span = written.e[written.n - 1].ts;
			q.from = mt_splitmix64(&s) % span;
			q.to = i % 4 == 2 ? 0 : q.from + mt_splitmix64(&s) % (span / 4) + 1;
		}
		check_query(reader, &written, &q);
	}
	/* An empty window and one past the end. */
	q = (struct mt_query){ .from = 5000, .to = 5000 };
	check_query(reader, &written, &q);
	q = (struct mt_query){ .from = UINT64_MAX - 1 };
	check_query(reader, &written, &q);
}

static void test_stats(void)
{
	check_stats(reader, &written, 0);
	check_stats(reader, &written, dev_ids[1]);
}

static void test_replays(void)
{
	const struct mt_replay_record *rep;
	size_t nrep;
	REQUIRE(mt_reader_replays(reader, &rep, &nrep) == 0);
	REQUIRE(nrep == 2);
	CHECK(strcmp(rep[0].policy, "bestfit") == 0 && strcmp(rep[1].policy, "caching") == 0);
	CHECK(rep[0].series_len == 3 && rep[1].series_len == 0);
	CHECK(rep[0].series[1].allocated == 150 && rep[0].series[2].reserved == UINT64_MAX - 1);
	CHECK(rep[0].device == dev_ids[0] && rep[0].created_ns == 99);
	CHECK(strcmp(rep[0].result_json, "{\"a\":1}") == 0 && strcmp(rep[0].backend, "sim") == 0);
}

/* A second writer appends to the existing trace and sees its strings. */
static void test_second_writer(void)
{
	struct mt_writer *w = mt_writer_new();
	REQUIRE(mt_writer_open(w, trace, 0) == 0);
	uint32_t id;
	CHECK(mt_writer_intern(w, "forward", &id) == 0 && id == 2);
	mt_writer_free(w);
	mt_writer_free(NULL);
	mt_reader_free(NULL);
	mt_iter_free(NULL);
}

int main(void)
{
	temp_trace(trace, sizeof(trace), "trace");
	remove_trace(trace);
	write_trace(trace, &written, proc_ids, dev_ids);
	reader = mt_reader_new();
	REQUIRE(reader);
	int rc = mt_reader_open(reader, trace);
	CHECKF(rc == 0, "%s", mt_reader_message(reader));
	REQUIRE(rc == 0);

	TEST(test_tables);
	TEST(test_queries);
	TEST(test_stats);
	TEST(test_replays);
	mt_reader_free(reader);
	free(written.e);
	TEST(test_second_writer);
	TEST(test_failed_flush);
	TEST(test_open_chunk_grows);
	remove_trace(trace);
	return check_done();
}
