/* bench-hook-cost.c — what the recorder costs the allocating thread per
 * PyTorch allocator event: the time of memtrace_torch_event() (the function
 * the PyTorch bridge calls under the caching allocator's lock) for an
 * alloc, a free-requested and a free-completed, measured inside a recorded
 * process, in bursts of BURST allocations with a pause after each that lets
 * the recorder's flushing thread take the events away, as it does at a
 * model's rate (BERT training makes about 180 000 events a second; a
 * burst's 30 000 fit in the recorder's queue, so the producer never drains it
 * itself). Run it under `memtrace record [--stacks native]`; unrecorded it
 * says so and exits 77. The bursts run twice: with the recorder reading its
 * own clock at each event, then with PyTorch's clock registered
 * (memtrace_torch_clock) and each event stamped with the TSC, as the bridge
 * passes the TraceEntry's time. Also times cuptiGetTimestamp, the clock each event
 * reads, and what CUPTI's kernel records add to each kernel launch: blocks
 * of launches of an empty kernel, with CONCURRENT_KERNEL records switched
 * off and on in turn inside this one process (a shared host's speed drifts
 * between processes by more than that cost). Prints figures; asserts
 * nothing.
 *
 * Usage: memtrace record -o /tmp/x.db -- bench-hook-cost [ALLOCATIONS]
 */
#include "config.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <cuda.h>
#include <cupti.h>

#define BURST 10000        /* allocations (30 000 events) timed at a time */
#define PAUSE_NS 300000000 /* after each burst: longer than the recorder's flush period */
#define LAUNCH_BLOCKS 20   /* each way */
#define LAUNCHES 5000      /* per block */

/* An empty kernel, JIT-compiled by the driver for whatever GPU this is. */
static const char empty_ptx[] = ".version 7.0\n.target sm_75\n.address_size 64\n"
                                ".visible .entry empty() { ret; }\n";

typedef void (*event_fn)(int action, int device, uint64_t address, uint64_t bytes, uint64_t stream,
                         uint32_t site, uint64_t ticks);
typedef void (*set_clock_fn)(uint64_t (*ticks_now)(void));

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Whether CUPTI's timestamp is CLOCK_REALTIME here, as the recorder's
 * clock check (inject-state.c) decides it: CLOCK_REALTIME read between two
 * CUPTI timestamps, and where it fell. */
static void clock_agreement(void)
{
	uint64_t before = 0, after = 0, now;
	struct timespec rt;

	cuptiGetTimestamp(&before);
	clock_gettime(CLOCK_REALTIME, &rt);
	cuptiGetTimestamp(&after);
	now = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	printf("CUPTI's clock %s CLOCK_REALTIME: it read %+lld ns and %+lld ns around it\n",
	       before <= now && now <= after ? "is" : "is NOT", (long long)(before - now),
	       (long long)(after - now));
}

/* Median ns per launch with kernel records off ([0]) and on ([1]), blocks
 * interleaved; -1 when the kernel cannot be loaded. */
static int launch_cost(double median_ns[2])
{
	double ns[2][LAUNCH_BLOCKS];
	CUmodule mod;
	CUfunction fn;

	if (cuModuleLoadData(&mod, empty_ptx) != CUDA_SUCCESS ||
	    cuModuleGetFunction(&fn, mod, "empty") != CUDA_SUCCESS)
		return -1;
	for (int b = 0; b < 2 * LAUNCH_BLOCKS; b++) {
		int on = b % 2;
		double t0;

		if (on)
			cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
		else
			cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
		cuCtxSynchronize();
		t0 = now_s();
		for (int i = 0; i < LAUNCHES; i++)
			cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		ns[on][b / 2] = (now_s() - t0) * 1e9 / LAUNCHES;
	}
	cuCtxSynchronize();
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	for (int on = 0; on < 2; on++) {
		qsort(ns[on], LAUNCH_BLOCKS, sizeof(double), by_value);
		median_ns[on] = (ns[on][LAUNCH_BLOCKS / 2 - 1] + ns[on][LAUNCH_BLOCKS / 2]) / 2;
	}
	cuModuleUnload(mod);
	return 0;
}

/* The TSC, as c10::getApproximateTime reads it on x86 (elsewhere a clock
 * of nanoseconds, as it reads there). */
static uint64_t tsc_now(void)
{
#if defined(__x86_64__)
	return __rdtsc();
#else
	return (uint64_t)(now_s() * 1e9);
#endif
}

/* Times N allocations' events through EVENT in bursts of BURST, stamped
 * with TICKS (NULL: left to the recorder's clock); puts ns per event of
 * each burst into burst_ns, sorted, and returns how many bursts. */
static long event_bursts(event_fn event, long n, uint64_t (*ticks)(void), double *burst_ns)
{
	long bursts = 0;

	/* the pattern the allocator produces: an alloc, later its free
	 * requested and completed; 64 tensors live at a time */
	for (long b = 0; b * BURST < n; b++) {
		long end = (b + 1) * BURST < n ? (b + 1) * BURST : n, events = 0;
		struct timespec pause = { 0, PAUSE_NS };
		double t0 = now_s();

		for (long i = b * BURST; i < end; i++) {
			uint64_t addr = 0x7f0000000000ull + (uint64_t)(i % 4096) * 0x100000;
			event(0, 0, addr, 4096 + (uint64_t)(i % 97) * 512, 0, 0,
			      ticks ? ticks() : 0);
			events++;
			if (i >= 64) {
				uint64_t old =
				        0x7f0000000000ull + (uint64_t)((i - 64) % 4096) * 0x100000;
				event(1, 0, old, 4096 + (uint64_t)((i - 64) % 97) * 512, 0, 0,
				      ticks ? ticks() : 0);
				event(2, 0, old, 0, 0, 0, ticks ? ticks() : 0);
				events += 2;
			}
		}
		burst_ns[b] = (now_s() - t0) * 1e9 / (double)events;
		bursts++;
		nanosleep(&pause, NULL);
	}
	qsort(burst_ns, (size_t)bursts, sizeof(double), by_value);
	return bursts;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 300000, bursts = 0;
	const char *inject = getenv("CUDA_INJECTION64_PATH");
	CUdevice dev;
	CUcontext ctx;
	event_fn event;
	set_clock_fn set_clock;
	uint64_t ts, sum = 0;
	void *lib;
	double t1, t2, t3, launch_ns[2], *burst_ns;

	if (n <= 0 || cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "bench-hook-cost: no GPU\n");
		return 77;
	}
	lib = inject ? dlopen(inject, RTLD_NOW | RTLD_NOLOAD) : NULL;
	event = lib ? (event_fn)(uintptr_t)dlsym(lib, "memtrace_torch_event") : NULL;
	if (!event) {
		fprintf(stderr, "bench-hook-cost: not recorded (run under memtrace record)\n");
		return 77;
	}
	burst_ns = calloc((size_t)(n / BURST + 1), sizeof(double));
	if (!burst_ns)
		return 1;
	bursts = event_bursts(event, n, NULL, burst_ns);
	printf("events, the recorder reading its clock: %.1f ns per event, median of %ld bursts of "
	       "%d allocations (alloc, free requested, free completed; fastest burst %.1f ns)\n",
	       burst_ns[bursts / 2], bursts, BURST, burst_ns[0]);
	set_clock = (set_clock_fn)(uintptr_t)dlsym(lib, "memtrace_torch_clock");
	if (set_clock) {
		set_clock(tsc_now);
		bursts = event_bursts(event, n, tsc_now, burst_ns);
		printf("events, stamped with the TSC as PyTorch's hook stamps them (the read "
		       "included): %.1f ns per event, median of %ld bursts (fastest %.1f ns)\n",
		       burst_ns[bursts / 2], bursts, burst_ns[0]);
	}
	t1 = now_s();
	for (long i = 0; i < n; i++) {
		cuptiGetTimestamp(&ts);
		sum += ts;
	}
	t2 = now_s();
	for (long i = 0; i < n; i++) {
		struct timespec rt;
		clock_gettime(CLOCK_REALTIME, &rt);
		sum += (uint64_t)rt.tv_nsec;
	}
	t3 = now_s();
	printf("cuptiGetTimestamp: %.1f ns; clock_gettime(CLOCK_REALTIME), which the recorder "
	       "reads "
	       "where CUPTI's clock is that one: %.1f ns (%llu)\n",
	       (t2 - t1) * 1e9 / (double)n, (t3 - t2) * 1e9 / (double)n,
	       (unsigned long long)(sum & 1));
	clock_agreement();
	if (launch_cost(launch_ns) == 0)
		printf("kernel launch: %.0f ns with kernel records off, %.0f ns on: %+.0f ns per "
		       "launch (median of %d blocks of %d each way)\n",
		       launch_ns[0], launch_ns[1], launch_ns[1] - launch_ns[0], LAUNCH_BLOCKS,
		       LAUNCHES);
	else
		printf("kernel launch: the empty kernel could not be loaded\n");
	cuDevicePrimaryCtxRelease(dev);
	free(burst_ns);
	return 0;
}
