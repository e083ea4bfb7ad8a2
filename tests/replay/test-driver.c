/* test-driver.c — the request stream (pairing, reuse delays, skipped and
 * never-freed requests, device and layer selection) and the replay driver
 * (lower bound, OOM accounting and description, series, minimum capacity,
 * interruption), on hand-built event lists with hand-worked results. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "memtrace-replay.h"

static struct mt_event ev(unsigned kind, uint64_t ts, uint64_t address, uint64_t bytes)
{
	struct mt_event e;
	memset(&e, 0, sizeof(e));
	e.kind = (uint8_t)kind;
	e.ts = ts;
	e.process = 1;
	e.device = 1;
	e.alloc.address = address;
	e.alloc.bytes = bytes;
	e.alloc.layer = MT_LAYER_REQUEST;
	return e;
}

#define A(ts, addr, bytes) ev(MT_EVENT_ALLOC, ts, addr, bytes)
#define F(ts, addr) ev(MT_EVENT_FREE, ts, addr, 0)

static struct mt_request_stream *stream(const struct mt_event *e, size_t n)
{
	struct mt_request_stream *s = NULL;
	char err[256];
	REQUIRE(mt_request_stream_from_events(&s, e, n, MT_LAYER_REQUEST, err, sizeof(err)) == 0);
	return s;
}

/* A 4 MiB at 10, B 2 MiB at 20, A freed at 30, C 4 MiB at 40, B freed at
 * 50, C freed at 60. Lower bound 6 MiB (A+B, then B+C). */
static struct mt_request_stream *abc_stream(void)
{
	const struct mt_event abc[] = {
		A(10, 0x1000, 4 * MiB), A(20, 0x9000000, 2 * MiB), F(30, 0x1000),
		A(40, 0x1000, 4 * MiB), F(50, 0x9000000),          F(60, 0x1000),
	};
	return stream(abc, 6);
}

static struct mt_replay_result replay(const struct mt_request_stream *s, const char *policy,
                                      uint64_t capacity, size_t series)
{
	struct mt_replay_options o = { .policy = policy,
		                       .backend = MT_BACKEND_SIM,
		                       .capacity = capacity,
		                       .series_points = series };
	struct mt_replay_result r;
	char err[256];
	int rc = mt_replay_run(s, &o, &r, err, sizeof(err));
	CHECKF(rc == 0, "%s: %s", policy, err);
	return r;
}

static void test_stream_rules(void)
{
	struct mt_request_stream *s = abc_stream();
	CHECK(mt_request_stream_events(s) == 6 && mt_request_stream_requests(s) == 3);
	CHECK(mt_request_stream_peak_live(s) == 6 * MiB);
	CHECK(mt_request_stream_start(s) == 10);
	mt_request_stream_free(s);

	/* free of 0x5 never allocated: skipped; 0x2000 never freed: live to the
	 * end; a driver-layer event: ignored; 0x1000 allocated twice: the
	 * second ends the first */
	struct mt_event e[] = { F(5, 0x5),         A(10, 0x1000, 100), A(11, 0x2000, 1000),
		                A(12, 0x1000, 50), A(13, 0x3000, 7),   F(14, 0x1000) };
	e[4].alloc.layer = MT_LAYER_DRIVER;
	s = stream(e, 6);
	CHECK(mt_request_stream_requests(s) == 3);
	CHECK(mt_request_stream_events(s) == 5); /* 3 allocs, implicit free, free */
	CHECK(mt_request_stream_peak_live(s) == 1100);
	mt_request_stream_free(s);

	/* reuse delay: A (2 MiB) freed at 20 is reusable only at 120, after B
	 * (50) and before C (130): peak live A + B = 4 MiB */
	struct mt_event d[] = { A(10, 0x1000, 2 * MiB),  F(20, 0x1000),  A(50, 0x2000, 2 * MiB),
		                A(130, 0x3000, 1 * MiB), F(140, 0x2000), F(150, 0x3000) };
	d[1].alloc.reuse_delay = 100;
	s = stream(d, 6);
	CHECK(mt_request_stream_peak_live(s) == 4 * MiB);
	struct mt_replay_result r = replay(s, "bestfit", 0, 0);
	/* bestfit: A fills a 2 MiB segment, B a second one (A not yet free),
	 * C goes into A's segment once A's free applies at 120 */
	CHECK(r.peak_reserved == 4 * MiB);
	mt_replay_result_release(&r);
	d[1].alloc.reuse_delay = 200; /* reusable only after C: a third segment */
	mt_request_stream_free(s);
	s = stream(d, 6);
	CHECK(mt_request_stream_peak_live(s) == 5 * MiB);
	r = replay(s, "bestfit", 0, 0);
	CHECK(r.peak_reserved == 6 * MiB);
	mt_replay_result_release(&r);
	mt_request_stream_free(s);
}

static void test_replay_metrics(void)
{
	struct mt_request_stream *s = abc_stream();
	struct mt_replay_result r = replay(s, "native", 0, 4);
	CHECK(r.events == 6 && r.oom_count == 0);
	CHECK(r.peak_allocated == 6 * MiB && r.peak_reserved == 6 * MiB);
	CHECK(r.driver.alloc_calls == 3 && r.driver.free_calls == 3);
	CHECK(!strcmp(r.policy, "native") && !strcmp(r.backend, "sim"));
	/* max-preserving series: 4 buckets over [10, 60]; the peak survives */
	uint64_t max_alloc = 0, max_res = 0;
	CHECK(r.series_len >= 2 && r.series_len <= 4);
	for (size_t i = 0; i < r.series_len; i++) {
		if (r.series[i].allocated > max_alloc)
			max_alloc = r.series[i].allocated;
		if (r.series[i].reserved > max_res)
			max_res = r.series[i].reserved;
		CHECK(i == 0 || r.series[i].ts > r.series[i - 1].ts);
	}
	CHECK(max_alloc == 6 * MiB && max_res == 6 * MiB);
	mt_replay_result_release(&r);

	/* bestfit: A's 4 MiB segment, B's 2 MiB segment, C reuses A's: 6 MiB */
	r = replay(s, "bestfit", 0, 0);
	CHECK(r.peak_reserved == 6 * MiB && r.driver.alloc_calls == 2);
	CHECK(r.series == NULL && r.series_len == 0);
	mt_replay_result_release(&r);

	/* 5 MiB: B (2 MiB) does not fit beside A: one OOM, B's free skipped */
	r = replay(s, "native", 5 * MiB, 0);
	CHECK(r.oom_count == 1 && r.events == 6);
	CHECK(r.first_oom.ts == 20 && r.first_oom.request == 1 && r.first_oom.bytes == 2 * MiB);
	CHECK(r.first_oom.allocated == 4 * MiB && r.first_oom.reserved == 4 * MiB);
	CHECK(r.first_oom.largest[0] == 4 * MiB && r.first_oom.largest[1] == 0);
	CHECK(r.peak_reserved == 4 * MiB);
	mt_replay_result_release(&r);

	/* planned reaches the lower bound exactly */
	r = replay(s, "planned", 0, 0);
	CHECK(r.peak_reserved == 6 * MiB && r.oom_count == 0);
	mt_replay_result_release(&r);

	char err[256];
	struct mt_replay_options o = { .policy = "nosuch", .backend = MT_BACKEND_SIM };
	CHECK(mt_replay_run(s, &o, &r, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "nosuch") != NULL);
	mt_replay_result_release(&r);
	mt_request_stream_free(s);
}

static void test_min_capacity(void)
{
	struct mt_request_stream *s = abc_stream();
	struct mt_replay_options o = { .policy = "native", .backend = MT_BACKEND_SIM };
	uint64_t cap = 0;
	char err[256];
	CHECK(mt_replay_find_min_capacity(s, &o, 1ull << 30, &cap, err, sizeof(err)) == 0);
	CHECK(cap == 6 * MiB);
	/* buddy: A and C take 4 MiB segments, B a 2 MiB one: 6 MiB */
	o.policy = "buddy";
	CHECK(mt_replay_find_min_capacity(s, &o, 1ull << 30, &cap, err, sizeof(err)) == 0);
	CHECK(cap == 6 * MiB);
	CHECK(mt_replay_find_min_capacity(s, &o, 4 * MiB, &cap, err, sizeof(err)) == -ENOSPC);
	mt_request_stream_free(s);
}

struct later {
	uint64_t capacity;
	int rc, calls;
};

static int capacity_later(void *data, uint64_t *capacity, char *err, size_t errlen)
{
	struct later *l = data;
	l->calls++;
	*capacity = l->capacity;
	if (l->rc < 0)
		snprintf(err, errlen, "no reading to weigh");
	return l->rc;
}

/* A capacity that comes later (capacity_later) replaces `capacity`, once a
 * replay, for online and offline policies alike (planned takes its arena,
 * 6 MiB on abc, only at the first allocation: 4 MiB OOMs, 8 MiB holds it);
 * its failure fails the replay with its words. */
static void test_capacity_later(void)
{
	struct mt_request_stream *s = abc_stream();
	static const char *const policies[] = { "native", "planned" };
	for (size_t i = 0; i < 2; i++) {
		for (uint64_t cap = 4 * MiB; cap <= 8 * MiB; cap += 4 * MiB) {
			struct later l = { .capacity = cap };
			struct mt_replay_options o = { .policy = policies[i],
				                       .backend = MT_BACKEND_SIM,
				                       .capacity = 1ull << 30,
				                       .capacity_later = capacity_later,
				                       .capacity_data = &l };
			struct mt_replay_result r;
			char err[256];
			CHECKF(mt_replay_run(s, &o, &r, err, sizeof(err)) == 0, "%s: %s",
			       policies[i], err);
			CHECKF(l.calls == 1, "%s: asked %d times", policies[i], l.calls);
			CHECKF((r.oom_count > 0) == (cap == 4 * MiB), "%s at %llu MiB: %llu OOMs",
			       policies[i], (unsigned long long)(cap / MiB),
			       (unsigned long long)r.oom_count);
			CHECK(cap == 4 * MiB || r.peak_reserved == 6 * MiB);
			mt_replay_result_release(&r);
		}
		struct later fails = { .rc = -EIO };
		struct mt_replay_options o = { .policy = policies[i],
			                       .backend = MT_BACKEND_SIM,
			                       .capacity_later = capacity_later,
			                       .capacity_data = &fails };
		struct mt_replay_result r;
		char err[256] = "";
		CHECK(mt_replay_run(s, &o, &r, err, sizeof(err)) == -EIO);
		CHECKF(strstr(err, "no reading to weigh"), "%s: %s", policies[i], err);
		mt_replay_result_release(&r);
	}
	mt_request_stream_free(s);
}

static void on_progress(void *data, uint64_t done, uint64_t total)
{
	volatile int *stop = data;
	if (done > 0)
		*stop = 1;
}

static void test_interrupt(void)
{
	enum { N = 1000 };
	struct mt_event *e = malloc(2 * N * sizeof(*e));
	for (size_t i = 0; i < N; i++) {
		e[2 * i] = A(2 * i, 0x1000, 4096);
		e[2 * i + 1] = F(2 * i + 1, 0x1000);
	}
	struct mt_request_stream *s = stream(e, 2 * N);
	free(e);
	volatile int stop = 0;
	struct mt_replay_options o = { .policy = "native",
		                       .backend = MT_BACKEND_SIM,
		                       .progress = on_progress,
		                       .progress_data = (void *)&stop,
		                       .interrupted = &stop };
	struct mt_replay_result r;
	char err[256];
	CHECK(mt_replay_run(s, &o, &r, err, sizeof(err)) == -EINTR);
	CHECK(r.events > 0 && r.events < 2 * N);
	CHECK(r.driver.reserved == 0); /* released on the way out */
	mt_replay_result_release(&r);
	mt_request_stream_free(s);
}

/* Steady-state driver calls per iteration, from a trace written with the
 * writer: depth-0 "step" ranges start at 100, 200, ..., 500 (one depth-0
 * "init" and ten depth-1 "forward" ranges must not be taken for steps).
 * Every step allocates two blocks and frees them; the first step also a
 * third. Under native (one driver call per alloc and per free) the steady
 * iterations are steps 2-4 (between the starts of step 2 and step 5):
 * 4 calls each, 3 iterations. Counting from step 1 would give 4.5. */
static void test_iterations(void)
{
	char path[] = "/tmp/test-driver-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	unlink(path);
	struct mt_writer *w = mt_writer_new();
	uint32_t proc, dev, step, init, forward;
	struct mt_process pr = { .pid = 1, .command_line = "test", .hostname = "h" };
	struct mt_device dv = { .total_bytes = 80 * GiB, .name = "gpu", .uuid = "GPU-test" };
	CHECK(mt_writer_open(w, path, MT_WRITER_CREATE) == 0);
	CHECK(mt_writer_add_process(w, &pr, &proc) == 0 && mt_writer_add_device(w, &dv, &dev) == 0);
	CHECK(mt_writer_intern(w, "step", &step) == 0 && mt_writer_intern(w, "init", &init) == 0);
	CHECK(mt_writer_intern(w, "forward", &forward) == 0);
	struct mt_event e = { .kind = MT_EVENT_RANGE, .ts = 0, .process = proc, .device = dev };
	e.range.end = 90;
	e.range.name = init;
	CHECK(mt_writer_append(w, &e) == 0);
	for (uint64_t k = 1; k <= 5; k++) {
		uint64_t base = 100 * k;
		e = (struct mt_event){
			.kind = MT_EVENT_RANGE, .ts = base, .process = proc, .device = dev
		};
		e.range.end = base + 90;
		e.range.name = step;
		CHECK(mt_writer_append(w, &e) == 0);
		for (uint64_t f = 0; f < 2; f++) {
			e = (struct mt_event){ .kind = MT_EVENT_RANGE, .ts = base + 5 + 40 * f };
			e.process = proc;
			e.device = dev;
			e.range.end = base + 40 + 40 * f;
			e.range.name = forward;
			e.range.depth = 1;
			CHECK(mt_writer_append(w, &e) == 0);
		}
		uint64_t blocks = k == 1 ? 3 : 2;
		for (uint64_t b = 0; b < blocks; b++) {
			struct mt_event a = A(base + 10 + b, 0x100000 * (b + 1), MiB);
			struct mt_event fr = F(base + 50 + b, 0x100000 * (b + 1));
			a.process = fr.process = proc;
			a.device = fr.device = dev;
			CHECK(mt_writer_append(w, &a) == 0 && mt_writer_append(w, &fr) == 0);
		}
	}
	CHECK(mt_writer_flush(w) == 0);
	mt_writer_free(w);

	struct mt_reader *r = mt_reader_new();
	struct mt_request_stream *s = NULL;
	char err[256];
	CHECK(mt_reader_open(r, path) == 0);
	REQUIRE(mt_request_stream_load(&s, r, 0, err, sizeof(err)) == 0);
	struct mt_replay_result res = replay(s, "native", 0, 0);
	CHECK(res.steady_iterations == 3);
	CHECK(res.calls_per_iteration == 4.0);
	mt_replay_result_release(&res);
	mt_request_stream_free(s);
	mt_reader_free(r);

	/* a stream without ranges has no iterations */
	s = abc_stream();
	res = replay(s, "native", 0, 0);
	CHECK(res.steady_iterations == 0 && res.calls_per_iteration == 0.0);
	mt_replay_result_release(&res);
	mt_request_stream_free(s);
	for (const char *sfx = ""; sfx; sfx = !*sfx                  ? "-wal"
	                                      : !strcmp(sfx, "-wal") ? "-shm"
	                                                             : NULL) {
		char name[64];
		snprintf(name, sizeof(name), "%s%s", path, sfx);
		unlink(name);
	}
}

/* The driver allocations beside a request layer reach the policy
 * (place_segments): `caching` places its k-th new segment of a size where
 * the recording's k-th driver allocation of that size lay, and among free
 * blocks of one size takes the one at the lowest place. A 14 MiB request
 * takes a segment S2 of its own; a 6 MiB request the front of a 20 MiB
 * segment S1 (its free rest: 14 MiB); the 14 MiB is freed: two free blocks
 * of 14 MiB. The next 14 MiB request takes the lower one, then the 6 MiB is
 * freed and a 20 MiB request comes. S2 lower: S1 becomes one free 20 MiB
 * block, which the 20 MiB request takes: 34 MiB reserved. S1 lower: S1 keeps
 * a free 6 MiB block and the 20 MiB request needs a third segment: 54 MiB.
 * Without driver allocations, or with only ones of other sizes or of
 * managed memory, each new segment is placed below the earlier ones (S1
 * lower). */
static void test_recorded_places(void)
{
	const uint64_t s2_at[] = { 0x7f0010000000, 0x7f0030000000, 0x7f0010000000, 0x7f0010000000 };
	const uint64_t s1_bytes[] = { 20 * MiB, 20 * MiB, 22 * MiB, 20 * MiB };
	const uint8_t kind[] = { MT_MEM_DEVICE, MT_MEM_DEVICE, MT_MEM_DEVICE, MT_MEM_MANAGED };
	const uint64_t want[] = { 34 * MiB, 54 * MiB, 54 * MiB, 54 * MiB };

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct mt_event e[] = {
			A(1, 0x2000, 14 * MiB), A(2, s2_at[i], 14 * MiB),
			A(3, 0x1000, 6 * MiB),  A(4, 0x7f0020000000, s1_bytes[i]),
			F(5, 0x2000),           A(6, 0x3000, 14 * MiB),
			F(7, 0x1000),           A(8, 0x4000, 20 * MiB),
		};
		e[1].alloc.layer = e[3].alloc.layer = MT_LAYER_DRIVER;
		e[1].alloc.mem_kind = e[3].alloc.mem_kind = kind[i];
		struct mt_request_stream *s = stream(e, 8);
		struct mt_replay_result r = replay(s, "caching", 0, 0);
		CHECKF(r.peak_reserved == want[i], "case %zu: %llu MiB", i,
		       (unsigned long long)(r.peak_reserved / MiB));
		mt_replay_result_release(&r);
		mt_request_stream_free(s);
	}
	/* the same stream with no driver allocation at all */
	struct mt_event e[] = { A(1, 0x2000, 14 * MiB), A(3, 0x1000, 6 * MiB),
		                F(5, 0x2000),           A(6, 0x3000, 14 * MiB),
		                F(7, 0x1000),           A(8, 0x4000, 20 * MiB) };
	struct mt_request_stream *s = stream(e, 6);
	struct mt_replay_result r = replay(s, "caching", 0, 0);
	CHECK(r.peak_reserved == 54 * MiB);
	mt_replay_result_release(&r);
	mt_request_stream_free(s);
}

int main(void)
{
	TEST(test_stream_rules);
	TEST(test_replay_metrics);
	TEST(test_min_capacity);
	TEST(test_capacity_later);
	TEST(test_interrupt);
	TEST(test_iterations);
	TEST(test_recorded_places);
	return check_done();
}
