/* pending.c — a min-heap of things that end later (slice ends, the
 * completion of a free), so that an export writes them in time order
 * while walking events that start in time order. Equal times come out in
 * the order they went in.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "interop-private.h"

static bool before(const struct io_pending_item *x, const struct io_pending_item *y)
{
	return x->ts < y->ts || (x->ts == y->ts && x->seq < y->seq);
}

int io_pending_push(struct io_pending *q, struct io_pending_item item)
{
	size_t i;

	if (mt_array_grow((void **)&q->v, &q->cap, q->n, sizeof(*q->v)) < 0)
		return -ENOMEM;
	item.seq = q->seq++;
	for (i = q->n++; i > 0 && before(&item, &q->v[(i - 1) / 2]); i = (i - 1) / 2)
		q->v[i] = q->v[(i - 1) / 2];
	q->v[i] = item;
	return 0;
}

bool io_pending_pop(struct io_pending *q, uint64_t until, struct io_pending_item *out)
{
	struct io_pending_item last;
	size_t i = 0;

	if (!q->n || q->v[0].ts > until)
		return false;
	*out = q->v[0];
	last = q->v[--q->n];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= q->n)
			break;
		if (c + 1 < q->n && before(&q->v[c + 1], &q->v[c]))
			c++;
		if (!before(&q->v[c], &last))
			break;
		q->v[i] = q->v[c];
		i = c;
	}
	if (q->n)
		q->v[i] = last;
	return true;
}

void io_pending_release(struct io_pending *q)
{
	free(q->v);
	*q = (struct io_pending){ 0 };
}
