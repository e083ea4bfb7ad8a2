/* bench-render — how long `memtrace render` takes to draw a timeline of a
 * large trace: a synthetic training-loop trace with about 1 M allocations
 * (mt_synth_write, pattern train, 2 M alloc/free events plus its kernels,
 * ranges, samples and the caching allocator's segments), drawn at
 * 1600x900 as PNG. Prints, as CPU seconds of this thread (one core) with
 * wall time beside them, the best of three runs of:
 *  - load: the survey (one streamed pass over the allocations), samples,
 *    ranges and failures from the trace;
 *  - stack: the streamed pass giving per-column moments and the bands
 *    chosen (reading the allocations again, and aggregating);
 *  - raster: the bands as an image;
 *  - render: mt_render end to end, PNG written (includes load).
 * Asserts nothing: run by hand, pinned to one core:
 *   taskset -c 1 build/bench/render/bench-render [ALLOCATIONS] [TRACE]
 * Target (issue 5): render <= 1 s for 1 M allocations.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "memtrace-synth.h"
#include "viewer-private.h"

#define RUNS 3

struct clock_pair {
	double cpu, wall;
};

static struct clock_pair now(void)
{
	struct timespec c, w;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
	clock_gettime(CLOCK_MONOTONIC, &w);
	return (struct clock_pair){ c.tv_sec + c.tv_nsec * 1e-9, w.tv_sec + w.tv_nsec * 1e-9 };
}

static void best(struct clock_pair *b, struct clock_pair t0, struct clock_pair t1)
{
	double cpu = t1.cpu - t0.cpu, wall = t1.wall - t0.wall;

	if (b->cpu == 0 || cpu < b->cpu) {
		b->cpu = cpu;
		b->wall = wall;
	}
}

static int write_trace(const char *path, uint64_t allocations)
{
	struct mt_writer *w = mt_writer_new();
	int rc;

	unlink(path);
	rc = w ? mt_writer_open(w, path, MT_WRITER_CREATE) : -1;
	if (rc == 0)
		rc = mt_synth_write(w, MT_SYNTH_TRAIN, 2 * allocations, 1);
	if (rc == 0)
		rc = mt_writer_flush(w);
	if (rc)
		fprintf(stderr, "bench-render: writing %s: %s\n", path,
		        w ? mt_writer_message(w) : "");
	mt_writer_free(w);
	return rc;
}

int main(int argc, char **argv)
{
	uint64_t allocations = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	const char *path = argc > 2 ? argv[2] : "/tmp/bench-render.db";
	struct mt_render_options o = { .view = "timeline",
		                       .format = MT_IMAGE_PNG,
		                       .trace_name = "bench-render.db" };
	struct clock_pair load = { 0 }, stack = { 0 }, raster = { 0 }, render = { 0 };
	struct mt_reader *r = mt_reader_new();
	struct vw_trace t;
	size_t nreq = 0, nseg = 0, nkernels = 0, bands = 0, merged = 0;
	char err[256];
	int i;

	if (write_trace(path, allocations) || !r || mt_reader_open(r, path) < 0) {
		fprintf(stderr, "bench-render: cannot prepare %s\n", path);
		return 1;
	}
	for (i = 0; i < RUNS; i++) {
		struct vw_columns cols = { .n = 1505 };
		struct vw_stack s;
		struct clock_pair t0, t1, t2, t3, t4, t5;
		cairo_surface_t *img;

		t0 = now();
		if (vw_trace_survey(&t, r, 0,
		                    VW_LOAD_SEGMENTS | VW_LOAD_SAMPLES | VW_LOAD_RANGES |
		                            VW_LOAD_KERNELS | VW_LOAD_FAILS,
		                    err, sizeof(err)) < 0) {
			fprintf(stderr, "bench-render: %s\n", err);
			return 1;
		}
		t1 = now();
		cols.from = t.t0;
		cols.to = t.t1 + 1;
		if (vw_stack_start(&s, &cols, 3000) < 0 ||
		    vw_trace_columns(&t, &cols, &s, NULL, NULL, NULL, err, sizeof(err)) < 0)
			return 1;
		t2 = now();
		img = vw_stack_image(&s, 700, s.peak * 1.05);
		t3 = now();
		cairo_surface_destroy(img);
		nreq = t.d.nlive_all, nseg = t.d.nseg_all, nkernels = t.nkernels;
		bands = s.nbands, merged = s.merged;
		vw_stack_release(&s);
		vw_trace_release(&t);
		t4 = now();
		if (mt_render(r, &o, "/tmp/bench-render.png", err, sizeof(err)) < 0) {
			fprintf(stderr, "bench-render: %s\n", err);
			return 1;
		}
		t5 = now();
		best(&load, t0, t1);
		best(&stack, t1, t2);
		best(&raster, t2, t3);
		best(&render, t4, t5);
	}
	printf("trace: %zu allocations (request layer), %zu segments, %zu kernels; "
	       "%zu bands drawn, %zu merged\n",
	       nreq, nseg, nkernels, bands, merged);
	printf("timeline 1600x900 PNG, best of %d, CPU s (wall s)\n", RUNS);
	printf("  load    %.3f (%.3f)\n", load.cpu, load.wall);
	printf("  stack   %.3f (%.3f)\n", stack.cpu, stack.wall);
	printf("  raster  %.3f (%.3f)\n", raster.cpu, raster.wall);
	printf("  render  %.3f (%.3f)  end to end, PNG written\n", render.cpu, render.wall);
	mt_reader_free(r);
	unlink(path);
	return 0;
}
