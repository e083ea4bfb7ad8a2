/* cupti-kernels.c — CUPTI's kernel records and nothing else: an injection
 * library (CUDA_INJECTION64_PATH) that switches on CUPTI's concurrent kernel
 * records, as CUPTI's own samples do, and frees every filled buffer unread
 * (each new buffer is a fresh malloc, which CUPTI zeroes). Run beside plain
 * and `memtrace record` in run.py's lockstep (a variant 'NAME=plain
 * CUDA_INJECTION64_PATH=.../libcupti-kernels.so'), it shows what kernel
 * records cost a program by themselves, whatever memtrace does with them.
 *
 * Where that cost lands, through the environment:
 *   MT_BENCH_KERNELS=0        kernel records off (the library then only times)
 *   MT_BENCH_KERNELS=launch   no activity kind at all: kernels taken from
 *                             CUPTI callbacks on the launch APIs only
 *                             (runtime and driver kernel, cooperative and
 *                             graph launches), one record at the exit of
 *                             each outermost launch call into a ring of the
 *                             launching thread: the symbol name pointer
 *                             (CUfunction for driver launches, to be named
 *                             later), stream, CPU time, correlation id. The
 *                             ring is overwritten, never read, as the
 *                             activity buffers are freed unread
 *   MT_BENCH_LAUNCH_DOMAINS=driver  with launch: callbacks on the driver's
 *                             launch APIs only (a runtime launch makes a
 *                             driver launch inside it), half the callbacks
 *                             a runtime launch
 *                             (cupti_kinds.py --launch-callbacks switches
 *                             each domain in turn: mt_bench_launch_callbacks)
 *   MT_BENCH_LAUNCH_SUMMARY=PATH  with launch: write the records taken, by
 *                             API, and how many launch calls ran inside
 *                             another (a driver call made by the runtime),
 *                             to PATH.PID as JSON at exit
 *   MT_BENCH_CALL_TIMES=PATH  time every CUDA runtime and driver call that
 *                             launches, synchronizes, copies, sets, queries,
 *                             allocates or frees, on the thread that makes
 *                             it, and write per call the count and
 *                             nanoseconds to PATH.PID as JSON at exit (and
 *                             the time in calls not made inside another)
 *   MT_BENCH_ALL_CALLS=1      ... every runtime and driver call instead
 *   MT_BENCH_LAUNCH_APIS_ONLY=1  tell CUPTI to keep activity for launch calls
 *                             only (cuptiActivityEnableRuntimeApi and
 *                             ...DriverApi off for every other call)
 *   MT_BENCH_PINNED=1         CUPTI's timestamp buffers in pinned host memory
 *   MT_BENCH_PER_THREAD=0     one activity buffer for all threads
 *   MT_BENCH_FLUSH_MS=N       a thread of this library flushes CUPTI every N ms
 *   MT_BENCH_FLUSH_FORCED=1   ... and forces it (hands over partly filled
 *                             buffers, as the recorder does)
 * What the recorder switches on beside kernels, each alone (any
 * MT_BENCH_KERNELS mode):
 *   MT_BENCH_ACTIVITY=LIST    also these activity kinds, buffers freed unread:
 *                             memory (MEMORY2), pool (MEMORY_POOL), marker
 *                             (MARKER), comma-separated
 *   MT_BENCH_ALLOC_CALLBACKS=1  callbacks that return at once on every
 *                             runtime and driver API that allocates, frees,
 *                             maps or unmaps (as the recorder's) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <cupti.h>

#define BUFFER_BYTES (4u << 20)
#define MAX_DEPTH 16
#define DRIVER_CBIDS ((unsigned)CUPTI_DRIVER_TRACE_CBID_SIZE)
#define RUNTIME_CBIDS ((unsigned)CUPTI_RUNTIME_TRACE_CBID_SIZE)
#define CBID_SLOTS (DRIVER_CBIDS > RUNTIME_CBIDS ? DRIVER_CBIDS : RUNTIME_CBIDS)

int InitializeInjection(void);
int mt_bench_launch_callbacks(int runtime, int driver);

struct call_total {
	atomic_uint_least64_t count;
	atomic_uint_least64_t ns;
};

static const CUpti_CallbackDomain domains[2] = { CUPTI_CB_DOMAIN_RUNTIME_API,
	                                         CUPTI_CB_DOMAIN_DRIVER_API };
static struct call_total totals[2][CBID_SLOTS]; /* by domains[] and callback id */
static atomic_uint_least64_t outermost_ns;      /* time in calls not nested in another */
static const char *times_path;
static unsigned flush_ms;
static int flush_forced;

static _Thread_local uint64_t entered[MAX_DEPTH];
static _Thread_local unsigned depth;

/* MT_BENCH_KERNELS=launch: one record a launch, in a ring of its thread. */
#define LAUNCH_RING 4096 /* records; a power of two */

struct launch {
	const void *symbol; /* cbdata->symbolName (runtime), CUfunction or graph (driver) */
	const void *stream;
	uint64_t ns;
	uint32_t correlation;
	uint32_t cbid; /* domain << 16 | callback id */
};

static int launch_mode;
static const char *launch_summary;
static uint8_t is_launch[2][CBID_SLOTS]; /* by domains[] and callback id */
static struct call_total launches[2][CBID_SLOTS];
static atomic_uint_least64_t nested_launches;
static _Thread_local struct launch launch_ring[LAUNCH_RING];
static _Thread_local uint64_t launch_next;
static _Thread_local unsigned launch_depth;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int env_flag(const char *name, int otherwise)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : otherwise;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = malloc(BUFFER_BYTES);
	*size = *buffer ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                      size_t size, size_t valid)
{
	(void)ctx;
	(void)stream_id;
	(void)size;
	(void)valid;
	free(buffer);
}

static void time_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                      const CUpti_CallbackData *call, uint64_t t)
{
	if (call->callbackSite == CUPTI_API_ENTER) {
		if (depth < MAX_DEPTH)
			entered[depth] = t;
		depth++;
		return;
	}
	if (depth == 0)
		return;
	depth--;
	if (depth >= MAX_DEPTH || cbid >= CBID_SLOTS)
		return;
	struct call_total *total = &totals[domain == CUPTI_CB_DOMAIN_DRIVER_API][cbid];
	atomic_fetch_add_explicit(&total->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&total->ns, t - entered[depth], memory_order_relaxed);
	if (depth == 0)
		atomic_fetch_add_explicit(&outermost_ns, t - entered[depth], memory_order_relaxed);
}

/* The stream of a runtime launch call, from its parameters. */
static const void *runtime_launch_stream(CUpti_CallbackId cbid, const void *params)
{
	switch (cbid) {
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
		return ((const cudaLaunchKernel_v7000_params *)params)->stream;
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
		return ((const cudaLaunchKernelExC_v11060_params *)params)->config->stream;
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
		return ((const cudaLaunchCooperativeKernel_v9000_params *)params)->stream;
	case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
		return ((const cudaGraphLaunch_v10000_params *)params)->stream;
	default:
		return NULL;
	}
}

/* The function a driver launch call runs (named later; the graph for a
 * graph launch) and, in *stream, its stream. */
static const void *driver_launch(CUpti_CallbackId cbid, const void *params, const void **stream)
{
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
		const cuLaunchKernel_params *p = params;
		*stream = p->hStream;
		return p->f;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
		const cuLaunchKernelEx_params *p = params;
		*stream = p->config->hStream;
		return p->f;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
		const cuLaunchCooperativeKernel_params *p = params;
		*stream = p->hStream;
		return p->f;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
		const cuGraphLaunch_params *p = params;
		*stream = p->hStream;
		return p->hGraph;
	}
	default:
		*stream = NULL;
		return NULL;
	}
}

/* A record at the exit of each launch call not made inside another. */
static void take_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                        const CUpti_CallbackData *call, uint64_t t)
{
	int d = domain == CUPTI_CB_DOMAIN_DRIVER_API;

	if (call->callbackSite == CUPTI_API_ENTER) {
		launch_depth++;
		return;
	}
	if (launch_depth == 0)
		return;
	if (--launch_depth > 0) {
		atomic_fetch_add_explicit(&nested_launches, 1, memory_order_relaxed);
		return;
	}
	struct launch *r = &launch_ring[launch_next++ & (LAUNCH_RING - 1)];
	if (d) {
		r->symbol = driver_launch(cbid, call->functionParams, &r->stream);
	} else {
		r->symbol = call->symbolName;
		r->stream = runtime_launch_stream(cbid, call->functionParams);
	}
	r->ns = t;
	r->correlation = call->correlationId;
	r->cbid = (uint32_t)d << 16 | cbid;
	if (launch_summary)
		atomic_fetch_add_explicit(&launches[d][cbid].count, 1, memory_order_relaxed);
}

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void *data)
{
	uint64_t t = now_ns();

	(void)userdata;
	if (cbid >= CBID_SLOTS)
		return;
	if (launch_mode && is_launch[domain == CUPTI_CB_DOMAIN_DRIVER_API][cbid])
		take_launch(domain, cbid, data, t);
	if (times_path)
		time_call(domain, cbid, data, t);
}

/* The calls worth timing: those that launch, wait, copy, set, ask whether
 * the GPU is done, allocate or free. Timing every call would put a callback
 * on each of the many small queries PyTorch makes per operation (about
 * 11 000 cudaGetDevice a BERT step). */
static int timed_call(const char *name)
{
	static const char *const words[] = { "Launch", "Synchronize", "Memcpy", "Memset",
		                             "Query",  "Malloc",      "Alloc",  "Free" };
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(name, words[i]))
			return 1;
	return 0;
}

/* Calls visit(domain index, id, name, arg) for every named runtime and
 * driver API. */
static void each_api(void (*visit)(int d, unsigned id, const char *name, void *arg), void *arg)
{
	static const unsigned sizes[2] = { RUNTIME_CBIDS, DRIVER_CBIDS };
	for (int d = 0; d < 2; d++)
		for (unsigned id = 1; id < sizes[d]; id++) {
			const char *name = NULL;
			if (cuptiGetCallbackName(domains[d], id, &name) == CUPTI_SUCCESS && name)
				visit(d, id, name, arg);
		}
}

struct totals_file {
	FILE *f;
	const char *sep;
	struct call_total (*table)[CBID_SLOTS];
	int with_ns;
};

static void write_total(int d, unsigned id, const char *name, void *arg)
{
	struct totals_file *out = arg;
	uint64_t n = atomic_load(&out->table[d][id].count);
	if (!n)
		return;
	fprintf(out->f, "%s\n {\"name\": \"%s\", \"count\": %llu", out->sep, name,
	        (unsigned long long)n);
	if (out->with_ns)
		fprintf(out->f, ", \"ns\": %llu",
		        (unsigned long long)atomic_load(&out->table[d][id].ns));
	fprintf(out->f, "}");
	out->sep = ",";
}

/* Writes PREFIX.PID: {"HEAD": head, "calls": [{name, count[, ns]}...]}
 * with the calls of table that ran. */
static void write_totals(const char *prefix, const char *head, uint64_t head_value,
                         struct call_total (*table)[CBID_SLOTS], int with_ns)
{
	char path[4096];
	snprintf(path, sizeof path, "%s.%d", prefix, (int)getpid());
	struct totals_file out = { fopen(path, "w"), "", table, with_ns };
	if (!out.f)
		return;
	fprintf(out.f, "{\"%s\": %llu, \"calls\": [", head, (unsigned long long)head_value);
	each_api(write_total, &out);
	fprintf(out.f, "\n]}\n");
	fclose(out.f);
}

static void write_times(void)
{
	write_totals(times_path, "outermost_ns", atomic_load(&outermost_ns), totals, 1);
}

/* The launch APIs of MT_BENCH_KERNELS=launch: kernel, cooperative and
 * graph launches of both domains (host functions are no kernels). */
static const CUpti_CallbackId runtime_launches[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};
static const CUpti_CallbackId driver_launches[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

static CUpti_SubscriberHandle subscriber;
static int subscribed;

/* The one subscriber CUPTI allows a process, for timing and launches. */
static int subscribe(void)
{
	if (!subscribed && cuptiSubscribe(&subscriber, on_call, NULL) == CUPTI_SUCCESS)
		subscribed = 1;
	return subscribed;
}

static void enable_timing(int d, unsigned id, const char *name, void *arg)
{
	int all = *(const int *)arg;
	if (all || timed_call(name))
		cuptiEnableCallback(1, subscriber, domains[d], id);
}

static void time_calls(void)
{
	int all = env_flag("MT_BENCH_ALL_CALLS", 0);
	if (!subscribe())
		return;
	each_api(enable_timing, &all);
	atexit(write_times);
}

static void write_launch_summary(void)
{
	write_totals(launch_summary, "nested", atomic_load(&nested_launches), launches, 0);
}

/* The launch callbacks of each domain on (1) or off (0). */
static void launch_callbacks(int runtime, int driver)
{
	for (size_t i = 0; i < sizeof runtime_launches / sizeof runtime_launches[0]; i++) {
		is_launch[0][runtime_launches[i]] = (uint8_t)runtime;
		cuptiEnableCallback((uint32_t)runtime, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
		                    runtime_launches[i]);
	}
	for (size_t i = 0; i < sizeof driver_launches / sizeof driver_launches[0]; i++) {
		is_launch[1][driver_launches[i]] = (uint8_t)driver;
		cuptiEnableCallback((uint32_t)driver, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
		                    driver_launches[i]);
	}
}

/* For cupti_kinds.py --launch-callbacks, through ctypes: switches the
 * launch callbacks of each domain on or off between blocks of work in one
 * process; 0, or -1 when launch mode is not on. */
__attribute__((visibility("default"))) int mt_bench_launch_callbacks(int runtime, int driver)
{
	if (!launch_mode)
		return -1;
	launch_callbacks(runtime != 0, driver != 0);
	return 0;
}

/* MT_BENCH_KERNELS=launch: callbacks on the launch APIs, no activity. */
static void take_launches(void)
{
	if (!subscribe())
		return;
	launch_mode = 1;
	const char *domains_wanted = getenv("MT_BENCH_LAUNCH_DOMAINS");
	launch_callbacks(!(domains_wanted && !strcmp(domains_wanted, "driver")), 1);
	launch_summary = getenv("MT_BENCH_LAUNCH_SUMMARY");
	if (launch_summary && *launch_summary)
		atexit(write_launch_summary);
	else
		launch_summary = NULL;
}

/* Activity for launch calls only: every other runtime and driver call off. */
static void activity_off_unless_launch(int d, unsigned id, const char *name, void *arg)
{
	(void)arg;
	if (strstr(name, "Launch"))
		return;
	if (d == 0)
		cuptiActivityEnableRuntimeApi(id, 0);
	else
		cuptiActivityEnableDriverApi(id, 0);
}

static void *flush_every(void *arg)
{
	(void)arg;
	struct timespec period = { flush_ms / 1000, (long)(flush_ms % 1000) * 1000000 };
	for (;;) {
		nanosleep(&period, NULL);
		cuptiActivityFlushAll(flush_forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
	}
	return NULL;
}

static void set_attribute(CUpti_ActivityAttribute attribute, uint8_t value)
{
	size_t size = sizeof value;
	cuptiActivitySetAttribute(attribute, &size, &value);
}

static int activity_buffers(void)
{
	static int registered;
	if (!registered &&
	    cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS)
		registered = 1;
	return registered;
}

/* MT_BENCH_ACTIVITY: the activity kinds named, beside whatever else runs. */
static void enable_activity(const char *list)
{
	static const struct {
		const char *name;
		CUpti_ActivityKind kind;
	} kinds[] = { { "memory", CUPTI_ACTIVITY_KIND_MEMORY2 },
		      { "pool", CUPTI_ACTIVITY_KIND_MEMORY_POOL },
		      { "marker", CUPTI_ACTIVITY_KIND_MARKER } };
	if (!list || !*list || !activity_buffers())
		return;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strstr(list, kinds[i].name))
			cuptiActivityEnable(kinds[i].kind);
}

static void enable_alloc_callback(int d, unsigned id, const char *name, void *arg)
{
	static const char *const words[] = { "Malloc", "Alloc",    "Free",      "MemCreate",
		                             "MemMap", "MemUnmap", "MemRelease" };
	(void)arg;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(name, words[i])) {
			cuptiEnableCallback(1, subscriber, domains[d], id);
			return;
		}
}

/* Called by the CUDA driver at its initialisation; returns 1 (done) either
 * way, so that a refusal leaves the program running unrecorded. */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	times_path = getenv("MT_BENCH_CALL_TIMES");
	if (times_path && *times_path)
		time_calls();
	else
		times_path = NULL;
	enable_activity(getenv("MT_BENCH_ACTIVITY"));
	if (env_flag("MT_BENCH_ALLOC_CALLBACKS", 0) && subscribe())
		each_api(enable_alloc_callback, NULL);
	const char *kernels = getenv("MT_BENCH_KERNELS");
	if (kernels && strcmp(kernels, "launch") == 0) {
		take_launches();
		return 1;
	}
	if (!env_flag("MT_BENCH_KERNELS", 1))
		return 1;
	set_attribute(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED,
	              (uint8_t)env_flag("MT_BENCH_PINNED", 0));
	set_attribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
	              (uint8_t)env_flag("MT_BENCH_PER_THREAD", 1));
	if (!activity_buffers() ||
	    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
		return 1;
	if (env_flag("MT_BENCH_LAUNCH_APIS_ONLY", 0))
		each_api(activity_off_unless_launch, NULL);
	flush_ms = (unsigned)env_flag("MT_BENCH_FLUSH_MS", 0);
	flush_forced = env_flag("MT_BENCH_FLUSH_FORCED", 0);
	pthread_t flusher;
	if (flush_ms && pthread_create(&flusher, NULL, flush_every, NULL) == 0)
		pthread_detach(flusher);
	return 1;
}
