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
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"
#include "memtrace-analyze.h"
#include "tap.h"

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

	CHECK(mt_site_frame_count(fx_site1) == 3);
	CHECK(mt_site_frame_count(fx_site2) == 2);
	CHECK(mt_site_frame_count("") == 0);
	CHECK(mt_site_frame_count(NULL) == 0);
	/* the innermost frame outside torch names the allocation */
	CHECK(mt_site_display_index(fx_site1) == 1);
	CHECK(!strcmp(mt_site_frame(fx_site1, 1, buf, sizeof(buf)), "/home/u/train.py:42:step"));
	/* all frames inside torch (a native module under torch/lib too): the
	 * innermost */
	CHECK(mt_site_display_index(fx_site2) == 0);
	CHECK(mt_site_display_index("libcudart.so+0x10\nmain+0x2 (app)") == 0);
	/* a "torch" folder that is not the package (an environment in
	 * /opt/torch) does not hide the model's own frame */
	CHECK(mt_site_display_index(
	              "/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/functional.py:3504:"
	              "cross_entropy\n"
	              "/opt/torch/.venv/lib/python3.12/site-packages/transformers/models/gpt2/"
	              "modeling_gpt2.py:900:GPT2LMHeadModel.forward") == 1);
	CHECK(mt_site_display_index("") == (size_t)-1);
	CHECK(!strcmp(mt_site_frame(fx_site1, 7, buf, sizeof(buf)), ""));
	/* truncation keeps a terminated string */
	CHECK(!strcmp(mt_site_frame(fx_site1, 2, buf, 6), "/home"));
}

static char main_path[64], replays_path[64], asis_path[64], nosample_path[64], ooms_path[64],
        oom_loop_path[64], capacity_path[64], kernels_path[2][64];

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
		CHECK(!strcmp(mt_reader_string(r, rep.top_peak[1].l->site), fx_site1));
		CHECK(!strcmp(mt_reader_string(r, rep.top_peak[2].l->site), fx_site2));
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

	/* the OOM at 73: 54 live; room 1024 - 50 - 338 = 636 MiB; the lower
	 * bound 54 MiB + 1 GiB does not fit it; no saved replays here */
	CHECK(rep.nooms == 1 && rep.nreplays == 0);
	if (rep.nooms == 1) {
		const struct mt_report_oom *o = &rep.ooms[0];

		CHECK(o->detailed && o->f->bytes == GiB && o->f->free_bytes == 300 * MiB);
		CHECK(o->live_bytes == 54 * MiB);
		CHECK(o->nlargest == 5 && o->largest[0].l->bytes == 20 * MiB);
		CHECK(o->room_from_reading && o->room == 636 * MiB);
		CHECK(o->lower_bound == 1078 * MiB && o->smallest == (size_t)-1);
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
	CHECK(rep.ntensors == 2 && rep.live_at_bytes == 18 * MiB && rep.live_at_count == 2);
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
	/* the latest bestfit (600 MiB) and caching, first saved order; no
	 * series, so each needs the 1 GiB request alone: more than the room */
	CHECK(rep.nreplays == 2);
	if (rep.nreplays == 2 && rep.nooms == 1) {
		CHECK(!strcmp(rep.replays[0].rec->policy, "bestfit"));
		CHECK(rep.replays[0].peak_reserved == 600 * MiB);
		CHECK(rep.ooms[0].verdicts[0].needs == GiB && !rep.ooms[0].verdicts[0].held);
		CHECK(!strcmp(rep.replays[1].rec->policy, "caching"));
		CHECK(!rep.ooms[0].verdicts[1].held);
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

/* Paths for people: the program's folder from its own frames (not the
 * packages', not the standard library's), and frames shortened to it or to
 * the package. */
static void test_site_paths(void)
{
	static const char *const stacks[] = {
		fx_site1, /* names /home/u/train.py:42:step */
		"/home/u/models/net.py:3:f",
		"/opt/py/site-packages/transformers/x.py:1:g",
		"/usr/lib/python3.12/copy.py:5:deepcopy",
		"main+0x2 (app)",
	};
	char dir[128], buf[256];

	CHECK(!strcmp(mt_site_program_dir(stacks, 5, dir, sizeof(dir)), "/home/u/"));
	CHECK(!strcmp(mt_site_program_dir(stacks + 1, 1, dir, sizeof(dir)), "/home/u/models/"));
	CHECK(!strcmp(mt_site_program_dir(stacks + 2, 3, dir, sizeof(dir)), ""));
	CHECK(!strcmp(mt_site_shorten("/home/u/models/net.py:3:f", "/home/u/", buf, sizeof(buf)),
	              "models/net.py:3:f"));
	CHECK(!strcmp(mt_site_shorten(stacks[2], "/home/u/", buf, sizeof(buf)),
	              "transformers/x.py:1:g"));
	CHECK(!strcmp(mt_site_shorten("/srv/other.py:1:h", "/home/u/", buf, sizeof(buf)),
	              "/srv/other.py:1:h"));
	CHECK(!strcmp(mt_site_shorten("main+0x2 (app)", "/home/u/", buf, sizeof(buf)),
	              "main+0x2 (app)"));
}

/* Group of key in rep, or NULL. */
static const struct mt_report_group *group(const struct mt_report *rep, const char *key)
{
	size_t i;

	for (i = 0; i < rep->ngroups; i++)
		if (!strcmp(rep->groups[i].key, key))
			return &rep->groups[i];
	return NULL;
}

/* MAIN at the peak (72 ms): R5 20 and R4 4 (no site, in op), R1 16
 * (SITE1), R3 12 (SITE2, in op), R6 2 (nothing). */
static void test_groups(void)
{
	struct mt_reader *r = open_reader(main_path);
	struct mt_report_options opt = { .top = 2 };
	const struct mt_report_group *g;
	struct mt_report rep;
	char err[256];

	if (!r)
		return;
	REQUIRE(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == 0);
	CHECK(rep.top == 2 && rep.ntensors == 2 && rep.ntop_peak == 2);
	CHECK(rep.ngroups == 4 && rep.live_at_count == 5);
	g = group(&rep, "in op");
	CHECK(g && !g->is_site && g->count == 2 && g->bytes == 24 * MiB &&
	      g->largest.l->bytes == 20 * MiB);
	g = group(&rep, "/home/u/train.py:42:step");
	CHECK(g && g->is_site && g->count == 1 && g->bytes == 16 * MiB);
	g = group(&rep, "/opt/py/site-packages/torch/autograd/graph.py:10:run");
	CHECK(g && g->is_site && g->bytes == 12 * MiB);
	g = group(&rep, "");
	CHECK(g && g->count == 1 && g->bytes == 2 * MiB);
	CHECK(rep.groups[0].bytes == 24 * MiB && rep.groups[3].bytes == 2 * MiB);
	CHECK(!strcmp(rep.program_dir, "/home/u/"));
	mt_report_release(&rep);

	opt.by = MT_REPORT_BY_RANGE;
	REQUIRE(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == 0);
	CHECK(rep.ngroups == 2);
	g = group(&rep, "in op");
	CHECK(g && g->count == 3 && g->bytes == 36 * MiB);
	g = group(&rep, "");
	CHECK(g && g->count == 2 && g->bytes == 18 * MiB);
	mt_report_release(&rep);

	opt.by = MT_REPORT_BY_TENSOR;
	REQUIRE(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == 0);
	CHECK(rep.ngroups == 0 && rep.ntensors == 2 && rep.tensors[0].l->bytes == 20 * MiB);
	mt_report_release(&rep);
	mt_reader_free(r);
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

/* The OOM story of OOMS (fixtures.c): 8 failed allocations are 4 OOMs. */
static void test_ooms(void)
{
	struct mt_reader *r = open_reader(ooms_path);
	struct mt_report_options opt = { 0 };
	struct mt_report rep;
	const struct mt_report_oom *o;
	char err[256];

	if (!r)
		return;
	REQUIRE(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == 0);
	CHECK(rep.data.nfails == 8 && rep.nooms == 4);
	CHECK(rep.framework_failures == 2 && rep.driver_attempts == 3 &&
	      rep.recovered_attempts == 1);
	/* roles, in time order: 2 attempts, OOM 1, recovered, OOM 2, OOM 3 and
	 * its retry, OOM 4 */
	{
		static const enum mt_failure_role role[] = {
			MT_FAILURE_ATTEMPT,   MT_FAILURE_ATTEMPT, MT_FAILURE_OOM,
			MT_FAILURE_RECOVERED, MT_FAILURE_OOM,     MT_FAILURE_OOM,
			MT_FAILURE_ATTEMPT,   MT_FAILURE_OOM
		};
		static const size_t oom[] = { 0, 0, 0, 0, 1, 2, 2, 3 };
		size_t i;

		for (i = 0; i < 8 && i < rep.data.nfails; i++) {
			CHECKF(rep.failures[i].role == role[i], "failure %zu: role %d", i,
			       rep.failures[i].role);
			CHECKF(role[i] == MT_FAILURE_RECOVERED || rep.failures[i].oom == oom[i],
			       "failure %zu: OOM %zu", i, rep.failures[i].oom);
		}
	}
	o = &rep.ooms[0];
	CHECK(o->f->ts == T0 + 10 * MS && o->f->layer == MT_LAYER_REQUEST && o->attempts == 2);
	CHECK(o->free_bytes == 90 * MiB); /* the last attempt's reading of the driver */
	CHECK(o->live_bytes == 200 * MiB && o->reserved == 256 * MiB);
	CHECK(o->anatomy.available && o->anatomy.same_segments &&
	      o->anatomy.sample_ts == T0 + 99 * MS / 10);
	CHECK(o->room_from_reading && o->room == 580 * MiB && o->lower_bound == 500 * MiB);
	REQUIRE(rep.nreplays == 3);
	CHECK(o->verdicts[0].held && o->verdicts[0].needs == 520 * MiB);   /* bestfit */
	CHECK(!o->verdicts[1].held && o->verdicts[1].needs == 600 * MiB);  /* caching */
	CHECK(!o->verdicts[2].held && o->verdicts[2].needs == UINT64_MAX); /* native */
	CHECK(o->smallest == 0);
	o = &rep.ooms[1];
	CHECK(o->f->ts == T0 + 40 * MS && o->attempts == 0 && o->free_bytes == 10 * MiB);
	CHECK(o->room == 580 * MiB && o->lower_bound == 264 * MiB);
	CHECK(o->verdicts[0].held && o->verdicts[0].needs == 464 * MiB);
	CHECK(o->verdicts[1].held && o->verdicts[1].needs == 564 * MiB);
	o = &rep.ooms[2];
	CHECK(o->f->ts == T0 + 50 * MS && o->f->layer == MT_LAYER_DRIVER && o->attempts == 1);
	CHECK(rep.ooms[3].f->bytes == 256 * MiB && rep.ooms[3].attempts == 0);
	mt_report_release(&rep);
	mt_reader_free(r);
}

/* The OOM program (OOM_LOOP, fixtures.c): 21 failed allocations
 * are 7 OOMs, each measured against the reading taken at it, whose parts
 * add up to it; the room at each equals the recorded capacity replay runs
 * against by default (the same context and outside), and no allocator
 * holds the OOM in it. */
static void test_oom_loop(void)
{
	struct mt_reader *r = open_reader(oom_loop_path);
	struct mt_report_options opt = { 0 };
	struct mt_capacity cap;
	struct mt_report rep;
	char err[256];
	size_t i;

	if (!r)
		return;
	REQUIRE(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == 0);
	CHECKF(rep.data.nfails == 21 && rep.nooms == 7, "%zu failures, %zu OOMs", rep.data.nfails,
	       rep.nooms);
	CHECK(rep.framework_failures == 7 && rep.driver_attempts == 14 &&
	      rep.recovered_attempts == 0);
	CHECK(rep.peak_bytes == 768 * MiB && rep.peak_at == T0 + 6500 * MS / 1000);
	REQUIRE(mt_capacity_recorded(r, rep.data.device, MT_TIME_UNKNOWN, &cap, err, sizeof(err)) ==
	        0);
	CHECK(cap.from_reading && cap.device_total == GiB);
	CHECKF(cap.context_bytes == 200 * MiB && cap.outside_bytes == 24 * MiB,
	       "context %llu outside %llu", (unsigned long long)cap.context_bytes,
	       (unsigned long long)cap.outside_bytes);
	CHECK(cap.bytes == 800 * MiB && cap.at == rep.peak_at);
	for (i = 0; i < rep.nooms && i < 7; i++) {
		const struct mt_report_oom *o = &rep.ooms[i];

		CHECKF(o->f->ts == T0 + (uint64_t)(100 * i) * MS + 7200 * MS / 1000 &&
		               o->f->layer == MT_LAYER_REQUEST && o->attempts == 2,
		       "OOM %zu", i);
		CHECKF(o->anatomy.available && o->anatomy.sample_ts == o->f->ts &&
		               sum_parts(&o->anatomy) == (int64_t)o->anatomy.used_bytes,
		       "OOM %zu: reading at %llu", i, (unsigned long long)o->anatomy.sample_ts);
		CHECKF(o->room == cap.bytes && o->room_from_reading && o->room_known,
		       "OOM %zu: room %llu", i, (unsigned long long)o->room);
		CHECK(o->lower_bound == 896 * MiB && o->lower_bound > o->room);
	}
	mt_report_release(&rep);
	mt_reader_free(r);
}

static bool kernel_is(const struct mt_report *rep, const struct mt_moment_context *c,
                      const char *name)
{
	return c->kernel && !strcmp(mt_reader_string(rep->data.r, c->kernel), name);
}

static bool range_is(const struct mt_report *rep, const struct mt_moment_context *c,
                     const char *name)
{
	return c->range && !strcmp(mt_reader_string(rep->data.r, c->range->name), name);
}

/* What ran at the peak and at each OOM (KERNELS_GPU and KERNELS_LAUNCH,
 * fixtures.c): with GPU times the kernel running then, else the last on
 * the moment's stream; with launch times the last launched on it; on a
 * stream that launched none, a kernel on another stream: one running then
 * (GPU times), else the process's latest; and the innermost range open. */
static void check_kernels(bool launch)
{
	struct mt_reader *r = open_reader(kernels_path[launch]);
	struct mt_report_options opt = { 0 };
	const struct mt_moment_context *c;
	struct mt_report rep;
	char err[256];

	if (!r)
		return;
	CHECK(mt_kernel_times(r) == (launch ? MT_KERNEL_TIMES_LAUNCH : MT_KERNEL_TIMES_GPU));
	REQUIRE(mt_report_build(&rep, r, 0, &opt, err, sizeof(err)) == 0);
	CHECK(rep.peak_bytes == 150 * MiB && rep.peak_at == T0 + 10 * MS);
	c = &rep.context;
	CHECK(c->at == T0 + 10 * MS && c->times == mt_kernel_times(r));
	CHECKF(kernel_is(&rep, c, "k_long") && c->kernel_stream == 7 && !c->elsewhere,
	       "kernel %u stream %" PRIu64, c->kernel, c->kernel_stream);
	CHECK(c->running == !launch);
	CHECK(c->kernel_ts == T0 + (launch ? 9700000 : 9800000));
	CHECK(range_is(&rep, c, "forward"));
	REQUIRE(rep.nooms == 2);
	c = &rep.ooms[0].context;
	CHECK(kernel_is(&rep, c, "k_bwd") && c->kernel_stream == 7 && !c->running && !c->elsewhere);
	CHECK(c->kernel_end == T0 + (launch ? 25500000 : 28 * MS));
	CHECK(range_is(&rep, c, "backward"));
	c = &rep.ooms[1].context;
	/* stream 3 launched nothing: with GPU times the kernel still running
	 * on another stream, though it started long before; with launch times
	 * the process's latest launched */
	CHECK(c->stream == 3 && c->elsewhere && c->running == !launch);
	if (launch)
		CHECKF(kernel_is(&rep, c, "k_side") && c->kernel_stream == 9 &&
		               c->kernel_ts == T0 + 29500000,
		       "kernel %u stream %" PRIu64, c->kernel, c->kernel_stream);
	else
		CHECKF(kernel_is(&rep, c, "k_comm") && c->kernel_stream == 11 &&
		               c->kernel_ts == T0 + 2 * MS,
		       "kernel %u stream %" PRIu64, c->kernel, c->kernel_stream);
	CHECK(range_is(&rep, c, "backward"));
	mt_report_release(&rep);
	mt_reader_free(r);
}

static void test_kernels_gpu(void)
{
	check_kernels(false);
}

static void test_kernels_launch(void)
{
	check_kernels(true);
}

/* CAPACITY (fixtures.c): the recorded capacity leaves out the driver's
 * reserve, which the reading counts and CUDA's total does not, and takes
 * off the library's allocation that held no request; the anatomy's parts
 * stay as the reading has them. */
static void test_capacity(void)
{
	struct mt_reader *r = open_reader(capacity_path);
	struct mt_capacity cap;
	char err[256], text[512];

	if (!r)
		return;
	REQUIRE(mt_capacity_recorded(r, 1, MT_TIME_UNKNOWN, &cap, err, sizeof(err)) == 0);
	CHECK(cap.from_reading && cap.device_total == GiB && cap.at == T0 + 25 * MS / 10);
	CHECKF(cap.context_bytes == 100 * MiB && cap.outside_bytes == 8 * MiB &&
	               cap.driver_reserved_bytes == 16 * MiB && cap.library_bytes == 32 * MiB,
	       "context %llu outside %llu reserve %llu libraries %llu",
	       (unsigned long long)cap.context_bytes, (unsigned long long)cap.outside_bytes,
	       (unsigned long long)cap.driver_reserved_bytes,
	       (unsigned long long)cap.library_bytes);
	CHECKF(cap.bytes == 884 * MiB, "capacity %llu", (unsigned long long)cap.bytes);
	CHECK(cap.anatomy.part[MT_PART_OTHER_PROCESSES] == 24 * (int64_t)MiB);
	mt_capacity_describe(&cap, T0, text, sizeof(text));
	CHECKF(strstr(text, "32.0 MiB that libraries allocated beside the allocator") &&
	               strstr(text, "the driver's own 16.0 MiB left out"),
	       "%s", text);
	mt_reader_free(r);
}

static void test_asis(void)
{
	check_asis(asis_path, true);
}

static void test_asis_without_samples(void)
{
	check_asis(nosample_path, false);
}

static bool same_alloc(const struct mt_report_alloc *a, const struct mt_report_alloc *b)
{
	bool same_range = a->range && b->range ? a->range->start == b->range->start &&
	                                                 a->range->name == b->range->name
	                                       : a->range == b->range;

	return a->l->alloc_seq == b->l->alloc_seq && a->l->bytes == b->l->bytes &&
	       a->l->end == b->l->end && same_range;
}

static bool same_allocs(const struct mt_report_alloc *a, size_t na, const struct mt_report_alloc *b,
                        size_t nb)
{
	size_t i;

	for (i = 0; na == nb && i < na; i++)
		if (!same_alloc(&a[i], &b[i]))
			return false;
	return na == nb;
}

/* A report that keeps only the lifetimes it lists (memtrace report's)
 * says what one keeping every lifetime says, at the peak and at a moment
 * asked. */
static void check_only_listed(const char *path, bool at_set, uint64_t at)
{
	struct mt_reader *r = open_reader(path);
	struct mt_report_options opt = { .at_set = at_set, .at = at };
	struct mt_report all, listed;
	char err[256];
	size_t i;

	if (!r)
		return;
	if (mt_report_build(&all, r, 0, &opt, err, sizeof(err)) == -ERANGE) { /* a short one */
		mt_reader_free(r);
		return;
	}
	opt.only_listed = true;
	REQUIRE(mt_report_build(&listed, r, 0, &opt, err, sizeof(err)) == 0);
	CHECKF(listed.data.nlive <= all.data.nlive, "%s: kept %zu of %zu", path, listed.data.nlive,
	       all.data.nlive);
	CHECK(listed.data.nlive_all == all.data.nlive);
	CHECK(listed.peak_bytes == all.peak_bytes && listed.peak_at == all.peak_at);
	CHECK(listed.live_at_bytes == all.live_at_bytes &&
	      listed.live_at_count == all.live_at_count);
	CHECK(listed.attributed_bytes == all.attributed_bytes);
	CHECK(listed.never_freed_count == all.never_freed_count &&
	      listed.never_freed_bytes == all.never_freed_bytes);
	CHECK(!memcmp(&listed.anatomy, &all.anatomy, sizeof(all.anatomy)));
	CHECK(same_allocs(listed.tensors, listed.ntensors, all.tensors, all.ntensors));
	CHECK(same_allocs(listed.top_peak, listed.ntop_peak, all.top_peak, all.ntop_peak));
	CHECK(same_allocs(listed.never_freed, listed.nnever_freed, all.never_freed,
	                  all.nnever_freed));
	CHECK(listed.ngroups == all.ngroups);
	for (i = 0; i < listed.ngroups && i < all.ngroups; i++)
		CHECK(!strcmp(listed.groups[i].key, all.groups[i].key) &&
		      listed.groups[i].bytes == all.groups[i].bytes &&
		      same_alloc(&listed.groups[i].largest, &all.groups[i].largest));
	CHECK(listed.nranges == all.nranges &&
	      !memcmp(listed.ranges, all.ranges, all.nranges * sizeof(*all.ranges)));
	CHECK(!strcmp(listed.program_dir, all.program_dir));
	CHECK(listed.nooms == all.nooms);
	for (i = 0; i < listed.nooms && i < all.nooms; i++) {
		const struct mt_report_oom *x = &listed.ooms[i], *y = &all.ooms[i];

		CHECK(x->live_bytes == y->live_bytes && x->reserved == y->reserved &&
		      x->room == y->room && !memcmp(&x->anatomy, &y->anatomy, sizeof(y->anatomy)) &&
		      same_allocs(x->largest, x->nlargest, y->largest, y->nlargest));
	}
	mt_report_release(&listed);
	mt_report_release(&all);
	mt_reader_free(r);
}

static void test_only_listed(void)
{
	const char *paths[] = { main_path,     replays_path, asis_path,
		                nosample_path, ooms_path,    oom_loop_path };
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
		check_only_listed(paths[i], false, 0);
		check_only_listed(paths[i], true, 30 * MS);
		check_only_listed(paths[i], true, 1 * MS);
	}
}

int main(void)
{
	char dir[] = "/tmp/mt-analyze-XXXXXX", cmd[128];

	REQUIRE(mkdtemp(dir) != NULL);
	snprintf(main_path, sizeof(main_path), "%s/main.db", dir);
	snprintf(replays_path, sizeof(replays_path), "%s/replays.db", dir);
	snprintf(asis_path, sizeof(asis_path), "%s/asis.db", dir);
	snprintf(nosample_path, sizeof(nosample_path), "%s/nosample.db", dir);
	REQUIRE(fx_write(FX_MAIN, main_path) == 0);
	REQUIRE(fx_write(FX_MAIN_REPLAYS, replays_path) == 0);
	REQUIRE(fx_write(FX_ASIS, asis_path) == 0);
	REQUIRE(fx_write(FX_ASIS_NO_SAMPLE, nosample_path) == 0);
	snprintf(ooms_path, sizeof(ooms_path), "%s/ooms.db", dir);
	REQUIRE(fx_write(FX_OOMS, ooms_path) == 0);
	snprintf(oom_loop_path, sizeof(oom_loop_path), "%s/oom-loop.db", dir);
	REQUIRE(fx_write(FX_OOM_LOOP, oom_loop_path) == 0);
	snprintf(kernels_path[0], sizeof(kernels_path[0]), "%s/kernels-gpu.db", dir);
	snprintf(kernels_path[1], sizeof(kernels_path[1]), "%s/kernels-launch.db", dir);
	REQUIRE(fx_write(FX_KERNELS_GPU, kernels_path[0]) == 0);
	REQUIRE(fx_write(FX_KERNELS_LAUNCH, kernels_path[1]) == 0);
	snprintf(capacity_path, sizeof(capacity_path), "%s/capacity.db", dir);
	REQUIRE(fx_write(FX_CAPACITY, capacity_path) == 0);
	TEST(test_sites);
	TEST(test_peak_ties);
	TEST(test_site_paths);
	TEST(test_fragmentation);
	TEST(test_main);
	TEST(test_all_ranges);
	TEST(test_groups);
	TEST(test_replays);
	TEST(test_ooms);
	TEST(test_oom_loop);
	TEST(test_kernels_gpu);
	TEST(test_kernels_launch);
	TEST(test_capacity);
	TEST(test_asis);
	TEST(test_asis_without_samples);
	TEST(test_only_listed);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	return check_done();
}
