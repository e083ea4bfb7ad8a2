/* driver.c — the replay driver: feeds a request stream through policies,
 * each on a fresh backend, and measures (see memtrace-replay.h).
 *
 * Every alloc step asks the policy for memory; an -ENOMEM answer (the
 * policy's own retry logic has run) is an OOM: counted, the first one
 * described, the request and its later free skipped. Any other error stops
 * that replay. Offline policies get every lifetime first through plan(), as
 * positions in replay order. The policy and then the backend are destroyed
 * before a replay ends, whatever happened, so all device memory is
 * released.
 *
 * The steps come a chunk at a time: from memory (a stream built from
 * events), or from one pass over the trace shared by every replay of the
 * call (feed.c). Several replays run at once on threads of their own; a
 * single one runs on the calling thread.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend-private.h"
#include "feed-private.h"
#include "metrics-private.h"
#include "request-stream-private.h"

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* What a replay keeps of a live request, by slot. */
struct req {
	uint64_t addr; /* while live, else 0 */
	uint64_t bytes;
};

/* One replay. */
struct run {
	const struct mt_request_stream *s;
	const struct mt_replay_options *opt;
	struct mt_replay_result *res;
	const struct mt_plan_request *lifetimes; /* offline policies */
	struct rp_feed *feed;                    /* the shared pass, or NULL: a cursor */
	unsigned id;                             /* its consumer number in the feed */
	bool report;                             /* calls opt->progress itself */
	bool offline;                            /* its policy plans first */
	uint64_t planned;                        /* requests its plan has placed so far */
	struct rp_cursor *cursor;
	struct mt_backend *b;
	struct mt_policy *p;
	struct req *req; /* per slot */
	struct rp_latency *lat;
	struct rp_series series;
	uint64_t live;             /* requested bytes live (served) */
	bool peak_seen;            /* opt->at_peak was called */
	uint64_t *iteration_calls; /* driver calls made before each iteration start */
	size_t next_iteration;
	uint64_t position; /* steps replayed */
	uint64_t last_ts;  /* the last one's time */
	bool finished;
	int rc;
	char *err;
	size_t errlen;
};

static int fail(struct run *r, int rc, uint64_t i, const char *what)
{
	const char *m = r->b && rc != -EINTR ? mt_backend_message(r->b) : "";
	r->res->events = i; /* events fully replayed */
	snprintf(r->err, r->errlen, "%s at event %llu: %s", what, (unsigned long long)i,
	         m[0] ? m : strerror(rc < 0 ? -rc : rc));
	return rc;
}

/* Records the first OOM with the largest requests live at that moment. */
static void first_oom(struct run *r, const struct rp_step *st)
{
	struct mt_replay_oom *oom = &r->res->first_oom;
	*oom = (struct mt_replay_oom){ .ts = st->ts,
		                       .request = RP_STEP_REQUEST(st->code),
		                       .bytes = st->bytes,
		                       .allocated = r->live,
		                       .reserved = rp_backend_reserved_now(r->b) };
	for (size_t i = 0; i < r->s->slots; i++) {
		if (!r->req[i].addr)
			continue;
		uint64_t b = r->req[i].bytes;
		for (size_t k = 0; k < MT_REPLAY_OOM_LARGEST; k++) {
			if (b > oom->largest[k]) {
				uint64_t t = oom->largest[k];
				oom->largest[k] = b;
				b = t;
			}
		}
	}
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

/* The live bytes have just reached the stream's peak, with st: shows the
 * policy to opt->at_peak, once. */
static int at_peak(struct run *r, const struct rp_step *st)
{
	struct mt_replay_moment m = {
		.position = r->position + 1,
		.ts = st->ts,
		.next_ts = st->ts,
		.allocated = r->live,
		.reserved = rp_backend_reserved_now(r->b),
	};
	int rc = r->opt->at_peak(r->opt->at_peak_data, &m, r->p);
	r->peak_seen = true;
	return rc < 0 ? fail(r, rc, r->position, "observer failed") : 0;
}

/* Replays one step. Returns 0 when applied, 1 when skipped (an OOM, or the
 * free of a request that got no memory), or a negative errno. */
static int apply(struct run *r, const struct rp_step *st)
{
	struct req *rq = &r->req[st->slot];
	int rc;
	if (!RP_STEP_IS_FREE(st->code)) {
		rc = r->p->ops->alloc(r->p, st->bytes, st->stream, RP_STEP_REQUEST(st->code),
		                      &rq->addr);
		if (rc == -ENOMEM) {
			rq->addr = 0;
			if (!r->res->oom_count++)
				first_oom(r, st);
			return 1;
		}
		if (rc < 0)
			return fail(r, rc, r->position, "allocation failed");
		rq->bytes = st->bytes;
		r->live += st->bytes;
		if (r->p->allocated > r->res->peak_allocated_rounded)
			r->res->peak_allocated_rounded = r->p->allocated;
		if (r->opt->at_peak && !r->peak_seen && r->live >= r->s->peak_live)
			return at_peak(r, st);
		return 0;
	}
	if (!rq->addr)
		return 1; /* its allocation failed */
	rc = r->p->ops->free(r->p, rq->addr, st->stream);
	if (rc < 0)
		return fail(r, rc, r->position, "free failed");
	rq->addr = 0;
	r->live -= st->bytes;
	return 0;
}

/* Shows the observer the replay after r->position steps, the next one at
 * next_ts; > 0: stop there. */
static int observe(struct run *r, uint64_t next_ts)
{
	struct mt_replay_moment m = {
		.position = r->position,
		.ts = r->position ? r->last_ts : 0,
		.next_ts = next_ts,
		.allocated = r->live,
		.reserved = rp_backend_reserved_now(r->b),
	};
	int rc = r->opt->observe(r->opt->observe_data, &m, r->p);
	if (rc > 0)
		r->res->events = r->position;
	return rc < 0 ? fail(r, rc, r->position, "observer failed") : rc;
}

static int next_chunk(struct run *r, const struct rp_step **steps, size_t *n)
{
	int rc = r->feed ? rp_feed_next(r->feed, r->id, steps, n, r->err, r->errlen)
	                 : rp_cursor_next(r->cursor, steps, n, r->err, r->errlen);
	if (rc < 0)
		r->res->events = r->position;
	return rc;
}

/* Replays n steps; > 0: the observer stopped the replay. A plain replay
 * (no observer, iteration marks, latencies or series: as benchmarks and
 * most replays run) tests that once a chunk, not five times a step. */
static int replay_chunk(struct run *r, const struct rp_step *steps, size_t n)
{
	const struct mt_replay_options *opt = r->opt;
	bool timed = r->lat != NULL;
	bool plain = !opt->observe && !r->iteration_calls && !timed && !r->series.n;
	uint64_t t0 = 0;
	int rc;
	for (size_t i = 0; i < n; i++) {
		const struct rp_step *st = &steps[i];
		if (!plain) {
			if (opt->observe && (rc = observe(r, st->ts)) != 0)
				return rc;
			if (r->iteration_calls)
				mark_iterations(r, st->ts);
			if (timed)
				t0 = now_ns();
		}
		if ((rc = apply(r, st)) < 0)
			return rc;
		if (!plain) {
			if (rc == 0 && timed)
				rp_latency_add(r->lat, now_ns() - t0);
			if (rc == 0 && r->series.n)
				rp_series_add(&r->series, st->ts, r->live,
				              rp_backend_reserved_now(r->b));
			r->last_ts = st->ts; /* the observer's, at the next step */
		}
		r->position++;
	}
	if (n)
		r->last_ts = steps[n - 1].ts;
	return 0;
}

static double wall_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Every ~1% of the events: interruption, and progress when this replay
 * reports it. */
static int check_in(struct run *r)
{
	const struct mt_replay_options *opt = r->opt;
	__atomic_store_n(&r->res->events, r->position, __ATOMIC_RELAXED);
	if (opt->interrupted && *opt->interrupted)
		return fail(r, -EINTR, r->position, "interrupted");
	if (r->report && opt->progress)
		opt->progress(opt->progress_data, r->position, r->s->nevents);
	return 0;
}

static int loop(struct run *r)
{
	const struct mt_replay_options *opt = r->opt;
	uint64_t step = r->s->nevents / 100 + 1, next_check = 0;
	const struct rp_step *steps;
	size_t n;
	int rc;
	while ((rc = next_chunk(r, &steps, &n)) == 0 && n) {
		for (size_t done = 0; done < n;) {
			if (r->position >= next_check) {
				next_check = r->position + step;
				if ((rc = check_in(r)) < 0)
					return rc;
			}
			size_t take = n - done < next_check - r->position
			                      ? n - done
			                      : next_check - r->position;
			if ((rc = replay_chunk(r, steps + done, take)) != 0)
				return rc < 0 ? rc : 0;
			done += take;
		}
	}
	if (rc < 0)
		return rc;
	if (opt->observe && (rc = observe(r, UINT64_MAX)) != 0)
		return rc < 0 ? rc : 0;
	r->res->events = r->position;
	if (r->iteration_calls)
		steady_state(r);
	if (r->report && opt->progress)
		opt->progress(opt->progress_data, r->s->nevents, r->s->nevents);
	return 0;
}

/* The capacity the replay runs under (sim: 0 = unlimited, UINT64_MAX / 2),
 * from capacity_later when the options give it. */
static int capacity_of(struct run *r, uint64_t *cap)
{
	const struct mt_replay_options *opt = r->opt;
	char why[256] = "";
	int rc;
	*cap = opt->capacity;
	if (opt->capacity_later &&
	    (rc = opt->capacity_later(opt->capacity_data, cap, why, sizeof(why))) < 0) {
		snprintf(r->err, r->errlen, "%s", why[0] ? why : strerror(-rc));
		return rc;
	}
	if (!*cap && opt->backend == MT_BACKEND_SIM)
		*cap = UINT64_MAX / 2;
	return 0;
}

static int setup(struct run *r)
{
	const struct mt_request_stream *s = r->s;
	const struct mt_replay_options *opt = r->opt;
	/* an offline policy plans before its capacity is known: it takes
	 * nothing from the backend until its first allocation */
	bool later = opt->capacity_later && r->offline && opt->backend == MT_BACKEND_SIM;
	uint64_t cap = UINT64_MAX / 2;
	int rc = later ? 0 : capacity_of(r, &cap);
	if (rc < 0)
		return rc;
	rc = mt_backend_create(&r->b, opt->backend, opt->ordinal, cap, r->err, r->errlen);
	if (rc < 0)
		return rc;
	if ((rc = mt_policy_create(&r->p, opt->policy, r->b, r->err, r->errlen)) < 0)
		return rc;
	if (s->nsegments && r->p->ops->place_segments &&
	    (rc = r->p->ops->place_segments(r->p, s->segments, s->nsegments)) < 0)
		return rc;
	if (s->iterations && !(r->iteration_calls = malloc(s->iterations * sizeof(uint64_t))))
		return -ENOMEM;
	if (!(r->req = calloc(s->slots ? s->slots : 1, sizeof(*r->req))))
		return -ENOMEM;
	if (opt->measure_latency && !(r->lat = calloc(1, sizeof(*r->lat))))
		return -ENOMEM;
	if (s->nevents && (rc = rp_series_init(&r->series, opt->series_points, s->t0, s->t1)) < 0)
		return rc;
	if (!r->feed && (rc = rp_cursor_open(s, &r->cursor, r->err, r->errlen)) < 0)
		return rc;
	r->p->interrupted = opt->interrupted;
	r->p->planned = &r->planned;
	if (r->p->ops->flags & MT_POLICY_OFFLINE) {
		double t = wall_seconds();
		rc = r->p->ops->plan(r->p, r->lifetimes, s->requests);
		r->res->plan_seconds = wall_seconds() - t;
		if (rc < 0)
			return fail(r, rc, 0, rc == -EINTR ? "interrupted" : "planning failed");
	}
	if (later && (rc = capacity_of(r, &cap)) == 0)
		r->b->capacity = cap;
	return rc;
}

/* Ends a replay: everything released, the figures filled in. */
static void teardown(struct run *r)
{
	struct mt_replay_result *res = r->res;
	mt_policy_destroy(r->p);
	if (r->b)
		mt_backend_get_stats(r->b, &res->driver);
	mt_backend_destroy(r->b);
	res->peak_reserved = res->driver.peak_reserved;
	if (r->lat) {
		res->latency_p50_ns = rp_latency_quantile(r->lat, 0.50);
		res->latency_p99_ns = rp_latency_quantile(r->lat, 0.99);
	}
	res->series = rp_series_finish(&r->series, &res->series_len);
	rp_series_release(&r->series);
	rp_cursor_close(r->cursor);
	free(r->lat);
	free(r->req);
	free(r->iteration_calls);
}

/* One replay from setup to teardown; its status in r->rc. */
static void *run_one(void *arg)
{
	struct run *r = arg;
	int rc = setup(r);
	if (rc == -ENOMEM && !r->err[0])
		snprintf(r->err, r->errlen, "out of host memory");
	if (rc == 0) {
		double t = rp_thread_seconds();
		rc = loop(r);
		r->res->seconds = rp_thread_seconds() - t;
	}
	if (r->feed)
		rp_feed_leave(r->feed, r->id);
	teardown(r);
	r->rc = rc;
	__atomic_store_n(&r->finished, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Runs the replays on threads of their own, telling opts[0].progress (on
 * this thread) how far the slowest has come, and opts[0].planning how far
 * the least advanced plan has, while no event is replayed. */
static int run_threads(struct run *runs, size_t n, char *err, size_t errlen)
{
	const struct mt_replay_options *opt = runs[0].opt;
	pthread_t *t = calloc(n, sizeof(*t));
	size_t started = 0;
	int rc = 0;
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (; started < n; started++) {
		if ((rc = pthread_create(&t[started], NULL, run_one, &runs[started])) != 0) {
			snprintf(err, errlen, "cannot start a replay thread: %s", strerror(rc));
			rc = -rc;
			break;
		}
	}
	for (bool all = false; !all && rc == 0;) {
		uint64_t done = UINT64_MAX, placed = UINT64_MAX;
		all = true;
		for (size_t i = 0; i < n; i++) {
			if (__atomic_load_n(&runs[i].finished, __ATOMIC_ACQUIRE))
				continue;
			uint64_t e = __atomic_load_n(&runs[i].res->events, __ATOMIC_RELAXED);
			uint64_t q = __atomic_load_n(&runs[i].planned, __ATOMIC_RELAXED);
			all = false;
			done = e < done ? e : done;
			if (runs[i].offline && !e && q < placed)
				placed = q;
		}
		if (!all && !done && placed != UINT64_MAX && opt->planning)
			opt->planning(opt->progress_data, placed, runs[0].s->requests);
		if (!all && opt->progress)
			opt->progress(opt->progress_data, done, runs[0].s->nevents);
		if (!all)
			nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	return rc;
}

int mt_replay_run_many(const struct mt_request_stream *s, const struct mt_replay_options *opts,
                       size_t n, struct mt_replay_result *res, int *rcs, char *errs, size_t errlen)
{
	const struct mt_plan_request *lifetimes = s->lifetimes; /* kept by the load, or read here */
	struct mt_plan_request *read = NULL;
	struct run *runs = calloc(n ? n : 1, sizeof(*runs));
	struct rp_feed *feed = NULL;
	bool any_offline = false, any_cuda = false;
	int rc = runs ? 0 : -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct run *r = runs ? &runs[i] : NULL;
		memset(&res[i], 0, sizeof(res[i]));
		rcs[i] = 0;
		if (errlen)
			errs[i * errlen] = '\0';
		snprintf(res[i].policy, sizeof(res[i].policy), "%s", opts[i].policy);
		snprintf(res[i].backend, sizeof(res[i].backend), "%s",
		         opts[i].backend == MT_BACKEND_CUDA ? "cuda" : "sim");
		res[i].peak_allocated = s->peak_live;
		bool off = mt_policy_spec_offline(opts[i].policy);
		any_offline |= off;
		any_cuda |= opts[i].backend == MT_BACKEND_CUDA;
		if (r)
			*r = (struct run){ .s = s,
				           .opt = &opts[i],
				           .res = &res[i],
				           .id = (unsigned)i,
				           .offline = off,
				           .err = errs + i * errlen,
				           .errlen = errlen };
	}
	if (rc == 0 && n > 1 && any_cuda) {
		/* one at a time: replays on one GPU would share its memory */
		for (size_t i = 0; i < n && !(opts[0].interrupted && *opts[0].interrupted); i++)
			rcs[i] = mt_replay_run_many(s, &opts[i], 1, &res[i], &rcs[i],
			                            errs + i * errlen, errlen);
		free(runs);
		goto out;
	}
	if (rc == 0 && any_offline && !lifetimes &&
	    (rc = rp_request_stream_lifetimes(s, &opts[0], &read, errs, errlen)) == 0)
		lifetimes = read;
	if (rc == 0 && s->reader && n)
		rc = rp_feed_start(&feed, s, (unsigned)n, opts[0].interrupted, errs, errlen);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		runs[i].lifetimes = lifetimes;
		runs[i].feed = feed;
	}
	/* an offline policy plans before it replays: on a thread, so that
	 * progress goes on meanwhile */
	if (rc == 0 && n == 1 && !any_offline) {
		runs[0].report = true;
		run_one(&runs[0]);
	} else if (rc == 0)
		rc = run_threads(runs, n, errs, errlen);
	double stream_seconds = rp_feed_stop(feed);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rcs[i] = runs[i].rc;
		res[i].stream_seconds = stream_seconds;
	}
	if (rc < 0) {
		if (rc == -ENOMEM && errlen && !errs[0])
			snprintf(errs, errlen, "out of host memory");
		for (size_t i = 0; i < n; i++) {
			rcs[i] = rc;
			if (i)
				snprintf(errs + i * errlen, errlen, "%s", errs);
		}
	}
	free(read);
	free(runs);
out:
	for (size_t i = 0; i < n; i++)
		if (rcs[i] < 0)
			return rcs[i];
	return 0;
}

int mt_replay_run(const struct mt_request_stream *s, const struct mt_replay_options *opt,
                  struct mt_replay_result *res, char *err, size_t errlen)
{
	int rc;
	return mt_replay_run_many(s, opt, 1, res, &rc, err, errlen);
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
	o.capacity_later = NULL;       /* each replay here has its own */
	o.series_points = 0;
	o.measure_latency = false;
	o.progress = NULL;
	o.planning = NULL;
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
