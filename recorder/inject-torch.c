/* inject-torch.c — PyTorch's caching-allocator events as request-layer
 * events.
 *
 * Models: c10::cuda::CUDACachingAllocator's trace-tracker hook
 * (TraceEntry actions ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC,
 * SEGMENT_FREE, SEGMENT_MAP, SEGMENT_UNMAP, OOM). recorder/torch-bridge.cpp
 * attaches to the hook inside the program and calls
 * memtrace_torch_event() for each entry, under the allocator's own lock,
 * with the request's Python call site when it has one (--stacks python;
 * with --stacks native the site is taken here).
 *
 * - ALLOC: a request-layer alloc (the requested size, the CUPTI stream id).
 * - FREE_REQUESTED / FREE_COMPLETED: one request-layer free at the time of
 *   the request, whose reuse_delay is completed - requested (non-zero when
 *   the block was still in use on another stream, record_stream()).
 * - SEGMENT_*: the allocator's reserved total changes; kept as pool events
 *   on pool MT_TORCH_POOL (reserved and allocated bytes after the change).
 *   The segments themselves already are driver-layer events from CUPTI.
 * - OOM: a request-layer alloc_failed (free bytes as the allocator saw them).
 * An OOM, and a segment that raises the reserved peak, are followed by a
 * reading of the device memory in use (inject-sample.c), on this thread.
 *
 * The calling thread holds the allocator's lock, so it does only what must
 * happen there: the call site, the timestamp, the stream id (CUPTI's, from a
 * per-thread cache) and a store of the raw record into its device's
 * lock-free ring (inject-ring.c). The device's lock serializes its calls, so
 * a ring's order is their order, which the pairing of frees needs. The
 * flushing thread turns the records into events (rec_torch_drain, every
 * ~5 ms); a producer that finds its ring full does it itself.
 *
 * The timestamp is the TraceEntry's own when the bridge has given PyTorch's
 * clock (c10::getApproximateTime, the TSC on x86: memtrace_torch_clock),
 * which PyTorch reads anyway: the calling thread then reads no clock at all
 * (CUPTI's cost 33-48 ns an event on the H100 machines, a third of what the
 * recorder added to an event there). Each drain reads both clocks together
 * (an anchor) and turns the ticks of the records it drains into CUPTI's
 * nanoseconds on the line through the first anchor and that one; the
 * records drained lie between the two.
 */
#include "config.h"

#include <stdlib.h>

#include "inject-private.h"
#include "memtrace-recorder.h"

/* Actions as the bridge numbers them (its own enum, not c10's). */
enum torch_action {
	TORCH_ALLOC = 0,
	TORCH_FREE_REQUESTED = 1,
	TORCH_FREE_COMPLETED = 2,
	TORCH_SEGMENT_ALLOC = 3,
	TORCH_SEGMENT_FREE = 4,
	TORCH_SEGMENT_MAP = 5,
	TORCH_SEGMENT_UNMAP = 6,
	TORCH_OOM = 7,
};

/* Exported to the bridge. One allocator event of DEVICE, on the thread
 * that holds that device's allocator lock; ticks is the TraceEntry's time
 * on the clock given to memtrace_torch_clock (ignored when none was). */
void memtrace_torch_event(int action, int device, uint64_t address, uint64_t bytes, uint64_t stream,
                          uint32_t site, uint64_t ticks);
/* PyTorch's clock (the one TraceEntry times are read on), given once before
 * the hook is attached; later calls change nothing. */
void memtrace_torch_clock(uint64_t (*ticks_now)(void));

#define PENDING_SLOTS 65536 /* frees requested and not yet completed */
#define STREAM_SLOTS 256
#define RING_RECORDS 65536 /* per device; a full ring is drained by its producer */

struct pending {
	uint64_t address; /* 0 = free slot */
	uint64_t ts;
	uint64_t bytes;
	uint64_t stream;
	int device;
};

/* The consumer side: held to drain any ring, and guards what the drain
 * keeps (pending frees, totals). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending pending[PENDING_SLOTS];
static size_t pending_count;
static uint64_t reserved[REC_MAX_DEVICES];
static uint64_t allocated[REC_MAX_DEVICES];

/* PyTorch's clock, set once before the hook is attached (NULL: the records
 * carry rec_now's nanoseconds), and the anchors that map its ticks onto
 * rec_now's clock: the first taken, and the latest (lock held). */
static uint64_t (*_Atomic torch_clock)(void);
struct anchor {
	uint64_t ticks, ns;
};
static struct anchor first_anchor, last_anchor;
static double ns_per_tick; /* the line's slope, first to last anchor */

/* The reserved bytes as the producers see them, and their peak: a raise
 * asks for a reading of the device (rec_sample_peak). Touched only by the
 * calls for that device, which its allocator lock serializes. */
static uint64_t producer_reserved[REC_MAX_DEVICES];
static uint64_t producer_peak[REC_MAX_DEVICES];

/* One ring per CUDA ordinal, made on first use and kept while the process
 * lives (a producer may be using it at any time). */
static struct rec_ring *_Atomic rings[REC_MAX_DEVICES];

/* Stream handles and their CUPTI ids, behind a per-thread cache of the last
 * one looked up. */
static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
struct stream_entry {
	uint64_t handle;
	int device; /* the default stream (handle 0) differs per device */
	uint32_t id;
	bool used;
};
static struct stream_entry streams[STREAM_SLOTS];
static __thread struct stream_entry last_stream;

static size_t slot_of(uint64_t address)
{
	return (size_t)((address >> 9) * 0x9e3779b97f4a7c15ull >> 48) % PENDING_SLOTS;
}

/* streams_lock held */
static uint32_t stream_id_locked(int device, uint64_t handle)
{
	size_t h =
	        (size_t)((handle ^ (uint64_t)device) * 0x9e3779b97f4a7c15ull >> 56) % STREAM_SLOTS;

	for (size_t i = 0; i < STREAM_SLOTS; i++) {
		size_t s = (h + i) % STREAM_SLOTS;
		if (streams[s].used && streams[s].handle == handle && streams[s].device == device)
			return streams[s].id;
		if (!streams[s].used) {
			streams[s].used = true;
			streams[s].handle = handle;
			streams[s].device = device;
			streams[s].id = rec_device_stream_id(handle);
			return streams[s].id;
		}
	}
	return rec_device_stream_id(handle);
}

/* CUPTI's id of a stream of this device. On the calling thread: the default
 * stream's id comes from its current context. */
static uint32_t stream_id(int device, uint64_t handle)
{
	if (!last_stream.used || last_stream.handle != handle || last_stream.device != device) {
		pthread_mutex_lock(&streams_lock);
		last_stream.id = stream_id_locked(device, handle);
		pthread_mutex_unlock(&streams_lock);
		last_stream.handle = handle;
		last_stream.device = device;
		last_stream.used = true;
	}
	return last_stream.id;
}

static void emit_free(const struct pending *p, uint64_t completed)
{
	struct mt_event ev = { 0 };

	ev.kind = MT_EVENT_FREE;
	ev.ts = p->ts;
	ev.device = (uint32_t)p->device;
	ev.alloc.address = p->address;
	ev.alloc.bytes = p->bytes;
	ev.alloc.stream = p->stream;
	ev.alloc.reuse_delay = completed > p->ts ? completed - p->ts : 0;
	ev.alloc.layer = MT_LAYER_REQUEST;
	ev.alloc.mem_kind = MT_MEM_DEVICE;
	ev.alloc.api = MT_API_TORCH;
	rec_sink_push(&ev);
}

static void free_requested(int device, uint64_t address, uint64_t bytes, uint64_t stream,
                           uint64_t ts)
{
	size_t s = slot_of(address);

	if (pending_count >= PENDING_SLOTS / 2) {
		/* Should not happen; keep the event, lose only its delay. */
		struct pending p = { address, ts, bytes, stream, device };
		emit_free(&p, ts);
		return;
	}
	while (pending[s].address)
		s = (s + 1) % PENDING_SLOTS;
	pending[s] = (struct pending){ address, ts, bytes, stream, device };
	pending_count++;
}

static void free_completed(int device, uint64_t address, uint64_t ts)
{
	size_t s = slot_of(address);

	for (size_t n = 0; n < PENDING_SLOTS && pending[s].address; n++) {
		if (pending[s].address == address && pending[s].device == device) {
			emit_free(&pending[s], ts);
			/* backward-shift delete */
			size_t i = s;
			pending[i].address = 0;
			for (size_t j = (i + 1) % PENDING_SLOTS; pending[j].address;
			     j = (j + 1) % PENDING_SLOTS) {
				size_t home = slot_of(pending[j].address);
				if ((j > i && (home <= i || home > j)) ||
				    (j < i && home <= i && home > j)) {
					pending[i] = pending[j];
					pending[j].address = 0;
					i = j;
				}
			}
			pending_count--;
			return;
		}
		s = (s + 1) % PENDING_SLOTS;
	}
}

static void pool_change(int device, int64_t delta, uint64_t ts)
{
	struct mt_event ev = { 0 };

	reserved[device] += (uint64_t)delta;
	ev.kind = MT_EVENT_POOL;
	ev.ts = ts;
	ev.device = (uint32_t)device;
	ev.pool.pool = MT_TORCH_POOL;
	ev.pool.reserved_bytes = reserved[device];
	ev.pool.used_bytes = allocated[device];
	ev.pool.op = delta >= 0 ? MT_POOL_GROW : MT_POOL_TRIM;
	rec_sink_push(&ev);
}

/* Both clocks read together: PyTorch's ticks between two readings of
 * rec_now that lie close (a thread preempted in between would skew the
 * line), their middle as its nanoseconds. */
static struct anchor anchor_now(uint64_t (*ticks_now)(void))
{
	struct anchor a = { 0 };

	for (int i = 0; i < 8; i++) {
		uint64_t before = rec_now();
		a.ticks = ticks_now();
		uint64_t after = rec_now();
		a.ns = before + (after - before) / 2;
		if (after - before < 2000)
			break;
	}
	return a;
}

/* Takes the latest anchor and the line's slope; lock held. */
static void anchor_last(uint64_t (*ticks_now)(void))
{
	last_anchor = anchor_now(ticks_now);
	ns_per_tick = last_anchor.ticks == first_anchor.ticks
	                      ? 0
	                      : (double)(last_anchor.ns - first_anchor.ns) /
	                                (double)(last_anchor.ticks - first_anchor.ticks);
}

/* A record's time on rec_now's clock; lock held. */
static uint64_t ns_of(uint64_t stamp)
{
	int64_t since = (int64_t)(stamp - last_anchor.ticks);

	if (!atomic_load_explicit(&torch_clock, memory_order_relaxed))
		return stamp;
	return last_anchor.ns + (uint64_t)(int64_t)((double)since * ns_per_tick);
}

/* Turns one record of DEVICE's ring into events; lock held. */
static void process(const struct rec_ring_record *rec, void *arg)
{
	int device = (int)(uintptr_t)arg;
	struct mt_event ev = { 0 };
	struct rec_ring_record r = *rec;

	r.ts = ns_of(rec->ts);
	rec = &r;
	switch (rec->action) {
	case TORCH_ALLOC:
		ev.kind = MT_EVENT_ALLOC;
		ev.ts = rec->ts;
		ev.device = (uint32_t)device;
		ev.alloc.address = rec->address;
		ev.alloc.bytes = rec->bytes;
		ev.alloc.stream = rec->stream;
		ev.alloc.layer = MT_LAYER_REQUEST;
		ev.alloc.mem_kind = MT_MEM_DEVICE;
		ev.alloc.api = MT_API_TORCH;
		ev.alloc.site = rec->site;
		allocated[device] += rec->bytes;
		rec_sink_push(&ev);
		break;
	case TORCH_FREE_REQUESTED:
		allocated[device] -= rec->bytes;
		free_requested(device, rec->address, rec->bytes, rec->stream, rec->ts);
		break;
	case TORCH_FREE_COMPLETED:
		free_completed(device, rec->address, rec->ts);
		break;
	case TORCH_SEGMENT_ALLOC:
	case TORCH_SEGMENT_MAP:
		pool_change(device, (int64_t)rec->bytes, rec->ts);
		break;
	case TORCH_SEGMENT_FREE:
	case TORCH_SEGMENT_UNMAP:
		pool_change(device, -(int64_t)rec->bytes, rec->ts);
		break;
	case TORCH_OOM:
		ev.kind = MT_EVENT_ALLOC_FAILED;
		ev.ts = rec->ts;
		ev.device = (uint32_t)device;
		ev.failed.bytes = rec->bytes;
		ev.failed.free_bytes = rec->address; /* c10 puts free bytes in addr_ */
		ev.failed.stream = rec->stream;
		ev.failed.error = 2; /* cudaErrorMemoryAllocation */
		ev.failed.layer = MT_LAYER_REQUEST;
		ev.failed.api = MT_API_TORCH;
		ev.failed.site = rec->site;
		rec_sink_push(&ev);
		break;
	}
}

/* The ring of a CUDA ordinal, made on first use; NULL when out of memory. */
static struct rec_ring *ring_of(int device)
{
	struct rec_ring *r = rec_ring_once(&rings[device], RING_RECORDS);

	if (!r)
		rec_warn("out of memory");
	return r;
}

/* The readings of device memory an event asks for, taken after it is
 * queued: at an OOM, and at a segment that raises the reserved peak. */
static void reading_after(int action, int device, uint64_t bytes)
{
	switch (action) {
	case TORCH_SEGMENT_ALLOC:
	case TORCH_SEGMENT_MAP:
		producer_reserved[device] += bytes;
		if (producer_reserved[device] > producer_peak[device]) {
			producer_peak[device] = producer_reserved[device];
			rec_sample_peak((unsigned)device);
		}
		break;
	case TORCH_SEGMENT_FREE:
	case TORCH_SEGMENT_UNMAP:
		producer_reserved[device] -= bytes;
		break;
	case TORCH_OOM:
		rec_sample_failure((unsigned)device);
		break;
	}
}

/* Drains R into events; lock held. A fresh anchor first: every record in
 * the ring was stamped before it. (A producer that finds its ring full
 * drains it without one: its records' times lie past the latest anchor, on
 * the same line.) */
static void drain_ring(struct rec_ring *r, int device)
{
	uint64_t (*ticks_now)(void) = atomic_load_explicit(&torch_clock, memory_order_acquire);

	if (ticks_now)
		anchor_last(ticks_now);
	rec_ring_drain(r, process, (void *)(uintptr_t)device);
}

__attribute__((visibility("default"))) void memtrace_torch_clock(uint64_t (*ticks_now)(void))
{
	pthread_mutex_lock(&lock);
	if (ticks_now && !atomic_load(&torch_clock)) {
		/* two anchors 50 us apart: a line from the start, for a ring
		 * that fills before the flushing thread's first drain */
		first_anchor = anchor_now(ticks_now);
		do
			anchor_last(ticks_now);
		while (last_anchor.ns - first_anchor.ns < 50000);
		atomic_store_explicit(&torch_clock, ticks_now, memory_order_release);
	}
	pthread_mutex_unlock(&lock);
}

__attribute__((visibility("default"))) void memtrace_torch_event(int action, int device,
                                                                 uint64_t address, uint64_t bytes,
                                                                 uint64_t stream, uint32_t site,
                                                                 uint64_t ticks)
{
	struct rec_ring_record rec = { 0 };
	struct rec_ring *r;

	if (device < 0 || device >= REC_MAX_DEVICES ||
	    !atomic_load_explicit(&rec_state.enabled, memory_order_relaxed))
		return;
	if (!site && (action == TORCH_ALLOC || action == TORCH_OOM))
		site = rec_stacks_site();
	rec.ts = atomic_load_explicit(&torch_clock, memory_order_relaxed) ? ticks : rec_now();
	if (action == TORCH_ALLOC || action == TORCH_FREE_REQUESTED || action == TORCH_OOM)
		rec.stream = stream_id(device, stream);
	rec.action = action;
	rec.address = address;
	rec.bytes = bytes;
	rec.site = site;
	r = ring_of(device);
	if (r)
		rec_ring_push_wait(r, &rec, &lock, process, (void *)(uintptr_t)device);
	reading_after(action, device, bytes);
}

/* lock held */
static void drain_locked(void)
{
	for (int d = 0; d < REC_MAX_DEVICES; d++) {
		struct rec_ring *r = atomic_load_explicit(&rings[d], memory_order_acquire);
		if (r)
			drain_ring(r, d);
	}
}

void rec_torch_drain(void)
{
	pthread_mutex_lock(&lock);
	drain_locked();
	pthread_mutex_unlock(&lock);
}

void rec_torch_close(void)
{
	pthread_mutex_lock(&lock);
	drain_locked();
	for (size_t i = 0; i < PENDING_SLOTS; i++) {
		if (pending[i].address) {
			emit_free(&pending[i], pending[i].ts);
			pending[i].address = 0;
		}
	}
	pending_count = 0;
	pthread_mutex_unlock(&lock);
}

void rec_torch_after_fork_child(void)
{
	/* Only this thread lives on in the child: no producer is inside a
	 * ring, and a lock another thread held at the fork stays locked
	 * unless made anew. The pairing table and totals are left as they are:
	 * the child records nothing (its sink is disabled), so no drain reads
	 * them, and clearing them would copy their pages. */
	pthread_mutex_init(&lock, NULL);
	pthread_mutex_init(&streams_lock, NULL);
	for (int d = 0; d < REC_MAX_DEVICES; d++)
		rec_ring_free(atomic_exchange(&rings[d], NULL));
}
