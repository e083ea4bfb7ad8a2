/* format-rmm.c — RMM logs: the CSV rmm::mr::logging_resource_adaptor writes
 * (rapidsai/rmm), "Thread,Time,Action,Pointer,Size,Stream", one row per
 * allocate, free (or deallocate) and "allocate failure", and that RMM's
 * REPLAY_BENCHMARK replays.
 *
 * Import: each row becomes a request-layer event of one process on one
 * device (the log names neither): allocate an alloc, free a free,
 * "allocate failure" an alloc_failed. Time is read as seconds since the
 * epoch with a fraction ("1634567890.123456", current RMM) or as a time of
 * day ("09:53:30.557066" or "09:53:30:557066", older RMM; a time earlier
 * than the row before by more than 12 hours is taken as the next day).
 * Pointer and Stream are hex (0x...) or decimal. A time earlier than the
 * row before is raised to it: the rows' order is the truth.
 * Export: the request layer (the driver layer when the trace has no
 * requests) as such rows; Thread is the process's pid, Time seconds with
 * nine decimals on the trace's clock, Pointer and Stream hex.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "interop-private.h"

#define HEADER "Thread,Time,Action,Pointer,Size,Stream"
#define DAY_NS (86400ull * 1000000000ull)

static size_t skip_bom(const uint8_t *data, size_t len)
{
	return len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0;
}

static bool detect(const uint8_t *data, size_t len)
{
	size_t i = skip_bom(data, len);

	return len - i >= sizeof(HEADER) - 1 && !memcmp(data + i, HEADER, sizeof(HEADER) - 1);
}

/* ---- import ------------------------------------------------------------------ */

struct line {
	const char *field[6];
	size_t len[6];
	size_t no; /* line number */
};

/* Parses an unsigned number, hex with 0x or decimal, filling the whole
 * field. */
static bool number(const char *s, size_t n, uint64_t *v)
{
	int base = 10;
	uint64_t x = 0;

	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		n -= 2;
	}
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned d;
		if (s[i] >= '0' && s[i] <= '9')
			d = (unsigned)(s[i] - '0');
		else if (base == 16 && s[i] >= 'a' && s[i] <= 'f')
			d = (unsigned)(s[i] - 'a' + 10);
		else if (base == 16 && s[i] >= 'A' && s[i] <= 'F')
			d = (unsigned)(s[i] - 'A' + 10);
		else
			return false;
		if (x > (UINT64_MAX - d) / (uint64_t)base)
			return false;
		x = x * (uint64_t)base + d;
	}
	*v = x;
	return true;
}

/* A fraction of a second ("557066") as ns. */
static bool fraction(const char *s, size_t n, uint64_t *ns)
{
	uint64_t v = 0, scale = 1000000000;

	if (!n || n > 9)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
		scale /= 10;
	}
	*ns = v * scale;
	return true;
}

/* "SECONDS.FRACTION" or "HH:MM:SS[.:]FRACTION" as ns; *of_day says
 * which. */
static bool parse_time(const char *s, size_t n, uint64_t *ns, bool *of_day)
{
	const char *colon = memchr(s, ':', n);
	uint64_t sec, h, m, frac = 0;
	size_t i;

	if (!colon) {
		const char *dot = memchr(s, '.', n);
		size_t whole = dot ? (size_t)(dot - s) : n;
		if (!number(s, whole, &sec) || sec > UINT64_MAX / 1000000000ull - 1 ||
		    (dot && !fraction(dot + 1, n - whole - 1, &frac)))
			return false;
		*ns = sec * 1000000000ull + frac;
		*of_day = false;
		return true;
	}
	/* HH:MM:SS then '.' or ':' then the fraction */
	if (n < 8 || s[2] != ':' || s[5] != ':' || !number(s, 2, &h) || !number(s + 3, 2, &m) ||
	    !number(s + 6, 2, &sec) || h > 23 || m > 59 || sec > 60)
		return false;
	i = 8;
	if (i < n && (s[i] == '.' || s[i] == ':') && !fraction(s + i + 1, n - i - 1, &frac))
		return false;
	if (i < n && s[i] != '.' && s[i] != ':')
		return false;
	*ns = ((h * 60 + m) * 60 + sec) * 1000000000ull + frac;
	*of_day = true;
	return true;
}

/* Splits the line at [p, end) into six fields. */
static bool split(const char *p, const char *end, struct line *l)
{
	for (int f = 0; f < 6; f++) {
		const char *comma = f < 5 ? memchr(p, ',', (size_t)(end - p)) : end;
		if (!comma)
			return false;
		l->field[f] = p;
		l->len[f] = (size_t)(comma - p);
		p = comma + 1;
	}
	return true;
}

static bool is(const struct line *l, int f, const char *s)
{
	return l->len[f] == strlen(s) && !memcmp(l->field[f], s, l->len[f]);
}

struct rmm_import {
	struct io_import *im;
	uint32_t process, device;
	uint64_t last_ts, day;
	bool have_ts;
};

static int bad_line(struct rmm_import *ri, const struct line *l, const char *what)
{
	return mt_fail(ri->im->err, ri->im->errlen, -EBADMSG, "RMM log line %zu: %s", l->no, what);
}

static int row_event(struct rmm_import *ri, const struct line *l)
{
	struct mt_event ev = { .process = ri->process, .device = ri->device };
	uint64_t ts, ptr, size, stream;
	bool of_day;
	int rc;

	if (!parse_time(l->field[1], l->len[1], &ts, &of_day))
		return bad_line(ri, l,
		                "the time is neither SECONDS.FRACTION nor HH:MM:SS.FRACTION");
	if (!number(l->field[3], l->len[3], &ptr) || !number(l->field[4], l->len[4], &size) ||
	    !number(l->field[5], l->len[5], &stream))
		return bad_line(ri, l, "Pointer, Size or Stream is not a number");
	if (of_day) {
		if (ri->have_ts && ts + ri->day + DAY_NS / 2 < ri->last_ts)
			ri->day += DAY_NS; /* past midnight */
		ts += ri->day;
	}
	if (ri->have_ts && ts < ri->last_ts) {
		ts = ri->last_ts;
		ri->im->res->clamped++;
	}
	if (!ri->have_ts)
		ri->im->res->first_ts = ts;
	ri->last_ts = ts;
	ri->have_ts = true;
	ev.ts = ts;
	if (is(l, 2, "allocate failure")) {
		ev.kind = MT_EVENT_ALLOC_FAILED;
		ev.failed.bytes = size;
		ev.failed.stream = stream;
		ev.failed.error = 2; /* out of memory */
		ev.failed.layer = MT_LAYER_REQUEST;
		ev.failed.api = MT_API_IMPORT;
	} else if (is(l, 2, "allocate") || is(l, 2, "free") || is(l, 2, "deallocate")) {
		ev.kind = is(l, 2, "allocate") ? MT_EVENT_ALLOC : MT_EVENT_FREE;
		ev.alloc.address = ptr;
		ev.alloc.bytes = size;
		ev.alloc.stream = stream;
		ev.alloc.layer = MT_LAYER_REQUEST;
		ev.alloc.mem_kind = MT_MEM_DEVICE;
		ev.alloc.api = MT_API_IMPORT;
	} else {
		ri->im->res->skipped++;
		return 0;
	}
	rc = ri->im->sink->append(ri->im->sink, &ev);
	if (rc < 0)
		return mt_fail(ri->im->err, ri->im->errlen, rc, "%s", ri->im->sink->err);
	ri->im->res->events++;
	return 0;
}

static int import_rmm(struct io_import *im)
{
	struct rmm_import ri = { .im = im };
	struct mt_process p = { .command_line = im->path, .hostname = "" };
	struct mt_device d = { .name = "", .uuid = "", .driver_version = "", .cuda_version = "" };
	const char *s = (const char *)im->data + skip_bom(im->data, im->len);
	const char *end = (const char *)im->data + im->len;
	struct line l = { .no = 1 };
	int rc;

	if ((rc = im->sink->add_process(im->sink, &p, &ri.process)) < 0 ||
	    (rc = im->sink->add_device(im->sink, &d, &ri.device)) < 0)
		return mt_fail(im->err, im->errlen, rc, "%s", im->sink->err);
	s = memchr(s, '\n', (size_t)(end - s)); /* past the header */
	while (s && ++s < end) {
		const char *eol = memchr(s, '\n', (size_t)(end - s));
		const char *stop = eol ? eol : end;
		l.no++;
		if (stop > s && stop[-1] == '\r')
			stop--;
		if (stop > s) {
			if (!split(s, stop, &l))
				return bad_line(&ri, &l, "not six comma-separated fields");
			if ((rc = row_event(&ri, &l)) < 0)
				return rc;
			im->res->entries++;
		}
		if (im->progress && (l.no & 0xffff) == 0)
			im->progress(im->progress_arg, (uint64_t)(s - (const char *)im->data),
			             im->len);
		s = eol;
	}
	return 0;
}

/* ---- export -------------------------------------------------------------------- */

/* The pid of each process row, by id (0 when unknown). */
static uint64_t *pids(struct mt_reader *r, size_t *n)
{
	uint64_t *v;

	*n = 1;
	for (size_t i = 0; i < mt_reader_process_count(r); i++)
		if (mt_reader_process(r, i)->id >= *n)
			*n = (size_t)mt_reader_process(r, i)->id + 1;
	v = calloc(*n, sizeof(*v));
	for (size_t i = 0; v && i < mt_reader_process_count(r); i++) {
		const struct mt_process *p = mt_reader_process(r, i);
		v[p->id] = p->pid > 0 ? (uint64_t)p->pid : 0;
	}
	return v;
}

/* Exactly nine digits, zero-padded. */
static char *put_nine(char *p, uint64_t v)
{
	for (int i = 8; i >= 0; i--, v /= 10)
		p[i] = (char)('0' + v % 10);
	return p + 9;
}

static int export_rmm(struct io_export *x)
{
	struct io_out *o = io_out_new(x->out);
	struct mt_iter *it = NULL;
	struct mt_event ev;
	size_t npids;
	uint64_t *pid = pids(x->r, &npids);
	unsigned layer;
	int rc;

	if (!o || !pid) {
		free(o);
		free(pid);
		return mt_fail(x->err, x->errlen, -ENOMEM, "out of memory");
	}
	io_out_str(o, HEADER "\n");
	rc = mt_reader_request_layer(x->r, &layer);
	if (rc < 0)
		rc = mt_fail(x->err, x->errlen, rc, "%s", mt_reader_message(x->r));
	else
		rc = io_export_iter(x,
		                    MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE) |
		                            MT_KIND_BIT(MT_EVENT_ALLOC_FAILED),
		                    &it, &x->total);
	while (rc >= 0 && (rc = io_export_next(x, it, &ev)) > 0) {
		bool failed = ev.kind == MT_EVENT_ALLOC_FAILED;
		char *p;

		if ((failed ? ev.failed.layer : ev.alloc.layer) != layer)
			continue;
		p = io_out_reserve(o, 160);
		p = io_put_u64(p, ev.process < npids ? pid[ev.process] : 0);
		*p++ = ',';
		p = io_put_u64(p, ev.ts / 1000000000u);
		*p++ = '.';
		p = put_nine(p, ev.ts % 1000000000u);
		if (failed) {
			memcpy(p, ",allocate failure,", 18);
			p += 18;
		} else if (ev.kind == MT_EVENT_ALLOC) {
			memcpy(p, ",allocate,", 10);
			p += 10;
		} else {
			memcpy(p, ",free,", 6);
			p += 6;
		}
		io_out_commit(o, p);
		io_out_hex(o, failed ? 0 : ev.alloc.address);
		io_out_char(o, ',');
		io_out_u64(o, failed ? ev.failed.bytes : ev.alloc.bytes);
		io_out_char(o, ',');
		io_out_hex(o, failed ? ev.failed.stream : ev.alloc.stream);
		io_out_char(o, '\n');
		x->res->records++;
	}
	io_out_flush(o);
	mt_iter_free(it);
	free(o);
	free(pid);
	return rc;
}

const struct mt_interop_format io_format_rmm = {
	.name = "rmm",
	.description = "RMM log (logging_resource_adaptor CSV)",
	.extensions = ".rmm.csv",
	.detect = detect,
	.import = import_rmm,
	.export = export_rmm,
};
