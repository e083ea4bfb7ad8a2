/* grow.c — growing arrays, for every module that keeps one. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "memtrace-common.h"

int mt_array_grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *q;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	while (c <= n)
		c *= 2;
	if (size && c > SIZE_MAX / size)
		return -ENOMEM;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}
