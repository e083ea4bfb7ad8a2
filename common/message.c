/* message.c — the one-line error messages every module leaves in an
 * `err, errlen` buffer or on its handle. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "memtrace-common.h"

int mt_vfail(char *err, size_t errlen, int rc, const char *fmt, va_list ap)
{
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	return rc;
}

int mt_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = mt_vfail(err, errlen, rc, fmt, ap);
	va_end(ap);
	return rc;
}
