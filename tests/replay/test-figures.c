/* test-figures.c — replay's figures do not move: every registered policy
 * replays every sample trace (samples/traces/NAME.db) under sim with the
 * whole device and at a capacity of the lower bound (where most policies
 * meet OOMs), and peak reserved, peak allocated (rounded), driver calls,
 * calls per iteration, OOMs and the first OOM's request must equal the
 * lines of tests/replay/figures.golden. That file was written by this
 * program built against the replay code before the speed work of issue 17
 * (commit 9578df3), so the speed work changed no figure. With
 * MT_UPDATE_FIGURES=1 the program prints the lines instead of checking
 * them (to write the golden; review it before committing). One TAP case per
 * trace; skips when no sample trace is there. */
#include "config.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-replay.h"
#include "request-stream-private.h"
#include "tap.h"

#define LINE 256

static char **golden;
static size_t ngolden;
static bool update;
static const char *trace_path;

static bool in_golden(const char *line)
{
	for (size_t i = 0; i < ngolden; i++)
		if (!strcmp(golden[i], line))
			return true;
	return false;
}

/* The line of (trace, policy, capacity) in the golden, or NULL. */
static const char *golden_for(const char *key)
{
	size_t n = strlen(key);

	for (size_t i = 0; i < ngolden; i++)
		if (!strncmp(golden[i], key, n) && golden[i][n] == ' ')
			return golden[i];
	return NULL;
}

static void figures(const char *name, const struct mt_request_stream *s, const char *policy,
                    uint64_t capacity)
{
	struct mt_replay_options opt = { .policy = policy,
		                         .backend = MT_BACKEND_SIM,
		                         .capacity = capacity };
	struct mt_replay_result r;
	char err[256], key[LINE], line[2 * LINE];
	int rc = mt_replay_run(s, &opt, &r, err, sizeof(err));

	CHECKF(rc == 0, "%s %s: %s", name, policy, err);
	if (rc < 0)
		return;
	snprintf(key, sizeof(key), "%s %s %s", name, policy, capacity ? "bound" : "whole");
	snprintf(line, sizeof(line), "%s %llu %llu %llu/%llu/%llu/%llu %.3f %llu %llu %llu", key,
	         (unsigned long long)r.peak_reserved, (unsigned long long)r.peak_allocated_rounded,
	         (unsigned long long)r.driver.alloc_calls, (unsigned long long)r.driver.free_calls,
	         (unsigned long long)r.driver.map_calls, (unsigned long long)r.driver.unmap_calls,
	         r.calls_per_iteration, (unsigned long long)r.oom_count,
	         (unsigned long long)(r.oom_count ? r.first_oom.request : 0),
	         (unsigned long long)r.events);
	mt_replay_result_release(&r);
	if (update) {
		printf("# %s\n", line);
		return;
	}
	CHECKF(in_golden(line), "got:  %s\n# want: %s", line,
	       golden_for(key) ? golden_for(key) : "(none)");
}

static void one_trace(void)
{
	const char *name = strrchr(trace_path, '/') + 1;
	struct mt_reader *r = mt_reader_new();
	struct mt_request_stream *s = NULL;
	char err[256];

	REQUIRE(r && mt_reader_open(r, trace_path) == 0);
	REQUIRE(mt_request_stream_load(&s, r, 0, err, sizeof(err)) == 0);
	for (const struct mt_policy_ops *const *p = mt_policy_list(); *p; p++) {
		uint64_t g = 2 * MiB, bound = mt_request_stream_peak_live(s);

		figures(name, s, (*p)->name, 0);
		figures(name, s, (*p)->name, (bound + g - 1) / g * g);
	}
	/* the lifetimes a load keeps for offline policies are those their own
	 * pass reads, and planned's figures from them the same */
	struct mt_request_stream *kept = NULL;
	struct mt_plan_request *read = NULL;
	REQUIRE(mt_request_stream_load_with_lifetimes(&kept, r, 0, err, sizeof(err)) == 0);
	REQUIRE(rp_request_stream_lifetimes(s, NULL, &read, err, sizeof(err)) == 0);
	CHECK(kept->requests == s->requests && !s->lifetimes);
	CHECK(s->requests == 0 ||
	      (kept->lifetimes && !memcmp(kept->lifetimes, read, s->requests * sizeof(*read))));
	figures(name, kept, "planned", 0);
	free(read);
	mt_request_stream_free(kept);
	mt_request_stream_free(s);
	mt_reader_free(r);
}

static void load_golden(const char *root)
{
	char path[4096], line[2 * LINE];
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/replay/figures.golden", root);
	f = fopen(path, "r");
	REQUIRE(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		golden = realloc(golden, (ngolden + 1) * sizeof(*golden));
		REQUIRE(golden && (golden[ngolden] = strdup(line)));
		ngolden++;
	}
	fclose(f);
}

int main(void)
{
	const char *root = getenv("MT_SOURCE_ROOT"), *u = getenv("MT_UPDATE_FIGURES");
	char pattern[4096];
	glob_t g;

	REQUIRE(root);
	update = u && !strcmp(u, "1");
	snprintf(pattern, sizeof(pattern), "%s/samples/traces/*.db", root);
	if (glob(pattern, 0, NULL, &g) != 0) {
		printf("1..0 # SKIP no sample traces\n");
		return 0;
	}
	if (!update)
		load_golden(root);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		trace_path = g.gl_pathv[i];
		check_run(strrchr(trace_path, '/') + 1, one_trace);
	}
	globfree(&g);
	for (size_t i = 0; i < ngolden; i++)
		free(golden[i]);
	free(golden);
	return check_done();
}
