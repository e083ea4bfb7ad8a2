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
 *                             buffers, as the recorder does) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#define BUFFER_BYTES (4u << 20)
#define MAX_DEPTH 16
#define DRIVER_CBIDS ((unsigned)CUPTI_DRIVER_TRACE_CBID_SIZE)
#define RUNTIME_CBIDS ((unsigned)CUPTI_RUNTIME_TRACE_CBID_SIZE)
#define CBID_SLOTS (DRIVER_CBIDS > RUNTIME_CBIDS ? DRIVER_CBIDS : RUNTIME_CBIDS)

int InitializeInjection(void);

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

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void *data)
{
	const CUpti_CallbackData *call = data;
	uint64_t t = now_ns();

	(void)userdata;
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

struct times_file {
	FILE *f;
	const char *sep;
};

static void write_call(int d, unsigned id, const char *name, void *arg)
{
	struct times_file *out = arg;
	uint64_t n = atomic_load(&totals[d][id].count);
	if (!n)
		return;
	fprintf(out->f, "%s\n {\"name\": \"%s\", \"count\": %llu, \"ns\": %llu}", out->sep, name,
	        (unsigned long long)n, (unsigned long long)atomic_load(&totals[d][id].ns));
	out->sep = ",";
}

static void write_times(void)
{
	char path[4096];
	snprintf(path, sizeof path, "%s.%d", times_path, (int)getpid());
	struct times_file out = { fopen(path, "w"), "" };
	if (!out.f)
		return;
	fprintf(out.f, "{\"outermost_ns\": %llu, \"calls\": [",
	        (unsigned long long)atomic_load(&outermost_ns));
	each_api(write_call, &out);
	fprintf(out.f, "\n]}\n");
	fclose(out.f);
}

struct timing {
	CUpti_SubscriberHandle subscriber;
	int all;
};

static void enable_timing(int d, unsigned id, const char *name, void *arg)
{
	struct timing *t = arg;
	if (t->all || timed_call(name))
		cuptiEnableCallback(1, t->subscriber, domains[d], id);
}

static void time_calls(void)
{
	struct timing t = { .all = env_flag("MT_BENCH_ALL_CALLS", 0) };
	if (cuptiSubscribe(&t.subscriber, on_call, NULL) != CUPTI_SUCCESS)
		return;
	each_api(enable_timing, &t);
	atexit(write_times);
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

/* Called by the CUDA driver at its initialisation; returns 1 (done) either
 * way, so that a refusal leaves the program running unrecorded. */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	times_path = getenv("MT_BENCH_CALL_TIMES");
	if (times_path && *times_path)
		time_calls();
	if (!env_flag("MT_BENCH_KERNELS", 1))
		return 1;
	set_attribute(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED,
	              (uint8_t)env_flag("MT_BENCH_PINNED", 0));
	set_attribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
	              (uint8_t)env_flag("MT_BENCH_PER_THREAD", 1));
	if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
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
