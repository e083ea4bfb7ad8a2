/* backend-fail.c — the backends' error message (backend-private.h): the one
 * helper backend.c and the implementations share, so that neither calls the
 * other's file. */
#include "config.h"

#include "backend-private.h"
#include "memtrace-common.h"

int rp_backend_fail(struct mt_backend *b, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = mt_vfail(b->message, sizeof(b->message), rc, fmt, ap);
	va_end(ap);
	return rc;
}
