/* test-imports.c — RMM logs and Nsight Systems SQLite exports in: each
 * action and its fields, RMM's time formats (epoch seconds, time of day,
 * past midnight), times going backwards, bad lines refused with the line
 * number; an Nsight export built here with the tables and columns Nsight
 * Systems writes (memory kinds, pools, processes, GPUs, NVTX ranges), and
 * an export without the memory table refused. */
#include "config.h"

#include <errno.h>

#include <sqlite3.h>

#include "interop-test.h"

static void test_rmm(void)
{
	static const char log[] = "Thread,Time,Action,Pointer,Size,Stream\r\n"
	                          "140,1634567890.123456,allocate,0x7f0000000000,1024,0x5\r\n"
	                          "140,1634567890.123457,allocate,0x7f0000000400,2048,0x5\r\n"
	                          "141,1634567890.123400,free,0x7f0000000000,1024,0x5\r\n"
	                          "141,1634567891,allocate failure,0x0,999999,0x0\r\n"
	                          "141,1634567891.5,deallocate,140737488355328,2048,5\r\n"
	                          "141,1634567892,bogus,0x0,1,0x0\r\n";
	char in[128], out[128];
	struct mt_import_result res;
	struct mt_reader *r;
	struct mt_event *e;
	size_t n;

	scratch_make();
	write_text(in_scratch(in, sizeof(in), "log.csv"), log, sizeof(log) - 1);
	CHECKF(import_to(in, in_scratch(out, sizeof(out), "rmm.db"), &res) == 0, "%s", err);
	CHECK(!strcmp(mt_interop_format_name(res.format), "rmm"));
	CHECK(res.entries == 6 && res.events == 5 && res.skipped == 1 && res.clamped == 1);
	r = open_trace(out);
	e = read_events(r, 0, &n);
	REQUIRE(n == 5);
	CHECK(e[0].kind == MT_EVENT_ALLOC && e[0].ts == 1634567890123456000ull &&
	      e[0].alloc.address == 0x7f0000000000ull && e[0].alloc.bytes == 1024 &&
	      e[0].alloc.stream == 5 && e[0].alloc.layer == MT_LAYER_REQUEST &&
	      e[0].alloc.api == MT_API_IMPORT);
	/* raised to the row before: the log's order holds */
	CHECK(e[2].kind == MT_EVENT_FREE && e[2].ts == 1634567890123457000ull);
	CHECK(e[3].kind == MT_EVENT_ALLOC_FAILED && e[3].failed.bytes == 999999);
	CHECK(e[4].kind == MT_EVENT_FREE && e[4].alloc.address == 140737488355328ull &&
	      e[4].ts == 1634567891500000000ull);
	free(e);
	mt_reader_free(r);
	scratch_clean();
}

static void test_rmm_time_of_day(void)
{
	static const char log[] = "Thread,Time,Action,Pointer,Size,Stream\n"
	                          "1,23:59:59.999000,allocate,0x1000,16,0x0\n"
	                          "1,00:00:00:000500,free,0x1000,16,0x0\n";
	char in[128], out[128];
	struct mt_reader *r;
	struct mt_event *e;
	size_t n;

	scratch_make();
	write_text(in_scratch(in, sizeof(in), "day.csv"), log, sizeof(log) - 1);
	CHECKF(import_to(in, in_scratch(out, sizeof(out), "day.db"), NULL) == 0, "%s", err);
	r = open_trace(out);
	e = read_events(r, 0, &n);
	REQUIRE(n == 2);
	CHECK(e[0].ts == 86399999000000ull);
	CHECKF(e[1].ts == 86400000500000ull, "past midnight: %llu", (unsigned long long)e[1].ts);
	free(e);
	mt_reader_free(r);
	scratch_clean();
}

static void test_rmm_bad_lines(void)
{
	static const struct {
		const char *text, *says;
	} cases[] = {
		{ "Thread,Time,Action,Pointer,Size,Stream\n1,2,allocate,0x1\n", "line 2: not six" },
		{ "Thread,Time,Action,Pointer,Size,Stream\n1,x,allocate,0x1,2,0\n",
		  "line 2: the time" },
		{ "Thread,Time,Action,Pointer,Size,Stream\n\n1,1.5,allocate,zz,2,0\n",
		  "line 3: Pointer, Size or Stream" },
		{ "Thread,Time,Action,Pointer,Size,Stream\n1,1.5,allocate,0x1,99999999999999999999,"
		  "0\n",
		  "line 2: Pointer, Size or Stream" },
	};
	char in[128], out[128];

	scratch_make();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_text(in_scratch(in, sizeof(in), "bad.csv"), cases[i].text,
		           strlen(cases[i].text));
		CHECK(import_to(in, in_scratch(out, sizeof(out), "bad.db"), NULL) == -EBADMSG);
		CHECKF(strstr(err, cases[i].says), "case %zu: '%s'", i, err);
	}
	scratch_clean();
}

static void exec_sql(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	CHECKF(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s", msg ? msg : "");
	sqlite3_free(msg);
}

/* The tables of an Nsight Systems export that the reader uses, with two
 * processes, two GPUs, every memory kind, a pool and nested ranges. */
static const char nsight_schema[] =
        "CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);"
        "CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,"
        " busLocation TEXT, totalMemory INTEGER, uuid TEXT, cuDevice INTEGER);"
        "CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);"
        "INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'),"
        " (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'),"
        " (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'),"
        " (3, 'CUDA_MEMOPR_MEMORY_KIND_ARRAY', 'Array'),"
        " (4, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed'),"
        " (5, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC', 'Device Static'),"
        " (6, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC', 'Managed Static'),"
        " (7, 'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN', 'Unknown');"
        "CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT,"
        " label TEXT);"
        "INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES"
        " (0, 'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION', 'Allocation'),"
        " (1, 'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION', 'Deallocation');"
        "CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL,"
        " globalPid INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,"
        " address INTEGER NOT NULL, pc INTEGER NOT NULL, bytes INTEGER NOT NULL,"
        " memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, name TEXT,"
        " correlationId INTEGER, streamId INTEGER, localMemoryPoolAddress INTEGER,"
        " localMemoryPoolReleaseThreshold INTEGER, localMemoryPoolSize INTEGER,"
        " localMemoryPoolUtilizedSize INTEGER, importedMemoryPoolAddress INTEGER,"
        " importedMemoryPoolProcessId INTEGER);"
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,"
        " rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,"
        " endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);";

/* globalPid of pid p: Nsight serializes the pid at bit 24. */
#define GPID(p) ((long long)(p) << 24)

static void test_nsight(void)
{
	char path[128], out[128], sql[2048];
	struct mt_import_result res;
	struct mt_reader *r;
	struct mt_event *e;
	sqlite3 *db;
	size_t n, k;

	scratch_make();
	REQUIRE(sqlite3_open(in_scratch(path, sizeof(path), "report.sqlite"), &db) == SQLITE_OK);
	exec_sql(db, nsight_schema);
	snprintf(
	        sql, sizeof(sql),
	        "INSERT INTO PROCESSES VALUES (%lld, 4242, 'python3 train.py'), (%lld, 77, 'b');"
	        "INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA H100', '', 85017493504, "
	        "'GPU-1', 0),"
	        " (0, 1, 'NVIDIA H100', '', 85017493504, 'GPU-2', 1);"
	        "INSERT INTO StringIds VALUES (1, 'forward');"
	        /* start, gpid, dev, ctx, addr, pc, bytes, kind, op, name, corr, stream, pool */
	        "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId,"
	        " address, pc, bytes, memKind, memoryOperationType, correlationId, streamId,"
	        " localMemoryPoolAddress) VALUES"
	        " (100, %lld, 0, 1, 4096, 0, 2097152, 2, 0, 11, 7, NULL),"
	        " (110, %lld, 0, 1, 8192, 0, 64, 5, 0, 12, 7, NULL),"       /* device static */
	        " (120, %lld, 0, 1, 65536, 0, 4096, 1, 0, 13, 0, NULL),"    /* pinned */
	        " (130, %lld, 1, 1, 131072, 0, 1048576, 2, 0, 14, 9, 555)," /* pool */
	        " (140, %lld, 0, 1, 4096, 0, 2097152, 2, 1, 15, 7, NULL),"
	        " (150, %lld, 1, 2, 262144, 0, 512, 4, 0, 16, 0, NULL);" /* managed, 2nd process */
	        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId)"
	        " VALUES (90, 200, 59, 'step', %lld, NULL, 0),"
	        " (95, 150, 59, NULL, %lld, 1, 0),"
	        " (160, 170, 59, 'opt', %lld, NULL, 0),"
	        " (10, 20, 59, 'nobody', %lld, NULL, 0);",
	        GPID(4242), GPID(77), GPID(4242), GPID(4242), GPID(4242), GPID(4242), GPID(4242),
	        GPID(77), GPID(4242) | 4243, GPID(4242) | 4243, GPID(4242) | 4243, GPID(999) | 1);
	exec_sql(db, sql);
	sqlite3_close(db);

	CHECKF(import_to(path, in_scratch(out, sizeof(out), "nsys.db"), &res) == 0, "%s", err);
	CHECK(!strcmp(mt_interop_format_name(res.format), "nsight"));
	CHECK(res.entries == 6 && res.skipped == 1 && res.events == 5 + 3);
	r = open_trace(out);
	CHECK(mt_reader_process_count(r) == 2 && mt_reader_process(r, 0)->pid == 4242 &&
	      !strcmp(mt_reader_process(r, 0)->command_line, "python3 train.py"));
	REQUIRE(mt_reader_device_count(r) == 2);
	CHECK(!strcmp(mt_reader_device(r, 0)->uuid, "GPU-1") &&
	      mt_reader_device(r, 0)->total_bytes == 85017493504ull);
	CHECK(mt_reader_device(r, 1)->ordinal == 1);
	e = read_events(r, MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE), &n);
	REQUIRE(n == 5);
	CHECK(e[0].ts == 100 && e[0].alloc.layer == MT_LAYER_DRIVER &&
	      e[0].alloc.mem_kind == MT_MEM_DEVICE && e[0].alloc.stream == 7 &&
	      e[0].alloc.correlation == 11 && e[0].alloc.api == MT_API_IMPORT);
	CHECK(e[1].alloc.mem_kind == MT_MEM_PINNED_HOST);
	CHECK(e[2].alloc.mem_kind == MT_MEM_ASYNC_POOL &&
	      e[2].device == mt_reader_device(r, 1)->id &&
	      e[2].alloc.api == MT_API_CUDA_MALLOC_ASYNC);
	CHECK(e[3].kind == MT_EVENT_FREE && e[3].alloc.address == 4096);
	CHECK(e[4].alloc.mem_kind == MT_MEM_MANAGED && e[4].process == mt_reader_process(r, 1)->id);
	free(e);
	/* ranges of pid 4242's thread 4243, nested; the unknown process's left out */
	e = read_events(r, MT_KIND_BIT(MT_EVENT_RANGE), &n);
	REQUIRE(n == 3);
	for (k = 0; k < n; k++)
		CHECK(e[k].range.thread == 4243 && e[k].device == mt_reader_device(r, 0)->id);
	CHECK(!strcmp(mt_reader_string(r, e[0].range.name), "step") && e[0].range.depth == 0);
	CHECK(!strcmp(mt_reader_string(r, e[1].range.name), "forward") && e[1].range.depth == 1 &&
	      e[1].range.end == 150);
	CHECK(!strcmp(mt_reader_string(r, e[2].range.name), "opt") && e[2].range.depth == 1);
	free(e);
	mt_reader_free(r);

	/* a SQLite file without the memory table: refused, saying what it lacks */
	REQUIRE(sqlite3_open(in_scratch(path, sizeof(path), "other.sqlite"), &db) == SQLITE_OK);
	exec_sql(db, "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);");
	sqlite3_close(db);
	CHECK(import_to(path, out, NULL) == -EBADMSG);
	CHECKF(strstr(err, "no table CUDA_GPU_MEMORY_USAGE_EVENTS"), "%s", err);
	scratch_clean();
}

int main(void)
{
	TEST(test_rmm);
	TEST(test_rmm_time_of_day);
	TEST(test_rmm_bad_lines);
	TEST(test_nsight);
	return check_done();
}
