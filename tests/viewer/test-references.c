/* test-references.c — every view of the registry drawn from a small known
 * trace: its PNG against the reference picture tests/viewer/reference/
 * VIEW.png (produced by this code and looked at) with a per-channel
 * tolerance, and its SVG and PDF checked for structure. On a mismatch
 * VIEW-actual.png and VIEW-diff.png (differing pixels red) are written to
 * the working folder. MT_UPDATE_REFERENCES=1 writes the references instead.
 * A view with no reference yet is a skipped case, so that adding a view
 * does not need one to build and test; its first reference is made, looked
 * at and added with it.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "viewer-test.h"

#define WIDTH 800
#define HEIGHT 450
#define TOLERANCE 16            /* per channel, of 255 */
#define MAX_BAD_FRACTION 0.0005 /* pixels allowed outside the tolerance */

static int channel_diff(uint32_t a, uint32_t b, int shift)
{
	return abs((int)(a >> shift & 0xff) - (int)(b >> shift & 0xff));
}

static void write_diff(cairo_surface_t *got, cairo_surface_t *want, const char *view)
{
	int w = cairo_image_surface_get_width(want), h = cairo_image_surface_get_height(want);
	cairo_surface_t *d = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
	unsigned char *data = cairo_image_surface_get_data(d);
	int stride = cairo_image_surface_get_stride(d), x, y;
	char name[128];

	cairo_surface_flush(d);
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			uint32_t a = vt_pixel(got, x, y), b = vt_pixel(want, x, y), out;
			int k, bad = 0;

			for (k = 0; k < 24; k += 8)
				bad |= channel_diff(a, b, k) > TOLERANCE;
			/* differing pixels red, the rest a faded copy of the reference */
			out = bad ? 0xff0000 : ((b >> 2 & 0x3f3f3f) + 0xbfbfbf);
			((uint32_t *)(data + (size_t)y * (size_t)stride))[x] = out;
		}
	cairo_surface_mark_dirty(d);
	snprintf(name, sizeof(name), "%s-diff.png", view);
	cairo_surface_write_to_png(d, name);
	snprintf(name, sizeof(name), "%s-actual.png", view);
	cairo_surface_write_to_png(got, name);
	printf("# %s: wrote %s-actual.png and %s-diff.png\n", view, view, view);
	cairo_surface_destroy(d);
}

static void compare(const char *view, const char *got_path, const char *ref_path)
{
	cairo_surface_t *got = cairo_image_surface_create_from_png(got_path);
	cairo_surface_t *want = cairo_image_surface_create_from_png(ref_path);
	long bad = 0, total;
	int x, y, w, h;

	CHECK(cairo_surface_status(got) == CAIRO_STATUS_SUCCESS);
	CHECK(cairo_surface_status(want) == CAIRO_STATUS_SUCCESS);
	if (cairo_surface_status(got) || cairo_surface_status(want))
		goto out;
	w = cairo_image_surface_get_width(want);
	h = cairo_image_surface_get_height(want);
	CHECK(cairo_image_surface_get_width(got) == w && cairo_image_surface_get_height(got) == h);
	if (cairo_image_surface_get_width(got) != w || cairo_image_surface_get_height(got) != h)
		goto out;
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			uint32_t a = vt_pixel(got, x, y), b = vt_pixel(want, x, y);
			int k;

			for (k = 0; k < 24; k += 8)
				if (channel_diff(a, b, k) > TOLERANCE) {
					bad++;
					break;
				}
		}
	total = (long)w * h;
	CHECKF(bad <= (long)(total * MAX_BAD_FRACTION),
	       "%s: %ld of %ld pixels differ by more than %d", view, bad, total, TOLERANCE);
	if (bad > (long)(total * MAX_BAD_FRACTION))
		write_diff(got, want, view);
out:
	cairo_surface_destroy(got);
	cairo_surface_destroy(want);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
			buf[n] = '\0';
			*len = (size_t)n;
		} else {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

/* Whether data (binary, NULs allowed) holds text. */
static bool contains(const char *data, size_t len, const char *text)
{
	size_t n = strlen(text), i;

	for (i = 0; i + n <= len; i++)
		if (!memcmp(data + i, text, n))
			return true;
	return false;
}

static const char *trace_path, *root, *view_now;

/* The SVG and PDF of view_now. */
static void vector_structure(void)
{
	const char *trace = trace_path, *view = view_now;
	char name[64];
	const char *path;
	size_t len = 0;
	char *data;

	snprintf(name, sizeof(name), "%s.pdf", view);
	path = vt_path(1, name);
	CHECK(vt_render(trace, path, view, NULL, -1, WIDTH, HEIGHT) == 0);
	data = slurp(path, &len);
	CHECK(data && len > 1000);
	if (data) {
		const char *tail = data + (len > 1024 ? len - 1024 : 0);

		CHECK(!strncmp(data, "%PDF-", 5));
		size_t tail_len = (size_t)(data + len - tail);

		CHECK(contains(tail, tail_len, "startxref"));
		CHECK(contains(tail, tail_len, "%%EOF"));
		/* a page of the asked size */
		CHECK(contains(data, len, "/MediaBox [ 0 0 800 450 ]"));
	}
	free(data);
	snprintf(name, sizeof(name), "%s.svg", view);
	path = vt_path(1, name);
	CHECK(vt_render(trace, path, view, NULL, -1, WIDTH, HEIGHT) == 0);
	data = slurp(path, &len);
	CHECK(data && len > 1000);
	if (data) {
		const char *svg = strstr(data, "<svg");
		const char *end = data + len;

		while (end > data && (end[-1] == '\n' || end[-1] == ' '))
			end--;
		CHECK(!strncmp(data, "<?xml", 5));
		CHECK(svg && strstr(svg, "width=\"800pt\""));
		CHECK(end - data > 6 && !strncmp(end - 6, "</svg>", 6));
	}
	free(data);
}

/* The PNG of view_now against its reference (or written as it). */
static void png_reference(void)
{
	const char *update = getenv("MT_UPDATE_REFERENCES");
	char name[64], ref[1024];
	const char *got;

	snprintf(name, sizeof(name), "%s.png", view_now);
	got = vt_path(2, name);
	snprintf(ref, sizeof(ref), "%s/tests/viewer/reference/%s", root, name);
	REQUIRE(vt_render(trace_path, got, view_now, NULL, -1, WIDTH, HEIGHT) == 0);
	if (update && !strcmp(update, "1")) {
		cairo_surface_t *s = cairo_image_surface_create_from_png(got);

		CHECK(cairo_surface_write_to_png(s, ref) == CAIRO_STATUS_SUCCESS);
		cairo_surface_destroy(s);
		printf("# updated %s\n", ref);
		return;
	}
	compare(view_now, got, ref);
}

static bool writes(const struct mt_view_info *v, enum mt_image_format f)
{
	return v->formats & 1u << f;
}

int main(void)
{
	size_t i;

	root = getenv("MT_SOURCE_ROOT");
	REQUIRE(root != NULL);
	trace_path = vt_path(0, "viewer-test.db");
	REQUIRE(vt_write_trace(trace_path, VT_FULL) == 0);
	for (i = 0; i < mt_view_count(); i++) {
		const struct mt_view_info *v = mt_view_at(i);
		char name[96], ref[1024];

		view_now = v->name;
		snprintf(name, sizeof(name), "%s: png against its reference", v->name);
		snprintf(ref, sizeof(ref), "%s/tests/viewer/reference/%s.png", root, v->name);
		if (!writes(v, MT_IMAGE_PNG))
			check_skip(name, "the view writes no PNG");
		else if (access(ref, R_OK) != 0 && !getenv("MT_UPDATE_REFERENCES"))
			check_skip(name,
			           "no reference picture yet (MT_UPDATE_REFERENCES=1 makes it)");
		else
			check_run(name, png_reference);
		snprintf(name, sizeof(name), "%s: svg and pdf structure", v->name);
		if (writes(v, MT_IMAGE_SVG) && writes(v, MT_IMAGE_PDF))
			check_run(name, vector_structure);
		else
			check_skip(name, "the view writes no SVG or PDF");
	}
	vt_cleanup();
	return check_done();
}
