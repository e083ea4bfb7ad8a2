#include "config.h"

/* index-check.c — what a chunk row may say, checked when a trace is
 * opened, so that no reader answer rests on a row its chunk would not
 * confirm (docs/FORMAT.md "Reading"): the row's kind, codec, count and time
 * span are possible, its process and device are rows of their tables, and
 * no row repeats another (a duplicated row would count its events twice). */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "reader-private.h"

static bool has_process(const struct mt_reader *r, uint32_t id)
{
	return fmt_find_id(r->processes, r->n_processes, sizeof(*r->processes),
	                   offsetof(struct mt_process, id), id) != NULL;
}

static bool has_device(const struct mt_reader *r, uint32_t id)
{
	return fmt_find_id(r->devices, r->n_devices, sizeof(*r->devices),
	                   offsetof(struct mt_device, id), id) != NULL;
}

/* What is wrong with a row on its own, into why; false if nothing. */
static bool row_bad(const struct mt_reader *r, sqlite3_stmt *st, char *why, size_t len)
{
	int64_t process = sqlite3_column_int64(st, 1), device = sqlite3_column_int64(st, 2);
	int64_t kind = sqlite3_column_int64(st, 3), count = sqlite3_column_int64(st, 6);
	int64_t codec = sqlite3_column_int64(st, 7);

	if (kind < 1 || kind > MT_EVENT_KIND_MAX)
		snprintf(why, len, "unknown kind %lld", (long long)kind);
	else if (codec != MT_CODEC_COLUMNS_ZSTD)
		snprintf(why, len, "unknown codec %lld", (long long)codec);
	else if (count < 1 || count > (int64_t)MT_CHUNK_MAX_EVENTS)
		snprintf(why, len, "a count of %lld events", (long long)count);
	else if (fmt_u64_from_sql(st, 4) > fmt_u64_from_sql(st, 5))
		snprintf(why, len, "first_ts after last_ts");
	else if (process < 0 || process > UINT32_MAX || !has_process(r, (uint32_t)process))
		snprintf(why, len, "its process %lld is not in the processes table",
		         (long long)process);
	else if (device < 0 || device > UINT32_MAX || !has_device(r, (uint32_t)device))
		snprintf(why, len, "its device %lld is not in the devices table",
		         (long long)device);
	else
		return false;
	return true;
}

static int check_rows(struct mt_reader *r)
{
	sqlite3_stmt *st;
	char why[128];
	int rc = sqlite3_prepare_v2(r->db,
	                            "SELECT id, process, device, kind, first_ts, last_ts, count,"
	                            " codec FROM chunks ORDER BY id",
	                            -1, &st, NULL);
	int err = 0;

	while (!err && fmt_step_row(st, &rc))
		if (row_bad(r, st, why, sizeof(why)))
			err = fmt_chunk_corrupt(r, sqlite3_column_int64(st, 0), why);
	sqlite3_finalize(st);
	if (!err && rc != SQLITE_DONE)
		err = fmt_reader_sql_fail(r, rc, "cannot read the chunk index");
	return err;
}

/* Two rows of one (process, device, kind) never start at the same seq: the
 * writer's seq only grows. */
static int check_duplicates(struct mt_reader *r)
{
	sqlite3_stmt *st;
	char why[64];
	int err = 0;
	int rc = sqlite3_prepare_v2(r->db,
	                            "SELECT min(id), max(id) FROM chunks"
	                            " GROUP BY process, device, kind, first_seq"
	                            " HAVING count(*) > 1 ORDER BY 2 LIMIT 1",
	                            -1, &st, NULL);

	if (fmt_step_row(st, &rc)) {
		snprintf(why, sizeof(why), "a copy of chunk %lld",
		         (long long)sqlite3_column_int64(st, 0));
		err = fmt_chunk_corrupt(r, sqlite3_column_int64(st, 1), why);
	} else if (rc != SQLITE_DONE) {
		err = fmt_reader_sql_fail(r, rc, "cannot read the chunk index");
	}
	sqlite3_finalize(st);
	return err;
}

int fmt_index_check(struct mt_reader *r)
{
	int err = check_rows(r);

	return err ? err : check_duplicates(r);
}
