/* util.c — growing arrays and output buffers for every interop file. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "interop-private.h"

int io_grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *q;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	while (c <= n)
		c *= 2;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

struct io_out *io_out_new(FILE *f)
{
	struct io_out *o = malloc(sizeof(*o));

	if (o) {
		o->f = f;
		o->n = 0;
	}
	return o;
}
