/* format-minimalloc.c — the request layer's allocations as the buffers of
 * an offline packing problem, for MiniMalloc (google/minimalloc) and the
 * solvers that read its CSV: "id,lower,upper,size", one row per
 * allocation, live over [lower, upper) on a clock that counts the layer's
 * alloc and free events (0, 1, 2...). The id is the lower bound's event
 * index (unique). An allocation never freed runs to the end of the clock;
 * a free whose allocation the trace never saw runs from 0. Rows come as
 * allocations end; memory is bounded by what is live at once. One device:
 * a trace of several needs --device.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "interop-private.h"

static void buffer_row(struct io_out *o, uint64_t id, uint64_t lower, uint64_t upper, uint64_t size)
{
	char *p = io_out_reserve(o, 4 * 21);

	p = io_put_u64(p, id);
	*p++ = ',';
	p = io_put_u64(p, lower);
	*p++ = ',';
	p = io_put_u64(p, upper);
	*p++ = ',';
	p = io_put_u64(p, size);
	*p++ = '\n';
	io_out_commit(o, p);
}

struct end_ctx {
	struct io_out *o;
	uint64_t end;
	unsigned layer;
	uint64_t rows;
};

static int unfreed(void *arg, const struct io_live_entry *e)
{
	struct end_ctx *c = arg;

	if (e->layer == c->layer) {
		buffer_row(c->o, e->ts, e->ts, c->end, e->bytes);
		c->rows++;
	}
	return 0;
}

/* The one device with allocations, or the option's. */
static int the_device(struct io_export *x, uint32_t *device)
{
	struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
	size_t n = 0;

	*device = x->opt->device;
	if (*device)
		return 0;
	for (size_t i = 0; i < mt_reader_device_count(x->r); i++) {
		struct mt_query q = { .device = mt_reader_device(x->r, i)->id };
		if (mt_reader_kind_stats(x->r, &q, stats) == 0 && stats[MT_EVENT_ALLOC].events) {
			*device = q.device;
			n++;
		}
	}
	if (n > 1)
		return mt_fail(x->err, x->errlen, -EINVAL,
		               "MiniMalloc packs one memory: the trace has %zu devices with "
		               "allocations, name one with --device",
		               n);
	return 0;
}

static int export_minimalloc(struct io_export *x)
{
	struct mt_export_options opt = *x->opt;
	struct io_export one = *x;
	struct mt_iter *it = NULL;
	struct io_live *live = io_live_new();
	struct io_out *o = io_out_new(x->out);
	struct end_ctx end = { .o = o };
	struct mt_event ev;
	uint64_t clock = 0;
	int rc;

	if (!live || !o) {
		rc = mt_fail(x->err, x->errlen, -ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = the_device(x, &opt.device)) < 0 ||
	    (rc = mt_reader_request_layer(x->r, &end.layer)) < 0)
		goto out;
	one.opt = &opt;
	io_out_str(o, "id,lower,upper,size\n");
	rc = io_export_iter(&one, MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE), &it,
	                    &x->total);
	one.total = x->total;
	while (rc >= 0 && (rc = io_export_next(&one, it, &ev)) > 0) {
		struct io_live_entry closed;
		if (ev.alloc.layer != end.layer)
			continue;
		ev.ts = clock++; /* the live table keeps the lower bound */
		rc = io_live_apply(live, &ev, &closed);
		if (rc < 0)
			break;
		if (rc == 1)
			buffer_row(o, closed.ts, closed.ts, ev.ts, closed.bytes);
		else if (ev.kind == MT_EVENT_FREE && ev.alloc.bytes)
			buffer_row(o, ev.ts, 0, ev.ts, ev.alloc.bytes);
		else
			continue;
		end.rows++;
	}
	if (rc >= 0) {
		end.end = clock;
		rc = io_live_each(live, unfreed, &end);
	}
	if (rc == -ENOMEM)
		rc = mt_fail(x->err, x->errlen, rc, "out of memory");
	io_out_flush(o);
	x->res->records = end.rows;
out:
	mt_iter_free(it);
	io_live_free(live);
	free(o);
	return rc;
}

const struct mt_interop_format io_format_minimalloc = {
	.name = "minimalloc",
	.description = "MiniMalloc CSV, for offline packing",
	.extensions = ".minimalloc.csv",
	.export = export_minimalloc,
};
