/* test-format-contract.c — checks of the format header's contracts that
 * the commands rely on, from the outside (TAP output): a handle's message
 * is "" when its last call succeeded ("Message for the last error, or ""
 * if none"), so a command can print it only on failure. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memtrace-format.h"
#include "memtrace-synth.h"

static int failures, count;

static void ok(int cond, const char *what, const char *detail)
{
	printf("%s %d - %s: '%s'\n", cond ? "ok" : "not ok", ++count, what, detail);
	if (!cond)
		failures++;
}

int main(void)
{
	char path[] = "/tmp/test-contract.XXXXXX", extra[64];
	struct mt_writer *w = mt_writer_new();
	struct mt_reader *r = mt_reader_new();
	int fd = mkstemp(path);

	if (fd < 0 || !w || !r)
		return 1;
	close(fd);
	unlink(path);
	ok(mt_writer_open(w, path, MT_WRITER_CREATE) == 0 && !*mt_writer_message(w),
	   "writer message empty after creating a trace", mt_writer_message(w));
	ok(mt_synth_write(w, MT_SYNTH_SMALL, 100, 1) == 0 && mt_writer_flush(w) == 0 &&
	           !*mt_writer_message(w),
	   "writer message empty after writing", mt_writer_message(w));
	mt_writer_free(w);
	ok(mt_reader_open(r, path) == 0 && !*mt_reader_message(r),
	   "reader message empty after opening", mt_reader_message(r));
	mt_reader_free(r);
	unlink(path);
	snprintf(extra, sizeof(extra), "%s-wal", path);
	unlink(extra);
	snprintf(extra, sizeof(extra), "%s-shm", path);
	unlink(extra);
	printf("1..%d\n", count);
	return failures ? 1 : 0;
}
