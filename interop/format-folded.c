/* format-folded.c — the bytes live at one moment as folded stacks, the
 * input of flame-graph tools (flamegraph.pl, speedscope, inferno): one line
 * per call stack, "outermost;...;innermost BYTES", the request layer's live
 * allocations summed per call site ("[no call site]" for those without).
 * The moment is --at (since the device's first memory event, as report
 * and render take it), else the first moment the live bytes reach their
 * peak, so the lines add up to the peak memtrace info reports. Each device
 * is a root frame "device N" when more than one is written. Walks the
 * events once to the moment, holding only what is live.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "interop-private.h"
#include "memtrace-analyze.h"

struct stack {
	uint32_t site;
	uint64_t bytes;
};

struct folded {
	struct io_export *x;
	struct io_out *o;
	unsigned layer;
	struct io_map sums; /* site → index into stacks */
	struct stack *stacks;
	size_t nstacks, cap;
};

static int sum_site(void *arg, const struct io_live_entry *e)
{
	struct folded *f = arg;
	uint64_t i;

	if (e->layer != f->layer)
		return 0;
	if (io_map_get(&f->sums, e->site, 0, &i)) {
		f->stacks[i].bytes += e->bytes;
		return 0;
	}
	if (mt_array_grow((void **)&f->stacks, &f->cap, f->nstacks, sizeof(*f->stacks)) < 0 ||
	    io_map_put(&f->sums, e->site, 0, f->nstacks) < 0)
		return -ENOMEM;
	f->stacks[f->nstacks++] = (struct stack){ e->site, e->bytes };
	return 0;
}

/* Writes one frame, with ';' (the separator) made ':'. */
static void frame(struct io_out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		io_out_char(o, s[i] == ';' ? ':' : s[i]);
}

/* A call site's frames, outermost first. */
static void write_stack(struct folded *f, uint32_t site)
{
	const char *s = site ? mt_reader_string(f->x->r, site) : NULL;
	const char *end;

	if (!s || !*s) {
		io_out_str(f->o, "[no call site]");
		return;
	}
	end = s + strlen(s);
	while (end > s) {
		const char *start = end;
		while (start > s && start[-1] != '\n')
			start--;
		if (end > start) {
			frame(f->o, start, (size_t)(end - start));
			if (start > s)
				io_out_char(f->o, ';');
		}
		end = start > s ? start - 1 : s;
	}
}

static int by_site(const void *a, const void *b)
{
	const struct stack *x = a, *y = b;

	return x->site < y->site ? -1 : x->site > y->site;
}

/* Walks device's events to its moment and writes its stacks. */
static int device_stacks(struct folded *f, uint32_t device, bool root)
{
	struct mt_export_options opt = *f->x->opt;
	struct io_export one = *f->x;
	struct io_live *live = io_live_new();
	struct mt_query q = { .device = device };
	struct mt_iter *it = NULL;
	struct mt_event ev;
	uint64_t peak = 0, peak_ts = 0, t0 = 0, t1 = 0, until = MT_TIME_UNKNOWN;
	int rc;

	if (!live)
		return -ENOMEM;
	opt.device = device;
	one.opt = &opt;
	if (f->x->opt->at_set) {
		rc = mt_analyze_span(f->x->r, device, &t0, &t1);
		until = t0 + f->x->opt->at;
	} else {
		rc = mt_reader_peak_live(f->x->r, &q, f->layer, &peak, &peak_ts);
	}
	if (rc < 0) {
		io_live_free(live);
		return mt_fail(f->x->err, f->x->errlen, rc, "%s", mt_reader_message(f->x->r));
	}
	rc = io_export_iter(&one, MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE), &it,
	                    NULL);
	while (rc >= 0 && (rc = io_export_next(&one, it, &ev)) > 0) {
		if (ev.ts > until)
			break;
		if ((rc = io_live_apply(live, &ev, NULL)) < 0)
			break;
		/* the first moment the peak is reached */
		if (!f->x->opt->at_set && ev.ts >= peak_ts &&
		    io_live_bytes(live, device, f->layer) == peak)
			break;
	}
	mt_iter_free(it);
	f->nstacks = 0;
	io_map_release(&f->sums);
	if (rc >= 0)
		rc = io_live_each(live, sum_site, f);
	io_live_free(live);
	if (rc < 0)
		return rc;
	qsort(f->stacks, f->nstacks, sizeof(*f->stacks), by_site);
	for (size_t i = 0; i < f->nstacks; i++) {
		if (root) {
			io_out_str(f->o, "device ");
			io_out_u64(f->o, device);
			io_out_char(f->o, ';');
		}
		write_stack(f, f->stacks[i].site);
		io_out_char(f->o, ' ');
		io_out_u64(f->o, f->stacks[i].bytes);
		io_out_char(f->o, '\n');
		f->x->res->records++;
	}
	return 0;
}

static int export_folded(struct io_export *x)
{
	struct folded f = { .x = x };
	uint32_t *devices = NULL;
	size_t n = 0;
	int rc;

	f.o = io_out_new(x->out);
	if (!f.o)
		return mt_fail(x->err, x->errlen, -ENOMEM, "out of memory");
	rc = mt_reader_request_layer(x->r, &f.layer);
	if (rc >= 0)
		rc = mt_analyze_devices(x->r, &devices, &n, x->err, x->errlen);
	for (size_t i = 0; rc >= 0 && i < n; i++)
		if (!x->opt->device || devices[i] == x->opt->device)
			rc = device_stacks(&f, devices[i], !x->opt->device && n > 1);
	if (rc == -ENOMEM)
		rc = mt_fail(x->err, x->errlen, rc, "out of memory");
	io_out_flush(f.o);
	io_map_release(&f.sums);
	free(f.stacks);
	free(devices);
	free(f.o);
	return rc;
}

const struct mt_interop_format io_format_folded = {
	.name = "folded",
	.description = "folded stacks live at --at (default: peak)",
	.extensions = ".folded",
	.export = export_folded,
};
