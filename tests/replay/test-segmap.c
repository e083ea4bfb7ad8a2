/* test-segmap.c — the viewer's segment map of a policy and `memtrace
 * replay` agree: for every sample trace (samples/traces/NAME.db) and every
 * registered policy, one full replay records the state after every event
 * through the replay's observer, and at several moments (evenly spread over
 * the trace, and the moment of the replay's peak) the segment map the
 * segments view draws (vw_segmap_policy) holds exactly the reserved bytes
 * the replay held then, and at least the live bytes. The same run's
 * decimated series and peak are checked to be states of that run. Skips
 * when no sample trace is there. */
#include "config.h"

#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "viewer-private.h"

#define SERIES_POINTS 2000 /* as memtrace replay saves */
#define MOMENTS 4

/* One state per replay position. */
struct states {
	struct mt_replay_moment *v;
	size_t n, cap;
};

static int record(void *data, const struct mt_replay_moment *m, struct mt_policy *p)
{
	struct states *s = data;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 4096;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		REQUIRE(s->v);
	}
	s->v[s->n++] = *m;
	return 0;
}

/* The state once every event at or before `at` is replayed: the first
 * position whose next event comes later. */
static const struct mt_replay_moment *state_at(const struct states *s, uint64_t at)
{
	size_t lo = 0, hi = s->n - 1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->v[mid].next_ts > at)
			hi = mid;
		else
			lo = mid + 1;
	}
	return &s->v[lo];
}

/* Every series point is a state of the run: some position in its time
 * range [ts, next point's ts) held exactly its reserved bytes. */
static void check_series(const char *spec, const struct states *s,
                         const struct mt_replay_result *res)
{
	size_t k = 1; /* position 0 has no event time */

	for (size_t i = 0; i < res->series_len; i++) {
		uint64_t end = i + 1 < res->series_len ? res->series[i + 1].ts : UINT64_MAX;
		bool found = false;

		while (k < s->n && s->v[k].ts < res->series[i].ts)
			k++;
		for (size_t j = k; j < s->n && s->v[j].ts < end && !found; j++)
			found = s->v[j].reserved == res->series[i].reserved;
		CHECKF(found,
		       "%s: series point %zu (%llu bytes reserved) is no state of the replay", spec,
		       i, (unsigned long long)res->series[i].reserved);
	}
}

static const char *trace_path;

static void one_trace(void)
{
	struct mt_reader *r = mt_reader_new();
	struct mt_request_stream *stream = NULL;
	struct vw_trace t;
	char err[256] = "";

	REQUIRE(r && mt_reader_open(r, trace_path) == 0);
	REQUIRE(vw_trace_load(&t, r, 0, 0, err, sizeof(err)) == 0);
	REQUIRE(mt_request_stream_load(&stream, r, t.device, err, sizeof(err)) == 0);
	for (const struct mt_policy_ops *const *p = mt_policy_list(); *p; p++) {
		struct states st = { 0 };
		struct mt_replay_options opt = { .policy = (*p)->name,
			                         .backend = MT_BACKEND_SIM,
			                         .series_points = SERIES_POINTS,
			                         .observe = record,
			                         .observe_data = &st };
		struct mt_replay_result res;
		uint64_t moments[MOMENTS + 1], peak = 0, peak_ts = 0;

		REQUIRE(mt_replay_run(stream, &opt, &res, err, sizeof(err)) == 0);
		CHECK(st.n == mt_request_stream_events(stream) + 1);
		for (size_t i = 0; i < st.n; i++)
			if (st.v[i].reserved > peak) {
				peak = st.v[i].reserved;
				peak_ts = st.v[i].ts;
			}
		CHECKF(peak == res.peak_reserved, "%s: observed peak %llu, replay's %llu",
		       (*p)->name, (unsigned long long)peak, (unsigned long long)res.peak_reserved);
		check_series((*p)->name, &st, &res);
		for (size_t k = 0; k < MOMENTS; k++)
			moments[k] = t.t0 + (t.t1 - t.t0) / MOMENTS * k;
		moments[MOMENTS] = peak_ts;
		for (size_t k = 0; k <= MOMENTS; k++) {
			const struct mt_replay_moment *want = state_at(&st, moments[k]);
			struct mt_segmap m;
			int rc = vw_segmap_policy(&t, (*p)->name, moments[k], UINT64_MAX, &m, err,
			                          sizeof(err));

			CHECKF(rc == 0, "%s: %s", (*p)->name, err);
			if (rc < 0)
				continue;
			CHECKF(m.reserved == want->reserved,
			       "%s at +%llu ns (position %llu): segment map %llu, replay %llu",
			       (*p)->name, (unsigned long long)(moments[k] - t.t0),
			       (unsigned long long)want->position, (unsigned long long)m.reserved,
			       (unsigned long long)want->reserved);
			CHECKF(m.allocated >= want->allocated, "%s: %llu allocated, %llu live",
			       (*p)->name, (unsigned long long)m.allocated,
			       (unsigned long long)want->allocated);
			mt_segmap_release(&m);
		}
		/* under a budget of one byte an offline policy is not replayed (a
		 * message says what it would need), an online one is */
		{
			bool refused = ((*p)->flags & MT_POLICY_OFFLINE) &&
			               mt_request_stream_requests(stream) > 0;
			struct mt_segmap m;
			int rc = vw_segmap_policy(&t, (*p)->name, peak_ts, 1, &m, err, sizeof(err));

			CHECKF(refused ? rc == -EFBIG && strstr(err, "would need") : rc == 0,
			       "%s under a 1-byte budget: %d (%s)", (*p)->name, rc, err);
			if (rc == 0)
				mt_segmap_release(&m);
		}
		mt_replay_result_release(&res);
		free(st.v);
	}
	mt_request_stream_free(stream);
	vw_trace_release(&t);
	mt_reader_free(r);
}

int main(void)
{
	const char *root = getenv("MT_SOURCE_ROOT");
	char pattern[4096];
	glob_t g;

	REQUIRE(root);
	snprintf(pattern, sizeof(pattern), "%s/samples/traces/*.db", root);
	if (glob(pattern, 0, NULL, &g) != 0) {
		printf("1..0 # SKIP no sample traces\n");
		return 0;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *name = strrchr(g.gl_pathv[i], '/') + 1;

		trace_path = g.gl_pathv[i];
		check_run(name, one_trace);
	}
	globfree(&g);
	return check_done();
}
