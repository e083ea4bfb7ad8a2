/* format-chrome.c — a trace as Chrome's JSON trace event format, which
 * chrome://tracing, Perfetto's UI and speedscope open; for small traces
 * (every event is a JSON object). The timeline's tracks (timeline.c):
 * counters as "ph":"C" events named after their track with one series
 * "bytes", NVTX ranges and kernels as "ph":"X" complete events, failed
 * allocations as "ph":"i" instants; process and thread names as "ph":"M"
 * metadata. Times are microseconds since the trace's first event.
 * Each object is made with jansson and written as it comes.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <jansson.h>

#include "interop-private.h"

#define REPLAYS_PID (1 << 30)  /* saved replays belong to no process */
#define STREAM_TIDS (1u << 30) /* kernel tracks' made-up thread ids */

struct chrome {
	struct io_out *o;
	uint64_t t0;
	bool any;
};

static double us(const struct chrome *c, uint64_t ts)
{
	return ts > c->t0 ? (double)(ts - c->t0) / 1000.0 : 0.0;
}

static int64_t pid_of(const struct io_track *t)
{
	return t->kind == IO_TRACK_REPLAY ? REPLAYS_PID : t->pid;
}

static int64_t tid_of(const struct io_track *t)
{
	if (t->kind == IO_TRACK_RANGES)
		return t->thread;
	if (t->kind == IO_TRACK_KERNELS)
		return STREAM_TIDS + (int64_t)t->uuid;
	return 0;
}

/* Writes one event object (and drops the reference). */
static int put(struct chrome *c, json_t *e)
{
	char *text = e ? json_dumps(e, JSON_COMPACT) : NULL;

	json_decref(e);
	if (!text)
		return -ENOMEM;
	if (c->any)
		io_out_str(c->o, ",\n");
	io_out_str(c->o, text);
	c->any = true;
	free(text);
	return 0;
}

static int metadata(struct chrome *c, const char *what, int64_t pid, int64_t tid, const char *name)
{
	return put(c, json_pack("{s:s, s:s, s:I, s:I, s:{s:s}}", "name", what, "ph", "M", "pid",
	                        (json_int_t)pid, "tid", (json_int_t)tid, "args", "name", name));
}

static int track(void *arg, const struct io_track *t)
{
	struct chrome *c = arg;

	if (t->kind == IO_TRACK_PROCESS)
		return metadata(c, "process_name", t->pid, 0, t->name);
	if (t->kind == IO_TRACK_REPLAY)
		return metadata(c, "process_name", REPLAYS_PID, 0, "saved replays");
	if (t->kind == IO_TRACK_RANGES || t->kind == IO_TRACK_KERNELS)
		return metadata(c, "thread_name", pid_of(t), tid_of(t), t->name);
	return 0;
}

static int counter(void *arg, const struct io_track *t, uint64_t ts, uint64_t value)
{
	struct chrome *c = arg;

	return put(c, json_pack("{s:s, s:s, s:I, s:f, s:{s:I}}", "name", t->name, "ph", "C", "pid",
	                        (json_int_t)pid_of(t), "ts", us(c, ts), "args", "bytes",
	                        (json_int_t)value));
}

static int slice(void *arg, const struct io_track *t, uint64_t ts, uint64_t end, const char *name,
                 const char *category)
{
	struct chrome *c = arg;

	return put(
	        c,
	        json_pack("{s:s, s:s, s:s, s:I, s:I, s:f, s:f}", "name", name, "cat",
	                  *category ? category : (t->kind == IO_TRACK_KERNELS ? "kernel" : "range"),
	                  "ph", "X", "pid", (json_int_t)pid_of(t), "tid", (json_int_t)tid_of(t),
	                  "ts", us(c, ts), "dur", end > ts ? (double)(end - ts) / 1000.0 : 0.0));
}

static int slice_end(void *arg, const struct io_track *t, uint64_t end)
{
	(void)arg;
	(void)t;
	(void)end;
	return 0; /* a complete event holds its end */
}

static int instant(void *arg, const struct io_track *t, uint64_t ts, uint64_t requested,
                   uint64_t free_bytes)
{
	struct chrome *c = arg;
	char name[64], size[32];

	snprintf(name, sizeof(name), "OOM: %s requested",
	         mt_size_format(requested, size, sizeof(size)));
	return put(c, json_pack("{s:s, s:s, s:s, s:I, s:I, s:f, s:{s:I, s:I}}", "name", name, "ph",
	                        "i", "s", "p", "pid", (json_int_t)t->pid, "tid", (json_int_t)0,
	                        "ts", us(c, ts), "args", "requested_bytes", (json_int_t)requested,
	                        "device_free_bytes", (json_int_t)free_bytes));
}

static const struct io_timeline_ops ops = { track, counter, slice, slice_end, instant };

static int export_chrome(struct io_export *x)
{
	struct chrome c = { .t0 = io_export_first_ts(x) };
	int rc;

	c.o = io_out_new(x->out);
	if (!c.o)
		return mt_fail(x->err, x->errlen, -ENOMEM, "out of memory");
	io_out_str(c.o, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
	rc = io_timeline_walk(x, &ops, &c);
	io_out_str(c.o, "\n]}\n");
	io_out_flush(c.o);
	free(c.o);
	return rc;
}

const struct mt_interop_format io_format_chrome = {
	.name = "chrome",
	.description = "Chrome JSON trace events (small traces)",
	.extensions = ".json",
	.export = export_chrome,
};
