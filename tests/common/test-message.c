/* test-message.c — mt_fail and mt_vfail: the message is formatted into the
 * buffer (truncated, always terminated), rc comes back unchanged, and a
 * NULL buffer or a zero length writes nothing. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "memtrace-common.h"
#include "tap.h"

static int forward(char *err, size_t errlen, int rc, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int forward(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = mt_vfail(err, errlen, rc, fmt, ap);
	va_end(ap);
	return rc;
}

static void test_formats_and_returns(void)
{
	char err[64] = "old";

	CHECK(mt_fail(err, sizeof(err), -ENOENT, "%s: %d", "trace.db", 7) == -ENOENT);
	CHECK(strcmp(err, "trace.db: 7") == 0);
	CHECK(forward(err, sizeof(err), -EBADMSG, "chunk %d is corrupt", 3) == -EBADMSG);
	CHECK(strcmp(err, "chunk 3 is corrupt") == 0);
	CHECK(mt_fail(err, sizeof(err), 0, "%s", "") == 0 && err[0] == '\0');
}

static void test_truncates(void)
{
	char err[8];

	memset(err, 'x', sizeof(err));
	CHECK(mt_fail(err, 5, -EIO, "%s", "a long message") == -EIO);
	CHECK(strcmp(err, "a lo") == 0 && err[5] == 'x');
}

static void test_no_buffer(void)
{
	char err[4] = "abc";

	CHECK(mt_fail(NULL, 100, -ENOMEM, "out of memory") == -ENOMEM);
	CHECK(mt_fail(err, 0, -EINVAL, "bad") == -EINVAL && strcmp(err, "abc") == 0);
}

int main(void)
{
	TEST(test_formats_and_returns);
	TEST(test_truncates);
	TEST(test_no_buffer);
	return check_done();
}
