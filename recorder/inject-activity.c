/* inject-activity.c — CUPTI activity records into trace events.
 *
 * Models: CUPTI's activity API (cupti_activity.h, CUDA 13): MEMORY2
 * (CUpti_ActivityMemory4), MEMORY_POOL (CUpti_ActivityMemoryPool3),
 * CONCURRENT_KERNEL (CUpti_ActivityKernel10), MEMCPY (CUpti_ActivityMemcpy6),
 * MEMSET (CUpti_ActivityMemset4), MARKER (CUpti_ActivityMarker2). CUPTI
 * hands buffers back from its own thread in no particular order; events are
 * appended as they come and the reader restores timestamp order. NVTX ranges
 * arrive as a start and an end record sharing an id: they are paired here
 * into one range event, with the nesting depth per thread. The ranges
 * torch.autograd.profiler.emit_nvtx() pushes carry per-call annotations
 * ("aten::addmm, seq = 12, op_id = 40, sizes = [...]"): only the operator's
 * name is kept, so that an operator is one string and one row in a report.
 *
 * CUPTI's buffer callback runs on CUPTI's threads, which the program's own
 * launches can wait for, so it only queues the buffer: the records are read
 * on the recorder's flushing thread (rec_activity_drain_locked). Read buffers
 * are zeroed there and handed back to CUPTI, which then need not zero a new
 * 4 MiB buffer on the launching thread.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "inject-private.h"

#define BUFFER_BYTES (4u << 20)
#define RANGE_SLOTS 4096 /* open ranges at once, per process */

struct open_range {
	uint32_t id; /* 0 = free slot */
	uint32_t thread;
	uint32_t depth;
	uint32_t name, domain;
	uint64_t start;
};

/* Touched only while reading buffers and on the exit path, both with
 * writer_lock held. */
static struct open_range ranges[RANGE_SLOTS];

/* Buffers CUPTI has handed back, waiting to be read, and read ones (zeroed)
 * waiting to be handed out again. */
struct buffer_list {
	struct filled {
		uint8_t *buffer;
		size_t valid;
	} * items;
	size_t len, cap;
};

#define SPARE_BUFFERS 16 /* zeroed buffers kept for reuse */

static pthread_mutex_t buffers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct buffer_list filled, spare;
static atomic_size_t dropped_records;

static int list_push(struct buffer_list *l, uint8_t *buffer, size_t valid)
{
	if (l->len == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct filled *items = realloc(l->items, cap * sizeof(*items));
		if (!items)
			return -ENOMEM;
		l->items = items;
		l->cap = cap;
	}
	l->items[l->len++] = (struct filled){ buffer, valid };
	return 0;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	uint8_t *b = NULL;

	pthread_mutex_lock(&buffers_lock);
	if (spare.len)
		b = spare.items[--spare.len].buffer;
	pthread_mutex_unlock(&buffers_lock);
	if (!b)
		b = calloc(1, BUFFER_BYTES); /* CUPTI is told buffers come zeroed */
	*buffer = b;
	*size = b ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static unsigned mem_kind_of(const CUpti_ActivityMemory4 *m, int *keep)
{
	*keep = 1;
	switch (m->memoryKind) {
	case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
		return m->memoryPoolConfig.memoryPoolType != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID
		               ? MT_MEM_ASYNC_POOL
		               : MT_MEM_DEVICE;
	case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
		return MT_MEM_MANAGED;
	case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
		return MT_MEM_PINNED_HOST;
	default: /* statics, pageable, arrays */
		*keep = 0;
		return 0;
	}
}

static unsigned default_api(unsigned mem_kind)
{
	switch (mem_kind) {
	case MT_MEM_ASYNC_POOL:
		return MT_API_CUDA_MALLOC_ASYNC;
	case MT_MEM_MANAGED:
		return MT_API_CUDA_MALLOC_MANAGED;
	case MT_MEM_PINNED_HOST:
		return MT_API_CUDA_HOST_ALLOC;
	default:
		return MT_API_CUDA_MALLOC;
	}
}

static void memory_record(const CUpti_ActivityMemory4 *m)
{
	struct mt_event ev = { 0 };
	unsigned api;
	int keep;

	ev.alloc.mem_kind = (uint8_t)mem_kind_of(m, &keep);
	if (!keep)
		return;
	api = rec_callbacks_api_for(m->correlationId);
	/* VMM mappings are recorded from cuMemMap/cuMemUnmap callbacks; the
	 * physical handle CUPTI reports for cuMemCreate has no address. */
	if (api == MT_API_CU_MEM_CREATE)
		return;
	ev.kind = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
	                  ? MT_EVENT_FREE
	                  : MT_EVENT_ALLOC;
	ev.ts = m->timestamp;
	ev.device = m->deviceId;
	ev.alloc.address = m->address;
	ev.alloc.bytes = m->bytes;
	/* CUPTI marks a synchronous allocation's stream as invalid; the trace
	 * says 0, default or unknown */
	ev.alloc.stream = m->streamId == CUPTI_INVALID_STREAM_ID ? 0 : m->streamId;
	ev.alloc.correlation = m->correlationId;
	if (ev.kind == MT_EVENT_ALLOC)
		ev.alloc.site = rec_callbacks_site_for(m->correlationId);
	ev.alloc.layer = MT_LAYER_DRIVER;
	ev.alloc.api = (uint8_t)(api ? api : default_api(ev.alloc.mem_kind));
	rec_sink_append_locked(&ev);
}

static void pool_record(const CUpti_ActivityMemoryPool3 *p)
{
	struct mt_event ev = { 0 };

	ev.kind = MT_EVENT_POOL;
	ev.ts = p->timestamp;
	ev.device = p->deviceId;
	ev.pool.pool = p->address;
	ev.pool.reserved_bytes = p->size;
	ev.pool.used_bytes = p->utilizedSize;
	switch (p->memoryPoolOperationType) {
	case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
		ev.pool.op = MT_POOL_DESTROY;
		break;
	case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
		ev.pool.op = MT_POOL_TRIM;
		break;
	default:
		ev.pool.op = MT_POOL_CREATE;
	}
	rec_sink_append_locked(&ev);
}

/* A forced flush (at exit, after a crash) hands over records of work that
 * had not finished, with start and end 0: they have no place on the time
 * axis, so they are counted (meta untimed_records) and skipped. */
static bool untimed(uint64_t start, uint64_t end)
{
	if (start != 0 && end >= start)
		return false;
	rec_state.untimed++;
	return true;
}

static void kernel_record(const CUpti_ActivityKernel10 *k)
{
	struct mt_event ev = { 0 };

	if (untimed(k->start, k->end))
		return;
	ev.kind = MT_EVENT_KERNEL;
	ev.ts = k->start;
	ev.device = k->deviceId;
	ev.kernel.end = k->end;
	ev.kernel.stream = k->streamId;
	ev.kernel.correlation = k->correlationId;
	ev.kernel.name = rec_sink_intern_locked(k->name);
	ev.kernel.grid[0] = (uint32_t)k->gridX;
	ev.kernel.grid[1] = (uint32_t)k->gridY;
	ev.kernel.grid[2] = (uint32_t)k->gridZ;
	ev.kernel.block[0] = (uint32_t)k->blockX;
	ev.kernel.block[1] = (uint32_t)k->blockY;
	ev.kernel.block[2] = (uint32_t)k->blockZ;
	ev.kernel.shared_bytes = (uint32_t)(k->staticSharedMemory + k->dynamicSharedMemory);
	rec_sink_append_locked(&ev);
}

static unsigned copy_kind_of(uint8_t k)
{
	switch (k) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
		return MT_COPY_HTOD;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
		return MT_COPY_DTOH;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
		return MT_COPY_DTOD;
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
		return MT_COPY_HTOH;
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
		return MT_COPY_PTOP;
	default:
		return MT_COPY_UNKNOWN;
	}
}

static void copy_record(unsigned kind, uint64_t start, uint64_t end, uint32_t device,
                        uint64_t bytes, uint32_t stream, unsigned copy_kind)
{
	struct mt_event ev = { 0 };

	if (untimed(start, end))
		return;
	ev.kind = (uint8_t)kind;
	ev.ts = start;
	ev.device = device;
	ev.copy.end = end;
	ev.copy.bytes = bytes;
	ev.copy.stream = stream;
	ev.copy.copy_kind = (uint8_t)copy_kind;
	rec_sink_append_locked(&ev);
}

static struct open_range *range_slot(uint32_t id, int create)
{
	uint32_t h = (id * 2654435761u) % RANGE_SLOTS;

	for (unsigned probe = 0; probe < RANGE_SLOTS; probe++) {
		struct open_range *r = &ranges[(h + probe) % RANGE_SLOTS];
		if (r->id == id)
			return r;
		if (!r->id)
			return create ? r : NULL;
	}
	return NULL;
}

static uint32_t thread_depth(uint32_t thread)
{
	uint32_t depth = 0;

	for (unsigned i = 0; i < RANGE_SLOTS; i++)
		if (ranges[i].id && ranges[i].thread == thread)
			depth++;
	return depth;
}

static void emit_range(const struct open_range *r, uint64_t end)
{
	struct mt_event ev = { 0 };

	ev.kind = MT_EVENT_RANGE;
	ev.ts = r->start;
	/* ranges are host-side: kept on the lowest CUDA ordinal this process
	 * already records, so that a process on GPU 1 gains no GPU 0 row */
	ev.device = 0;
	for (unsigned d = 0; d < REC_MAX_DEVICES; d++) {
		if (rec_state.device_rows[d]) {
			ev.device = d;
			break;
		}
	}
	ev.range.end = end;
	ev.range.name = r->name;
	ev.range.domain = r->domain;
	ev.range.thread = r->thread;
	ev.range.depth = r->depth;
	rec_sink_append_locked(&ev);
}

/* Removes a slot from an open-addressing table (backward-shift delete). */
static void range_remove(struct open_range *r)
{
	size_t i = (size_t)(r - ranges);

	r->id = 0;
	for (size_t j = (i + 1) % RANGE_SLOTS; ranges[j].id; j = (j + 1) % RANGE_SLOTS) {
		size_t home = (ranges[j].id * 2654435761u) % RANGE_SLOTS;
		/* move j back to i if its home is not in (i, j] */
		if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
			ranges[i] = ranges[j];
			ranges[j].id = 0;
			i = j;
		}
	}
}

/* Interns a range name without emit_nvtx's per-call annotations. */
static uint32_t range_name(const char *name)
{
	static const char *const annotations[] = { ", seq = ", ", stashed seq = ", ", op_id = ",
		                                   ", sizes = " };
	const char *cut = NULL;
	char op[256];

	if (!name)
		return rec_sink_intern_locked("");
	for (size_t i = 0; i < sizeof(annotations) / sizeof(annotations[0]); i++) {
		const char *at = strstr(name, annotations[i]);
		if (at && (!cut || at < cut))
			cut = at;
	}
	if (!cut || (size_t)(cut - name) >= sizeof(op))
		return rec_sink_intern_locked(name);
	memcpy(op, name, (size_t)(cut - name));
	op[cut - name] = 0;
	return rec_sink_intern_locked(op);
}

static void marker_record(const CUpti_ActivityMarker2 *m)
{
	struct open_range *r;

	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
		r = range_slot(m->id, 1);
		if (!r)
			return; /* too many open ranges: drop this one */
		r->thread = m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
		                            m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS
		                    ? m->objectId.pt.threadId
		                    : 0;
		r->depth = thread_depth(r->thread);
		r->id = m->id;
		r->name = range_name(m->name);
		r->domain = m->domain && *m->domain ? rec_sink_intern_locked(m->domain) : 0;
		r->start = m->timestamp;
	} else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
		r = range_slot(m->id, 0);
		if (!r)
			return;
		emit_range(r, m->timestamp);
		range_remove(r);
	}
}

void rec_activity_close_ranges_locked(void)
{
	for (unsigned i = 0; i < RANGE_SLOTS; i++) {
		if (ranges[i].id) {
			emit_range(&ranges[i], MT_TIME_UNKNOWN);
			ranges[i].id = 0;
		}
	}
}

static void record(const CUpti_Activity *a)
{
	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		memory_record((const CUpti_ActivityMemory4 *)a);
		break;
	case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
		pool_record((const CUpti_ActivityMemoryPool3 *)a);
		break;
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL:
		kernel_record((const CUpti_ActivityKernel10 *)a);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *c = (const CUpti_ActivityMemcpy6 *)a;
		copy_record(MT_EVENT_MEMCPY, c->start, c->end, c->deviceId, c->bytes, c->streamId,
		            copy_kind_of(c->copyKind));
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *s = (const CUpti_ActivityMemset4 *)a;
		copy_record(MT_EVENT_MEMSET, s->start, s->end, s->deviceId, s->bytes, s->streamId,
		            0);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MARKER:
		marker_record((const CUpti_ActivityMarker2 *)a);
		break;
	default:
		break;
	}
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                      size_t size, size_t valid)
{
	size_t dropped = 0;
	int rc;

	(void)size;
	if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
		atomic_fetch_add(&dropped_records, dropped);
	if (!buffer)
		return;
	if (!atomic_load_explicit(&rec_state.enabled, memory_order_relaxed)) {
		free(buffer); /* recording stopped: nobody will read it */
		return;
	}
	pthread_mutex_lock(&buffers_lock);
	rc = list_push(&filled, buffer, valid);
	pthread_mutex_unlock(&buffers_lock);
	if (rc < 0) {
		rec_warn("out of memory");
		free(buffer);
	}
}

uint64_t rec_activity_drain_locked(void)
{
	struct buffer_list batch;

	pthread_mutex_lock(&buffers_lock);
	batch = filled;
	filled = (struct buffer_list){ 0 };
	pthread_mutex_unlock(&buffers_lock);
	for (size_t i = 0; i < batch.len; i++) {
		uint8_t *buffer = batch.items[i].buffer;
		size_t valid = batch.items[i].valid;
		CUpti_Activity *a = NULL;
		int kept = -1;

		while (valid && cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS)
			record(a);
		memset(buffer, 0, valid);
		pthread_mutex_lock(&buffers_lock);
		if (spare.len < SPARE_BUFFERS)
			kept = list_push(&spare, buffer, 0);
		pthread_mutex_unlock(&buffers_lock);
		if (kept < 0)
			free(buffer);
	}
	free(batch.items);
	return atomic_exchange(&dropped_records, 0);
}

void rec_activity_after_fork_child(void)
{
	/* Another thread of the parent may have held the lock at the fork; its
	 * buffers are the parent's to read. */
	pthread_mutex_init(&buffers_lock, NULL);
	filled.len = 0;
}

int rec_activity_start(unsigned kernels_mode)
{
	static const CUpti_ActivityKind always[] = {
		CUPTI_ACTIVITY_KIND_MEMORY2,
		CUPTI_ACTIVITY_KIND_MEMORY_POOL,
		CUPTI_ACTIVITY_KIND_MARKER,
	};
	/* copies and sets cost a launch nothing measurable (bench/RESULTS.md);
	 * kernel records cost it most of what recording costs */
	static const CUpti_ActivityKind copies[] = {
		CUPTI_ACTIVITY_KIND_MEMCPY,
		CUPTI_ACTIVITY_KIND_MEMSET,
	};
	bool with_copies = kernels_mode != MT_RECORD_KERNELS_NONE;
	uint8_t zeroed = 1;
	size_t zeroed_size = sizeof(zeroed);
	CUptiResult rc;

	/* Our buffers come zeroed: CUPTI need not clear them on the program's
	 * thread. An older CUPTI without the attribute clears them itself. */
	cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size,
	                          &zeroed);
	rc = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	for (size_t i = 0; rc == CUPTI_SUCCESS && i < sizeof(always) / sizeof(always[0]); i++)
		rc = cuptiActivityEnable(always[i]);
	for (size_t i = 0;
	     with_copies && rc == CUPTI_SUCCESS && i < sizeof(copies) / sizeof(copies[0]); i++)
		rc = cuptiActivityEnable(copies[i]);
	if (rc == CUPTI_SUCCESS && kernels_mode == MT_RECORD_KERNELS_GPU)
		rc = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	if (rc != CUPTI_SUCCESS) {
		const char *s = NULL;
		cuptiGetResultString(rc, &s);
		rec_warn("CUPTI refused the activity records: %s", s ? s : "unknown error");
		return -1;
	}
	return 0;
}
