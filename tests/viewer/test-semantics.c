/* test-semantics.c — what the pictures mean, read back from pixel colours:
 * timeline band areas proportional to byte-seconds, the segment map's rows
 * and free fraction for known allocator states; plus the helpers behind
 * them (policy spec lists, axis ticks).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "viewer-private.h"
#include "viewer-test.h"

static uint32_t band_pixel(size_t k)
{
	return vw_rgb_pixel(vw_band_color(k)) & 0xffffff;
}

/* Index of the band colour of p, or -1. */
static int band_of(uint32_t p)
{
	size_t k;

	for (k = 0; k < VW_BAND_COLORS; k++)
		if (p == band_pixel(k))
			return (int)k;
	return -1;
}

/* VT_BANDS stacks A, D, B, C (allocation order) with colours 0..3; their
 * byte-seconds are 1 GiB x 80 ms, 2.5 x 100, 1.5 x 80, 2 x 30. */
static void band_areas(void)
{
	static const double bs[4] = { 1.0 * 80, 2.5 * 100, 1.5 * 80, 2.0 * 30 };
	const char *trace = vt_path(0, "bands.db"), *png = vt_path(1, "bands.png");
	double count[4] = { 0 }, sum = 0, bsum = 0;
	cairo_surface_t *img;
	int x, y, k;

	CHECK(vt_write_trace(trace, VT_BANDS) == 0);
	CHECK(vt_render(trace, png, "timeline", NULL, -1, 1200, 900) == 0);
	img = cairo_image_surface_create_from_png(png);
	CHECK(cairo_surface_status(img) == CAIRO_STATUS_SUCCESS);
	if (cairo_surface_status(img) == CAIRO_STATUS_SUCCESS)
		for (y = 0; y < 900; y++)
			for (x = 0; x < 1200; x++) {
				k = band_of(vt_pixel(img, x, y));
				if (k >= 0 && k < 4)
					count[k]++;
			}
	cairo_surface_destroy(img);
	for (k = 0; k < 4; k++) {
		sum += count[k];
		bsum += bs[k];
	}
	/* the bands cover a good part of the picture */
	CHECK(sum > 1200 * 900 * 0.15);
	for (k = 0; k < 4; k++) {
		double got = sum ? count[k] / sum : 0, want = bs[k] / bsum;

		CHECKF(fabs(got - want) <= 0.05 * want,
		       "band %d: %.4f of the band area, byte-seconds say %.4f", k, got, want);
	}
}

struct panel {
	int x0, x1; /* columns holding segment pixels */
	int rows;
	double free_fraction;
};

static bool segment_pixel(uint32_t p)
{
	return p == (vw_rgb_pixel(vw_role_color(VW_ROLE_FREE)) & 0xffffff) || band_of(p) >= 0;
}

/* Finds the panels (runs of columns with segment pixels) and reads each. */
static int read_panels(cairo_surface_t *img, struct panel *out, int most)
{
	int w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img);
	uint32_t free_px = vw_rgb_pixel(vw_role_color(VW_ROLE_FREE)) & 0xffffff;
	int n = 0, x, y, gap = 0;
	bool in = false;

	for (x = 0; x < w; x++) {
		bool any = false;

		for (y = 0; y < h && !any; y++)
			any = segment_pixel(vt_pixel(img, x, y));
		if (any && !in && n < most) {
			out[n].x0 = x;
			in = true;
			n++;
		}
		if (any) {
			out[n - 1].x1 = x + 1;
			gap = 0;
		} else if (in && ++gap > 8) {
			in = false;
		}
	}
	for (int i = 0; i < n; i++) {
		double freec = 0, used = 0;
		bool on = false;

		out[i].rows = 0;
		for (y = 0; y < h; y++) {
			bool s = segment_pixel(vt_pixel(img, out[i].x0, y));

			if (s && !on)
				out[i].rows++;
			on = s;
			for (x = out[i].x0; x < out[i].x1; x++) {
				uint32_t p = vt_pixel(img, x, y);

				if (p == free_px)
					freec++;
				else if (band_of(p) >= 0)
					used++;
			}
		}
		out[i].free_fraction = freec + used > 0 ? freec / (freec + used) : -1;
	}
	return n;
}

/* The segment map of a fresh VT_FULL trace in db with policies at at_ms
 * (< 0: the default moment), read back: the number of panels. */
static int segment_panels(const char *db, const char *policies, double at_ms, struct panel *p,
                          int most)
{
	const char *png = vt_path(1, "segments.png");
	cairo_surface_t *img;
	int n = 0;

	REQUIRE(vt_write_trace(db, VT_FULL) == 0);
	CHECK(vt_render(db, png, "segments", policies, at_ms, 1200, 700) == 0);
	img = cairo_image_surface_create_from_png(png);
	CHECK(cairo_surface_status(img) == CAIRO_STATUS_SUCCESS);
	if (cairo_surface_status(img) == CAIRO_STATUS_SUCCESS)
		n = read_panels(img, p, most);
	cairo_surface_destroy(img);
	return n;
}

/* VT_FULL at 3.5 ms: segments S1 64, S2 32, S3 20 MiB holding R1 16, R2 8,
 * R3 12 (S1), R4 20, R5 4 (S2), R6 10 (S3): 70 of 116 MiB live. The native
 * policy holds one segment per live request, all of it used. */
static void segment_map(void)
{
	struct panel p[4];
	int n = segment_panels(vt_path(0, "full.db"), "native", 3.5, p, 4);

	CHECK(n == 2);
	if (n != 2)
		return;
	printf("# recorded: %d rows, free %.4f; native: %d rows, free %.4f\n", p[0].rows,
	       p[0].free_fraction, p[1].rows, p[1].free_fraction);
	CHECK(p[0].rows == 3);
	CHECK(fabs(p[0].free_fraction - 46.0 / 116.0) < 0.02);
	CHECK(p[1].rows == 6);
	CHECK(p[1].free_fraction >= 0 && p[1].free_fraction < 0.02);
}

/* With no moment asked, the map is drawn at the peak of live bytes (3 ms:
 * R1..R6 live, 70 of 116 MiB), not at the peak reserved (2 ms: 46 live). */
static void segment_map_at_live_peak(void)
{
	struct panel p[2];
	int n = segment_panels(vt_path(0, "full-peak.db"), NULL, -1, p, 2);

	CHECK(n == 1);
	CHECKF(n == 1 && fabs(p[0].free_fraction - 46.0 / 116.0) < 0.02, "free %.4f",
	       n ? p[0].free_fraction : -1);
}

/* Pixels of colour c in a PNG. */
static long count_colour(const char *png, struct vw_rgb c)
{
	cairo_surface_t *img = cairo_image_surface_create_from_png(png);
	uint32_t want = vw_rgb_pixel(c) & 0xffffff;
	long n = 0;
	int x, y;

	if (cairo_surface_status(img) == CAIRO_STATUS_SUCCESS)
		for (y = 0; y < cairo_image_surface_get_height(img); y++)
			for (x = 0; x < cairo_image_surface_get_width(img); x++)
				n += vt_pixel(img, x, y) == want;
	cairo_surface_destroy(img);
	return n;
}

/* A policy keeps its colour whatever else a picture shows and wherever it
 * stands in the list; parameters do not change it. */
static void policy_colours(void)
{
	const char *trace = vt_path(0, "full-colours.db"), *one = vt_path(1, "one.png"),
	           *two = vt_path(2, "two.png");
	struct vw_rgb caching = vw_policy_color("caching"), bestfit = vw_policy_color("bestfit");

	CHECK(vw_rgb_pixel(caching) != vw_rgb_pixel(bestfit));
	CHECK(vw_rgb_pixel(caching) == vw_rgb_pixel(vw_policy_color("caching:roundup=4")));
	REQUIRE(vt_write_trace(trace, VT_FULL) == 0);
	CHECK(vt_render(trace, one, "policies", "caching", -1, 800, 450) == 0);
	CHECK(vt_render(trace, two, "policies", "bestfit,caching", -1, 800, 450) == 0);
	CHECK(count_colour(one, caching) > 500);
	CHECK(count_colour(one, bestfit) == 0);
	CHECK(count_colour(two, caching) > 500);
	CHECK(count_colour(two, bestfit) > 500);
}

/* The requests of trace's first device and what planned would hold for
 * them (mt_plan_bytes_estimate). */
static uint64_t plan_needs(const char *trace, uint64_t *requests)
{
	struct mt_reader *r = mt_reader_new();
	struct mt_request_stream *s = NULL;
	char err[256];

	*requests = 0;
	if (r && mt_reader_open(r, trace) == 0 &&
	    mt_request_stream_load(&s, r, 0, err, sizeof(err)) == 0) {
		*requests = mt_request_stream_requests(s);
		mt_request_stream_free(s);
	}
	mt_reader_free(r);
	return mt_plan_bytes_estimate(*requests);
}

/* The note for run (planned, left out): why, and how to have it drawn
 * where there is room for that. */
static void note_says(const struct vw_policy_run *run, uint64_t requests, uint64_t needs)
{
	struct vw_canvas c;
	char note[320], shorter[320], text[64], err[256];
	double full;

	REQUIRE(vw_canvas_open(&c, MT_IMAGE_PNG, vt_path(2, "note.png"), 1600, 900, err,
	                       sizeof(err)) == 0);
	vw_policy_left_out_note(&c, run, 1e6, note, sizeof(note));
	CHECKF(!strncmp(note, "planned: not replayed", 21), "%s", note);
	snprintf(text, sizeof(text), "%llu requests", (unsigned long long)requests);
	CHECKF(strstr(note, text) != NULL, "%s", note);
	CHECKF(strstr(note, mt_size_format(needs, text, sizeof(text))) != NULL, "%s", note);
	CHECKF(strstr(note, "`memtrace replay` saves it") != NULL, "%s", note);
	/* a little narrower: the same reason, without the hint */
	full = vw_text_width(&c, 0.9, false, note);
	vw_policy_left_out_note(&c, run, full - 1, shorter, sizeof(shorter));
	CHECKF(strlen(shorter) > 20 && !strncmp(note, shorter, strlen(shorter)) &&
	               !strstr(shorter, "memtrace replay") && shorter[strlen(shorter) - 1] == ')',
	       "%s", shorter);
	vw_canvas_discard(&c);
}

/* planned (offline: it holds every request while it replays) is left out
 * when it would need more than the budget, after the policies drawn, with
 * what it would need; at the budget it is replayed. Saved replays are
 * drawn whatever the budget. */
static void plan_budget_runs(void)
{
	const char *trace = vt_path(0, "full-budget.db");
	struct vw_policy_run *runs = NULL;
	struct mt_reader *r = mt_reader_new();
	uint64_t requests, needs;
	char err[256];
	size_t n = 0, nleft = 0;
	struct vw_trace t;

	REQUIRE(vt_write_trace(trace, VT_FULL) == 0);
	needs = plan_needs(trace, &requests);
	/* more than its plan records alone */
	CHECK(requests > 0 && needs > requests * sizeof(struct mt_plan_request));
	REQUIRE(r && mt_reader_open(r, trace) == 0);
	REQUIRE(vw_trace_survey(&t, r, 0, 0, err, sizeof(err)) == 0);
	CHECK(vw_policy_runs(&t, "planned,caching", 100, needs - 1, &runs, &n, &nleft, err,
	                     sizeof(err)) == 0);
	CHECK(n == 1 && nleft == 1);
	if (n == 1 && nleft == 1) {
		CHECK(!strcmp(runs[0].name, "caching") && runs[0].saved && !runs[0].left_out);
		CHECK(!strcmp(runs[1].name, "planned") && runs[1].left_out && !runs[1].npoints);
		CHECK(runs[1].requests == requests && runs[1].needs == needs &&
		      runs[1].budget == needs - 1);
		note_says(&runs[1], requests, needs);
	}
	vw_policy_runs_free(runs, n + nleft);
	runs = NULL;
	CHECK(vw_policy_runs(&t, "planned,caching", 100, needs, &runs, &n, &nleft, err,
	                     sizeof(err)) == 0);
	CHECK(n == 2 && nleft == 0);
	if (n == 2)
		CHECK(!strcmp(runs[0].name, "planned") && !runs[0].saved && !runs[0].left_out &&
		      runs[0].npoints > 0 && runs[0].peak_reserved > 0);
	vw_policy_runs_free(runs, n + nleft);
	runs = NULL;
	/* nothing asked: the saved replays, none left out */
	CHECK(vw_policy_runs(&t, NULL, 100, 1, &runs, &n, &nleft, err, sizeof(err)) == 0);
	CHECK(n == 2 && nleft == 0);
	vw_policy_runs_free(runs, n + nleft);
	vw_trace_release(&t);
	mt_reader_free(r);
}

/* Pixels of neutral grey darker than the grid in a PNG: text, axes and
 * the lower bound's line. */
static long count_grey(const char *png)
{
	cairo_surface_t *img = cairo_image_surface_create_from_png(png);
	long n = 0;
	int x, y;

	if (cairo_surface_status(img) == CAIRO_STATUS_SUCCESS)
		for (y = 0; y < cairo_image_surface_get_height(img); y++)
			for (x = 0; x < cairo_image_surface_get_width(img); x++) {
				uint32_t p = vt_pixel(img, x, y), r = p >> 16, g = p >> 8 & 0xff;

				n += r == g && g == (p & 0xff) && r < 0xd0;
			}
	cairo_surface_destroy(img);
	return n;
}

/* The view of trace with policies under a plan budget, as 1600x900 PNG;
 * its pixels of the colour c, or (c NULL) its grey ones. */
static long budget_pixels(const char *trace, const char *view, const char *policies,
                          uint64_t budget, const struct vw_rgb *c)
{
	const char *png = vt_path(1, "budget.png");
	struct mt_render_options o = { .view = view, .policies = policies, .plan_budget = budget };

	CHECK(vt_render_options(trace, png, o) == 0);
	return c ? count_colour(png, *c) : count_grey(png);
}

/* A policy left out has no bar or line, and a note says so (text added to
 * a picture that is otherwise that of the other policies); under a budget
 * that holds it, it is drawn. */
static void plan_budget_pictures(void)
{
	const char *trace = vt_path(0, "full-budget-pictures.db");
	const char *view[] = { "policies", "timeline" };
	struct vw_rgb planned = vw_policy_color("planned");
	uint64_t requests, needs;
	size_t i;

	REQUIRE(vt_write_trace(trace, VT_FULL) == 0);
	needs = plan_needs(trace, &requests);
	for (i = 0; i < 2; i++) {
		long without = budget_pixels(trace, view[i], "caching", needs - 1, NULL);
		long with = budget_pixels(trace, view[i], "caching,planned", needs - 1, NULL);

		CHECKF(budget_pixels(trace, view[i], "caching,planned", needs - 1, &planned) == 0,
		       "%s", view[i]);
		CHECKF(budget_pixels(trace, view[i], "caching,planned", needs, &planned) > 500,
		       "%s", view[i]);
		printf("# %s: %ld grey pixels with the note, %ld without\n", view[i], with,
		       without);
		/* about 100 characters of 10-20 such pixels each */
		CHECKF(with > without + 800, "%s: %ld grey pixels with the note, %ld without",
		       view[i], with, without);
	}
}

static void specs(void)
{
	char **s = NULL;
	size_t n = 0;

	CHECK(vw_specs_split("caching:max_split_size=4MiB,roundup=2,bfc,native", &s, &n) == 0);
	CHECK(n == 3);
	if (n == 3) {
		CHECK(!strcmp(s[0], "caching:max_split_size=4MiB,roundup=2"));
		CHECK(!strcmp(s[1], "bfc"));
		CHECK(!strcmp(s[2], "native"));
	}
	vw_specs_free(s, n);
}

static void ticks(void)
{
	struct vw_axis a;
	size_t i;

	vw_axis_bytes(&a, 3.2 * GiB, 8, 0, 100);
	CHECK(a.nticks >= 3 && a.nticks <= 8);
	CHECK(a.v1 >= 3.2 * GiB && a.v1 < 4.5 * GiB);
	CHECK(!strcmp(a.label[0], "0"));
	/* 3.2 GiB in at most 7 steps: 512 MiB steps */
	CHECK(a.nticks > 1 && !strcmp(a.label[1], "512 MiB"));
	CHECK(a.nticks > 2 && !strcmp(a.label[2], "1 GiB"));
	for (i = 1; i < a.nticks; i++)
		CHECK(a.tick[i] > a.tick[i - 1]);
	vw_axis_time(&a, 0, 2.5e9, 6, 0, 100);
	CHECK(a.nticks >= 3 && !strcmp(a.label[1], "0.5 s"));
	CHECK(!strcmp(a.label[0], "0.0 s"));
	vw_axis_time(&a, 0, 40e6, 5, 0, 100);
	CHECK(a.nticks >= 3 && !strcmp(a.label[1], "10 ms"));
}

/* Per-column aggregation on four columns of 100 ns. */
static void columns(void)
{
	const struct vw_columns c = { .n = 4, .from = 1000, .to = 1400 };
	const struct vw_span spans[] = { { 1050, 1150 }, { 1100, 1400 }, { 900, 1010 } };
	const struct vw_point points[] = { { 1000, 10 }, { 1150, 30 }, { 1160, 5 } };
	const struct mt_lifetime l[] = {
		{ .start = 900, .end = 1120, .bytes = 7 },
		{ .start = 1110, .end = 1110 + 5, .bytes = 100 },
		{ .start = 1300, .end = UINT64_MAX, .bytes = 1 },
	};
	double v[4];

	vw_columns_busy(&c, spans, 3, v);
	/* column 0: 50 + 10 ns; 1: 50 + 100 (capped at 1); 2, 3: whole */
	CHECK(fabs(v[0] - 0.6) < 1e-9);
	CHECK(v[1] == 1 && v[2] == 1 && v[3] == 1);
	vw_columns_steps(&c, points, 3, v);
	CHECK(v[0] == 10 && v[1] == 30 && v[2] == 5 && v[3] == 5);
	CHECK(vw_columns_live_max(&c, l, 3, v) == 0);
	/* 7 live from before the window; 107 for 5 ns in column 1 */
	CHECK(v[0] == 7 && v[1] == 107 && v[2] == 0 && v[3] == 1);
}

int main(void)
{
	TEST(columns);
	TEST(band_areas);
	TEST(segment_map);
	TEST(segment_map_at_live_peak);
	TEST(policy_colours);
	TEST(plan_budget_runs);
	TEST(plan_budget_pictures);
	TEST(specs);
	TEST(ticks);
	vt_cleanup();
	return check_done();
}
