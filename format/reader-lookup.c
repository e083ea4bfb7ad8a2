#include "config.h"

/* reader-lookup.c — finding rows the reader loaded: a process, device or
 * string by id, and how far a process's events are complete. */

#include <stddef.h>
#include <string.h>

#include "reader-private.h"

const void *fmt_find_id(const void *base, size_t n, size_t size, size_t offset, uint32_t id)
{
	const unsigned char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t at;

		memcpy(&at, b + mid * size + offset, sizeof(at));
		if (at == id)
			return b + mid * size;
		if (at < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

uint64_t fmt_complete_until(const struct mt_reader *r, uint32_t process)
{
	const struct mt_process *p;

	if (r->earliest_until == MT_TIME_UNKNOWN)
		return MT_TIME_UNKNOWN;
	p = fmt_find_id(r->processes, r->n_processes, sizeof(*r->processes),
	                offsetof(struct mt_process, id), process);
	return p ? r->complete_until[p - r->processes] : MT_TIME_UNKNOWN;
}
