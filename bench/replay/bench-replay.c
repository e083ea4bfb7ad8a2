/* bench-replay.c — replay speed and live-GPU latency; prints figures
 * (bench/RESULTS.md keeps the latest, with date and machine).
 *
 *   bench-replay [--events N] [--planned N] [--policy NAME] [--repeat R]
 *                [--check] [--cuda] [TRACE.db...]
 *
 * 1. sim: events per CPU second of every online policy's replay loop on a
 *    synthetic stream of N alloc/free events (default 10 M) and on each
 *    TRACE given (its steps read into memory first, 32 B an event, so the
 *    replay runs alone): the best of R rounds (default 3), the rounds' spread, and
 *    the ratio to caching's rate in the same run. --check makes it a guard:
 *    exit status 1 when any online policy runs below half of caching's
 *    rate (a ratio, so it holds on a loaded machine);
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

/* The trace's request stream with its steps in memory, so that a replay
 * measured is the policy's work alone, with no reading beside it. */
static struct mt_request_stream *in_memory(const char *path)
{
	struct mt_reader *r = mt_reader_new();
	struct mt_request_stream *probe = NULL, *s = NULL;
	struct mt_event *ev = NULL;
	size_t n = 0, cap = 0;
	unsigned layer;
	char err[256] = "";
	int rc = r ? mt_reader_open(r, path) : -ENOMEM;
	if (rc == 0 && (rc = mt_request_stream_load(&probe, r, 0, err, sizeof(err))) == 0 &&
	    (rc = mt_reader_request_layer(r, &layer)) == 0) {
		struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_ALLOC) |
			                       MT_KIND_BIT(MT_EVENT_FREE),
			              .device = mt_request_stream_device(probe) };
		struct mt_iter *it = NULL;
		struct mt_event e;
		rc = mt_reader_iter(r, &q, &it);
		while (rc == 0 && (rc = mt_iter_next(it, &e)) > 0) {
			rc = 0;
			if (n == cap) {
				cap = cap ? 2 * cap : 1 << 20;
				struct mt_event *v = realloc(ev, cap * sizeof(*v));
				if (!v) {
					rc = -ENOMEM;
					break;
				}
				ev = v;
			}
			ev[n++] = e;
		}
		mt_iter_free(it);
		if (rc == 0)
			rc = mt_request_stream_from_events(&s, ev, n, layer, err, sizeof(err));
	}
	if (rc < 0)
		fprintf(stderr, "bench-replay: %s: %s\n", path,
		        err[0] ? err
		        : r    ? mt_reader_message(r)
		               : "out of memory");
	free(ev);
	mt_request_stream_free(probe);
	mt_reader_free(r);
	return s;
}

static const char *only; /* --policy: one policy alone */
static unsigned repeat = 3;
static bool check;
static int check_failures;

/* Online policies in registry order (only the one asked, with --policy). */
static size_t online(const struct mt_policy_ops **v)
{
	size_t n = 0;
	for (const struct mt_policy_ops *const *p = mt_policy_list(); *p; p++)
		if (!((*p)->flags & MT_POLICY_OFFLINE) && (!only || !strcmp(only, (*p)->name)))
			v[n++] = *p;
	return n;
}

#define MAX_POLICIES 64

/* Events per CPU second of the replay loop for every online policy, the
 * best of `repeat` rounds (each round runs every policy once, so a slow
 * spell of a shared machine hits them alike), the spread of the rounds,
 * and the ratio to caching's best of the same run. With --check, a policy
 * under half of caching's rate is a failure. */
static void sim_speed(const char *label, const struct mt_request_stream *s)
{
	const struct mt_policy_ops *pol[MAX_POLICIES];
	double best[MAX_POLICIES] = { 0 }, worst[MAX_POLICIES] = { 0 }, caching = 0;
	uint64_t peak[MAX_POLICIES] = { 0 };
	size_t n = online(pol);
	char a[32], b[32];
	for (unsigned round = 0; round < repeat; round++) {
		for (size_t i = 0; i < n; i++) {
			struct mt_replay_result r;
			if (run(s, pol[i]->name, MT_BACKEND_SIM, false, &r) == 0 && r.seconds > 0) {
				double rate = (double)r.events / r.seconds;
				best[i] = rate > best[i] ? rate : best[i];
				worst[i] = !round || rate < worst[i] ? rate : worst[i];
				peak[i] = r.peak_reserved;
			}
			mt_replay_result_release(&r);
		}
	}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(pol[i]->name, "caching"))
			caching = best[i];
	printf("\n## sim events/s: %s (%llu events, lower bound %s; best of %u rounds, CPU "
	       "time of the replay loop)\n",
	       label, (unsigned long long)mt_request_stream_events(s),
	       mt_size_format(mt_request_stream_peak_live(s), a, sizeof(a)), repeat);
	printf("%-10s %14s %8s %10s %13s\n", "policy", "events/s", "spread", "vs caching",
	       "peak reserved");
	for (size_t i = 0; i < n; i++) {
		bool slow = caching > 0 && best[i] < caching / 2;
		printf("%-10s %14.0f %7.1f%% %9.2fx %13s%s\n", pol[i]->name, best[i],
		       best[i] > 0 ? 100.0 * (best[i] - worst[i]) / best[i] : 0.0,
		       caching > 0 ? best[i] / caching : 0.0, mt_size_format(peak[i], b, sizeof(b)),
		       check && slow ? "  BELOW HALF OF CACHING" : "");
		check_failures += check && (slow || best[i] <= 0);
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
		else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--check"))
			check = true;
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
		struct mt_request_stream *s = in_memory(argv[i]);
		if (s)
			sim_speed(argv[i], s);
		mt_request_stream_free(s);
	}
	if (planned)
		planned_speed(planned);
	if (cuda)
		cuda_latency();
	if (check)
		printf("\ncheck: %s\n", check_failures ? "FAILED (a policy below half of caching's "
		                                         "rate)"
		                                       : "every online policy at least half of "
		                                         "caching's rate");
	return check_failures ? 1 : 0;
}
