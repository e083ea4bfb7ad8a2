/* driver.c — the replay driver: feeds a request stream through one policy
 * on a fresh backend and measures (see memtrace-replay.h).
 *
 * Every alloc event asks the policy for memory; an -ENOMEM answer (the
 * policy's own retry logic has run) is an OOM: counted, the first one
 * described, the request and its later free skipped. Any other error stops
 * the replay. Offline policies get every lifetime first through plan(), as
 * positions in replay order. The policy and then the backend are destroyed
 * before returning, whatever happened, so all device memory is released.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend-private.h"
#include "metrics-private.h"
#include "request-stream-private.h"

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t event_ts(const struct mt_request_stream *s, uint32_t code)
{
	uint32_t r = RP_EVENT_REQUEST(code);
	return RP_EVENT_IS_FREE(code) ? s->free_ts[r] : s->alloc_ts[r];
}

int rp_request_stream_plan(const struct mt_request_stream *s, struct mt_policy *p)
{
	struct mt_plan_request *reqs = malloc((s->requests ? s->requests : 1) * sizeof(*reqs));
	if (!reqs)
		return -ENOMEM;
	for (size_t i = 0; i < s->requests; i++)
		reqs[i] = (struct mt_plan_request){ 0, UINT64_MAX, s->bytes[i],
			                            s->streams[s->stream[i]] };
	for (size_t i = 0; i < s->nevents; i++) {
		uint32_t c = s->events[i];
		if (RP_EVENT_IS_FREE(c))
			reqs[RP_EVENT_REQUEST(c)].end = i;
		else
			reqs[RP_EVENT_REQUEST(c)].start = i;
	}
	int rc = p->ops->plan(p, reqs, s->requests);
	free(reqs);
	return rc;
}

/* What the loop needs of one request, together: a free touches one cache
 * line of a request allocated long before, not three arrays. */
struct req {
	uint64_t addr; /* while live, else 0 */
	uint64_t bytes;
	uint64_t stream;
};

/* Records the first OOM with the largest requests live at that moment. */
static void first_oom(const struct mt_request_stream *s, const struct req *req, uint32_t r,
                      uint64_t allocated, uint64_t reserved, struct mt_replay_oom *oom)
{
	*oom = (struct mt_replay_oom){ .ts = s->alloc_ts[r],
		                       .request = r,
		                       .bytes = s->bytes[r],
		                       .allocated = allocated,
		                       .reserved = reserved };
	for (size_t i = 0; i < s->requests; i++) {
		if (!req[i].addr)
			continue;
		uint64_t b = s->bytes[i];
		for (size_t k = 0; k < MT_REPLAY_OOM_LARGEST; k++) {
			if (b > oom->largest[k]) {
				uint64_t t = oom->largest[k];
				oom->largest[k] = b;
				b = t;
			}
		}
	}
}

struct run {
	const struct mt_request_stream *s;
	const struct mt_replay_options *opt;
	struct mt_replay_result *res;
	struct mt_backend *b;
	struct mt_policy *p;
	struct req *req; /* per request */
	uint32_t *lat;   /* latency samples (ns) when measured */
	size_t nlat;
	struct rp_series series;
	uint64_t peak_live;        /* live bytes actually served (less than the bound after OOMs) */
	uint64_t *iteration_calls; /* driver calls made before each iteration start */
	size_t next_iteration;
	char *err;
	size_t errlen;
};

static int fail(struct run *r, int rc, size_t i, const char *what)
{
	const char *m = r->b && rc != -EINTR ? mt_backend_message(r->b) : "";
	r->res->events = i; /* events fully replayed */
	snprintf(r->err, r->errlen, "%s at event %zu: %s", what, i,
	         m[0] ? m : strerror(rc < 0 ? -rc : rc));
	return rc;
}

static uint64_t driver_calls(const struct mt_backend *b)
{
	struct mt_backend_stats st;
	mt_backend_get_stats(b, &st);
	return st.alloc_calls + st.free_calls + st.map_calls + st.unmap_calls;
}

/* Notes the driver calls made so far at every iteration start up to ts. */
static void mark_iterations(struct run *r, uint64_t ts)
{
	const struct mt_request_stream *s = r->s;
	while (r->next_iteration < s->iterations && ts >= s->iteration_ts[r->next_iteration])
		r->iteration_calls[r->next_iteration++] = driver_calls(r->b);
}

/* Calls per iteration between the second iteration start and the last
 * one reached (the first iteration fills the caches). */
static void steady_state(struct run *r)
{
	mark_iterations(r, UINT64_MAX);
	size_t n = r->next_iteration;
	if (n < 3)
		return;
	r->res->steady_iterations = n - 2;
	r->res->calls_per_iteration =
	        (double)(r->iteration_calls[n - 1] - r->iteration_calls[1]) / (double)(n - 2);
}

/* Replays event i. Returns 0 when applied, 1 when skipped (an OOM, or the
 * free of a request that got no memory), or a negative errno. */
static int apply(struct run *r, size_t i, uint64_t *live)
{
	const struct mt_request_stream *s = r->s;
	const struct mt_policy_ops *ops = r->p->ops;
	uint32_t c = s->events[i], q = RP_EVENT_REQUEST(c);
	struct req *rq = &r->req[q];
	int rc;
	if (!RP_EVENT_IS_FREE(c)) {
		rc = ops->alloc(r->p, rq->bytes, rq->stream, q, &rq->addr);
		if (rc == -ENOMEM) {
			if (!r->res->oom_count++)
				first_oom(s, r->req, q, *live, rp_backend_reserved_now(r->b),
				          &r->res->first_oom);
			rq->addr = 0;
			return 1;
		}
		if (rc < 0)
			return fail(r, rc, i, "allocation failed");
		*live += rq->bytes;
		if (*live > r->peak_live)
			r->peak_live = *live;
		if (r->p->allocated > r->res->peak_allocated_rounded)
			r->res->peak_allocated_rounded = r->p->allocated;
		return 0;
	}
	if (!rq->addr)
		return 1; /* its allocation failed */
	rc = ops->free(r->p, rq->addr, rq->stream);
	if (rc < 0)
		return fail(r, rc, i, "free failed");
	rq->addr = 0;
	*live -= rq->bytes;
	return 0;
}

/* Shows the observer position i (i events replayed); > 0: stop there. */
static int observe(struct run *r, size_t i, uint64_t live)
{
	const struct mt_request_stream *s = r->s;
	struct mt_replay_moment m = {
		.position = i,
		.ts = i ? event_ts(s, s->events[i - 1]) : 0,
		.next_ts = i < s->nevents ? event_ts(s, s->events[i]) : UINT64_MAX,
		.allocated = live,
		.reserved = rp_backend_reserved_now(r->b),
	};
	int rc = r->opt->observe(r->opt->observe_data, &m, r->p);
	if (rc > 0)
		r->res->events = i;
	return rc < 0 ? fail(r, rc, i, "observer failed") : rc;
}

static int loop(struct run *r)
{
	const struct mt_request_stream *s = r->s;
	uint64_t live = 0, step = s->nevents / 100 + 1, t0 = 0, next_check = 0;
	bool timed = r->lat != NULL;
	int rc;
	if (r->opt->observe && (rc = observe(r, 0, live)) != 0)
		return rc < 0 ? rc : 0;
	for (size_t i = 0; i < s->nevents; i++) {
		if (i == next_check) { /* every ~1%: progress and interruption */
			next_check += step;
			r->res->events = i; /* events fully replayed */
			if (r->opt->progress)
				r->opt->progress(r->opt->progress_data, i, s->nevents);
			if (r->opt->interrupted && *r->opt->interrupted)
				return fail(r, -EINTR, i, "interrupted");
		}
		if (r->iteration_calls)
			mark_iterations(r, event_ts(s, s->events[i]));
		if (timed)
			t0 = now_ns();
		if ((rc = apply(r, i, &live)) < 0)
			return rc;
		if (rc == 0 && timed) {
			uint64_t d = now_ns() - t0;
			r->lat[r->nlat++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
		}
		if (rc == 0 && r->series.n)
			rp_series_add(&r->series, event_ts(s, s->events[i]), live,
			              rp_backend_reserved_now(r->b));
		if (r->opt->observe && (rc = observe(r, i + 1, live)) != 0)
			return rc < 0 ? rc : 0;
	}
	r->res->events = s->nevents;
	if (r->iteration_calls)
		steady_state(r);
	if (r->opt->progress)
		r->opt->progress(r->opt->progress_data, s->nevents, s->nevents);
	return 0;
}

static int setup(struct run *r)
{
	const struct mt_request_stream *s = r->s;
	const struct mt_replay_options *opt = r->opt;
	uint64_t cap = opt->capacity;
	if (!cap && opt->backend == MT_BACKEND_SIM)
		cap = UINT64_MAX / 2;
	int rc = mt_backend_create(&r->b, opt->backend, opt->ordinal, cap, r->err, r->errlen);
	if (rc < 0)
		return rc;
	if ((rc = mt_policy_create(&r->p, opt->policy, r->b, r->err, r->errlen)) < 0)
		return rc;
	if (s->iterations && !(r->iteration_calls = malloc(s->iterations * sizeof(uint64_t))))
		return -ENOMEM;
	r->req = malloc((s->requests ? s->requests : 1) * sizeof(*r->req));
	if (!r->req)
		return -ENOMEM;
	for (size_t i = 0; i < s->requests; i++)
		r->req[i] = (struct req){ 0, s->bytes[i], s->streams[s->stream[i]] };
	if (opt->measure_latency &&
	    !(r->lat = malloc((s->nevents ? s->nevents : 1) * sizeof(*r->lat))))
		return -ENOMEM;
	if (s->nevents &&
	    (rc = rp_series_init(&r->series, opt->series_points, event_ts(s, s->events[0]),
	                         event_ts(s, s->events[s->nevents - 1]))) < 0)
		return rc;
	if ((r->p->ops->flags & MT_POLICY_OFFLINE) && (rc = rp_request_stream_plan(s, r->p)) < 0)
		return fail(r, rc, 0, "planning failed");
	return 0;
}

int mt_replay_run(const struct mt_request_stream *s, const struct mt_replay_options *opt,
                  struct mt_replay_result *res, char *err, size_t errlen)
{
	struct run r = { .s = s, .opt = opt, .res = res, .err = err, .errlen = errlen };
	memset(res, 0, sizeof(*res));
	if (errlen)
		err[0] = '\0';
	snprintf(res->policy, sizeof(res->policy), "%s", opt->policy);
	snprintf(res->backend, sizeof(res->backend), "%s",
	         opt->backend == MT_BACKEND_CUDA ? "cuda" : "sim");
	res->peak_allocated = s->peak_live;
	int rc = setup(&r);
	if (rc == -ENOMEM && !err[0])
		snprintf(err, errlen, "out of host memory");
	if (rc == 0) {
		uint64_t t = now_ns();
		rc = loop(&r);
		res->seconds = (double)(now_ns() - t) / 1e9;
	}
	mt_policy_destroy(r.p);
	if (r.b)
		mt_backend_get_stats(r.b, &res->driver);
	mt_backend_destroy(r.b);
	res->peak_reserved = res->driver.peak_reserved;
	/* after OOMs the policy served less than the lower bound: measure
	 * fragmentation against what it did serve */
	uint64_t served = res->oom_count ? r.peak_live : res->peak_allocated;
	res->fragmentation =
	        res->peak_reserved ? 1.0 - (double)served / (double)res->peak_reserved : 0.0;
	if (r.lat) {
		res->latency_p50_ns = rp_quantile(r.lat, r.nlat, 0.50);
		res->latency_p99_ns = rp_quantile(r.lat, r.nlat, 0.99);
	}
	res->series = rp_series_finish(&r.series, &res->series_len);
	rp_series_release(&r.series);
	free(r.lat);
	free(r.req);
	free(r.iteration_calls);
	return rc;
}

void mt_replay_result_release(struct mt_replay_result *res)
{
	if (!res)
		return;
	free(res->series);
	res->series = NULL;
	res->series_len = 0;
}

int mt_replay_find_min_capacity(const struct mt_request_stream *s,
                                const struct mt_replay_options *opt, uint64_t hi,
                                uint64_t *capacity, char *err, size_t errlen)
{
	struct mt_replay_options o = *opt;
	struct mt_replay_result res;
	const uint64_t g = 2ull << 20; /* both backends' granularity on current GPUs */
	o.series_points = 0;
	o.measure_latency = false;
	o.progress = NULL;
	uint64_t lo = (s->peak_live + g - 1) / g, top = (hi + g - 1) / g;
	lo = lo ? lo - 1 : 0; /* below the lower bound: fails (0: no device at all) */
	/* invariant: capacity lo * g fails (or is below the lower bound),
	 * top * g succeeds */
	o.capacity = top * g;
	int rc = mt_replay_run(s, &o, &res, err, errlen);
	mt_replay_result_release(&res);
	if (rc < 0)
		return rc;
	if (res.oom_count) {
		snprintf(err, errlen, "the policy runs out of memory even at %llu bytes",
		         (unsigned long long)o.capacity);
		return -ENOSPC;
	}
	while (top - lo > 1) {
		if (opt->interrupted && *opt->interrupted) {
			snprintf(err, errlen, "interrupted");
			return -EINTR;
		}
		uint64_t mid = lo + (top - lo) / 2;
		o.capacity = mid * g;
		if ((rc = mt_replay_run(s, &o, &res, err, errlen)) < 0)
			return rc;
		mt_replay_result_release(&res);
		if (res.oom_count)
			lo = mid;
		else
			top = mid;
	}
	*capacity = top * g;
	return 0;
}
