/* viewer-test.c — the viewer tests' traces and helpers.
 *
 * VT_FULL, times in ms after T0 (request blocks inside driver segments):
 *   segments  S1 64 MiB [0, end)   S2 32 MiB [2, end)   S3 20 MiB [1, 9)
 *   requests  R1 16 MiB S1+0  [0.1, never freed)   R2  8 MiB S1+16 [1, 5)
 *             R3 12 MiB S1+40 [2, 8)               R4 20 MiB S2+0  [2.5, 7)
 *             R5  4 MiB S2+24 [3, 9)               R6 10 MiB S3+0  [1.5, 4)
 *             R7  6 MiB S3+12 [4.5, 8.5)
 *   samples every 0.5 ms: reserved + 400 MiB; ranges forward [0.5, 4.5),
 *   backward [4.5, 8), optimizer [8, 9.5); a 60 us kernel every 0.1 ms;
 *   a failed 6 GiB allocation at 7.5; the last event at 10 ms; saved replays
 *   of bestfit and caching (peak reserved 80 and 96 MiB, peak allocated
 *   70 MiB).
 * VT_BANDS, request layer only, times in ms after T0:
 *   A 1 GiB [0, 80)  D 2.5 GiB [0, 100)  B 1.5 GiB [10, 90)  C 2 GiB [30, 60)
 *   appended in the order A, D, B, C.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fontconfig/fontconfig.h>

#include "memtrace-format.h"
#include "viewer-test.h"

struct ev {
	double ms;
	int alloc; /* 1 alloc, 0 free */
	uint64_t address, bytes;
	unsigned layer;
};

static int append_alloc(struct mt_writer *w, uint32_t proc, uint32_t dev, const struct ev *e)
{
	struct mt_event ev = { .ts = T0 + (uint64_t)(e->ms * MS), .process = proc, .device = dev };

	ev.kind = e->alloc ? MT_EVENT_ALLOC : MT_EVENT_FREE;
	ev.alloc.address = e->address;
	ev.alloc.bytes = e->bytes;
	ev.alloc.layer = (uint8_t)e->layer;
	ev.alloc.api = MT_API_TORCH;
	return mt_writer_append(w, &ev);
}

#define S1 0x7f0000000000ull
#define S2 0x7f0010000000ull
#define S3 0x7f0020000000ull
#define D MT_LAYER_DRIVER
#define R MT_LAYER_REQUEST

static const struct ev full_allocs[] = {
	{ 0.0, 1, S1, 64 * MiB, D },
	{ 0.1, 1, S1, 16 * MiB, R },
	{ 1.0, 1, S3, 20 * MiB, D },
	{ 1.0, 1, S1 + 16 * MiB, 8 * MiB, R },
	{ 1.5, 1, S3, 10 * MiB, R },
	{ 2.0, 1, S2, 32 * MiB, D },
	{ 2.0, 1, S1 + 40 * MiB, 12 * MiB, R },
	{ 2.5, 1, S2, 20 * MiB, R },
	{ 3.0, 1, S2 + 24 * MiB, 4 * MiB, R },
	{ 4.0, 0, S3, 10 * MiB, R },
	{ 4.5, 1, S3 + 12 * MiB, 6 * MiB, R },
	{ 5.0, 0, S1 + 16 * MiB, 8 * MiB, R },
	{ 7.0, 0, S2, 20 * MiB, R },
	{ 8.0, 0, S1 + 40 * MiB, 12 * MiB, R },
	{ 8.5, 0, S3 + 12 * MiB, 6 * MiB, R },
	{ 9.0, 0, S2 + 24 * MiB, 4 * MiB, R },
	{ 9.0, 0, S3, 20 * MiB, D },
};

static const struct ev band_allocs[] = {
	{ 0, 1, 0x1000000000ull, GiB, R },          { 0, 1, 0x2000000000ull, 5 * GiB / 2, R },
	{ 10, 1, 0x3000000000ull, 3 * GiB / 2, R }, { 30, 1, 0x4000000000ull, 2 * GiB, R },
	{ 60, 0, 0x4000000000ull, 2 * GiB, R },     { 80, 0, 0x1000000000ull, GiB, R },
	{ 90, 0, 0x3000000000ull, 3 * GiB / 2, R }, { 100, 0, 0x2000000000ull, 5 * GiB / 2, R },
};

static uint64_t reserved_at(double ms)
{
	uint64_t r = 0;
	size_t i;

	for (i = 0; i < sizeof(full_allocs) / sizeof(full_allocs[0]); i++)
		if (full_allocs[i].layer == D && full_allocs[i].ms <= ms)
			r = full_allocs[i].alloc ? r + full_allocs[i].bytes
			                         : r - full_allocs[i].bytes;
	return r;
}

static int write_full_extras(struct mt_writer *w, uint32_t proc, uint32_t dev)
{
	static const char *const phases[] = { "forward", "backward", "optimizer" };
	static const double bounds[] = { 0.5, 4.5, 8.0, 9.5 };
	struct mt_event ev;
	uint32_t name;
	int i, rc = 0;

	for (i = 0; rc == 0 && i <= 20; i++) {
		memset(&ev, 0, sizeof(ev));
		ev = (struct mt_event){ .ts = T0 + (uint64_t)(i * 0.5 * MS),
			                .process = proc,
			                .device = dev,
			                .kind = MT_EVENT_SAMPLE };
		ev.sample.used_bytes = reserved_at(i * 0.5) + 400 * MiB;
		rc = mt_writer_append(w, &ev);
	}
	for (i = 0; rc == 0 && i < 3; i++) {
		rc = mt_writer_intern(w, phases[i], &name);
		ev = (struct mt_event){ .ts = T0 + (uint64_t)(bounds[i] * MS),
			                .process = proc,
			                .device = dev,
			                .kind = MT_EVENT_RANGE };
		ev.range.end = T0 + (uint64_t)(bounds[i + 1] * MS);
		ev.range.name = name;
		if (rc == 0)
			rc = mt_writer_append(w, &ev);
	}
	rc = rc ? rc : mt_writer_intern(w, "gemm", &name);
	for (i = 0; rc == 0 && i < 95; i++) {
		ev = (struct mt_event){ .ts = T0 + (uint64_t)i * MS / 10,
			                .process = proc,
			                .device = dev,
			                .kind = MT_EVENT_KERNEL };
		ev.kernel.end = ev.ts + 60000;
		ev.kernel.name = name;
		rc = mt_writer_append(w, &ev);
	}
	if (rc == 0) {
		ev = (struct mt_event){ .ts = T0 + 75 * MS / 10,
			                .process = proc,
			                .device = dev,
			                .kind = MT_EVENT_ALLOC_FAILED };
		ev.failed.bytes = 6 * GiB;
		ev.failed.free_bytes = GiB;
		ev.failed.error = 2;
		rc = mt_writer_append(w, &ev);
	}
	return rc;
}

static int save_replays(struct mt_writer *w, uint32_t dev)
{
	static const char *const names[] = { "bestfit", "caching" };
	static const uint64_t peaks[] = { 80 * MiB, 96 * MiB };
	struct mt_series_point series[41];
	char json[256];
	int64_t id;
	int p, i, rc = 0;

	for (p = 0; rc == 0 && p < 2; p++) {
		struct mt_replay_record rec = { .device = dev,
			                        .created_ns = 1,
			                        .policy = names[p],
			                        .backend = "sim",
			                        .params = "",
			                        .result_json = json,
			                        .series = series,
			                        .series_len = 41 };

		for (i = 0; i <= 40; i++) {
			double ms = i * 0.25;

			series[i].ts = T0 + (uint64_t)(ms * MS);
			series[i].allocated = ms < 3.5 ? (uint64_t)(ms * 20) * MiB : 70 * MiB;
			series[i].reserved =
			        ms < 3.5 ? (uint64_t)(ms * 20) * MiB + 8 * MiB : peaks[p];
		}
		snprintf(json, sizeof(json),
		         "{\"policy\": \"%s\", \"peak_reserved\": %llu, \"peak_allocated\": %llu, "
		         "\"oom_count\": 0}",
		         names[p], (unsigned long long)peaks[p], 70ull * MiB);
		rc = mt_writer_save_replay(w, &rec, &id);
	}
	return rc;
}

int vt_write_trace(const char *path, enum vt_trace which)
{
	struct mt_process proc = {
		.pid = 4242, .start_ns = T0, .command_line = "viewer-test", .hostname = "test"
	};
	struct mt_device dev = { .ordinal = 0,
		                 .total_bytes = 8 * GiB,
		                 .name = "Test GPU",
		                 .uuid = "GPU-viewer-test",
		                 .driver_version = "1",
		                 .cuda_version = "1" };
	const struct ev *evs = which == VT_FULL ? full_allocs : band_allocs;
	size_t n = which == VT_FULL ? sizeof(full_allocs) / sizeof(full_allocs[0])
	                            : sizeof(band_allocs) / sizeof(band_allocs[0]);
	struct mt_writer *w = mt_writer_new();
	uint32_t pid, did;
	size_t i;
	int rc;

	if (!w)
		return -ENOMEM;
	unlink(path); /* a fresh trace, not events appended to an old one */
	rc = mt_writer_open(w, path, MT_WRITER_CREATE);
	rc = rc ? rc : mt_writer_set_meta(w, "capture", "requests");
	rc = rc ? rc : mt_writer_add_process(w, &proc, &pid);
	rc = rc ? rc : mt_writer_add_device(w, &dev, &did);
	for (i = 0; rc == 0 && i < n; i++)
		rc = append_alloc(w, pid, did, &evs[i]);
	if (rc == 0 && which == VT_FULL) {
		rc = write_full_extras(w, pid, did);
		/* a sample at 10 ms makes the trace end there */
		if (rc == 0) {
			struct mt_event ev = { .ts = T0 + 10 * MS,
				               .process = pid,
				               .device = did,
				               .kind = MT_EVENT_SAMPLE };
			ev.sample.used_bytes = reserved_at(10) + 400 * MiB;
			rc = mt_writer_append(w, &ev);
		}
		rc = rc ? rc : save_replays(w, did);
	}
	rc = rc ? rc : mt_writer_flush(w);
	if (rc)
		fprintf(stderr, "writing %s: %s\n", path, mt_writer_message(w));
	mt_writer_free(w);
	return rc;
}

static char tmpdir[64];
static char paths[4][256];

const char *vt_tmpdir(void)
{
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/mt-viewer-XXXXXX");
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			exit(1);
		}
	}
	return tmpdir;
}

const char *vt_path(unsigned slot, const char *name)
{
	snprintf(paths[slot & 3], sizeof(paths[0]), "%s/%s", vt_tmpdir(), name);
	return paths[slot & 3];
}

void vt_cleanup(void)
{
	char cmd[128];

	/* cairo's and fontconfig's caches, so that leak checkers see only ours */
	cairo_debug_reset_static_data();
	FcFini();

	if (!tmpdir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

int vt_render(const char *trace, const char *out, const char *view, const char *policies,
              double at_ms, unsigned width, unsigned height)
{
	struct mt_render_options o = {
		.view = view, .width = width, .height = height, .policies = policies
	};

	if (at_ms >= 0) {
		o.at_set = true;
		o.at = (uint64_t)(at_ms * MS);
	}
	return vt_render_options(trace, out, o);
}

int vt_render_options(const char *trace, const char *out, struct mt_render_options o)
{
	struct mt_reader *r = mt_reader_new();
	char err[256];
	int rc;

	o.trace_name = "viewer-test.db";
	if (mt_image_format_from_path(out, &o.format) < 0) {
		mt_reader_free(r);
		return -EINVAL;
	}
	rc = r ? mt_reader_open(r, trace) : -ENOMEM;
	if (rc == 0)
		rc = mt_render(r, &o, out, err, sizeof(err));
	else if (r)
		snprintf(err, sizeof(err), "%s", mt_reader_message(r));
	if (rc < 0)
		fprintf(stderr, "render %s: %s\n", out, r ? err : "out of memory");
	mt_reader_free(r);
	return rc;
}

uint32_t vt_pixel(cairo_surface_t *img, int x, int y)
{
	const unsigned char *data = cairo_image_surface_get_data(img);
	int stride = cairo_image_surface_get_stride(img);

	return ((const uint32_t *)(data + (size_t)y * (size_t)stride))[x] & 0xffffff;
}
