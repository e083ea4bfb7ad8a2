/* grow.c — growing arrays, which every analyze file uses. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "analyze-private.h"

int an_grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *q;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 256;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}
