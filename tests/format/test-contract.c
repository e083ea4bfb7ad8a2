/* test-contract.c — checks of the format header's contracts that the
 * commands rely on, from the outside: a handle's message is "" when its
 * last call succeeded ("Message for the last error, or "" if none"), so a
 * command can print it only on failure. (It found a writer message left
 * over from creating a trace, fixed in format.) */
#include "config.h"

#include "memtrace-synth.h"
#include "test-events.h"

static char path[256];

static void test_writer_message(void)
{
	struct mt_writer *w = mt_writer_new();

	REQUIRE(w);
	CHECKF(mt_writer_open(w, path, MT_WRITER_CREATE) == 0 && !*mt_writer_message(w),
	       "after creating a trace: '%s'", mt_writer_message(w));
	CHECKF(mt_synth_write(w, MT_SYNTH_SMALL, 100, 1) == 0 && mt_writer_flush(w) == 0 &&
	               !*mt_writer_message(w),
	       "after writing: '%s'", mt_writer_message(w));
	mt_writer_free(w);
}

static void test_reader_message(void)
{
	struct mt_reader *r = mt_reader_new();

	REQUIRE(r);
	CHECKF(mt_reader_open(r, path) == 0 && !*mt_reader_message(r), "after opening: '%s'",
	       mt_reader_message(r));
	mt_reader_free(r);
}

int main(void)
{
	temp_trace(path, sizeof(path), "contract");
	remove_trace(path);
	TEST(test_writer_message);
	TEST(test_reader_message);
	remove_trace(path);
	return check_done();
}
