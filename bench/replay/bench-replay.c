/* bench-replay.c — replay speed and live-GPU latency; prints figures,
 * asserts nothing (bench/RESULTS.md keeps the latest, with date and
 * machine).
 *
 *   bench-replay [--events N] [--planned N] [--policy NAME] [--cuda] [TRACE.db...]
 *
 * 1. sim: events per second of every online policy on a synthetic stream
 *    of N alloc/free events (default 10 M), and on each TRACE given;
 * 2. planned: seconds to plan and replay --planned N allocations
 *    (default 1 M) of a training loop (300 weights never freed, iterations
 *    of 500 activations freed in reverse, each with a temporary);
 * 3. --cuda: host latency per alloc/free (p50/p99) of every policy on the
 *    real GPU over a 200 k-event stream, and the device's free memory
 *    before and after (cuMemGetInfo), which must be equal.
 * Run the sim part pinned to one core: taskset -c 1 bench-replay.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu-warmup.h"
#include "memtrace-common.h"
#include "memtrace-replay.h"
#include "synth-stream.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct mt_request_stream *synthetic(size_t allocs, size_t live, uint64_t max_bytes)
{
	struct mt_event *ev;
	size_t n;
	struct mt_request_stream *s = NULL;
	char err[256];
	if (synth_stream(42, allocs, live, max_bytes, &ev, &n) < 0)
		return NULL;
	if (mt_request_stream_from_events(&s, ev, n, MT_LAYER_REQUEST, err, sizeof(err)) < 0)
		fprintf(stderr, "bench-replay: %s\n", err);
	free(ev);
	return s;
}

static int run(const struct mt_request_stream *s, const char *policy, enum mt_backend_kind kind,
               bool latency, struct mt_replay_result *res)
{
	struct mt_replay_options o = { .policy = policy,
		                       .backend = kind,
		                       .measure_latency = latency };
	char err[256];
	int rc = mt_replay_run(s, &o, res, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "bench-replay: %s: %s\n", policy, err);
	return rc;
}

static const char *only; /* --policy: one policy alone */

static void sim_speed(const char *label, const struct mt_request_stream *s)
{
	char a[32], b[32];
	printf("\n## sim events/s: %s (%llu events, lower bound %s)\n", label,
	       (unsigned long long)mt_request_stream_events(s),
	       mt_size_format(mt_request_stream_peak_live(s), a, sizeof(a)));
	printf("%-10s %14s %12s %10s\n", "policy", "events/s", "peak reserved", "seconds");
	for (const struct mt_policy_ops *const *p = mt_policy_list(); *p; p++) {
		struct mt_replay_result r;
		if (((*p)->flags & MT_POLICY_OFFLINE) || (only && strcmp(only, (*p)->name)))
			continue;
		if (run(s, (*p)->name, MT_BACKEND_SIM, false, &r) == 0)
			printf("%-10s %14.0f %12s %10.3f\n", (*p)->name,
			       (double)r.events / r.seconds,
			       mt_size_format(r.peak_reserved, b, sizeof(b)), r.seconds);
		mt_replay_result_release(&r);
	}
}

static void planned_speed(size_t allocs)
{
	/* a training loop: 300 weights, 500 activations live at the peak */
	struct mt_event *ev;
	size_t n;
	struct mt_request_stream *s = NULL;
	struct mt_replay_result r;
	char a[32], b[32];
	if (synth_train(42, allocs, 300, 500, 64ull << 20, &ev, &n) < 0)
		return;
	int rc = mt_request_stream_from_events(&s, ev, n, MT_LAYER_REQUEST, a, sizeof(a));
	free(ev);
	if (rc < 0)
		return;
	double t = now_s();
	if (run(s, "planned", MT_BACKEND_SIM, false, &r) == 0)
		printf("\n## planned: %zu allocations (%llu events): %.2f s to plan and replay; "
		       "peak reserved %s vs lower bound %s (%.2f%% over)\n",
		       allocs, (unsigned long long)r.events, now_s() - t,
		       mt_size_format(r.peak_reserved, a, sizeof(a)),
		       mt_size_format(r.peak_allocated, b, sizeof(b)),
		       100.0 * ((double)r.peak_reserved / (double)r.peak_allocated - 1.0));
	mt_replay_result_release(&r);
	mt_request_stream_free(s);
}

static void cuda_latency(void)
{
	struct mt_backend *probe = NULL;
	char err[256], a[32], b[32], c[32];
	uint64_t free_cold, free0, free1, total;
	if (mt_backend_create(&probe, MT_BACKEND_CUDA, 0, 0, err, sizeof(err)) < 0) {
		printf("\n## cuda: skipped (%s)\n", err);
		return;
	}
	struct mt_request_stream *s = synthetic(100000, 300, 64ull << 20);
	mt_backend_mem_info(probe, &free_cold, &total);
	gpu_warmup();
	mt_backend_mem_info(probe, &free0, &total);
	printf("\n## cuda host latency per alloc/free (%llu events, lower bound %s)\n",
	       (unsigned long long)mt_request_stream_events(s),
	       mt_size_format(mt_request_stream_peak_live(s), a, sizeof(a)));
	printf("%-10s %10s %10s %12s %8s %10s\n", "policy", "p50", "p99", "peak reserved", "OOMs",
	       "seconds");
	for (const struct mt_policy_ops *const *p = mt_policy_list(); s && *p; p++) {
		struct mt_replay_result r;
		if (run(s, (*p)->name, MT_BACKEND_CUDA, true, &r) == 0)
			printf("%-10s %10s %10s %12s %8llu %10.3f\n", (*p)->name,
			       mt_duration_format(r.latency_p50_ns, a, sizeof(a)),
			       mt_duration_format(r.latency_p99_ns, b, sizeof(b)),
			       mt_size_format(r.peak_reserved, c, sizeof(c)),
			       (unsigned long long)r.oom_count, r.seconds);
		mt_replay_result_release(&r);
	}
	mt_backend_mem_info(probe, &free1, &total);
	printf("device free memory after warm-up %llu, after every policy %llu: %s (the "
	       "driver's own first-use memory: %lld bytes)\n",
	       (unsigned long long)free0, (unsigned long long)free1,
	       free0 == free1 ? "equal" : "DIFFERENT", (long long)(free_cold - free0));
	mt_request_stream_free(s);
	mt_backend_destroy(probe);
}

int main(int argc, char **argv)
{
	size_t events = 10000000, planned = 1000000;
	bool cuda = false;
	int first_trace = argc;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--events") && i + 1 < argc)
			events = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--planned") && i + 1 < argc)
			planned = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--policy") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--cuda"))
			cuda = true;
		else {
			first_trace = i;
			break;
		}
	}
	if (events) {
		/* ~N/2 allocations (a few never freed), up to 1000 live, 1 B .. 64 MiB */
		double t = now_s();
		struct mt_request_stream *s = synthetic(events / 2, 1000, 64ull << 20);
		if (!s)
			return 1;
		char label[64];
		snprintf(label, sizeof(label), "synthetic (built in %.1f s)", now_s() - t);
		sim_speed(label, s);
		mt_request_stream_free(s);
	}
	for (int i = first_trace; i < argc; i++) {
		struct mt_reader *r = mt_reader_new();
		struct mt_request_stream *s = NULL;
		char err[256];
		if (mt_reader_open(r, argv[i]) < 0)
			fprintf(stderr, "bench-replay: %s: %s\n", argv[i], mt_reader_message(r));
		else if (mt_request_stream_load(&s, r, 0, err, sizeof(err)) < 0)
			fprintf(stderr, "bench-replay: %s: %s\n", argv[i], err);
		else
			sim_speed(argv[i], s);
		mt_request_stream_free(s);
		mt_reader_free(r);
	}
	if (planned)
		planned_speed(planned);
	if (cuda)
		cuda_latency();
	return 0;
}
