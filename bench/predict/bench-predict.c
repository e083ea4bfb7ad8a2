/* bench-predict.c — how long `memtrace predict` takes on large inputs;
 * prints figures, asserts nothing (bench/RESULTS.md keeps the latest, with
 * date and machine).
 *
 *   bench-predict [--events N] [--targets K] [--dir DIR]
 *
 * Writes the synthetic model (tests/predict/model-trace.h: 24 layers with
 * affine activations and quadratic attention scores) at N = 1, 2, 4 with
 * about N events each (default 1 M), then times, in this process: building
 * the predictor (reading, aligning and fitting the three inputs, and the
 * anatomy for the default capacity), K predictions (default 10, N = 8, 16,
 * ..., caching policy), the recorded peaks for the naive line, and
 * --max-fit at 80 GiB. The target: 10 sizes on a 1 M-event input
 * in at most 5 s, all of it together. The traces stay in DIR (default: a
 * temporary folder, removed).
 */
#include "config.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memtrace-predict.h"
#include "model-trace.h"

#define EVENTS_PER_LAYER_STEP 12 /* alloc and free events of one layer in one step */

/* Wall-clock and CPU seconds (the process's, all threads). */
struct stamp {
	double wall, cpu;
};

static struct stamp now(void)
{
	struct timespec w, c;
	clock_gettime(CLOCK_MONOTONIC, &w);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
	return (struct stamp){ (double)w.tv_sec + (double)w.tv_nsec / 1e9,
		               (double)c.tv_sec + (double)c.tv_nsec / 1e9 };
}

/* "1.234 s (CPU 1.100 s)" for the time from a to b. */
static const char *span(struct stamp a, struct stamp b, char *buf, size_t len)
{
	snprintf(buf, len, "%.3f s (CPU %.3f s)", b.wall - a.wall, b.cpu - a.cpu);
	return buf;
}

int main(int argc, char **argv)
{
	unsigned long long events = 1000000, targets = 10;
	const char *dir_arg = NULL;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--events"))
			events = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--targets"))
			targets = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--dir"))
			dir_arg = argv[i + 1];
	}
	char tmp[] = "/tmp/bench-predict-XXXXXX", path[3][512], err[2048];
	const char *dir = dir_arg ? dir_arg : mkdtemp(tmp);
	if (!dir || !targets || targets > 64) {
		fprintf(stderr,
		        "usage: bench-predict [--events N] [--targets 1..64] [--dir DIR]\n");
		return 2;
	}
	/* as memtrace predict does: keep freed memory for the next synthesis */
	mallopt(M_MMAP_THRESHOLD, 1 << 30);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	struct model_params mp;
	model_params_default(&mp);
	mp.layers = 24;
	mp.quad = 4096;
	mp.steps = (unsigned)(events / (mp.layers * EVENTS_PER_LAYER_STEP) + 1);
	struct mt_predict_input in[3];
	struct stamp t0 = now();
	for (int i = 0; i < 3; i++) {
		uint64_t n = 1ull << i;
		snprintf(path[i], sizeof(path[i]), "%s/model-n%llu.db", dir, (unsigned long long)n);
		if (model_trace_write(path[i], &mp, n) < 0) {
			fprintf(stderr, "bench-predict: cannot write %s\n", path[i]);
			return 1;
		}
		in[i] = (struct mt_predict_input){ mt_reader_new(), path[i], n, 0 };
		if (mt_reader_open(in[i].reader, path[i]) < 0) {
			fprintf(stderr, "bench-predict: %s\n", mt_reader_message(in[i].reader));
			return 1;
		}
	}
	struct stamp t1 = now();
	struct mt_predictor *p = NULL;
	if (mt_predictor_build(&p, in, 3, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench-predict: %s\n", err);
		return 1;
	}
	struct stamp t2 = now();
	const struct mt_predict_input_info *ref = mt_predictor_input(p, 2);
	char a[64], b[64];
	printf("inputs: 3 traces of %llu requests each, %llu alloc and free events (written in "
	       "%s)\n",
	       (unsigned long long)ref->requests, (unsigned long long)events,
	       span(t0, t1, a, sizeof(a)));
	printf("build (read, align, fit 3 inputs; anatomy): %s\n", span(t1, t2, a, sizeof(a)));
	const char *caching = "caching";
	struct stamp tp = now();
	for (unsigned long long k = 0; k < targets; k++) {
		struct mt_replay_result r;
		uint64_t live, n = 8ull << k % 8;
		if (mt_predict_at(p, n + k / 8, &caching, 1, 80ull << 30, &live, &r, err,
		                  sizeof(err)) < 0) {
			fprintf(stderr, "bench-predict: %s\n", err);
			return 1;
		}
		mt_replay_result_release(&r);
	}
	struct stamp t3 = now();
	uint64_t reserved[3], fit = 0;
	mt_predictor_input_reserved(p, caching, reserved, err, sizeof(err));
	struct stamp t4 = now();
	mt_predict_max_fit(p, caching, 80ull << 30, 1u << 31, &fit, err, sizeof(err));
	struct stamp t5 = now();
	printf("%llu predictions (caching): %s\n", targets, span(tp, t3, a, sizeof(a)));
	printf("recorded peaks for the naive line (3 replays): %s\n", span(t3, t4, a, sizeof(a)));
	printf("build + %llu predictions + naive: %s (target: 10 sizes on 1 M events <= 5 s)\n",
	       targets, span(t1, t4, a, sizeof(a)));
	printf("max fit at 80 GiB: N = %llu in %s\n", (unsigned long long)fit,
	       span(t4, t5, b, sizeof(b)));
	mt_predictor_free(p);
	for (int i = 0; i < 3; i++)
		mt_reader_free(in[i].reader);
	if (!dir_arg) {
		for (int i = 0; i < 3; i++)
			remove(path[i]);
		remove(dir);
	}
	return 0;
}
