/* bench-plan.c — the `planned` policy's plan alone, on traces; prints
 * figures (bench/RESULTS.md keeps them, with date and machine).
 *
 *   bench-plan TRACE.db...
 *
 * For each trace: the lifetimes its replay would plan (first device, the
 * request layer when there is one), planned as `planned` plans them (align
 * 512 B); the wall and CPU seconds of the plan, the arena, and a hash of
 * every request's offset (FNV-1a over the offsets as 64-bit words, in
 * request order): two builds whose hashes agree placed every request at
 * the same offset.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "memtrace-format.h"
#include "memtrace-replay.h"
#include "planner-private.h"
#include "request-stream-private.h"

static double clock_s(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t fnv_words(const uint64_t *w, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= w[i];
		h *= 1099511628211ull;
	}
	return h;
}

static int bench(const char *path)
{
	struct mt_reader *r = mt_reader_new();
	struct mt_request_stream *s = NULL;
	struct mt_plan_request *life = NULL;
	uint64_t *offset = NULL, arena = 0;
	char err[256] = "out of memory";
	int rc = r ? mt_reader_open(r, path) : -1;
	if (rc < 0)
		snprintf(err, sizeof(err), "%s", r ? mt_reader_message(r) : "out of memory");
	if (rc >= 0)
		rc = mt_request_stream_load(&s, r, 0, err, sizeof(err));
	if (rc >= 0)
		rc = rp_request_stream_lifetimes(s, NULL, &life, err, sizeof(err));
	size_t n = rc >= 0 ? (size_t)s->requests : 0;
	if (rc >= 0 && !(offset = malloc((n ? n : 1) * sizeof(*offset))))
		rc = -1;
	double wall = clock_s(CLOCK_MONOTONIC), cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	if (rc >= 0 && (rc = rp_plan_greedy_by_size(life, n, 512, NULL, NULL, offset, &arena)) < 0)
		snprintf(err, sizeof(err), "planning failed");
	wall = clock_s(CLOCK_MONOTONIC) - wall;
	cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu;
	if (rc >= 0)
		printf("%s: %zu requests planned in %.2f s (%.2f s CPU, %.2f us a request), arena "
		       "%llu B, offsets hash %016llx\n",
		       path, n, wall, cpu, n ? cpu * 1e6 / (double)n : 0.0,
		       (unsigned long long)arena, (unsigned long long)fnv_words(offset, n));
	else
		fprintf(stderr, "bench-plan: %s: %s\n", path, err);
	free(offset);
	free(life);
	mt_request_stream_free(s);
	mt_reader_free(r);
	return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	int status = argc < 2;
	if (argc < 2)
		fprintf(stderr, "usage: bench-plan TRACE.db...\n");
	for (int i = 1; i < argc; i++)
		status |= bench(argv[i]);
	return status;
}
