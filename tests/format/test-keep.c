/* test-keep.c — mt_trace_keep_previous keeps traces and touches nothing
 * else: a trace moves to FILE.1, the next to FILE.2, all three readable
 * afterwards; a trace of a newer format version is kept too; a folder, a
 * symbolic link, a text file and a damaged trace are refused (-EEXIST) with
 * one line naming the path, and left as they were. */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "memtrace-synth.h"
#include "test-events.h"

static char path[256];

/* A small synthetic trace at path with this seed. */
static void write_trace(uint64_t seed)
{
	struct mt_writer *w = mt_writer_new();

	REQUIRE(w && mt_writer_open(w, path, MT_WRITER_CREATE) == 0);
	REQUIRE(mt_synth_write(w, MT_SYNTH_SMALL, 200, seed) == 0 && mt_writer_flush(w) == 0);
	mt_writer_free(w);
}

/* The pid of the one process in the trace at p (synth draws it from the
 * seed), or -1 when it does not open. */
static int64_t pid_of(const char *p)
{
	struct mt_reader *r = mt_reader_new();
	int64_t pid = -1;

	if (mt_reader_open(r, p) == 0 && mt_reader_process_count(r) == 1)
		pid = mt_reader_process(r, 0)->pid;
	mt_reader_free(r);
	return pid;
}

static void test_generations(void)
{
	char kept[300], err[512], name[300];
	int64_t pids[3];

	for (int i = 0; i < 3; i++) {
		write_trace((uint64_t)i + 1);
		pids[i] = pid_of(path);
		if (i < 2) {
			CHECKF(mt_trace_keep_previous(path, kept, sizeof(kept), err, sizeof(err)) ==
			               1,
			       "%s", err);
			snprintf(name, sizeof(name), "%s.%d", path, i + 1);
			CHECKF(strcmp(kept, name) == 0, "kept as %s", kept);
		}
	}
	CHECK(pids[0] != pids[1] && pids[1] != pids[2]);
	snprintf(name, sizeof(name), "%s.1", path);
	CHECK(pid_of(name) == pids[0]);
	snprintf(name, sizeof(name), "%s.2", path);
	CHECK(pid_of(name) == pids[1]);
	CHECK(pid_of(path) == pids[2]);
	for (int i = 1; i <= 2; i++) {
		snprintf(name, sizeof(name), "%s.%d", path, i);
		remove_trace(name);
	}
	remove_trace(path);
}

static void test_newer_version_kept(void)
{
	char kept[300], err[512];
	sqlite3 *db;

	write_trace(5);
	REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
	REQUIRE(sqlite3_exec(db, "UPDATE meta SET value = '9' WHERE key = 'format_version'", NULL,
	                     NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECKF(mt_trace_keep_previous(path, kept, sizeof(kept), err, sizeof(err)) == 1, "%s", err);
	CHECK(access(path, F_OK) != 0 && access(kept, F_OK) == 0);
	remove_trace(kept);
}

/* Refused with one line naming the path; returns whether it was. */
static bool refused(const char *what)
{
	char kept[300] = "x", err[512] = "";
	int rc = mt_trace_keep_previous(path, kept, sizeof(kept), err, sizeof(err));

	CHECKF(rc == -EEXIST, "%s: rc %d", what, rc);
	CHECKF(strstr(err, path) && strstr(err, "not replacing it") && !strchr(err, '\n'),
	       "%s: message '%s'", what, err);
	return rc == -EEXIST;
}

static void test_refusals(void)
{
	struct stat st;
	char name[300];
	FILE *f;

	REQUIRE(mkdir(path, 0755) == 0);
	refused("a folder");
	CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
	REQUIRE(rmdir(path) == 0);

	f = fopen(path, "w");
	REQUIRE(f);
	fputs("alloc,free\n", f);
	fclose(f);
	refused("a text file");
	CHECK(stat(path, &st) == 0 && st.st_size == 11);

	snprintf(name, sizeof(name), "%s.target", path);
	REQUIRE(rename(path, name) == 0 && symlink(name, path) == 0);
	refused("a symbolic link");
	CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
	unlink(path);
	unlink(name);

	write_trace(1);
	REQUIRE(truncate(path, 4096) == 0); /* cut short of the pages it declares */
	refused("a damaged trace");
	CHECK(stat(path, &st) == 0 && st.st_size == 4096);
	snprintf(name, sizeof(name), "%s.1", path);
	CHECK(access(name, F_OK) != 0);
	remove_trace(path);
}

static void test_nothing_there(void)
{
	char kept[300] = "x", err[64];

	remove_trace(path);
	CHECK(mt_trace_keep_previous(path, kept, sizeof(kept), err, sizeof(err)) == 0);
	CHECK(kept[0] == '\0');
	CHECK(mt_trace_keep_previous(NULL, kept, sizeof(kept), err, sizeof(err)) == -EINVAL);
}

int main(void)
{
	temp_trace(path, sizeof(path), "keep");
	remove_trace(path);
	TEST(test_generations);
	TEST(test_newer_version_kept);
	TEST(test_refusals);
	TEST(test_nothing_there);
	return check_done();
}
