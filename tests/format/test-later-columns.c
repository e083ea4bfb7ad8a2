/* test-later-columns.c — the columns version 1 gained after its first
 * traces (docs/FORMAT.md, "Compatibility"): processes.capture,
 * devices.pci_bus_id and devices.driver_reserved_bytes are written, updated
 * and read back in a new trace; a trace written before them (the old
 * schema, made here with SQLite) reads them as "" and 0, and a writer that
 * opens it adds them before it writes.
 */
#include "config.h"

#include <errno.h>
#include <sqlite3.h>

#include "test-events.h"

/* The version 1 schema of the traces written before the columns. */
static const char old_schema[] =
        "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);"
        "CREATE TABLE processes (id INTEGER PRIMARY KEY, parent INTEGER NOT NULL DEFAULT 0,"
        " pid INTEGER NOT NULL, start_ns INTEGER NOT NULL, command_line TEXT NOT NULL,"
        " hostname TEXT NOT NULL);"
        "CREATE TABLE devices (id INTEGER PRIMARY KEY, ordinal INTEGER NOT NULL,"
        " total_bytes INTEGER NOT NULL, name TEXT NOT NULL, uuid TEXT NOT NULL,"
        " driver_version TEXT NOT NULL, cuda_version TEXT NOT NULL);"
        "CREATE UNIQUE INDEX devices_uuid ON devices (uuid) WHERE uuid <> '';"
        "CREATE TABLE strings (id INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE);"
        "CREATE TABLE chunks (id INTEGER PRIMARY KEY, process INTEGER NOT NULL,"
        " device INTEGER NOT NULL, kind INTEGER NOT NULL, first_ts INTEGER NOT NULL,"
        " last_ts INTEGER NOT NULL, first_seq INTEGER NOT NULL, count INTEGER NOT NULL,"
        " codec INTEGER NOT NULL, raw_bytes INTEGER NOT NULL, layers INTEGER NOT NULL,"
        " blob BLOB NOT NULL);"
        "CREATE TABLE replays (id INTEGER PRIMARY KEY, device INTEGER NOT NULL,"
        " created_ns INTEGER NOT NULL, policy TEXT NOT NULL, backend TEXT NOT NULL,"
        " params TEXT NOT NULL, result_json TEXT NOT NULL, series_codec INTEGER NOT NULL,"
        " series BLOB NOT NULL);"
        "INSERT INTO meta VALUES ('format_version', '1');"
        "INSERT INTO processes (pid, start_ns, command_line, hostname)"
        " VALUES (7, 1, 'old', 'h');"
        "INSERT INTO devices (ordinal, total_bytes, name, uuid, driver_version, cuda_version)"
        " VALUES (0, 1024, 'GPU', 'GPU-old', '1', '1');";

static const char *text_or(const char *s)
{
	return s ? s : "(null)";
}

static void test_new_trace(void)
{
	char path[256];
	struct mt_writer *w = mt_writer_new();
	struct mt_reader *r = mt_reader_new();
	struct mt_process p = { .pid = 1, .command_line = "a", .capture = "requests (x)" };
	struct mt_process q = { .pid = 2, .command_line = "b" };
	struct mt_device d = { .uuid = "GPU-1",
		               .pci_bus_id = "0000:3b:00.0",
		               .driver_reserved_bytes = 503316480 };
	uint32_t pid_a = 0, pid_b = 0, dev = 0;

	temp_trace(path, sizeof(path), "later-new");
	remove_trace(path);
	REQUIRE(w && r && mt_writer_open(w, path, MT_WRITER_CREATE) == 0);
	CHECK(mt_writer_add_process(w, &p, &pid_a) == 0);
	CHECK(mt_writer_add_process(w, &q, &pid_b) == 0);
	CHECK(mt_writer_add_device(w, &d, &dev) == 0);
	CHECK(mt_writer_set_process_capture(w, pid_b, "segments only (why)") == 0);
	CHECK(mt_writer_set_process_capture(w, pid_b + 100, "x") == -ENOENT);
	CHECK(*mt_writer_message(w) != '\0');
	mt_writer_free(w);
	REQUIRE(mt_reader_open(r, path) == 0);
	REQUIRE(mt_reader_process_count(r) == 2 && mt_reader_device_count(r) == 1);
	CHECKF(!strcmp(text_or(mt_reader_process(r, 0)->capture), "requests (x)"), "%s",
	       text_or(mt_reader_process(r, 0)->capture));
	CHECKF(!strcmp(text_or(mt_reader_process(r, 1)->capture), "segments only (why)"), "%s",
	       text_or(mt_reader_process(r, 1)->capture));
	CHECKF(!strcmp(text_or(mt_reader_device(r, 0)->pci_bus_id), "0000:3b:00.0"), "%s",
	       text_or(mt_reader_device(r, 0)->pci_bus_id));
	CHECK(mt_reader_device(r, 0)->driver_reserved_bytes == 503316480);
	mt_reader_free(r);
	remove_trace(path);
}

static void test_old_trace(void)
{
	char path[256];
	struct mt_reader *r = mt_reader_new();
	struct mt_writer *w = mt_writer_new();
	struct mt_process p = { .pid = 8, .command_line = "new", .capture = "as-is" };
	uint32_t id = 0;
	sqlite3 *db;

	temp_trace(path, sizeof(path), "later-old");
	remove_trace(path);
	REQUIRE(r && w && sqlite3_open(path, &db) == SQLITE_OK);
	REQUIRE(sqlite3_exec(db, old_schema, NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);

	REQUIRE(mt_reader_open(r, path) == 0);
	REQUIRE(mt_reader_process_count(r) == 1 && mt_reader_device_count(r) == 1);
	CHECK(mt_reader_process(r, 0)->capture && !*mt_reader_process(r, 0)->capture);
	CHECK(mt_reader_device(r, 0)->pci_bus_id && !*mt_reader_device(r, 0)->pci_bus_id);
	CHECK(mt_reader_device(r, 0)->driver_reserved_bytes == 0);
	mt_reader_free(r);

	/* a writer adds the columns, the old row gets '' */
	REQUIRE(mt_writer_open(w, path, 0) == 0);
	CHECK(mt_writer_add_process(w, &p, &id) == 0 && id == 2);
	CHECK(mt_writer_set_process_capture(w, 1, "requests (driver API)") == 0);
	mt_writer_free(w);
	r = mt_reader_new();
	REQUIRE(r && mt_reader_open(r, path) == 0);
	REQUIRE(mt_reader_process_count(r) == 2);
	CHECK(!strcmp(text_or(mt_reader_process(r, 0)->capture), "requests (driver API)"));
	CHECK(!strcmp(text_or(mt_reader_process(r, 1)->capture), "as-is"));
	CHECK(!strcmp(text_or(mt_reader_device(r, 0)->pci_bus_id), ""));
	mt_reader_free(r);
	remove_trace(path);
}

int main(void)
{
	TEST(test_new_trace);
	TEST(test_old_trace);
	return check_done();
}
