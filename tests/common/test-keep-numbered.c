/* test-keep-numbered.c — mt_keep_numbered: the file and its side files move
 * to the first number free of all of them; earlier numbers are never
 * replaced; a side file left alone under a number makes that number taken;
 * nothing at the path is -ENOENT. Works in a fresh folder under the
 * current one. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memtrace-common.h"
#include "tap.h"

static const char *const sides[] = { "-wal", "-shm" };
static char dir[64];

static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	REQUIRE(f);
	fputs(text, f);
	fclose(f);
}

/* The text of dir/name, "" when missing. */
static const char *text_of(const char *name)
{
	static char buf[64];
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return "";
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int keep(char *kept, size_t len)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/t.db", dir);
	return mt_keep_numbered(path, sides, 2, kept, len);
}

static void test_nothing_there(void)
{
	char kept[256];

	CHECK(keep(kept, sizeof(kept)) == -ENOENT);
}

static void test_generations(void)
{
	char kept[256], want[256];

	put("t.db", "first");
	put("t.db-wal", "first wal");
	REQUIRE(keep(kept, sizeof(kept)) == 0);
	snprintf(want, sizeof(want), "%s/t.db.1", dir);
	CHECKF(strcmp(kept, want) == 0, "kept as %s", kept);
	CHECK(strcmp(text_of("t.db.1"), "first") == 0);
	CHECK(strcmp(text_of("t.db.1-wal"), "first wal") == 0);
	CHECK(strcmp(text_of("t.db"), "") == 0 && strcmp(text_of("t.db-wal"), "") == 0);

	put("t.db", "second");
	put("t.db-shm", "second shm");
	REQUIRE(keep(kept, sizeof(kept)) == 0);
	CHECK(strcmp(text_of("t.db.2"), "second") == 0);
	CHECK(strcmp(text_of("t.db.2-shm"), "second shm") == 0);
	CHECK(strcmp(text_of("t.db.1"), "first") == 0); /* untouched */
	CHECK(strcmp(text_of("t.db.1-wal"), "first wal") == 0);
}

/* A side file alone under number 3 takes that number: its trace was lost
 * but what it holds must not be joined to another file. */
static void test_orphan_side_file(void)
{
	char kept[256];

	put("t.db.3-wal", "orphan");
	put("t.db", "fourth");
	REQUIRE(keep(kept, sizeof(kept)) == 0);
	CHECK(strcmp(text_of("t.db.4"), "fourth") == 0);
	CHECK(strcmp(text_of("t.db.3"), "") == 0);
	CHECK(strcmp(text_of("t.db.3-wal"), "orphan") == 0);
}

static void test_bad_arguments(void)
{
	char kept[8];

	put("t.db", "x");
	CHECK(mt_keep_numbered(NULL, sides, 2, kept, sizeof(kept)) == -EINVAL);
	CHECK(mt_keep_numbered("", sides, 2, kept, sizeof(kept)) == -EINVAL);
	/* the new name does not fit: nothing moves */
	CHECK(keep(kept, sizeof(kept)) == -ENAMETOOLONG);
	CHECK(strcmp(text_of("t.db"), "x") == 0);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "keep-numbered.%ld", (long)getpid());
	REQUIRE(mkdir(dir, 0755) == 0);
	TEST(test_nothing_there);
	TEST(test_generations);
	TEST(test_orphan_side_file);
	TEST(test_bad_arguments);
	{
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", dir);
	}
	return check_done();
}
