/* format-csv.c — every event as one CSV row, in trace order, streamed.
 *
 * Columns (the first line names them; a field that does not apply to the
 * kind is empty):
 *   ts_ns           event time, ns on the trace's clock
 *   kind            alloc, free, alloc_failed, kernel, memcpy, memset,
 *                   range, sample, pool
 *   process,device  row ids (memtrace info lists them)
 *   layer           request or driver (alloc, free, alloc_failed)
 *   address         alloc/free address; pool: the pool's handle
 *   bytes           alloc/free size, alloc_failed request, copy size,
 *                   pool reserved bytes, sample: this process's share
 *   stream          stream id
 *   reuse_delay_ns  free: until the memory could be reused
 *   end_ns          kernel, copy, range end (empty for a range never closed)
 *   free_bytes      alloc_failed: device memory free then
 *   used_bytes      sample: device memory in use; pool: bytes in use
 *   api, mem_kind   allocation API and memory kind (alloc, free, failed)
 *   name            kernel or range name; copy direction; pool operation
 *   domain          range domain
 *   site            call stack, innermost frame first, frames joined by ';'
 * Text fields are quoted when they hold a comma, a quote or a newline.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "interop-private.h"

static const char *const copy_kinds[] = { "unknown", "htod", "dtoh", "dtod", "htoh", "ptop" };
static const char *const pool_ops[] = { "create", "trim", "destroy", "grow" };

/* A text field as written: frames joined by ';', quoted when needed. */
struct text {
	char *s;
	size_t n;
};

struct csv {
	struct io_out o;
	struct mt_reader *r;
	struct text *fields; /* by string id, built on first use */
	size_t nfields;
};

static const struct text none = { "", 0 };

/* The string with this id as a CSV field (a copy: the table may move);
 * s is NULL when out of memory. */
static struct text field(struct csv *c, uint32_t id)
{
	const char *s;
	char *f, *p;
	size_t len = 2;
	bool quote;

	if (!id)
		return none;
	if (id >= c->nfields) {
		size_t n = (size_t)id * 2;
		struct text *v = realloc(c->fields, n * sizeof(*v));
		if (!v)
			return (struct text){ NULL, 0 };
		memset(v + c->nfields, 0, (n - c->nfields) * sizeof(*v));
		c->fields = v;
		c->nfields = n;
	}
	if (c->fields[id].s)
		return c->fields[id];
	s = mt_reader_string(c->r, id);
	if (!s)
		s = "";
	for (const char *q = s; *q; q++)
		len += *q == '"' ? 2 : 1;
	quote = strpbrk(s, ",\"") != NULL;
	f = p = malloc(len + 1);
	if (!f)
		return (struct text){ NULL, 0 };
	if (quote)
		*p++ = '"';
	for (; *s; s++) {
		if (*s == '"')
			*p++ = '"';
		*p++ = *s == '\n' ? ';' : *s;
	}
	if (quote)
		*p++ = '"';
	*p = 0;
	c->fields[id] = (struct text){ f, (size_t)(p - f) };
	return c->fields[id];
}

static char *u64_field(char *p, uint64_t v)
{
	*p++ = ',';
	return io_put_u64(p, v);
}

/* A short constant name (kind, layer, API, memory kind). */
static char *name_field(char *p, const char *s)
{
	size_t n = strlen(s);

	*p++ = ',';
	memcpy(p, s, n);
	return p + n;
}

static char *empty(char *p, int n)
{
	memset(p, ',', (size_t)n);
	return p + n;
}

static const char *copy_name(const struct mt_event *ev)
{
	if (ev->kind == MT_EVENT_MEMSET)
		return "";
	return ev->copy.copy_kind < sizeof(copy_kinds) / sizeof(copy_kinds[0])
	               ? copy_kinds[ev->copy.copy_kind]
	               : "unknown";
}

/* Fields 1 to 14 (ts_ns to mem_kind) of the row at p; the text fields
 * into *name, *domain, *site. */
static char *numbers(struct csv *c, const struct mt_event *ev, char *p, struct text *name,
                     struct text *domain, struct text *site)
{
	p = io_put_u64(p, ev->ts);
	p = name_field(p, mt_event_kind_name(ev->kind));
	p = u64_field(p, ev->process);
	p = u64_field(p, ev->device);
	switch (ev->kind) {
	case MT_EVENT_ALLOC:
	case MT_EVENT_FREE:
		p = name_field(p, mt_layer_name(ev->alloc.layer));
		p = u64_field(p, ev->alloc.address);
		p = u64_field(p, ev->alloc.bytes);
		p = u64_field(p, ev->alloc.stream);
		p = ev->kind == MT_EVENT_FREE ? u64_field(p, ev->alloc.reuse_delay) : empty(p, 1);
		p = empty(p, 3);
		p = name_field(p, mt_api_name(ev->alloc.api));
		p = name_field(p, mt_mem_kind_name(ev->alloc.mem_kind));
		*site = field(c, ev->alloc.site);
		break;
	case MT_EVENT_ALLOC_FAILED:
		p = name_field(p, mt_layer_name(ev->failed.layer));
		p = empty(p, 1);
		p = u64_field(p, ev->failed.bytes);
		p = u64_field(p, ev->failed.stream);
		p = empty(p, 2);
		p = u64_field(p, ev->failed.free_bytes);
		p = empty(p, 1);
		p = name_field(p, mt_api_name(ev->failed.api));
		p = empty(p, 1);
		*site = field(c, ev->failed.site);
		break;
	case MT_EVENT_KERNEL:
		p = empty(p, 3);
		p = u64_field(p, ev->kernel.stream);
		p = empty(p, 1);
		p = u64_field(p, ev->kernel.end);
		p = empty(p, 4);
		*name = field(c, ev->kernel.name);
		break;
	case MT_EVENT_MEMCPY:
	case MT_EVENT_MEMSET:
		p = empty(p, 2);
		p = u64_field(p, ev->copy.bytes);
		p = u64_field(p, ev->copy.stream);
		p = empty(p, 1);
		p = u64_field(p, ev->copy.end);
		p = empty(p, 4);
		break;
	case MT_EVENT_RANGE:
		p = empty(p, 5);
		p = ev->range.end != MT_TIME_UNKNOWN ? u64_field(p, ev->range.end) : empty(p, 1);
		p = empty(p, 4);
		*name = field(c, ev->range.name);
		*domain = field(c, ev->range.domain);
		break;
	case MT_EVENT_SAMPLE:
		p = empty(p, 2);
		p = u64_field(p, ev->sample.process_bytes);
		p = empty(p, 4);
		p = u64_field(p, ev->sample.used_bytes);
		p = empty(p, 2);
		break;
	case MT_EVENT_POOL:
		p = empty(p, 1);
		p = u64_field(p, ev->pool.pool);
		p = u64_field(p, ev->pool.reserved_bytes);
		p = empty(p, 4);
		p = u64_field(p, ev->pool.used_bytes);
		p = empty(p, 2);
		break;
	default:
		p = empty(p, 10);
		break;
	}
	return p;
}

/* Appends ",TEXT" at p. */
static char *text_field(char *p, struct text t)
{
	*p++ = ',';
	memcpy(p, t.s, t.n);
	return p + t.n;
}

static int row(struct csv *c, const struct mt_event *ev)
{
	struct text name = none, domain = none, site = none;
	struct io_out *o = &c->o;
	char *start = io_out_reserve(o, 512), *p;
	size_t more;

	p = numbers(c, ev, start, &name, &domain, &site);
	if (!name.s || !domain.s || !site.s)
		return -ENOMEM;
	/* names that are constants go in with the numbers */
	if (ev->kind == MT_EVENT_POOL)
		p = name_field(p, ev->pool.op < sizeof(pool_ops) / sizeof(pool_ops[0])
		                          ? pool_ops[ev->pool.op]
		                          : "unknown");
	else if (ev->kind == MT_EVENT_MEMCPY || ev->kind == MT_EVENT_MEMSET)
		p = name_field(p, copy_name(ev));
	more = name.n + domain.n + site.n + 4;
	if (more <= 512 - (size_t)(p - start)) {
		/* all of it fits in what was reserved */
		if (ev->kind != MT_EVENT_POOL && ev->kind != MT_EVENT_MEMCPY &&
		    ev->kind != MT_EVENT_MEMSET)
			p = text_field(p, name);
		p = text_field(p, domain);
		p = text_field(p, site);
		*p++ = '\n';
		io_out_commit(o, p);
		return 0;
	}
	io_out_commit(o, p);
	if (ev->kind != MT_EVENT_POOL && ev->kind != MT_EVENT_MEMCPY &&
	    ev->kind != MT_EVENT_MEMSET) {
		io_out_char(o, ',');
		io_out_bytes(o, name.s, name.n);
	}
	io_out_char(o, ',');
	io_out_bytes(o, domain.s, domain.n);
	io_out_char(o, ',');
	io_out_bytes(o, site.s, site.n);
	io_out_char(o, '\n');
	return 0;
}

static int export_csv(struct io_export *x)
{
	struct csv *c = calloc(1, sizeof(*c));
	struct mt_iter *it = NULL;
	struct mt_event ev;
	int rc;

	if (!c)
		return mt_fail(x->err, x->errlen, -ENOMEM, "out of memory");
	c->o.f = x->out;
	c->r = x->r;
	io_out_str(&c->o, "ts_ns,kind,process,device,layer,address,bytes,stream,reuse_delay_ns,"
	                  "end_ns,free_bytes,used_bytes,api,mem_kind,name,domain,site\n");
	rc = io_export_iter(x, 0, &it, &x->total);
	while (rc >= 0 && (rc = io_export_next(x, it, &ev)) > 0) {
		if ((rc = row(c, &ev)) < 0)
			rc = mt_fail(x->err, x->errlen, rc, "out of memory");
		x->res->records++;
	}
	io_out_flush(&c->o);
	mt_iter_free(it);
	for (size_t i = 0; i < c->nfields; i++)
		free(c->fields[i].s);
	free(c->fields);
	free(c);
	return rc;
}

const struct mt_interop_format io_format_csv = {
	.name = "csv",
	.description = "one CSV row per event (columns: line 1)",
	.extensions = ".csv",
	.export = export_csv,
};
