/* format-nsight.c — Nsight Systems SQLite exports (nsys export --type
 * sqlite of a report taken with --cuda-memory-usage=true): the table
 * CUDA_GPU_MEMORY_USAGE_EVENTS holds the driver-level allocations and
 * frees (start, globalPid, deviceId, address, bytes, memKind,
 * memoryOperationType, streamId, localMemoryPoolAddress), with PROCESSES
 * (pid, name) and TARGET_INFO_GPU (name, uuid, totalMemory) beside it, and
 * NVTX_EVENTS the NVTX ranges. The export is itself an SQLite database,
 * so this reader is the one place outside format/ that opens SQLite: it
 * reads another tool's tables, never a trace.
 *
 * Mapping: one process row per globalPid (pid from PROCESSES, else the
 * pid inside the globalPid), one device row per deviceId; each memory
 * event a driver-layer alloc or free (API "import"; memory kind device,
 * async pool when the event names a memory pool, managed or pinned host);
 * module statics, pageable and unknown memory are skipped. NVTX push/pop
 * and start/end ranges of processes with memory events become ranges on
 * the process's first device, nested per thread. The enum tables
 * (ENUM_CUDA_MEM_KIND, ENUM_CUDA_DEV_MEM_EVENT_OPER) are read by name when
 * present; the values of current Nsight Systems otherwise. Older exports
 * lack some columns: those read as absent.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "interop-private.h"

static const char sqlite_magic[16] = "SQLite format 3";

static bool detect(const uint8_t *data, size_t len)
{
	return len >= 16 && !memcmp(data, sqlite_magic, 16);
}

enum nsys_kind { K_SKIP = -1 };

struct nsight {
	struct io_import *im;
	sqlite3 *db;
	struct io_map processes;    /* globalPid → process row id */
	struct io_map devices;      /* deviceId → device row id */
	struct io_map first_device; /* globalPid → its first device row */
	int mem_kind[16];           /* Nsight memKind → mt_mem_kind or K_SKIP */
	int alloc_op, free_op;      /* memoryOperationType values */
};

static int db_fail(struct nsight *n, int rc)
{
	return mt_fail(n->im->err, n->im->errlen, rc == -ENOMEM ? -ENOMEM : -EBADMSG,
	               "Nsight export %s: %s", n->im->path, sqlite3_errmsg(n->db));
}

static int sink_fail(struct nsight *n, int rc)
{
	return mt_fail(n->im->err, n->im->errlen, rc, "%s", n->im->sink->err);
}

static bool has_column(struct nsight *n, const char *table, const char *column)
{
	return sqlite3_table_column_metadata(n->db, NULL, table, column, NULL, NULL, NULL, NULL,
	                                     NULL) == SQLITE_OK;
}

static bool has_table(struct nsight *n, const char *table)
{
	sqlite3_stmt *st;
	bool found = false;

	if (sqlite3_prepare_v2(n->db,
	                       "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", -1,
	                       &st, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

/* The enum tables by name, else current Nsight's numbers. */
static void read_enums(struct nsight *n)
{
	static const struct {
		const char *name;
		int kind;
	} kinds[] = {
		{ "CUDA_MEMOPR_MEMORY_KIND_PINNED", MT_MEM_PINNED_HOST },
		{ "CUDA_MEMOPR_MEMORY_KIND_DEVICE", MT_MEM_DEVICE },
		{ "CUDA_MEMOPR_MEMORY_KIND_ARRAY", MT_MEM_DEVICE },
		{ "CUDA_MEMOPR_MEMORY_KIND_MANAGED", MT_MEM_MANAGED },
	};
	static const int defaults[] = { K_SKIP, MT_MEM_PINNED_HOST, MT_MEM_DEVICE, MT_MEM_DEVICE,
		                        MT_MEM_MANAGED };
	sqlite3_stmt *st;

	for (size_t i = 0; i < 16; i++)
		n->mem_kind[i] = i < sizeof(defaults) / sizeof(defaults[0]) ? defaults[i] : K_SKIP;
	n->alloc_op = 0;
	n->free_op = 1;
	if (has_table(n, "ENUM_CUDA_MEM_KIND") &&
	    sqlite3_prepare_v2(n->db, "SELECT id, name FROM ENUM_CUDA_MEM_KIND", -1, &st, NULL) ==
	            SQLITE_OK) {
		for (size_t i = 0; i < 16; i++)
			n->mem_kind[i] = K_SKIP;
		while (sqlite3_step(st) == SQLITE_ROW) {
			int id = sqlite3_column_int(st, 0);
			const char *name = (const char *)sqlite3_column_text(st, 1);
			for (size_t k = 0;
			     name && id >= 0 && id < 16 && k < sizeof(kinds) / sizeof(kinds[0]);
			     k++)
				if (!strcmp(name, kinds[k].name))
					n->mem_kind[id] = kinds[k].kind;
		}
		sqlite3_finalize(st);
	}
	if (has_table(n, "ENUM_CUDA_DEV_MEM_EVENT_OPER") &&
	    sqlite3_prepare_v2(n->db, "SELECT id, name FROM ENUM_CUDA_DEV_MEM_EVENT_OPER", -1, &st,
	                       NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *name = (const char *)sqlite3_column_text(st, 1);
			if (name && strstr(name, "DEALLOCATION"))
				n->free_op = sqlite3_column_int(st, 0);
			else if (name && strstr(name, "ALLOCATION"))
				n->alloc_op = sqlite3_column_int(st, 0);
		}
		sqlite3_finalize(st);
	}
}

/* The process row of a globalPid, added on first use. */
static int process_of(struct nsight *n, int64_t global_pid, uint32_t *id)
{
	struct mt_process p = { .hostname = "" };
	sqlite3_stmt *st = NULL;
	uint64_t v;
	int rc;

	if (io_map_get(&n->processes, (uint64_t)global_pid, 0, &v)) {
		*id = (uint32_t)v;
		return 0;
	}
	p.pid = global_pid >> 24 & 0xffffff; /* Nsight's serialized global id */
	p.command_line = "";
	if (has_table(n, "PROCESSES") &&
	    sqlite3_prepare_v2(n->db, "SELECT pid, name FROM PROCESSES WHERE globalPid = ?", -1,
	                       &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, global_pid);
		if (sqlite3_step(st) == SQLITE_ROW) {
			p.pid = sqlite3_column_int64(st, 0);
			if (sqlite3_column_text(st, 1))
				p.command_line = (const char *)sqlite3_column_text(st, 1);
		}
	}
	rc = n->im->sink->add_process(n->im->sink, &p, id);
	sqlite3_finalize(st);
	if (rc < 0)
		return sink_fail(n, rc);
	return io_map_put(&n->processes, (uint64_t)global_pid, 0, *id) < 0 ? -ENOMEM : 0;
}

/* The device row of a deviceId, added on first use. */
static int device_of(struct nsight *n, int64_t device_id, uint32_t *id)
{
	struct mt_device d = { .ordinal = (uint32_t)device_id,
		               .name = "",
		               .uuid = "",
		               .driver_version = "",
		               .cuda_version = "" };
	sqlite3_stmt *st = NULL;
	uint64_t v;
	int rc;

	if (io_map_get(&n->devices, (uint64_t)device_id, 0, &v)) {
		*id = (uint32_t)v;
		return 0;
	}
	if (has_column(n, "TARGET_INFO_GPU", "uuid") &&
	    sqlite3_prepare_v2(n->db,
	                       "SELECT name, uuid, totalMemory, cuDevice FROM TARGET_INFO_GPU "
	                       "WHERE id = ?",
	                       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, device_id);
		if (sqlite3_step(st) == SQLITE_ROW) {
			if (sqlite3_column_text(st, 0))
				d.name = (const char *)sqlite3_column_text(st, 0);
			if (sqlite3_column_text(st, 1))
				d.uuid = (const char *)sqlite3_column_text(st, 1);
			if (sqlite3_column_int64(st, 2) > 0)
				d.total_bytes = (uint64_t)sqlite3_column_int64(st, 2);
			if (sqlite3_column_type(st, 3) == SQLITE_INTEGER)
				d.ordinal = (uint32_t)sqlite3_column_int(st, 3);
		}
	}
	rc = n->im->sink->add_device(n->im->sink, &d, id);
	sqlite3_finalize(st);
	if (rc < 0)
		return sink_fail(n, rc);
	return io_map_put(&n->devices, (uint64_t)device_id, 0, *id) < 0 ? -ENOMEM : 0;
}

static int memory_events(struct nsight *n)
{
	char sql[512];
	sqlite3_stmt *st;
	bool stream = has_column(n, "CUDA_GPU_MEMORY_USAGE_EVENTS", "streamId");
	bool pool = has_column(n, "CUDA_GPU_MEMORY_USAGE_EVENTS", "localMemoryPoolAddress");
	bool corr = has_column(n, "CUDA_GPU_MEMORY_USAGE_EVENTS", "correlationId");
	uint64_t last = 0, total = 0;
	int rc = 0, step;

	snprintf(sql, sizeof(sql),
	         "SELECT start, globalPid, deviceId, address, bytes, memKind, memoryOperationType, "
	         "%s, %s, %s FROM CUDA_GPU_MEMORY_USAGE_EVENTS ORDER BY start, rowid",
	         stream ? "streamId" : "NULL", pool ? "localMemoryPoolAddress" : "NULL",
	         corr ? "correlationId" : "NULL");
	if (sqlite3_prepare_v2(n->db, "SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS", -1, &st,
	                       NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			total = (uint64_t)sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	if (sqlite3_prepare_v2(n->db, sql, -1, &st, NULL) != SQLITE_OK)
		return db_fail(n, -EBADMSG);
	while (rc >= 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		struct mt_event ev = { .ts = (uint64_t)sqlite3_column_int64(st, 0) };
		int kind = sqlite3_column_int(st, 5), op = sqlite3_column_int(st, 6);
		int mem = kind >= 0 && kind < 16 ? n->mem_kind[kind] : K_SKIP;

		n->im->res->entries++;
		if (n->im->progress && (n->im->res->entries & 0xffff) == 0)
			n->im->progress(n->im->progress_arg, n->im->res->entries, total);
		if (mem == K_SKIP || (op != n->alloc_op && op != n->free_op) ||
		    sqlite3_column_int64(st, 0) < 0) {
			n->im->res->skipped++;
			continue;
		}
		if (ev.ts < last) {
			ev.ts = last;
			n->im->res->clamped++;
		}
		if (!n->im->res->events)
			n->im->res->first_ts = ev.ts;
		last = ev.ts;
		if ((rc = process_of(n, sqlite3_column_int64(st, 1), &ev.process)) < 0 ||
		    (rc = device_of(n, sqlite3_column_int64(st, 2), &ev.device)) < 0)
			break;
		if (!io_map_get(&n->first_device, ev.process, 0, NULL) &&
		    io_map_put(&n->first_device, ev.process, 0, ev.device) < 0) {
			rc = -ENOMEM;
			break;
		}
		ev.kind = op == n->alloc_op ? MT_EVENT_ALLOC : MT_EVENT_FREE;
		ev.alloc.address = (uint64_t)sqlite3_column_int64(st, 3);
		ev.alloc.bytes = (uint64_t)sqlite3_column_int64(st, 4);
		ev.alloc.stream = (uint64_t)sqlite3_column_int64(st, 7);
		ev.alloc.correlation = (uint64_t)sqlite3_column_int64(st, 9);
		ev.alloc.layer = MT_LAYER_DRIVER;
		ev.alloc.mem_kind = (uint8_t)mem;
		ev.alloc.api = MT_API_IMPORT;
		if (mem == MT_MEM_DEVICE && sqlite3_column_int64(st, 8) != 0) {
			ev.alloc.mem_kind = MT_MEM_ASYNC_POOL;
			ev.alloc.api = MT_API_CUDA_MALLOC_ASYNC;
		}
		if ((rc = n->im->sink->append(n->im->sink, &ev)) < 0)
			rc = sink_fail(n, rc);
		else
			n->im->res->events++;
	}
	if (rc >= 0 && step != SQLITE_DONE)
		rc = db_fail(n, -EBADMSG);
	sqlite3_finalize(st);
	return rc == -ENOMEM ? mt_fail(n->im->err, n->im->errlen, rc, "out of memory") : rc;
}

/* NVTX push/pop (59) and start/end (60) ranges of the processes seen, with
 * their domains (75: domain creation), nested per thread. */
static int ranges(struct nsight *n)
{
	struct open {
		int64_t tid;
		uint64_t end;
	} *stack = NULL;
	size_t depth = 0, cap = 0;
	sqlite3_stmt *st;
	int rc = 0;
	bool strings = has_table(n, "StringIds");
	bool domains = has_column(n, "NVTX_EVENTS", "domainId");
	char sql[640];

	if (!has_table(n, "NVTX_EVENTS") || !has_column(n, "NVTX_EVENTS", "globalTid"))
		return 0;
	snprintf(sql, sizeof(sql),
	         "SELECT e.start, e.end, e.globalTid, COALESCE(e.text, %s, ''), %s "
	         "FROM NVTX_EVENTS e WHERE e.eventType IN (59, 60) AND e.end IS NOT NULL "
	         "AND e.end >= e.start ORDER BY e.globalTid, e.start, e.end DESC",
	         strings ? "(SELECT value FROM StringIds WHERE id = e.textId)" : "NULL",
	         domains ? "COALESCE((SELECT d.text FROM NVTX_EVENTS d WHERE d.eventType = 75 "
	                   "AND d.domainId = e.domainId AND e.domainId != 0), '')"
	                 : "''");
	if (sqlite3_prepare_v2(n->db, sql, -1, &st, NULL) != SQLITE_OK)
		return 0; /* an export without what this needs: no ranges */
	while (rc >= 0 && sqlite3_step(st) == SQLITE_ROW) {
		struct mt_event ev = { .kind = MT_EVENT_RANGE };
		int64_t tid = sqlite3_column_int64(st, 2);
		uint64_t process, device;
		const char *name = (const char *)sqlite3_column_text(st, 3);
		const char *domain = (const char *)sqlite3_column_text(st, 4);

		if (!io_map_get(&n->processes, (uint64_t)(tid & ~0xffffffll), 0, &process) ||
		    !io_map_get(&n->first_device, process, 0, &device))
			continue;
		ev.ts = (uint64_t)sqlite3_column_int64(st, 0);
		ev.range.end = (uint64_t)sqlite3_column_int64(st, 1);
		/* ranges of this thread that ended before this one starts are closed */
		while (depth && (stack[depth - 1].tid != tid || stack[depth - 1].end <= ev.ts))
			depth--;
		ev.process = (uint32_t)process;
		ev.device = (uint32_t)device;
		ev.range.thread = (uint32_t)(tid & 0xffffff);
		ev.range.depth = (uint32_t)depth;
		if ((rc = n->im->sink->intern(n->im->sink, name ? name : "", &ev.range.name)) < 0 ||
		    (rc = n->im->sink->intern(n->im->sink, domain ? domain : "",
		                              &ev.range.domain)) < 0 ||
		    (rc = n->im->sink->append(n->im->sink, &ev)) < 0) {
			rc = sink_fail(n, rc);
			break;
		}
		n->im->res->events++;
		if (mt_array_grow((void **)&stack, &cap, depth, sizeof(*stack)) < 0) {
			rc = mt_fail(n->im->err, n->im->errlen, -ENOMEM, "out of memory");
			break;
		}
		stack[depth++] = (struct open){ tid, ev.range.end };
	}
	sqlite3_finalize(st);
	free(stack);
	return rc;
}

static int import_nsight(struct io_import *im)
{
	struct nsight n = { .im = im };
	int rc;

	if (sqlite3_open_v2(im->path, &n.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = db_fail(&n, -EBADMSG);
		goto out;
	}
	if (!has_table(&n, "CUDA_GPU_MEMORY_USAGE_EVENTS")) {
		rc = mt_fail(im->err, im->errlen, -EBADMSG,
		             "%s has no table CUDA_GPU_MEMORY_USAGE_EVENTS (not an Nsight Systems "
		             "export of a report taken with --cuda-memory-usage=true)",
		             im->path);
		goto out;
	}
	read_enums(&n);
	rc = memory_events(&n);
	if (rc >= 0)
		rc = ranges(&n);
out:
	sqlite3_close(n.db);
	io_map_release(&n.processes);
	io_map_release(&n.devices);
	io_map_release(&n.first_device);
	return rc;
}

const struct mt_interop_format io_format_nsight = {
	.name = "nsight",
	.description = "Nsight Systems SQLite export (--cuda-memory-usage)",
	.extensions = ".sqlite",
	.detect = detect,
	.import = import_nsight,
};
