/* inject-launches.c — kernels from CUPTI's launch callbacks (--kernels
 * launch).
 *
 * Models: CUPTI's callback API (cupti_callbacks.h) on the driver's kernel,
 * cooperative and graph launch APIs. No activity kind runs for kernels:
 * CUPTI's concurrent-kernel records cost a launch-bound PyTorch loop 12-19 %
 * (bench/RESULTS.md), and the memory timeline needs which kernel ran, not
 * its GPU duration. Only the driver domain is subscribed: every runtime
 * launch makes a driver launch inside it, and CUPTI's callbacks cost each
 * launch by the domain (on the H100 machine, in one process: 0.64 us a
 * torch.add launch for the driver's, 1.09 us for both domains).
 *
 * At the exit of a launch call the launching thread appends one record to
 * a lock-free ring (inject-ring.c): CUPTI's symbolName of the call (the
 * kernel's mangled name, read later: CUPTI keeps it with the function), the
 * stream as CUPTI's stream id and the device (both from a one-entry cache
 * of the thread's last context and stream), the time (rec_now) and the
 * correlation id. A full ring drops the record (counted in meta
 * dropped_records) rather than make the launching thread wait.
 *
 * The flushing thread turns the records into kernel events with ts = end =
 * the launch time, the name interned once per symbol. A graph launch is one
 * event named "(CUDA graph)". The trace's meta "kernels" = "launch" tells
 * readers the times are launch times.
 */
#include "config.h"

#include <stdlib.h>

#include <cupti.h>

#include "inject-private.h"

#define RING_RECORDS (1u << 17) /* 5 MiB; a flush every 200 ms drains it */
#define NAME_SLOTS 8192         /* symbols named, a power of two */

static const uint32_t launches[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

static _Atomic(struct rec_ring *) ring;
static atomic_uint_least64_t dropped;

/* The launching thread's calls in progress and its last context and stream. */
static __thread unsigned depth; /* launch calls entered, not yet left */
static __thread struct {
	CUcontext ctx;
	uint64_t handle;
	bool per_thread;
	uint32_t stream, device;
} last;

/* Names by symbol; flushing thread only (writer_lock held). */
static struct {
	const char *symbol;
	uint32_t name;
} names[NAME_SLOTS];

size_t rec_launches_ids(const uint32_t **ids)
{
	*ids = launches;
	return sizeof(launches) / sizeof(launches[0]);
}

bool rec_launches_is_launch(uint32_t cbid)
{
	for (size_t i = 0; i < sizeof(launches) / sizeof(launches[0]); i++)
		if (launches[i] == cbid)
			return true;
	return false;
}

static bool per_thread_stream(uint32_t cbid)
{
	return cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
	       cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
	       cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz ||
	       cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

static bool graph_launch(uint32_t cbid)
{
	return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
	       cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

/* The stream handle a launch call was given. */
static uint64_t stream_handle(uint32_t cbid, const void *params)
{
	const void *s = NULL;

	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
		s = ((const cuLaunchKernel_params *)params)->hStream;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
		s = ((const cuLaunchKernelEx_params *)params)->config->hStream;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
		s = ((const cuLaunchCooperativeKernel_params *)params)->hStream;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
		s = ((const cuGraphLaunch_params *)params)->hStream;
		break;
	}
	return (uint64_t)(uintptr_t)s;
}

/* The ring, made on first use; NULL when out of memory. */
static struct rec_ring *ring_made(void)
{
	struct rec_ring *r = rec_ring_once(&ring, RING_RECORDS);

	if (!r)
		rec_warn("out of memory");
	return r;
}

static void take(uint32_t cbid, const CUpti_CallbackData *cb)
{
	struct rec_ring_record rec = { 0 };
	uint64_t handle = stream_handle(cbid, cb->functionParams);
	bool per_thread = per_thread_stream(cbid);
	struct rec_ring *r = ring_made();

	if (!r)
		return;
	rec.ts = rec_now();
	if (last.ctx != cb->context || last.handle != handle || last.per_thread != per_thread) {
		last.ctx = cb->context;
		last.handle = handle;
		last.per_thread = per_thread;
		last.stream = 0;
		last.device = 0;
		cuptiGetStreamIdEx(cb->context, (CUstream)(uintptr_t)handle, per_thread,
		                   &last.stream);
		if (cb->context)
			cuptiGetDeviceId(cb->context, &last.device);
	}
	rec.launch.symbol = graph_launch(cbid) ? NULL : cb->symbolName;
	rec.launch.correlation = cb->correlationId;
	rec.launch.stream = last.stream;
	rec.launch.device = last.device;
	if (rec_ring_push(r, &rec) < 0)
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
}

void rec_launches_on_callback(uint32_t cbid, const void *data)
{
	const CUpti_CallbackData *cb = data;

	if (cb->callbackSite == CUPTI_API_ENTER) {
		depth++;
		return;
	}
	if (depth == 0)
		return; /* entered before recording began */
	if (--depth > 0)
		return; /* a launch inside a launch: the outer one is recorded */
	if (cb->functionReturnValue && *(const int *)cb->functionReturnValue != 0)
		return; /* nothing was launched */
	take(cbid, cb);
}

/* The interned name of a symbol; writer_lock held. */
static uint32_t name_of(const char *symbol)
{
	size_t h = (size_t)(((uint64_t)(uintptr_t)symbol * 0x9e3779b97f4a7c15ull) >> 51) &
	           (NAME_SLOTS - 1);

	if (!symbol)
		return rec_sink_intern_locked("(CUDA graph)");
	for (size_t i = 0; i < NAME_SLOTS; i++) {
		size_t s = (h + i) & (NAME_SLOTS - 1);
		if (names[s].symbol == symbol)
			return names[s].name;
		if (!names[s].symbol) {
			names[s].name = rec_sink_intern_locked(symbol);
			names[s].symbol = symbol;
			return names[s].name;
		}
	}
	return rec_sink_intern_locked(symbol);
}

/* One launch record into a kernel event; writer_lock held. */
static void emit(const struct rec_ring_record *rec, void *arg)
{
	struct mt_event ev = { 0 };

	(void)arg;
	ev.kind = MT_EVENT_KERNEL;
	ev.ts = rec->ts;
	ev.device = rec->launch.device;
	ev.kernel.end = rec->ts;
	ev.kernel.stream = rec->launch.stream;
	ev.kernel.correlation = rec->launch.correlation;
	ev.kernel.name = name_of(rec->launch.symbol);
	rec_sink_append_locked(&ev);
}

void rec_launches_drain_locked(void)
{
	struct rec_ring *r = atomic_load_explicit(&ring, memory_order_acquire);

	if (r)
		rec_ring_drain(r, emit, NULL);
	rec_state.dropped += atomic_exchange(&dropped, 0);
}

void rec_launches_after_fork_child(void)
{
	/* Only this thread lives on in the child, which records nothing; the
	 * parent writes the launches it queued. */
	rec_ring_free(atomic_exchange(&ring, NULL));
}
