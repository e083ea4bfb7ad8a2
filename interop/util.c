/* util.c — output buffers for every interop file. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "interop-private.h"

struct io_out *io_out_new(FILE *f)
{
	struct io_out *o = malloc(sizeof(*o));

	if (o) {
		o->f = f;
		o->n = 0;
	}
	return o;
}
