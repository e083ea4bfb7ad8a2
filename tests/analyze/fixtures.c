/* fixtures.c — the traces the analyze tests read, written by hand; every
 * figure test-analyze.c and the report goldens expect is worked out here.
 *
 * MAIN (times in ms after T0, sizes in MiB, one process, device of 1 GiB):
 *   driver segments  S1 64 @A [1, never)   S2 32 @B [2, 90)   S3 16 @C [60, never)
 *   requests         R6  2 @A+48 [3, never)  no site, no range
 *                    R1 16 @A    [5, never)  SITE1 (innermost frames inside torch)
 *                    R2  8 @A+16 [25, 40)    ranges forward ⊃ inner open
 *                    R3 12 @A+32 [56, 95)    SITE2 (all frames inside torch)
 *                    R4  4 @B    [57, 85)
 *                    R5 20 @B+4  [72, 74)
 *   ranges  thread 1: forward [10, 50) d0, inner [20, 30) d1, backward [50, 100) d0
 *           thread 2: op [55, 60), op [70, 80), and inside the latter the
 *           library's own cub::DeviceRadixSort [71, 73) d1 (domain CCCL)
 *           around thrust::sort [71.5, 72.5) d2   thread 3: op [56, 58)
 *   samples t=2: 90 used (process unknown); t=70: 500 used, 450 process;
 *           t=80: 600 used
 *   alloc_failed t=73: 1 GiB requested, 300 MiB free.
 *   live: 2 @3, 18 @5, 26 @25, 18 @40, 30 @56, 34 @57, 54 @72, 34 @74, 30 @85,
 *         18 @95 → peak 54 MiB at 72 ms.
 * ASIS: driver layer only: D1 100 @1 never, D2 50 @2 freed 5; sample t=3 400.
 * NOSAMPLE: ASIS without the sample.
 * OOMS (the OOM story; times in ms after T0, sizes in MiB, device of 1 GiB):
 *   process 1 (PyTorch's requests recorded):
 *     segment S1 256 @A [1, never), request R1 200 @A [2, never) at SITE3;
 *     OOM 1: driver attempts of 300 at 9.8 (100 free) and 9.9 (90 free), then
 *       PyTorch's failure of 300 at 10 (80 free) at SITE3;
 *     at 20 a driver failure of 128 (50 free), recovered from: segment S2
 *       128 @B [20.5, 30) with request R2 100 @B [20.6, 25);
 *     OOM 2: PyTorch's failure of 64 at 40, no driver attempt (10 free);
 *   process 2 (no requests recorded): driver failures of 512 at 50 and 50.5
 *     (one OOM, retried) and of 256 at 60 (another); 5 free each.
 *   reading at 9.9: 700 used, process 1 650 → outside 50, context
 *   650 - 256 = 394; room 1024 - 444 = 580 at both OOMs of process 1 (S1
 *   alone both times); lower bounds 200 + 300 = 500 and 200 + 64 = 264.
 *   saved replays (series: ts reserved): bestfit (2 210) (9 220) (30 400)
 *     → needs 220 + 300 = 520 (held, 60 to spare) at 10 ms, 400 + 64 = 464
 *     (116 to spare) at 40; caching (2 256) (9 300) (15 500) → 600 (20 more)
 *     at 10, 564 (16 to spare) at 40; native ran out of memory at 5 ms.
 *
 * OOM_LOOP (the OOM program in small: 128 MiB tensors until PyTorch
 *   raises, caught, all freed, 7 rounds; device of 1 GiB): round k starts
 *   at 100k ms; at 100k + 1..6 a 128 MiB segment with one 128 MiB request
 *   in it (768 live); a reading at 100k + 6.5 (992 used, 968 the process's:
 *   outside 24, context 968 - 768 = 200); two failed cudaMalloc of 128 at
 *   100k + 7 and 7.1 (the allocator's attempt, then its retry after
 *   freeing its cache; 32 free), PyTorch's failure of 128 at 100k + 7.2
 *   with a reading taken then (992, 968); everything freed at 100k + 8
 *   (requests) and 9 (segments). 21 failed allocations are 7 OOMs, each
 *   with 2 driver attempts; the peak of live bytes 768 at 6.5 ms (a reading
 *   then too, at the first round); the
 *   capacity 1024 - 200 - 24 = 800, the room at every OOM 800 as well; the
 *   lower bound 768 + 128 = 896: no allocator holds it.
 *
 * CAPACITY (the recorded capacity's two corrections): the device's driver
 *   keeps 16 MiB beside its 1 GiB; at 1 ms a 32 MiB cudaMalloc in which no
 *   request ever lies (a library's), at 2 ms a 256 MiB segment and at 2.5
 *   a 200 MiB request in it (the peak); a reading at 3 ms: 412 used, 388
 *   the process's (context 388 - 288 = 100; outside 24, of which 16 the
 *   driver's reserve): capacity 1024 - 100 - 32 - (24 - 16) = 884.
 *
 * KERNELS_GPU and KERNELS_LAUNCH (what ran at a moment; times in ms after
 *   T0, sizes in MiB, one process; requests and failures on stream 7 unless
 *   said): request R1 100 @A [1, never), R2 50 @B [10, 20) → peak 150 at
 *   10; PyTorch's failures of 900 at 30 (stream 7) and at 32 (stream 3,
 *   which launched nothing); ranges thread 1: step [0, 40) d0, forward
 *   [5, 15) d1, backward [25, 35) d1.
 *   GPU: kernels on stream 7 k_fwd [8, 9.5), k_long [9.8, 12), k_bwd
 *   [26, 28); on stream 9 k_side [29, 31); on stream 11 k_comm [2, 33).
 *   At the peak k_long runs (range forward); at 30 k_bwd is the last on
 *   stream 7, ended 2 before (backward); at 32 stream 3 has none: k_comm,
 *   still running on another stream (k_side started later but ended).
 *   LAUNCH (meta kernels = launch; ts = end = launch time): k_comm 1.9 on
 *   stream 11, k_fwd 7, k_long 9.7, k_bwd 25.5 on stream 7, k_side 29.5
 *   on stream 9. At the peak k_long, launched 0.3 before; at 30 k_bwd, 4.5
 *   before; at 32 k_side, the latest launched, 2.5 before, elsewhere.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"
#include "memtrace-format.h"

const char fx_site1[] = "/opt/py/site-packages/torch/nn/modules/linear.py:125:forward\n"
                        "/home/u/train.py:42:step\n"
                        "/home/u/train.py:80:main";
const char fx_site2[] = "/opt/py/site-packages/torch/autograd/graph.py:10:run\n"
                        "python3+0x1f2 (/opt/py/site-packages/torch/lib/libtorch.so)";
static const char site3[] = "/opt/py/site-packages/torch/cuda/memory.py:10:empty\n"
                            "/home/u/oom.py:12:grow\n"
                            "/home/u/oom.py:30:main";

struct fixture {
	struct mt_writer *w;
	uint32_t proc, dev;
	int rc; /* the first error */
};

/* Notes the first error. */
static void note(struct fixture *f, int rc)
{
	if (rc < 0 && !f->rc)
		f->rc = rc;
}

static uint32_t intern(struct fixture *f, const char *s)
{
	uint32_t id = 0;

	note(f, mt_writer_intern(f->w, s, &id));
	return id;
}

static void append(struct fixture *f, struct mt_event *ev)
{
	if (!ev->process) /* the fixture's first process unless set */
		ev->process = f->proc;
	ev->device = f->dev;
	note(f, mt_writer_append(f->w, ev));
}

static void mem(struct fixture *f, unsigned kind, double ms, uint64_t address, uint64_t mib,
                unsigned layer, uint32_t site)
{
	struct mt_event ev = { .ts = T0 + (uint64_t)(ms * MS), .kind = (uint8_t)kind };

	ev.alloc.address = address;
	ev.alloc.bytes = mib * MiB;
	ev.alloc.layer = (uint8_t)layer;
	ev.alloc.site = site;
	ev.alloc.stream = 7;
	ev.alloc.api = MT_API_TORCH;
	append(f, &ev);
}

static void range_in(struct fixture *f, const char *name, const char *domain, double start,
                     double end, uint32_t thread, uint32_t depth)
{
	struct mt_event ev = { .ts = T0 + (uint64_t)(start * MS), .kind = MT_EVENT_RANGE };

	ev.range.end = end < 0 ? MT_TIME_UNKNOWN : T0 + (uint64_t)(end * MS);
	ev.range.name = intern(f, name);
	ev.range.domain = domain ? intern(f, domain) : 0;
	ev.range.thread = thread;
	ev.range.depth = depth;
	append(f, &ev);
}

static void range(struct fixture *f, const char *name, double start, double end, uint32_t thread,
                  uint32_t depth)
{
	range_in(f, name, NULL, start, end, thread, depth);
}

static void sample(struct fixture *f, double ms, uint64_t used, uint64_t process)
{
	struct mt_event ev = { .ts = T0 + (uint64_t)(ms * MS), .kind = MT_EVENT_SAMPLE };

	ev.sample.used_bytes = used * MiB;
	ev.sample.process_bytes = process * MiB;
	append(f, &ev);
}

/* The fixture's trace with one process and a device of 1 GiB whose driver
 * keeps driver_reserved beside it (0: not recorded). */
static int open_writer_reserved(struct fixture *f, const char *path, const char *capture,
                                uint64_t driver_reserved)
{
	struct mt_process p = { .pid = 42, .command_line = "train.py", .hostname = "h" };
	struct mt_device d = { .total_bytes = GiB,
		               .name = "Test GPU",
		               .uuid = "GPU-1",
		               .driver_version = "1",
		               .cuda_version = "1",
		               .driver_reserved_bytes = driver_reserved };

	unlink(path);
	memset(f, 0, sizeof(*f));
	f->w = mt_writer_new();
	if (!f->w)
		return -ENOMEM;
	note(f, mt_writer_open(f->w, path, MT_WRITER_CREATE));
	if (f->rc == 0)
		note(f, mt_writer_set_meta(f->w, "capture", capture));
	if (f->rc == 0)
		note(f, mt_writer_add_process(f->w, &p, &f->proc));
	if (f->rc == 0)
		note(f, mt_writer_add_device(f->w, &d, &f->dev));
	return f->rc;
}

static int open_writer(struct fixture *f, const char *path, const char *capture)
{
	return open_writer_reserved(f, path, capture, 0);
}

static int close_writer(struct fixture *f)
{
	if (f->rc == 0)
		note(f, mt_writer_flush(f->w));
	if (f->rc)
		fprintf(stderr, "fixture: %s\n", mt_writer_message(f->w));
	mt_writer_free(f->w);
	return f->rc;
}

static int write_main(const char *path, bool replays)
{
	struct fixture f;
	uint32_t s1, s2;
	const unsigned D = MT_LAYER_DRIVER, R = MT_LAYER_REQUEST;

	if (open_writer(&f, path, "requests") < 0)
		return close_writer(&f);
	s1 = intern(&f, fx_site1);
	s2 = intern(&f, fx_site2);
	mem(&f, MT_EVENT_ALLOC, 1, A, 64, D, 0);
	mem(&f, MT_EVENT_ALLOC, 2, B, 32, D, 0);
	mem(&f, MT_EVENT_ALLOC, 3, A + 48 * MiB, 2, R, 0);
	mem(&f, MT_EVENT_ALLOC, 5, A, 16, R, s1);
	mem(&f, MT_EVENT_ALLOC, 25, A + 16 * MiB, 8, R, 0);
	mem(&f, MT_EVENT_FREE, 40, A + 16 * MiB, 8, R, 0);
	mem(&f, MT_EVENT_ALLOC, 56, A + 32 * MiB, 12, R, s2);
	mem(&f, MT_EVENT_ALLOC, 57, B, 4, R, 0);
	mem(&f, MT_EVENT_ALLOC, 60, C, 16, D, 0);
	mem(&f, MT_EVENT_ALLOC, 72, B + 4 * MiB, 20, R, 0);
	mem(&f, MT_EVENT_FREE, 74, B + 4 * MiB, 20, R, 0);
	mem(&f, MT_EVENT_FREE, 85, B, 4, R, 0);
	mem(&f, MT_EVENT_FREE, 90, B, 32, D, 0);
	mem(&f, MT_EVENT_FREE, 95, A + 32 * MiB, 12, R, 0);
	range(&f, "forward", 10, 50, 1, 0);
	range(&f, "inner", 20, 30, 1, 1);
	range(&f, "backward", 50, 100, 1, 0);
	range(&f, "op", 55, 60, 2, 0);
	range(&f, "op", 56, 58, 3, 0);
	range(&f, "op", 70, 80, 2, 0);
	range_in(&f, "cub::DeviceRadixSort", "CCCL", 71, 73, 2, 1);
	range(&f, "thrust::sort", 71.5, 72.5, 2, 2);
	sample(&f, 2, 90, 0);
	sample(&f, 70, 500, 450);
	sample(&f, 80, 600, 0);
	{
		struct mt_event ev = { .ts = T0 + 73 * MS, .kind = MT_EVENT_ALLOC_FAILED };

		ev.failed.bytes = GiB;
		ev.failed.free_bytes = 300 * MiB;
		ev.failed.layer = R;
		ev.failed.api = MT_API_TORCH;
		append(&f, &ev);
	}
	if (replays) {
		static const char *const json[] = {
			"{\"peak_reserved\": 900000000, \"oom_count\": 0}", /* superseded */
			"{\"peak_reserved\": 629145600, \"oom_count\": 0}", /* 600 MiB */
			"{\"peak_reserved\": 734003200, \"oom_count\": 0}", /* 700 MiB */
		};
		static const char *const policy[] = { "bestfit", "bestfit", "caching" };
		size_t i;

		for (i = 0; i < 3; i++) {
			struct mt_replay_record rec = { .device = f.dev,
				                        .created_ns = i + 1,
				                        .policy = policy[i],
				                        .backend = "sim",
				                        .params = "",
				                        .result_json = json[i] };
			int64_t id;

			note(&f, mt_writer_save_replay(f.w, &rec, &id));
		}
	}
	return close_writer(&f);
}

static void failed(struct fixture *f, uint32_t proc, double ms, uint64_t mib, unsigned layer,
                   uint64_t free_mib, uint32_t site)
{
	struct mt_event ev = { .ts = T0 + (uint64_t)(ms * MS), .kind = MT_EVENT_ALLOC_FAILED };

	ev.failed.bytes = mib * MiB;
	ev.failed.free_bytes = free_mib * MiB;
	ev.failed.layer = (uint8_t)layer;
	ev.failed.api = layer == MT_LAYER_REQUEST ? MT_API_TORCH : MT_API_CUDA_MALLOC;
	ev.failed.error = 2;
	ev.failed.stream = 7;
	ev.failed.site = site;
	ev.process = proc;
	append(f, &ev);
}

static int write_asis(const char *path, bool with_sample)
{
	struct fixture f;

	if (open_writer(&f, path, "as-is") < 0)
		return close_writer(&f);
	mem(&f, MT_EVENT_ALLOC, 1, A, 100, MT_LAYER_DRIVER, 0);
	mem(&f, MT_EVENT_ALLOC, 2, B, 50, MT_LAYER_DRIVER, 0);
	mem(&f, MT_EVENT_FREE, 5, B, 50, MT_LAYER_DRIVER, 0);
	if (with_sample)
		sample(&f, 3, 400, 0);
	return close_writer(&f);
}

/* A saved replay with its series (ts ms, reserved MiB pairs). */
static void save(struct fixture *f, const char *policy, const char *json, const double *series,
                 size_t n)
{
	struct mt_series_point pts[8];
	struct mt_replay_record rec = { .device = f->dev,
		                        .created_ns = 1,
		                        .policy = policy,
		                        .backend = "sim",
		                        .params = "",
		                        .result_json = json,
		                        .series = pts,
		                        .series_len = n };
	int64_t id;
	size_t i;

	for (i = 0; i < n && i < 8; i++)
		pts[i] = (struct mt_series_point){ T0 + (uint64_t)(series[2 * i] * MS),
			                           (uint64_t)series[2 * i + 1] * MiB / 2,
			                           (uint64_t)series[2 * i + 1] * MiB };
	note(f, mt_writer_save_replay(f->w, &rec, &id));
}

static int write_ooms(const char *path)
{
	static const double bestfit[] = { 2, 210, 9, 220, 30, 400 };
	static const double caching[] = { 2, 256, 9, 300, 15, 500 };
	static const double native[] = { 2, 256 };
	struct mt_process p2 = { .pid = 43, .command_line = "other.py", .hostname = "h" };
	const unsigned D = MT_LAYER_DRIVER, R = MT_LAYER_REQUEST;
	struct fixture f;
	uint32_t s3, proc2 = 0;

	if (open_writer(&f, path, "requests") < 0)
		return close_writer(&f);
	note(&f, mt_writer_add_process(f.w, &p2, &proc2));
	s3 = intern(&f, site3);
	mem(&f, MT_EVENT_ALLOC, 1, A, 256, D, 0);
	mem(&f, MT_EVENT_ALLOC, 2, A, 200, R, s3);
	failed(&f, f.proc, 9.8, 300, D, 100, 0);
	sample(&f, 9.9, 700, 650);
	failed(&f, f.proc, 9.9, 300, D, 90, 0);
	failed(&f, f.proc, 10, 300, R, 80, s3);
	failed(&f, f.proc, 20, 128, D, 50, 0);
	mem(&f, MT_EVENT_ALLOC, 20.5, B, 128, D, 0);
	mem(&f, MT_EVENT_ALLOC, 20.6, B, 100, R, 0);
	mem(&f, MT_EVENT_FREE, 25, B, 100, R, 0);
	mem(&f, MT_EVENT_FREE, 30, B, 128, D, 0);
	failed(&f, f.proc, 40, 64, R, 10, s3);
	failed(&f, proc2, 50, 512, D, 5, 0);
	failed(&f, proc2, 50.5, 512, D, 5, 0);
	failed(&f, proc2, 60, 256, D, 5, 0);
	save(&f, "bestfit", "{\"peak_reserved\": 419430400, \"oom_count\": 0}", bestfit, 3);
	save(&f, "caching", "{\"peak_reserved\": 524288000, \"oom_count\": 0}", caching, 3);
	save(&f, "native",
	     "{\"peak_reserved\": 268435456, \"oom_count\": 1, \"first_oom\": {\"ts\": "
	     "1005000000}}",
	     native, 1);
	return close_writer(&f);
}

static int write_oom_loop(const char *path)
{
	const unsigned D = MT_LAYER_DRIVER, R = MT_LAYER_REQUEST;
	struct fixture f;
	uint32_t site;
	int round, k;

	if (open_writer(&f, path, "requests") < 0)
		return close_writer(&f);
	site = intern(&f, site3);
	for (round = 0; round < 7; round++) {
		double t = 100.0 * round;

		for (k = 0; k < 6; k++) {
			mem(&f, MT_EVENT_ALLOC, t + 1 + k, A + (uint64_t)k * 128 * MiB, 128, D, 0);
			mem(&f, MT_EVENT_ALLOC, t + 1.5 + k, A + (uint64_t)k * 128 * MiB, 128, R,
			    site);
		}
		sample(&f, t + 6.5, 992, 968);
		failed(&f, f.proc, t + 7, 128, D, 32, 0);
		failed(&f, f.proc, t + 7.1, 128, D, 32, 0);
		failed(&f, f.proc, t + 7.2, 128, R, 32, site);
		sample(&f, t + 7.2, 992, 968);
		for (k = 0; k < 6; k++) {
			mem(&f, MT_EVENT_FREE, t + 8, A + (uint64_t)k * 128 * MiB, 128, R, 0);
			mem(&f, MT_EVENT_FREE, t + 9, A + (uint64_t)k * 128 * MiB, 128, D, 0);
		}
	}
	return close_writer(&f);
}

static void kernel(struct fixture *f, const char *name, double start, double end, uint64_t stream)
{
	struct mt_event ev = { .ts = T0 + (uint64_t)(start * MS), .kind = MT_EVENT_KERNEL };

	ev.kernel.end = T0 + (uint64_t)(end * MS);
	ev.kernel.stream = stream;
	ev.kernel.name = intern(f, name);
	append(f, &ev);
}

static int write_kernels(const char *path, bool launch)
{
	const unsigned R = MT_LAYER_REQUEST;
	struct fixture f;
	struct mt_event oom = { .ts = T0 + 32 * MS, .kind = MT_EVENT_ALLOC_FAILED };

	if (open_writer(&f, path, "requests") < 0)
		return close_writer(&f);
	if (launch)
		note(&f, mt_writer_set_meta(f.w, "kernels", "launch"));
	mem(&f, MT_EVENT_ALLOC, 1, A, 100, R, 0);
	mem(&f, MT_EVENT_ALLOC, 10, B, 50, R, 0);
	mem(&f, MT_EVENT_FREE, 20, B, 50, R, 0);
	failed(&f, f.proc, 30, 900, R, 10, 0);
	oom.failed.bytes = 900 * MiB;
	oom.failed.free_bytes = 10 * MiB;
	oom.failed.layer = (uint8_t)R;
	oom.failed.api = MT_API_TORCH;
	oom.failed.stream = 3;
	append(&f, &oom);
	range(&f, "step", 0, 40, 1, 0);
	range(&f, "forward", 5, 15, 1, 1);
	range(&f, "backward", 25, 35, 1, 1);
	if (launch) {
		kernel(&f, "k_comm", 1.9, 1.9, 11);
		kernel(&f, "k_fwd", 7, 7, 7);
		kernel(&f, "k_long", 9.7, 9.7, 7);
		kernel(&f, "k_bwd", 25.5, 25.5, 7);
		kernel(&f, "k_side", 29.5, 29.5, 9);
	} else {
		kernel(&f, "k_comm", 2, 33, 11);
		kernel(&f, "k_fwd", 8, 9.5, 7);
		kernel(&f, "k_long", 9.8, 12, 7);
		kernel(&f, "k_bwd", 26, 28, 7);
		kernel(&f, "k_side", 29, 31, 9);
	}
	return close_writer(&f);
}

static int write_capacity(const char *path)
{
	const unsigned D = MT_LAYER_DRIVER, R = MT_LAYER_REQUEST;
	struct fixture f;

	if (open_writer_reserved(&f, path, "requests", 16 * MiB) < 0)
		return close_writer(&f);
	mem(&f, MT_EVENT_ALLOC, 1, B, 32, D, 0);
	mem(&f, MT_EVENT_ALLOC, 2, A, 256, D, 0);
	mem(&f, MT_EVENT_ALLOC, 2.5, A, 200, R, 0);
	sample(&f, 3, 412, 388);
	mem(&f, MT_EVENT_FREE, 4, A, 200, R, 0);
	mem(&f, MT_EVENT_FREE, 5, A, 256, D, 0);
	mem(&f, MT_EVENT_FREE, 5, B, 32, D, 0);
	return close_writer(&f);
}

int fx_write(enum fx_trace which, const char *path)
{
	switch (which) {
	case FX_MAIN:
		return write_main(path, false);
	case FX_MAIN_REPLAYS:
		return write_main(path, true);
	case FX_ASIS:
		return write_asis(path, true);
	case FX_ASIS_NO_SAMPLE:
		return write_asis(path, false);
	case FX_OOMS:
		return write_ooms(path);
	case FX_OOM_LOOP:
		return write_oom_loop(path);
	case FX_KERNELS_GPU:
		return write_kernels(path, false);
	case FX_KERNELS_LAUNCH:
		return write_kernels(path, true);
	case FX_CAPACITY:
		return write_capacity(path);
	}
	return -EINVAL;
}

int fx_from_name(const char *name, enum fx_trace *which)
{
	static const char *const names[] = { "main",           "main-replays", "asis",
		                             "asis-no-sample", "ooms",         "oom-loop",
		                             "capacity",       "kernels-gpu",  "kernels-launch" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i])) {
			*which = (enum fx_trace)i;
			return 0;
		}
	return -EINVAL;
}
