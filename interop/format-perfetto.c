/* format-perfetto.c — a trace as a Perfetto trace (protobuf, written by
 * hand), which ui.perfetto.dev and trace_processor open: the timeline's
 * tracks (timeline.c) as TrackDescriptors, under a process track per
 * process; counters in bytes (CounterDescriptor unit UNIT_SIZE_BYTES) as
 * TYPE_COUNTER TrackEvents, NVTX ranges and kernels as
 * TYPE_SLICE_BEGIN/END, failed allocations as TYPE_INSTANT with the
 * requested and free bytes as debug annotations. Timestamps are the
 * trace's, in ns. All packets are on one sequence (id 1) that clears
 * incremental state once and then uses none.
 *
 * Model: Perfetto's protos/perfetto/trace/ — field numbers as there:
 * Trace.packet 1; TracePacket timestamp 8, trusted_packet_sequence_id 10,
 * track_event 11, sequence_flags 13, track_descriptor 60; TrackDescriptor
 * uuid 1, name 2, process 3, parent_uuid 5, counter 8; ProcessDescriptor
 * pid 1, process_name 6; CounterDescriptor unit 3; TrackEvent
 * debug_annotations 4, type 9, track_uuid 11, categories 22, name 23,
 * counter_value 30; DebugAnnotation uint_value 3, name 10.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "interop-private.h"

enum {
	TRACE_PACKET = 1,
	PACKET_TIMESTAMP = 8,
	PACKET_SEQUENCE_ID = 10,
	PACKET_TRACK_EVENT = 11,
	PACKET_SEQUENCE_FLAGS = 13,
	PACKET_TRACK_DESCRIPTOR = 60,
	TRACK_UUID = 1,
	TRACK_NAME = 2,
	TRACK_PROCESS = 3,
	TRACK_PARENT = 5,
	TRACK_COUNTER = 8,
	PROCESS_PID = 1,
	PROCESS_NAME = 6,
	COUNTER_UNIT = 3,
	EVENT_ANNOTATION = 4,
	EVENT_TYPE = 9,
	EVENT_TRACK = 11,
	EVENT_CATEGORY = 22,
	EVENT_NAME = 23,
	EVENT_COUNTER_VALUE = 30,
	ANNOTATION_UINT = 3,
	ANNOTATION_NAME = 10,
};

enum { UNIT_SIZE_BYTES = 3 };
enum { SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3, COUNTER = 4 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1 };

struct perfetto {
	struct io_out *o;
	struct io_pb pb;
	bool first;
};

/* Starts a packet (timestamp 0: none). */
static void packet(struct perfetto *p, uint64_t ts)
{
	p->pb.n = 0;
	if (ts)
		io_pb_uint(&p->pb, PACKET_TIMESTAMP, ts);
	io_pb_uint(&p->pb, PACKET_SEQUENCE_ID, 1);
	if (p->first) {
		io_pb_uint(&p->pb, PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
		p->first = false;
	}
}

/* Writes the packet as a Trace.packet field. */
static int emit(struct perfetto *p)
{
	char head[11], *h = head;
	uint64_t n = p->pb.n;

	if (p->pb.failed)
		return -ENOMEM;
	*h++ = TRACE_PACKET << 3 | 2;
	for (; n >= 0x80; n >>= 7)
		*h++ = (char)(n | 0x80);
	*h++ = (char)n;
	io_out_bytes(p->o, head, (size_t)(h - head));
	io_out_bytes(p->o, p->pb.buf, p->pb.n);
	return 0;
}

static int track(void *arg, const struct io_track *t)
{
	struct perfetto *p = arg;
	size_t d, sub;

	packet(p, 0);
	d = io_pb_begin(&p->pb, PACKET_TRACK_DESCRIPTOR);
	io_pb_uint(&p->pb, TRACK_UUID, t->uuid);
	if (t->parent)
		io_pb_uint(&p->pb, TRACK_PARENT, t->parent);
	if (t->kind == IO_TRACK_PROCESS) {
		sub = io_pb_begin(&p->pb, TRACK_PROCESS);
		io_pb_uint(&p->pb, PROCESS_PID, (uint64_t)t->pid);
		io_pb_string(&p->pb, PROCESS_NAME, t->name);
		io_pb_end(&p->pb, sub);
	} else {
		io_pb_string(&p->pb, TRACK_NAME, t->name);
	}
	if (t->counter) {
		sub = io_pb_begin(&p->pb, TRACK_COUNTER);
		io_pb_uint(&p->pb, COUNTER_UNIT, UNIT_SIZE_BYTES);
		io_pb_end(&p->pb, sub);
	}
	io_pb_end(&p->pb, d);
	return emit(p);
}

/* Starts a packet holding a TrackEvent of type on t; returns the event's
 * start for io_pb_end. */
static size_t track_event(struct perfetto *p, const struct io_track *t, uint64_t ts, int type)
{
	size_t e;

	packet(p, ts);
	e = io_pb_begin(&p->pb, PACKET_TRACK_EVENT);
	io_pb_uint(&p->pb, EVENT_TYPE, (uint64_t)type);
	io_pb_uint(&p->pb, EVENT_TRACK, t->uuid);
	return e;
}

static int counter(void *arg, const struct io_track *t, uint64_t ts, uint64_t value)
{
	struct perfetto *p = arg;
	size_t e = track_event(p, t, ts, COUNTER);

	io_pb_uint(&p->pb, EVENT_COUNTER_VALUE, value);
	io_pb_end(&p->pb, e);
	return emit(p);
}

static int slice(void *arg, const struct io_track *t, uint64_t ts, uint64_t end, const char *name,
                 const char *category)
{
	struct perfetto *p = arg;
	size_t e = track_event(p, t, ts, SLICE_BEGIN);

	(void)end;
	if (*category)
		io_pb_string(&p->pb, EVENT_CATEGORY, category);
	io_pb_string(&p->pb, EVENT_NAME, name);
	io_pb_end(&p->pb, e);
	return emit(p);
}

static int slice_end(void *arg, const struct io_track *t, uint64_t end)
{
	struct perfetto *p = arg;
	size_t e = track_event(p, t, end, SLICE_END);

	io_pb_end(&p->pb, e);
	return emit(p);
}

static void annotation(struct perfetto *p, const char *name, uint64_t value)
{
	size_t a = io_pb_begin(&p->pb, EVENT_ANNOTATION);

	io_pb_string(&p->pb, ANNOTATION_NAME, name);
	io_pb_uint(&p->pb, ANNOTATION_UINT, value);
	io_pb_end(&p->pb, a);
}

static int instant(void *arg, const struct io_track *t, uint64_t ts, uint64_t requested,
                   uint64_t free_bytes)
{
	struct perfetto *p = arg;
	size_t e = track_event(p, t, ts, INSTANT);
	char name[64], size[32];

	snprintf(name, sizeof(name), "OOM: %s requested",
	         mt_size_format(requested, size, sizeof(size)));
	io_pb_string(&p->pb, EVENT_NAME, name);
	annotation(p, "requested_bytes", requested);
	annotation(p, "device_free_bytes", free_bytes);
	io_pb_end(&p->pb, e);
	return emit(p);
}

static const struct io_timeline_ops ops = { track, counter, slice, slice_end, instant };

static int export_perfetto(struct io_export *x)
{
	struct perfetto p = { .first = true };
	int rc;

	p.o = io_out_new(x->out);
	if (!p.o)
		return mt_fail(x->err, x->errlen, -ENOMEM, "out of memory");
	rc = io_timeline_walk(x, &ops, &p);
	io_out_flush(p.o);
	io_pb_release(&p.pb);
	free(p.o);
	return rc;
}

const struct mt_interop_format io_format_perfetto = {
	.name = "perfetto",
	.description = "Perfetto trace (protobuf) for ui.perfetto.dev",
	.extensions = ".perfetto-trace .pftrace",
	.export = export_perfetto,
};
