/* test-analyze.c — the analyses of `memtrace report` on small traces written
 * by hand, every expected figure worked out below from the events.
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
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "memtrace-analyze.h"

#define T0 1000000000ull
#define MS 1000000ull
#define A 0x10000000ull
#define B 0x20000000ull
#define C 0x30000000ull

static const char site1[] = "/opt/py/site-packages/torch/nn/modules/linear.py:125:forward\n"
                            "/home/u/train.py:42:step\n"
                            "/home/u/train.py:80:main";
static const char site2[] = "/opt/py/site-packages/torch/autograd/graph.py:10:run\n"
                            "python3+0x1f2 (/opt/py/site-packages/torch/lib/libtorch.so)";

struct fixture {
	struct mt_writer *w;
	uint32_t proc, dev;
};

static uint32_t intern(struct fixture *f, const char *s)
{
	uint32_t id = 0;

	CHECK(mt_writer_intern(f->w, s, &id) == 0);
	return id;
}

static void append(struct fixture *f, struct mt_event *ev)
{
	ev->process = f->proc;
	ev->device = f->dev;
	CHECK(mt_writer_append(f->w, ev) == 0);
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

static int open_writer(struct fixture *f, const char *path, const char *capture)
{
	struct mt_process p = { .pid = 42, .command_line = "train.py", .hostname = "h" };
	struct mt_device d = { .total_bytes = GiB,
		               .name = "Test GPU",
		               .uuid = "GPU-1",
		               .driver_version = "1",
		               .cuda_version = "1" };

	unlink(path);
	f->w = mt_writer_new();
	if (!f->w || mt_writer_open(f->w, path, MT_WRITER_CREATE) < 0)
		return -1;
	mt_writer_set_meta(f->w, "capture", capture);
	CHECK(mt_writer_add_process(f->w, &p, &f->proc) == 0);
	CHECK(mt_writer_add_device(f->w, &d, &f->dev) == 0);
	return 0;
}

static void close_writer(struct fixture *f)
{
	CHECK(mt_writer_flush(f->w) == 0);
	mt_writer_free(f->w);
}

static void write_main(const char *path, bool replays)
{
	struct fixture f;
	uint32_t s1, s2;
	const unsigned D = MT_LAYER_DRIVER, R = MT_LAYER_REQUEST;

	if (open_writer(&f, path, "requests") < 0) {
		CHECK(!"writer");
		return;
	}
	s1 = intern(&f, site1);
	s2 = intern(&f, site2);
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

			CHECK(mt_writer_save_replay(f.w, &rec, &id) == 0);
		}
	}
	close_writer(&f);
}

static void write_asis(const char *path, bool with_sample)
{
	struct fixture f;

	if (open_writer(&f, path, "as-is") < 0) {
		CHECK(!"writer");
		return;
	}
	mem(&f, MT_EVENT_ALLOC, 1, A, 100, MT_LAYER_DRIVER, 0);
	mem(&f, MT_EVENT_ALLOC, 2, B, 50, MT_LAYER_DRIVER, 0);
	mem(&f, MT_EVENT_FREE, 5, B, 50, MT_LAYER_DRIVER, 0);
	if (with_sample)
		sample(&f, 3, 400, 0);
	close_writer(&f);
}

static struct mt_reader *open_reader(const char *path)
{
	struct mt_reader *r = mt_reader_new();

	if (!r || mt_reader_open(r, path) < 0) {
		CHECK(!"reader");
		mt_reader_free(r);
		return NULL;
	}
	return r;
}

static int64_t sum_parts(const struct mt_anatomy *a)
{
	int64_t s = 0;
	unsigned i;

	for (i = 0; i < MT_PART_COUNT; i++)
		s += a->part[i];
	return s;
}

static const char *name_of(const struct mt_report *rep, const struct mt_range *g)
{
	return g ? mt_reader_string(rep->data.r, g->name) : "(none)";
}

static const struct mt_range_stats *stats_of(const struct mt_report *rep, const char *name)
{
	size_t i;

	for (i = 0; i < rep->nranges; i++)
		if (!strcmp(mt_reader_string(rep->data.r, rep->ranges[i].name), name))
			return &rep->ranges[i];
	return NULL;
}

static void test_sites(void)
{
	char buf[128];

	CHECK(mt_site_frame_count(site1) == 3);
	CHECK(mt_site_frame_count(site2) == 2);
	CHECK(mt_site_frame_count("") == 0);
	CHECK(mt_site_frame_count(NULL) == 0);
	/* the innermost frame outside torch names the allocation */
	CHECK(mt_site_display_index(site1) == 1);
	CHECK(!strcmp(mt_site_frame(site1, 1, buf, sizeof(buf)), "/home/u/train.py:42:step"));
	/* all frames inside torch (a native module under torch/lib too): the
	 * innermost */
	CHECK(mt_site_display_index(site2) == 0);
	CHECK(mt_site_display_index("libcudart.so+0x10\nmain+0x2 (app)") == 0);
	/* a "torch" folder that is not the package (an environment in
	 * /opt/torch) does not hide the model's own frame */
	CHECK(mt_site_display_index(
	              "/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/functional.py:3504:"
	              "cross_entropy\n"
	              "/opt/torch/.venv/lib/python3.12/site-packages/transformers/models/gpt2/"
	              "modeling_gpt2.py:900:GPT2LMHeadModel.forward") == 1);
	CHECK(mt_site_display_index("") == (size_t)-1);
	CHECK(!strcmp(mt_site_frame(site1, 7, buf, sizeof(buf)), ""));
	/* truncation keeps a terminated string */
	CHECK(!strcmp(mt_site_frame(site1, 2, buf, 6), "/home"));
}

static char main_path[64], replays_path[64], asis_path[64], nosample_path[64];

static void test_main(void)
{
	struct mt_reader *r = open_reader(main_path);
	struct mt_report rep;
	struct mt_report_options opt = { 0 };
	const struct mt_range_stats *s;
	const struct mt_anatomy *a = &rep.anatomy;
	char err[256];
	size_t i;

	if (!r)
		return;
	CHECK(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == 0);
	CHECK(rep.data.layer == MT_LAYER_REQUEST);
	CHECK(rep.peak_bytes == 54 * MiB);
	CHECK(rep.peak_at == T0 + 72 * MS);
	CHECK(rep.at == rep.peak_at);

	/* top at peak: R5 20, R1 16, R3 12, R4 4, R6 2 */
	{
		static const uint64_t want[] = { 20, 16, 12, 4, 2 };
		static const char *const range_want[] = { "op", "(none)", "op", "op", "(none)" };

		CHECK(rep.ntop_peak == 5);
		for (i = 0; i < rep.ntop_peak && i < 5; i++) {
			CHECK(rep.top_peak[i].l->bytes == want[i] * MiB);
			CHECK(!strcmp(name_of(&rep, rep.top_peak[i].range), range_want[i]));
		}
		CHECK(!strcmp(mt_reader_string(r, rep.top_peak[1].l->site), site1));
		CHECK(!strcmp(mt_reader_string(r, rep.top_peak[2].l->site), site2));
		CHECK(rep.top_peak[0].l->site == 0);
	}
	/* attributed: all but R6 (no site, no range) */
	CHECK(rep.attributed_bytes == 52 * MiB);
	CHECK(fabs(rep.attributed_fraction - 52.0 / 54.0) < 1e-12);

	/* innermost range with two threads: R2 in inner (nested in forward),
	 * R3 at 56 in op (thread 3's [56, 58) started last) */
	for (i = 0; i < rep.data.nlive; i++) {
		const struct mt_lifetime *l = &rep.data.live[i];

		if (l->bytes == 8 * MiB)
			CHECK(!strcmp(name_of(&rep, rep.range_of[i]), "inner"));
		if (l->bytes == 12 * MiB) {
			CHECK(!strcmp(name_of(&rep, rep.range_of[i]), "op"));
			CHECK(rep.range_of[i] && rep.range_of[i]->thread == 3);
		}
	}

	/* per range: the library's two range names are left out */
	CHECK(rep.nranges == 4);
	CHECK(rep.data.library_names == 2);
	s = stats_of(&rep, "backward");
	CHECK(s && s->instances == 1 && s->allocations == 3 && s->bytes_allocated == 36 * MiB &&
	      s->peak_live == 54 * MiB && s->peak_at == T0 + 72 * MS);
	/* R3 and R4 lie in two op instances at once: counted once */
	s = stats_of(&rep, "op");
	CHECK(s && s->instances == 3 && s->allocations == 3 && s->bytes_allocated == 36 * MiB &&
	      s->peak_live == 54 * MiB);
	s = stats_of(&rep, "forward");
	CHECK(s && s->instances == 1 && s->bytes_allocated == 8 * MiB && s->peak_live == 26 * MiB &&
	      s->peak_at == T0 + 25 * MS);
	s = stats_of(&rep, "inner");
	CHECK(s && s->bytes_allocated == 8 * MiB && s->peak_live == 26 * MiB);
	CHECK(rep.ranges[0].bytes_allocated == 36 * MiB &&
	      rep.ranges[3].bytes_allocated == 8 * MiB);

	/* never freed: R1 and R6 */
	CHECK(rep.never_freed_count == 2 && rep.never_freed_bytes == 18 * MiB);
	CHECK(rep.nnever_freed == 2 && rep.never_freed[0].l->bytes == 16 * MiB);

	/* anatomy at the peak (72) against the sample at t=70, whose driver
	 * memory is the same (S1 + S2 + S3 = 112): 500 used, 450 process; S1
	 * holds R1 R3 R6 = 30 (34 free), S2 holds R4 R5 = 24 (8 free), S3
	 * nothing */
	CHECK(a->available && a->sample_ts == T0 + 70 * MS && a->measured_at == T0 + 72 * MS);
	CHECK(a->same_segments);
	{
		char text[256];

		mt_anatomy_reading(a, rep.data.t0, text, sizeof(text));
		CHECKF(!strcmp(text, "the reading at +69.0 ms, 2.00 ms before, when the allocator "
		                     "held the same segments"),
		       "%s", text);
	}
	CHECK(a->used_bytes == 500 * MiB && a->cache_known);
	CHECK(a->part[MT_PART_OTHER_PROCESSES] == (int64_t)(50 * MiB));
	CHECK(a->part[MT_PART_CONTEXT] == (int64_t)(338 * MiB));
	CHECK(a->part[MT_PART_CACHE] == (int64_t)(16 * MiB));
	CHECK(a->part[MT_PART_FRAGMENTATION] == (int64_t)(42 * MiB));
	CHECK(a->part[MT_PART_LIVE] == (int64_t)(54 * MiB));
	CHECK(a->part[MT_PART_UNEXPLAINED] == 0);
	CHECK(sum_parts(a) == (int64_t)a->used_bytes);

	/* the OOM at 73: 54 live; budget 1024 - 50 - 338 = 636 MiB; no
	 * saved replays in this trace */
	CHECK(rep.nooms == 1 && rep.nreplays == 0);
	if (rep.nooms == 1) {
		const struct mt_report_oom *o = &rep.ooms[0];

		CHECK(o->detailed && o->f->bytes == GiB && o->f->free_bytes == 300 * MiB);
		CHECK(o->live_bytes == 54 * MiB);
		CHECK(o->nlargest == 5 && o->largest[0].l->bytes == 20 * MiB);
		CHECK(o->budget_sampled && o->budget == 636 * MiB);
	}
	mt_report_release(&rep);

	/* at 45 ms: the nearer sample (t=70) saw S3 too; t=2 has the same
	 * driver memory (S1 + S2 = 96) and reads 90: no context, unexplained
	 * -6; S2 holds nothing: cache 32; S1 holds R1 R6 = 18 (46 free) */
	opt.at_set = true;
	opt.at = 45 * MS - MS; /* since t0 = the first memory event, 1 ms */
	CHECK(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == 0);
	CHECK(rep.at == T0 + 45 * MS);
	CHECK(rep.peak_bytes == 54 * MiB); /* the peak is always there */
	CHECK(a->sample_ts == T0 + 2 * MS && a->measured_at == T0 + 45 * MS);
	CHECK(a->part[MT_PART_CONTEXT] == 0 && a->part[MT_PART_CACHE] == (int64_t)(32 * MiB));
	CHECK(a->part[MT_PART_FRAGMENTATION] == (int64_t)(46 * MiB));
	CHECK(a->part[MT_PART_LIVE] == (int64_t)(18 * MiB));
	CHECK(a->part[MT_PART_UNEXPLAINED] == -(int64_t)(6 * MiB));
	CHECK(sum_parts(a) == (int64_t)a->used_bytes);
	CHECK(rep.ntop == 2 && rep.live_at_bytes == 18 * MiB);
	mt_report_release(&rep);

	/* at 95 ms (S1 + S3 = 80) no sample saw the same driver memory: the
	 * nearest (t=80, 600 used) and every part at its time: R1 R3 R4 R6 =
	 * 34 live, S1 34 free, S2 28 free, S3 cache 16, context 600 - 112 */
	opt.at = 95 * MS - MS;
	CHECK(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == 0);
	CHECK(a->sample_ts == T0 + 80 * MS && a->measured_at == T0 + 80 * MS);
	CHECK(!a->same_segments);
	CHECK(a->part[MT_PART_LIVE] == (int64_t)(34 * MiB));
	CHECK(a->part[MT_PART_FRAGMENTATION] == (int64_t)(62 * MiB));
	CHECK(a->part[MT_PART_CACHE] == (int64_t)(16 * MiB));
	CHECK(a->part[MT_PART_CONTEXT] == (int64_t)(488 * MiB));
	CHECK(a->part[MT_PART_UNEXPLAINED] == 0);
	mt_report_release(&rep);

	/* a moment after the trace is refused */
	opt.at = 10 * 1000 * MS;
	CHECK(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == -ERANGE);
	CHECK(strstr(err, "after the end") != NULL);
	mt_report_release(&rep);
	mt_reader_free(r);
}

/* With all_ranges the library's ranges count: R5 (20 MiB at 72 ms) was
 * made inside thrust::sort, innermost; without, inside op (see test_main). */
static void test_all_ranges(void)
{
	struct mt_reader *r = open_reader(main_path);
	struct mt_report_options opt = { .all_ranges = true };
	struct mt_report rep;
	const struct mt_range_stats *s;
	char err[256];
	size_t i;

	if (!r)
		return;
	CHECK(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == 0);
	CHECK(rep.nranges == 6 && rep.data.library_names == 0);
	s = stats_of(&rep, "cub::DeviceRadixSort");
	CHECK(s && s->instances == 1 && s->allocations == 1 && s->bytes_allocated == 20 * MiB);
	for (i = 0; i < rep.data.nlive; i++)
		if (rep.data.live[i].bytes == 20 * MiB)
			CHECK(!strcmp(name_of(&rep, rep.range_of[i]), "thrust::sort"));
	mt_report_release(&rep);
	mt_reader_free(r);
}

static void test_replays(void)
{
	struct mt_reader *r = open_reader(replays_path);
	struct mt_report rep;
	struct mt_report_options opt = { 0 };
	char err[256];

	if (!r)
		return;
	CHECK(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == 0);
	/* the latest bestfit (600 MiB) fits the 636 MiB budget, caching
	 * (700 MiB) does not */
	CHECK(rep.nreplays == 2);
	if (rep.nreplays == 2 && rep.nooms == 1) {
		CHECK(!strcmp(rep.replays[0].rec->policy, "bestfit"));
		CHECK(rep.replays[0].peak_reserved == 600 * MiB);
		CHECK(rep.ooms[0].fits[0]);
		CHECK(!strcmp(rep.replays[1].rec->policy, "caching"));
		CHECK(!rep.ooms[0].fits[1]);
	}
	mt_report_release(&rep);
	mt_reader_free(r);
}

static void check_asis(const char *path, bool with_sample)
{
	struct mt_reader *r = open_reader(path);
	struct mt_report rep;
	struct mt_report_options opt = { 0 };
	const struct mt_anatomy *a = &rep.anatomy;
	char err[256];

	if (!r)
		return;
	CHECK(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == 0);
	CHECK(rep.data.layer == MT_LAYER_DRIVER);
	CHECK(rep.peak_bytes == 150 * MiB && rep.peak_at == T0 + 2 * MS);
	CHECK(!a->cache_known);
	CHECK(a->part[MT_PART_LIVE] == (int64_t)(150 * MiB));
	CHECK(a->part[MT_PART_CACHE] == 0 && a->part[MT_PART_FRAGMENTATION] == 0);
	CHECK(rep.attributed_bytes == 0 && rep.attributed_fraction == 0.0);
	CHECK(rep.nranges == 0 && rep.nooms == 0);
	if (with_sample) {
		/* no sample at or before 2 ms: the first after (400 at 3 ms) */
		CHECK(a->available && a->used_bytes == 400 * MiB);
		CHECK(a->part[MT_PART_CONTEXT] == (int64_t)(250 * MiB));
		CHECK(a->part[MT_PART_UNEXPLAINED] == 0);
		CHECK(sum_parts(a) == (int64_t)a->used_bytes);
	} else {
		CHECK(!a->available && strstr(a->why, "no samples"));
		CHECK(a->part[MT_PART_CONTEXT] == 0 && a->part[MT_PART_UNEXPLAINED] == 0);
	}
	mt_report_release(&rep);
	mt_reader_free(r);
}

/* Fragmentation (one definition): free space in segments holding a live
 * block; empty segments are cache. Segments 100 (30 live in two blocks),
 * 50 (nothing live), 20 (all live). */
static void test_fragmentation(void)
{
	struct mt_segmap m = { 0 };

	CHECK(mt_segmap_add_segment(&m, 1000, 100) == 0);
	CHECK(mt_segmap_add_block(&m, 1000, 10, true) == 0);
	CHECK(mt_segmap_add_block(&m, 1010, 40, false) == 0);
	CHECK(mt_segmap_add_block(&m, 1050, 20, true) == 0);
	CHECK(mt_segmap_add_block(&m, 1070, 30, false) == 0);
	CHECK(mt_segmap_add_segment(&m, 5000, 50) == 0);
	CHECK(mt_segmap_add_block(&m, 5000, 50, false) == 0);
	CHECK(mt_segmap_add_segment(&m, 9000, 20) == 0);
	CHECK(mt_segmap_add_block(&m, 9000, 20, true) == 0);
	mt_segmap_finish(&m);
	CHECK(m.reserved == 170 && m.allocated == 50 && m.largest_free == 50);
	CHECK(mt_segmap_fragmentation(&m) == 70);
	CHECK(mt_segmap_cache(&m) == 50);
	CHECK(fabs(mt_fragmentation_share(70, 170) - 70.0 / 170.0) < 1e-12);
	CHECK(mt_fragmentation_share(0, 0) == 0.0);
	mt_segmap_release(&m);
}

static void test_peak_ties(void)
{
	/* alloc and free at one moment: the state after the moment counts */
	struct mt_lifetime l[3] = {
		{ .start = 10, .end = 20, .bytes = 5 },
		{ .start = 20, .end = 30, .bytes = 5 },
		{ .start = 25, .end = 25, .bytes = 100 },
	};
	uint64_t peak, at;

	CHECK(mt_peak_moment(l, 3, &peak, &at) == 0);
	CHECK(peak == 5 && at == 10);
	CHECK(mt_live_at(l, 3, 20) == 5 && mt_live_at(l, 3, 25) == 5);
	CHECK(mt_peak_moment(l, 0, &peak, &at) == 0 && peak == 0);
}

static void test_asis(void)
{
	check_asis(asis_path, true);
}

static void test_asis_without_samples(void)
{
	check_asis(nosample_path, false);
}

int main(void)
{
	char dir[] = "/tmp/mt-analyze-XXXXXX", cmd[128];

	REQUIRE(mkdtemp(dir) != NULL);
	snprintf(main_path, sizeof(main_path), "%s/main.db", dir);
	snprintf(replays_path, sizeof(replays_path), "%s/replays.db", dir);
	snprintf(asis_path, sizeof(asis_path), "%s/asis.db", dir);
	snprintf(nosample_path, sizeof(nosample_path), "%s/nosample.db", dir);
	write_main(main_path, false);
	write_main(replays_path, true);
	write_asis(asis_path, true);
	write_asis(nosample_path, false);
	TEST(test_sites);
	TEST(test_peak_ties);
	TEST(test_fragmentation);
	TEST(test_main);
	TEST(test_all_ranges);
	TEST(test_replays);
	TEST(test_asis);
	TEST(test_asis_without_samples);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	return check_done();
}
