/* cmd-replay.c — `memtrace replay`: puts a trace's request stream through
 * allocator policies on the simulated or the real GPU, prints how much
 * memory each one reserves against the lower bound, and saves the results
 * (with a decimated series) in the trace's replays table. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli-util.h"
#include "commands.h"
#include "memtrace-common.h"
#include "memtrace-analyze.h"
#include "memtrace-replay.h"
#include "replay-capacity.h"
#include "replay-fragmentation.h"

#define CMD "replay"
#define SERIES_POINTS 2000
#define MAX_POLICIES 64

static volatile int interrupted;
/* Set while the replays run: they stop when interrupted and release what
 * they hold. Before, nothing is held or written, so SIGINT ends memtrace at
 * once (loading the stream and reading the capacity poll no flag). */
static volatile sig_atomic_t replaying;

static void on_sigint(int sig)
{
	static const char msg[] = "memtrace " CMD ": interrupted\n";
	if (!replaying) {
		ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
		(void)w;
		_exit(130);
	}
	interrupted = 1;
}

/* What a replay ran under: the options as given and the capacity, saved
 * with every result. */
struct run_context {
	const char *backend_arg, *limit_arg, *device_arg; /* NULL: not given */
	bool find_min;
	struct cli_capacity capacity;
	uint64_t failed; /* the trace's failed allocations on the device, left out */
};

struct outcome {
	char spec[CLI_POLICY_SPEC];
	struct mt_replay_result res;
	uint64_t min_capacity;         /* 0 = not asked */
	struct cli_fragmentation frag; /* at the peak of live bytes */
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: memtrace replay [TRACE] [--policy NAME[,NAME...]|all] [--backend "
	        "auto|sim|cuda]\n"
	        "                       [--limit SIZE] [--find-min-capacity] [--device N] "
	        "[--json]\n"
	        "                       [--no-save]\n"
	        "\n"
	        "Replays the trace's allocation requests (default %s) through allocator\n"
	        "policies and reports the memory each reserves against the lower bound\n"
	        "(requested bytes live at once).\n"
	        "\n"
	        "  --policy SPEC,...    policies (default: all); SPEC is NAME or\n"
	        "                       NAME:key=value,key=value\n"
	        "  --backend B          sim (simulated device), cuda (real GPU via libcuda) or\n"
	        "                       auto (cuda when a GPU is present; the default)\n"
	        "  --limit SIZE|none    the memory the allocator may take (its segments; the\n"
	        "                       CUDA context and other processes are not in it), e.g.\n"
	        "                       80GB (80 000 000 000 bytes) or 74.5GiB; none: no limit\n"
	        "                       (sim: unlimited, cuda: the GPU's own memory). Default:\n"
	        "                       the recorded card, its total less the CUDA context and\n"
	        "                       libraries and the memory outside the process at the\n"
	        "                       peak of live bytes (else its total). OOMs are reported\n"
	        "                       with the largest live allocations\n"
	        "  --find-min-capacity  smallest capacity on which each policy has no OOM\n"
	        "  --device N           the CUDA device number the program saw, as report names\n"
	        "                       it (default: the first with allocations); the GPU used\n"
	        "                       is CUDA ordinal 0\n"
	        "  --json               one JSON object per policy, with the capacity and\n"
	        "                       where it came from, the options and memtrace's version\n"
	        "  --no-save            do not store results in the trace's replays table\n"
	        "\n"
	        "calls/iter (driver_calls_per_iteration in --json): driver calls per step of\n"
	        "a training loop, where steps start with the trace's most frequent outermost\n"
	        "NVTX range (at least 3); the first step is left out. Shown when known.\n"
	        "cpu s (seconds in --json): CPU seconds of the policy's replay. Under sim the\n"
	        "policies replay at once, a thread each, sharing one pass over the trace,\n"
	        "whose reading is not counted (stream_seconds in --json). planned plans\n"
	        "first, with every request known; that time is printed apart, under the\n"
	        "table (plan_seconds in --json: wall seconds).\n"
	        "OOMs (oom_count in --json): requests the policy could not serve at the\n"
	        "capacity. The trace's own failed allocations are not replayed\n"
	        "(failed_allocations_left_out in --json); memtrace report says which saved\n"
	        "replay would have held each OOM the program saw.\n"
	        "frag (fragmentation in --json): free space inside segments that hold a\n"
	        "live block, as a share of the bytes reserved, when the policy first holds\n"
	        "the peak of live bytes; - when the policy cannot list its segments or ran\n"
	        "out of memory before.\n"
	        "\n"
	        "policies:\n",
	        CLI_DEFAULT_TRACE);
	for (const struct mt_policy_ops *const *p = mt_policy_list(); *p; p++)
		fprintf(f, "  %-11s %s\n", (*p)->name, (*p)->summary);
}

static int pick_backend(const char *arg, enum mt_backend_kind *kind)
{
	if (!strcmp(arg, "sim")) {
		*kind = MT_BACKEND_SIM;
		return CLI_EXIT_OK;
	}
	if (strcmp(arg, "cuda") && strcmp(arg, "auto"))
		return cli_usage_error(CMD, "--backend: '%s' is not auto, sim or cuda", arg);
	struct mt_backend *b = NULL;
	char err[256];
	int rc = mt_backend_create(&b, MT_BACKEND_CUDA, 0, 0, err, sizeof(err));
	mt_backend_destroy(b);
	if (rc == 0) {
		*kind = MT_BACKEND_CUDA;
		return CLI_EXIT_OK;
	}
	if (!strcmp(arg, "auto") && rc == -ENODEV) {
		*kind = MT_BACKEND_SIM;
		return CLI_EXIT_OK;
	}
	cli_error(CMD, "--backend cuda: %s", err);
	return CLI_EXIT_FAILURE;
}

static json_t *json_string_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* The options a replay ran under, as given (null: not given). */
static json_t *options_json(const struct run_context *ctx, const char *spec)
{
	return json_pack("{s:s, s:o, s:o, s:b, s:o}", "policy", spec, "backend",
	                 json_string_or_null(ctx->backend_arg), "limit",
	                 json_string_or_null(ctx->limit_arg), "find_min_capacity", ctx->find_min,
	                 "device", json_string_or_null(ctx->device_arg));
}

static json_t *result_json(const struct outcome *o, const struct run_context *ctx)
{
	const struct mt_replay_result *r = &o->res;
	json_t *j = json_object();
	json_object_set_new(j, "policy", json_string(o->spec));
	json_object_set_new(j, "backend", json_string(r->backend));
	json_object_set_new(j, "capacity", cli_capacity_json(&ctx->capacity));
	json_object_set_new(j, "events", json_integer((json_int_t)r->events));
	json_object_set_new(j, "peak_allocated", json_integer((json_int_t)r->peak_allocated));
	json_object_set_new(j, "peak_allocated_rounded",
	                    json_integer((json_int_t)r->peak_allocated_rounded));
	json_object_set_new(j, "peak_reserved", json_integer((json_int_t)r->peak_reserved));
	json_object_set_new(
	        j, "fragmentation",
	        o->frag.known ? json_real(mt_fragmentation_share(o->frag.bytes, o->frag.reserved))
	                      : json_null());
	json_object_set_new(j, "fragmentation_bytes",
	                    o->frag.known ? json_integer((json_int_t)o->frag.bytes) : json_null());
	json_object_set_new(
	        j, "driver_calls",
	        json_pack("{s:I,s:I,s:I,s:I}", "alloc", (json_int_t)r->driver.alloc_calls, "free",
	                  (json_int_t)r->driver.free_calls, "map", (json_int_t)r->driver.map_calls,
	                  "unmap", (json_int_t)r->driver.unmap_calls));
	json_object_set_new(j, "driver_calls_per_iteration",
	                    r->steady_iterations ? json_real(r->calls_per_iteration) : json_null());
	json_object_set_new(j, "steady_iterations", json_integer((json_int_t)r->steady_iterations));
	json_object_set_new(j, "oom_count", json_integer((json_int_t)r->oom_count));
	json_object_set_new(j, "failed_allocations_left_out",
	                    json_integer((json_int_t)ctx->failed));
	if (r->oom_count) {
		json_t *largest = json_array();
		for (size_t i = 0; i < MT_REPLAY_OOM_LARGEST && r->first_oom.largest[i]; i++)
			json_array_append_new(largest,
			                      json_integer((json_int_t)r->first_oom.largest[i]));
		json_object_set_new(
		        j, "first_oom",
		        json_pack("{s:I,s:I,s:I,s:I,s:o}", "ts", (json_int_t)r->first_oom.ts,
		                  "request", (json_int_t)r->first_oom.request, "bytes",
		                  (json_int_t)r->first_oom.bytes, "allocated",
		                  (json_int_t)r->first_oom.allocated, "largest_live", largest));
	}
	if (o->min_capacity)
		json_object_set_new(j, "min_capacity", json_integer((json_int_t)o->min_capacity));
	if (!strcmp(r->backend, "cuda"))
		json_object_set_new(j, "latency_ns",
		                    json_pack("{s:I,s:I}", "p50", (json_int_t)r->latency_p50_ns,
		                              "p99", (json_int_t)r->latency_p99_ns));
	json_object_set_new(j, "seconds", json_real(r->seconds));
	json_object_set_new(j, "stream_seconds", json_real(r->stream_seconds));
	if (r->plan_seconds > 0)
		json_object_set_new(j, "plan_seconds", json_real(r->plan_seconds));
	json_object_set_new(j, "options", options_json(ctx, o->spec));
	json_object_set_new(j, "memtrace_version", json_string(MT_VERSION));
	return j;
}

/* Progress on a terminal (stderr) once a replay has run for a second:
 * events done, events per second, time left; while offline policies
 * prepare (no event replayed yet), the time so far, and once they plan,
 * the requests placed. Redrawn ten times a second. */
struct progress {
	const char *what;
	uint64_t start_ns, last_ns;
	uint64_t zero_ns; /* last told 0 events done (preparing): the rate counts from there */
	uint64_t placed, requests; /* planning: 0 requests before it starts */
	bool tty, drawn;
};

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A count in thousands or millions ("850 k", "12.3 M"). */
static const char *count(uint64_t n, char *buf, size_t len)
{
	if (n >= 1000000)
		snprintf(buf, len, "%.1f M", (double)n / 1e6);
	else if (n >= 1000)
		snprintf(buf, len, "%.0f k", (double)n / 1e3);
	else
		snprintf(buf, len, "%llu", (unsigned long long)n);
	return buf;
}

static void progress(void *data, uint64_t done, uint64_t total)
{
	struct progress *p = data;
	uint64_t now = now_ns();
	char a[32], b[32], c[32], d[32];
	if (!done)
		p->zero_ns = now;
	if (!p->tty || now - p->start_ns < 1000000000u || now - p->last_ns < 100000000u ||
	    done >= total)
		return;
	double secs = (double)(now - p->zero_ns) / 1e9, rate = done ? (double)done / secs : 0;
	if (done && now == p->zero_ns)
		return;
	p->last_ns = now;
	p->drawn = true;
	if (!done && p->requests) /* offline policies: planning */
		fprintf(stderr,
		        "\r\033[K%s: 0 of %s events, planning: %s of %s requests placed, %s",
		        p->what, count(total, b, sizeof(b)), count(p->placed, a, sizeof(a)),
		        count(p->requests, c, sizeof(c)),
		        mt_duration_format(now - p->start_ns, d, sizeof(d)));
	else if (!done) /* offline policies: reading lifetimes */
		fprintf(stderr, "\r\033[K%s: 0 of %s events, preparing for %s", p->what,
		        count(total, b, sizeof(b)),
		        mt_duration_format(now - p->start_ns, d, sizeof(d)));
	else
		fprintf(stderr, "\r\033[K%s: %s of %s events, %s events/s, %s left", p->what,
		        count(done, a, sizeof(a)), count(total, b, sizeof(b)),
		        count((uint64_t)rate, c, sizeof(c)),
		        mt_duration_format((uint64_t)((double)(total - done) / rate * 1e9), d,
		                           sizeof(d)));
	fflush(stderr);
}

static void planning(void *data, uint64_t placed, uint64_t requests)
{
	struct progress *p = data;
	p->placed = placed;
	p->requests = requests;
}

static void progress_start(struct progress *p, const char *what)
{
	uint64_t now = now_ns();
	*p = (struct progress){
		.what = what, .start_ns = now, .zero_ns = now, .tty = isatty(STDERR_FILENO)
	};
}

static void progress_done(struct progress *p)
{
	if (p->drawn)
		fputs("\r\033[K", stderr);
	p->drawn = false;
}

/* The capacity job of a replay, joined once by whoever asks first: a
 * replay's thread (mt_replay_options.capacity_later: an offline policy
 * plans before it asks) or the command after the replays. */
struct capacity_wait {
	pthread_mutex_t lock;
	struct cli_capacity_job *job;
	struct cli_capacity *out;
	bool done;
	int rc;
	char err[256];
};

static int capacity_wait(void *data, uint64_t *capacity, char *err, size_t errlen)
{
	struct capacity_wait *w = data;
	pthread_mutex_lock(&w->lock);
	if (!w->done) {
		w->rc = cli_capacity_finish(w->job, w->out, w->err, sizeof(w->err));
		w->done = true;
	}
	pthread_mutex_unlock(&w->lock);
	if (capacity)
		*capacity = w->out->bytes;
	if (w->rc < 0 && err && errlen)
		snprintf(err, errlen, "%s", w->err);
	return w->rc;
}

/* The smallest capacity without OOM for o's policy. */
static int find_min(const struct mt_request_stream *s, struct mt_replay_options *opt,
                    struct outcome *o, char *err, size_t errlen)
{
	uint64_t hi = o->res.peak_reserved;
	struct mt_replay_result wide;
	int rc = 0;
	opt->policy = o->spec;
	if (o->res.oom_count) { /* the limit was too small: find a capacity that works */
		struct mt_replay_options w = *opt;
		w.capacity = 0;
		w.capacity_later = NULL;
		w.series_points = 0;
		w.measure_latency = false;
		if ((rc = mt_replay_run(s, &w, &wide, err, errlen)) == 0)
			hi = wide.peak_reserved;
		mt_replay_result_release(&wide);
	}
	if (rc == 0)
		rc = mt_replay_find_min_capacity(s, opt, hi, &o->min_capacity, err, errlen);
	return rc;
}

/* Replays every policy at once, sharing one pass over the trace (and
 * searches their minimum capacities one by one when asked). */
static int run_all(const struct mt_request_stream *s, const struct mt_replay_options *base,
                   bool find_min_capacity, struct outcome *out, size_t n)
{
	struct mt_replay_options *opts = calloc(n, sizeof(*opts));
	struct mt_replay_result *res = calloc(n, sizeof(*res));
	int *rcs = calloc(n, sizeof(*rcs));
	char *errs = calloc(n, 256), what[64];
	struct progress prog;
	int rc = opts && res && rcs && errs ? 0 : -ENOMEM;
	if (n == 1)
		snprintf(what, sizeof(what), "replay %.50s", out[0].spec);
	else
		snprintf(what, sizeof(what), "replay %zu policies", n);
	progress_start(&prog, what);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		opts[i] = *base;
		opts[i].policy = out[i].spec;
		opts[i].progress = progress;
		opts[i].planning = planning;
		opts[i].progress_data = &prog;
		cli_fragmentation_probe(&opts[i], &out[i].frag);
	}
	if (rc == 0) {
		rc = mt_replay_run_many(s, opts, n, res, rcs, errs, 256);
		for (size_t i = 0; i < n; i++)
			out[i].res = res[i];
	}
	for (size_t i = 0; rc == 0 && find_min_capacity && i < n; i++) {
		opts[i].progress = NULL;
		opts[i].planning = NULL;
		opts[i].at_peak = NULL;
		rc = rcs[i] = find_min(s, &opts[i], &out[i], errs + i * 256, 256);
	}
	progress_done(&prog);
	if (rc == -ENOMEM && !rcs[0])
		cli_error(CMD, "out of memory");
	else if (rc == -EINTR || interrupted)
		cli_error(CMD, "interrupted: all device memory released");
	for (size_t i = 0; rc < 0 && rc != -EINTR && !interrupted && rcs && i < n; i++)
		if (rcs[i] < 0) {
			cli_error(CMD, "policy %s: %s", out[i].spec, errs + i * 256);
			break;
		}
	free(opts);
	free(res);
	free(rcs);
	free(errs);
	return rc;
}

static int by_reserved(const void *a, const void *b)
{
	const struct outcome *x = a, *y = b;
	return (x->res.peak_reserved > y->res.peak_reserved) -
	       (x->res.peak_reserved < y->res.peak_reserved);
}

static void print_table(struct outcome *o, size_t n, const struct mt_request_stream *s, bool cuda,
                        bool find_min)
{
	char a[32], b[32], c[32];
	uint64_t bound = mt_request_stream_peak_live(s);
	int w = 23; /* "lower bound (peak live)" */
	for (size_t i = 0; i < n; i++)
		if ((int)strlen(o[i].spec) > w)
			w = (int)strlen(o[i].spec);
	bool iterations = false; /* the trace has steps (outermost NVTX ranges) */
	for (size_t i = 0; i < n; i++)
		iterations |= o[i].res.steady_iterations > 0;
	qsort(o, n, sizeof(*o), by_reserved);
	printf("%-*s %-7s %12s %8s %7s %21s %6s", w, "policy", "backend", "peak reserved",
	       "vs bound", "frag", "driver alloc/free/map", "OOMs");
	if (iterations)
		printf(" %10s", "calls/iter");
	if (find_min)
		printf(" %12s", "min capacity");
	if (cuda)
		printf(" %10s %10s", "p50", "p99");
	printf(" %8s\n", "cpu s");
	printf("%-*s %-7s %12s %8s\n", w, "lower bound (peak live)", "",
	       mt_size_format(bound, a, 32), "1.000x");
	for (size_t i = 0; i < n; i++) {
		const struct mt_replay_result *r = &o[i].res;
		char calls[64], frag[16] = "-";
		if (o[i].frag.known)
			snprintf(frag, sizeof(frag), "%.1f%%",
			         100.0 * mt_fragmentation_share(o[i].frag.bytes,
			                                        o[i].frag.reserved));
		snprintf(calls, sizeof(calls), "%llu/%llu/%llu",
		         (unsigned long long)r->driver.alloc_calls,
		         (unsigned long long)r->driver.free_calls,
		         (unsigned long long)r->driver.map_calls);
		printf("%-*s %-7s %12s %7.3fx %7s %21s %6llu", w, o[i].spec, r->backend,
		       mt_size_format(r->peak_reserved, a, 32),
		       bound ? (double)r->peak_reserved / (double)bound : 0.0, frag, calls,
		       (unsigned long long)r->oom_count);
		if (iterations)
			printf(" %10.1f", r->calls_per_iteration);
		if (find_min)
			printf(" %12s", mt_size_format(o[i].min_capacity, b, 32));
		if (cuda)
			printf(" %10s %10s", mt_duration_format(r->latency_p50_ns, b, 32),
			       mt_duration_format(r->latency_p99_ns, c, 32));
		printf(" %8.3f\n", r->seconds);
	}
	for (size_t i = 0; i < n; i++)
		if (o[i].res.plan_seconds > 0)
			printf("%s: planning took %.2f s (wall) before its replay, not in cpu s\n",
			       o[i].spec, o[i].res.plan_seconds);
}

static void print_ooms(const struct outcome *o, size_t n, const struct mt_request_stream *s,
                       const struct cli_capacity *cap)
{
	char a[32], b[32], c[32], t[32], at[32];
	if (cap->source == CLI_CAPACITY_NONE)
		snprintf(at, sizeof(at), "the GPU's memory");
	else
		mt_size_format(cap->bytes, at, sizeof(at));
	for (size_t i = 0; i < n; i++) {
		const struct mt_replay_result *r = &o[i].res;
		if (!r->oom_count)
			continue;
		const struct mt_replay_oom *f = &r->first_oom;
		printf("%s: %llu OOM%s at %s; first at +%s: request #%llu of %s with %s live "
		       "(largest live:",
		       o[i].spec, (unsigned long long)r->oom_count, r->oom_count > 1 ? "s" : "", at,
		       mt_duration_format(f->ts - mt_request_stream_start(s), t, 32),
		       (unsigned long long)f->request, mt_size_format(f->bytes, b, 32),
		       mt_size_format(f->allocated, c, 32));
		for (size_t k = 0; k < MT_REPLAY_OOM_LARGEST && f->largest[k]; k++)
			printf("%s %s", k ? "," : "", mt_size_format(f->largest[k], a, 32));
		printf("%s)\n", f->largest[0] ? "" : " none");
	}
}

static void print_capacity(const struct cli_capacity *c)
{
	char a[32];
	if (c->source == CLI_CAPACITY_NONE)
		printf("capacity: none (%s)\n", c->why);
	else
		printf("capacity: %s (%s)\n", mt_size_format(c->bytes, a, sizeof(a)), c->why);
}

/* Whether PATH still names the file that was read (READ, from stat when it
 * was opened): a trace renamed over it meanwhile must not receive this
 * trace's results (issue 16 item 5). */
static bool same_file(const char *path, const struct stat *read)
{
	struct stat now;
	return stat(path, &now) == 0 && now.st_dev == read->st_dev && now.st_ino == read->st_ino;
}

static int save(const char *path, const struct stat *read, const struct outcome *o, size_t n,
                const struct mt_request_stream *s, const struct run_context *ctx)
{
	struct mt_writer *w = mt_writer_new();
	struct timespec now;
	int rc = w ? mt_writer_open(w, path, 0) : -ENOMEM;
	if (rc == 0 && !same_file(path, read)) { /* checked once the writer holds it */
		cli_error(CMD, "%s was replaced while replaying; results not saved (rerun on it)",
		          path);
		mt_writer_free(w);
		return CLI_EXIT_FAILURE;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char name[128];
		const char *colon = strchr(o[i].spec, ':');
		snprintf(name, sizeof(name), "%.*s",
		         (int)(colon ? (size_t)(colon - o[i].spec) : strlen(o[i].spec)), o[i].spec);
		json_t *j = result_json(&o[i], ctx);
		char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
		json_decref(j);
		struct mt_replay_record rec = {
			.device = mt_request_stream_device(s),
			.created_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec,
			.policy = name,
			.backend = o[i].res.backend,
			.params = colon ? colon + 1 : "",
			.result_json = text ? text : "{}",
			.series = o[i].res.series,
			.series_len = o[i].res.series_len,
		};
		int64_t id;
		rc = mt_writer_save_replay(w, &rec, &id);
		free(text);
	}
	if (rc < 0)
		cli_error(CMD, "cannot save results in %s: %s", path,
		          w ? mt_writer_message(w) : "out of memory");
	mt_writer_free(w);
	return rc < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

int cli_cmd_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "backend", required_argument, NULL, 'b' },
		{ "limit", required_argument, NULL, 'l' },
		{ "find-min-capacity", no_argument, NULL, 'm' },
		{ "device", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "no-save", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* Caught from the start: a SIGINT while the trace loads (or earlier)
	 * also ends in one line and status 130, at once, never in a silent
	 * kill. */
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old);
	const char *policy_arg = "all", *backend_arg = "auto";
	struct run_context ctx = { 0 };
	uint64_t limit = 0, device = 0;
	bool json = false, no_save = false;
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			policy_arg = optarg;
			break;
		case 'b':
			backend_arg = ctx.backend_arg = optarg;
			break;
		case 'l':
			ctx.limit_arg = optarg;
			limit = 0;
			if (!strcmp(optarg, "none"))
				break;
			if ((rc = cli_parse_size(CMD, "--limit", optarg, &limit)) != CLI_EXIT_OK)
				return rc;
			if (!limit)
				return cli_usage_error(CMD, "--limit: must be > 0 (or none)");
			break;
		case 'm':
			ctx.find_min = true;
			break;
		case 'd':
			ctx.device_arg = optarg;
			if ((rc = cli_parse_u64(CMD, "--device", optarg, &device)) != CLI_EXIT_OK)
				return rc;
			if (device > UINT32_MAX)
				return cli_usage_error(CMD, "--device: '%s' is out of range",
				                       optarg);
			break;
		case 'j':
			json = true;
			break;
		case 'n':
			no_save = true;
			break;
		case 'h':
			usage(stdout);
			return CLI_EXIT_OK;
		default:
			return cli_usage_error(CMD, "unknown or incomplete option '%s'",
			                       argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		return cli_usage_error(CMD, "more than one trace given");
	const char *path = optind < argc ? argv[optind] : CLI_DEFAULT_TRACE;

	static char specs[MAX_POLICIES][CLI_POLICY_SPEC];
	size_t n;
	if ((rc = cli_policy_specs(CMD, policy_arg, specs, MAX_POLICIES, &n)) != CLI_EXIT_OK)
		return rc;

	enum mt_backend_kind kind = MT_BACKEND_SIM;
	if ((rc = pick_backend(backend_arg, &kind)) != CLI_EXIT_OK)
		return rc;

	/* The file the reader holds: the one the path named both before and
	 * after it was opened. Left zero when that is not so, or when the path
	 * is gone: save then refuses. */
	struct stat read_id = { 0 }, after;
	bool named = stat(path, &read_id) == 0;
	struct mt_reader *reader;
	if ((rc = cli_open_trace(CMD, path, &reader)) != CLI_EXIT_OK)
		return rc;
	if (!named || stat(path, &after) != 0 || after.st_dev != read_id.st_dev ||
	    after.st_ino != read_id.st_ino)
		read_id = (struct stat){ 0 };
	struct mt_request_stream *s = NULL;
	char err[256];
	uint32_t row = 0; /* the first device with allocations */
	if (ctx.device_arg &&
	    mt_analyze_device_by_ordinal(reader, (unsigned)device, &row, err, sizeof(err)) < 0) {
		sigaction(SIGINT, &old, NULL);
		mt_reader_free(reader);
		return cli_usage_error(CMD, "--device: %s", err);
	}
	bool offline = false; /* then the load keeps the lifetimes: one pass less */
	for (size_t i = 0; i < n; i++)
		offline |= mt_policy_spec_offline(specs[i]);
	/* the capacity is read on a thread of its own while the stream loads
	 * (and, under sim, while an offline policy plans) */
	struct cli_capacity_job job;
	uint32_t dev = row;
	bool early = (dev || mt_request_stream_first_device(reader, &dev) == 0) && dev &&
	             cli_capacity_start(&job, path, dev, ctx.limit_arg, limit,
	                                kind == MT_BACKEND_CUDA) == 0;
	struct capacity_wait wait = { .lock = PTHREAD_MUTEX_INITIALIZER,
		                      .job = &job,
		                      .out = &ctx.capacity };
	bool later = early && kind == MT_BACKEND_SIM && offline;
	int lrc = offline ? mt_request_stream_load_with_lifetimes(&s, reader, row, err, sizeof(err))
	                  : mt_request_stream_load(&s, reader, row, err, sizeof(err));
	if (lrc == 0) {
		struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
		struct mt_query q = { .device = mt_request_stream_device(s) };
		if ((lrc = mt_reader_kind_stats(reader, &q, st)) < 0)
			snprintf(err, sizeof(err), "%s", mt_reader_message(reader));
		else
			ctx.failed = st[MT_EVENT_ALLOC_FAILED].events;
	}
	if (early && (!later || lrc < 0)) {
		char cerr[256];
		int crc = capacity_wait(&wait, NULL, cerr, sizeof(cerr));
		if (lrc == 0 && (lrc = crc) < 0)
			snprintf(err, sizeof(err), "%s", cerr);
	} else if (!early && lrc == 0) {
		lrc = cli_capacity_choose(reader, mt_request_stream_device(s), ctx.limit_arg, limit,
		                          kind == MT_BACKEND_CUDA, &ctx.capacity, err, sizeof(err));
	}
	if (lrc < 0) {
		sigaction(SIGINT, &old, NULL);
		mt_request_stream_free(s);
		mt_reader_free(reader);
		cli_error(CMD, "%s", err); /* the reader names the file */
		return CLI_EXIT_FAILURE;
	}

	struct outcome *out = calloc(n, sizeof(*out));
	struct mt_replay_options opt = { .backend = kind,
		                         .capacity = ctx.capacity.bytes,
		                         .series_points = SERIES_POINTS,
		                         .measure_latency = kind == MT_BACKEND_CUDA,
		                         .interrupted = &interrupted,
		                         .capacity_later = later ? capacity_wait : NULL,
		                         .capacity_data = &wait };
	rc = out ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
	if (!out)
		cli_error(CMD, "out of memory");
	for (size_t i = 0; out && i < n; i++)
		memcpy(out[i].spec, specs[i], sizeof(out[i].spec));
	replaying = 1;
	if (out && run_all(s, &opt, ctx.find_min, out, n) < 0)
		rc = interrupted ? 130 : CLI_EXIT_FAILURE;
	if (later && capacity_wait(&wait, NULL, NULL, 0) < 0) /* joined whatever the replays did */
		rc = CLI_EXIT_FAILURE;
	sigaction(SIGINT, &old, NULL);
	mt_reader_free(reader); /* the replays are done with the trace */
	if (rc == CLI_EXIT_OK) {
		if (json) {
			json_t *arr = json_array();
			for (size_t i = 0; i < n; i++)
				json_array_append_new(arr, result_json(&out[i], &ctx));
			rc = cli_print_json(arr);
		} else {
			print_capacity(&ctx.capacity);
			print_table(out, n, s, kind == MT_BACKEND_CUDA, ctx.find_min);
			print_ooms(out, n, s, &ctx.capacity);
			if (ctx.failed)
				printf("the trace records %llu failed allocation%s, which no "
				       "replay "
				       "repeats: memtrace report says which policy would have held "
				       "each OOM\n",
				       (unsigned long long)ctx.failed, ctx.failed == 1 ? "" : "s");
		}
		if (rc == CLI_EXIT_OK && !no_save)
			rc = save(path, &read_id, out, n, s, &ctx);
	}
	for (size_t i = 0; out && i < n; i++)
		mt_replay_result_release(&out[i].res);
	free(out);
	mt_request_stream_free(s);
	return rc;
}
