/* test-gpu.c — the cuda backend on a real GPU (suite gpu; a TAP skip where
 * no driver or GPU exists): every backend operation, capacity enforcement
 * on a smaller emulated device, sim and cuda agreeing on peak reserved for
 * every policy whose sim result is not an approximation, OOM and
 * interruption paths, and the device's free memory (cuMemGetInfo) equal
 * before and after everything (measured after a warm-up, gpu-warmup.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "gpu-warmup.h"
#include "memtrace-replay.h"
#include "synth-stream.h"

static struct mt_backend *cuda(uint64_t capacity)
{
	struct mt_backend *b = NULL;
	char err[256];
	int rc = mt_backend_create(&b, MT_BACKEND_CUDA, 0, capacity, err, sizeof(err));

	CHECKF(rc == 0, "%s", err);
	REQUIRE(rc == 0);
	return b;
}

static void test_ops(void)
{
	struct mt_backend *b = cuda(64 * MiB);
	struct mt_backend_stats st;
	uint64_t a, x, va, h1, h2, p1, p2, p3;
	CHECK(mt_backend_capacity(b) == 64 * MiB);
	CHECK(mt_backend_granularity(b) == 2 * MiB);
	CHECK(mt_backend_alloc(b, 4 * MiB, &a) == 0);
	CHECK(a % 256 == 0);
	CHECK(mt_backend_alloc(b, 100 * MiB, &x) == -ENOMEM); /* over the emulated capacity */
	CHECK(mt_backend_va_reserve(b, 8 * MiB, &va) == 0);
	CHECK(mt_backend_mem_create(b, 2 * MiB, &h1) == 0);
	CHECK(mt_backend_mem_create(b, 2 * MiB, &h2) == 0);
	CHECK(mt_backend_map(b, va, 2 * MiB, h1) == 0);
	CHECK(mt_backend_map(b, va + 2 * MiB, 2 * MiB, h2) == 0);
	mt_backend_get_stats(b, &st);
	CHECK(st.reserved == 8 * MiB && st.map_calls == 2);
	CHECK(mt_backend_unmap(b, va, 2 * MiB) == 0);
	CHECK(mt_backend_mem_release(b, h1) == 0);
	CHECK(mt_backend_pool_alloc(b, 3 * MiB, 1, &p1) == 0);
	CHECK(mt_backend_pool_alloc(b, MiB, 2, &p2) == 0);
	mt_backend_get_stats(b, &st);
	CHECK(st.reserved >= 6 * MiB + 4 * MiB && st.reserved <= 64 * MiB);
	CHECK(mt_backend_pool_alloc(b, 80 * MiB, 1, &p3) == -ENOMEM);
	CHECK(mt_backend_pool_free(b, p1, 1) == 0);
	CHECK(mt_backend_pool_free(b, p1, 1) == -EINVAL);
	CHECK(mt_backend_pool_trim(b, 0) == 0);
	CHECK(mt_backend_free(b, a) == 0);
	/* destroy with h2 mapped at va + 2 MiB, va reserved, p2 live */
	mt_backend_destroy(b);
}

static struct mt_request_stream *stream; /* 20 000 random allocations */

static void test_policies_agree(void)
{
	const struct mt_request_stream *s = stream;

	for (const struct mt_policy_ops *const *p = mt_policy_list(); *p; p++) {
		struct mt_replay_options o = { .policy = (*p)->name, .backend = MT_BACKEND_SIM };
		struct mt_replay_result rs, rc;
		char err[256];
		CHECK(mt_replay_run(s, &o, &rs, err, sizeof(err)) == 0);
		o.backend = MT_BACKEND_CUDA;
		o.measure_latency = true;
		int rc_cuda = mt_replay_run(s, &o, &rc, err, sizeof(err));
		CHECKF(rc_cuda == 0, "%s on cuda: %s", (*p)->name, err);
		CHECK(rc.oom_count == 0 && rs.oom_count == 0);
		CHECK(rc.latency_p50_ns > 0 && rc.latency_p99_ns >= rc.latency_p50_ns);
		if (!((*p)->flags & MT_POLICY_SIM_APPROX)) {
			CHECK(rs.peak_reserved == rc.peak_reserved);
			CHECK(rs.driver.alloc_calls == rc.driver.alloc_calls);
		}
		printf("# %-10s sim %llu cuda %llu bytes; cuda p50 %llu ns p99 %llu ns\n",
		       (*p)->name, (unsigned long long)rs.peak_reserved,
		       (unsigned long long)rc.peak_reserved, (unsigned long long)rc.latency_p50_ns,
		       (unsigned long long)rc.latency_p99_ns);
		mt_replay_result_release(&rs);
		mt_replay_result_release(&rc);
	}
}

static void on_progress(void *data, uint64_t done, uint64_t total)
{
	if (done * 2 > total)
		*(volatile int *)data = 1;
}

static void test_oom_and_interrupt(void)
{
	const struct mt_request_stream *s = stream;
	uint64_t bound = mt_request_stream_peak_live(s);
	char err[256];
	struct mt_replay_result r;
	/* a device of 90% of the lower bound: OOMs, counted, replay completes */
	struct mt_replay_options o = { .policy = "bestfit",
		                       .backend = MT_BACKEND_CUDA,
		                       .capacity = bound / 10 * 9 };
	CHECK(mt_replay_run(s, &o, &r, err, sizeof(err)) == 0);
	CHECK(r.oom_count > 0 && r.peak_reserved <= o.capacity);
	mt_replay_result_release(&r);
	volatile int stop = 0;
	o.capacity = 0;
	o.progress = on_progress;
	o.progress_data = (void *)&stop;
	o.interrupted = &stop;
	CHECK(mt_replay_run(s, &o, &r, err, sizeof(err)) == -EINTR);
	mt_replay_result_release(&r);
}

static struct mt_backend *probe; /* the whole device, for cuMemGetInfo */
static uint64_t free_before;

/* The device's free memory is as it was before the cases (after the
 * driver's own first-use memory, which stays until the process ends). */
static void test_memory_left_as_found(void)
{
	uint64_t free_after, total;

	CHECK(mt_backend_mem_info(probe, &free_after, &total) == 0);
	printf("# device free memory before %llu after %llu\n", (unsigned long long)free_before,
	       (unsigned long long)free_after);
	CHECK(free_before == free_after);
}

int main(void)
{
	uint64_t free_cold, total;
	struct mt_event *ev;
	size_t n;
	char err[256];
	int rc = mt_backend_create(&probe, MT_BACKEND_CUDA, 0, 0, err, sizeof(err));

	if (rc == -ENODEV) {
		printf("1..0 # SKIP %s\n", err);
		return 0;
	}
	REQUIRE(rc == 0);
	REQUIRE(mt_backend_mem_info(probe, &free_cold, &total) == 0);
	REQUIRE(gpu_warmup() == 0);
	REQUIRE(mt_backend_mem_info(probe, &free_before, &total) == 0);
	printf("# driver's own first-use memory: %lld bytes\n",
	       (long long)(free_cold - free_before));
	REQUIRE(synth_stream(5, 20000, 150, 64ull << 20, &ev, &n) == 0);
	REQUIRE(mt_request_stream_from_events(&stream, ev, n, MT_LAYER_REQUEST, err, sizeof(err)) ==
	        0);
	free(ev);
	TEST(test_ops);
	TEST(test_policies_agree);
	TEST(test_oom_and_interrupt);
	mt_request_stream_free(stream);
	TEST(test_memory_left_as_found);
	mt_backend_destroy(probe);
	return check_done();
}
