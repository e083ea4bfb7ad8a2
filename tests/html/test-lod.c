/* test-lod.c — the HTML view's level-of-detail pyramid (viewer/html-lod.c)
 * read back from its sections and checked against the allocations it was
 * made from, by brute force: every bin's moment lies in the bin and is the
 * first moment there at which the most bytes are live; the bin's total is
 * the bytes live then; its call-site groups hold exactly the allocations
 * shorter than the level's bins live then, so that drawn allocations plus
 * groups never lose a byte; levels stop once the page can draw windows
 * alone. Random allocations of a few call sites, with never-freed ones,
 * zero-length ones and shared timestamps.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "html-private.h"

#define N (VW_HTML_RAW_MAX * 3)
#define SPAN 5000000000ull /* 5 s */

static struct vw_html_alloc a[N];
static struct vw_hbuf buf;
static json_t *meta;

/* Values of a section (byte planes, html-buf.c); *n receives the count. */
static uint64_t *section(const char *name, size_t *n)
{
	json_t *s = json_object_get(json_object_get(meta, "sections"), name);
	size_t off, width, i, k;
	uint64_t *v;

	if (!s)
		return NULL;
	off = (size_t)json_integer_value(json_array_get(s, 0));
	*n = (size_t)json_integer_value(json_array_get(s, 1));
	width = (size_t)json_integer_value(json_array_get(s, 2));
	v = calloc(*n + 1, sizeof(*v));
	for (k = width; k-- > 0;)
		for (i = 0; i < *n; i++)
			v[i] = v[i] << 8 | buf.p[off + k * *n + i];
	return v;
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static bool live_at(const struct vw_html_alloc *x, uint64_t t)
{
	return x->start <= t && t < x->end;
}

static uint64_t live_bytes(uint64_t t, uint64_t shorter_than, uint32_t site, bool by_site)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < N && a[i].start <= t; i++)
		if (live_at(&a[i], t) &&
		    (!shorter_than ||
		     (a[i].end != VW_HTML_NEVER && a[i].end - a[i].start < shorter_than)) &&
		    (!by_site || a[i].site == site))
			sum += a[i].bytes;
	return sum;
}

static int by_start(const void *x, const void *y)
{
	const struct vw_html_alloc *p = x, *q = y;

	return p->start < q->start ? -1 : p->start > q->start;
}

static void setup(void)
{
	uint64_t seed = 12345;
	size_t i;

	for (i = 0; i < N; i++) {
		uint64_t r;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		r = seed >> 11;
		/* starts on a 1 us grid so that many share a moment */
		a[i].start = (r % (SPAN / 1000)) * 1000;
		a[i].bytes = 512 * (1 + (r >> 30) % 4096);
		a[i].site = (uint32_t)((r >> 45) % 5);
		switch ((r >> 50) % 16) {
		case 0:
			a[i].end = VW_HTML_NEVER;
			break;
		case 1:
			a[i].end = a[i].start; /* never live */
			break;
		default: /* 1 us .. ~1 s, log-spread */
			a[i].end = a[i].start + (1000ull << ((r >> 54) % 20));
		}
		a[i].src = (uint32_t)i;
	}
	qsort(a, N, sizeof(*a), by_start);
	REQUIRE(vw_hbuf_init(&buf));
	meta = json_object();
	REQUIRE(vw_html_lod(a, N, SPAN, &buf, &buf, meta) == 0);
	REQUIRE(vw_hbuf_finish(&buf) == 0);
	REQUIRE(json_object_set(meta, "sections", buf.sections) == 0);
}

/* Bins of level l checked at `every`-th bin (brute force is quadratic). */
static void check_level(size_t l)
{
	json_t *lv = json_array_get(json_object_get(meta, "lod"), l);
	uint64_t w = (uint64_t)json_integer_value(json_object_get(lv, "w"));
	size_t nb = (size_t)json_integer_value(json_object_get(lv, "n")), n, j, g = 0, k;
	char name[32];
	uint64_t *m, *t, *ng, *s;
	int64_t total = 0;

	snprintf(name, sizeof(name), "lod%zu.m", l);
	m = section(name, &n);
	REQUIRE(m && n == nb);
	snprintf(name, sizeof(name), "lod%zu.t", l);
	t = section(name, &n);
	REQUIRE(t && n == nb);
	snprintf(name, sizeof(name), "lod%zu.g", l);
	ng = section(name, &n);
	REQUIRE(ng && n == nb);
	snprintf(name, sizeof(name), "lod%zu.s", l);
	s = section(name, &n);
	REQUIRE(s);
	CHECK(w * nb >= SPAN && w * (nb - 1) < SPAN);
	for (j = 0; j < nb; j++) {
		uint64_t moment = j * w + m[j], bytes = 0;
		bool check = j % (nb / 16 + 1) == 0 || j + 1 == nb;

		total += unzigzag(t[j]);
		CHECKF(m[j] < w, "level %zu bin %zu: moment %llu ns past its start", l, j,
		       (unsigned long long)m[j]);
		if (check) {
			size_t i;
			uint64_t best = live_bytes(j * w, 0, 0, false);

			CHECKF((uint64_t)total == live_bytes(moment, 0, 0, false),
			       "level %zu bin %zu: total %lld, live %llu", l, j, (long long)total,
			       (unsigned long long)live_bytes(moment, 0, 0, false));
			/* no moment in the bin has more live, none before it as much */
			for (i = 0; i < N && a[i].start < (j + 1) * w; i++) {
				uint64_t cand[2] = { a[i].start, a[i].end };
				int c;

				for (c = 0; c < 2; c++) {
					uint64_t v;

					if (cand[c] < j * w || cand[c] >= (j + 1) * w)
						continue;
					v = live_bytes(cand[c], 0, 0, false);
					CHECKF(v <= (uint64_t)total &&
					               (v < (uint64_t)total || cand[c] >= moment),
					       "level %zu bin %zu: %llu live at %llu", l, j,
					       (unsigned long long)v, (unsigned long long)cand[c]);
				}
			}
			CHECK(best <= (uint64_t)total);
		}
		for (k = 0; k < ng[j]; k++, g++) {
			CHECKF(k == 0 || s[3 * g] > s[3 * (g - 1)],
			       "level %zu bin %zu: sites out of order", l, j);
			bytes += s[3 * g + 2];
			if (check)
				CHECKF(s[3 * g + 2] ==
				               live_bytes(moment, w, (uint32_t)s[3 * g], true),
				       "level %zu bin %zu site %llu: %llu grouped", l, j,
				       (unsigned long long)s[3 * g],
				       (unsigned long long)s[3 * g + 2]);
		}
		if (check)
			CHECKF(bytes == live_bytes(moment, w, 0, false),
			       "level %zu bin %zu: groups %llu, short allocations live %llu", l, j,
			       (unsigned long long)bytes,
			       (unsigned long long)live_bytes(moment, w, 0, false));
		if (check_failed())
			break;
	}
	CHECKF(3 * g == n, "level %zu: %zu group values for %zu groups", l, n, g);
	free(m);
	free(t);
	free(ng);
	free(s);
}

static void test_levels(void)
{
	size_t l, nl = json_array_size(json_object_get(meta, "lod"));

	CHECK(nl >= 2);
	for (l = 0; l < nl && !check_failed(); l++)
		check_level(l);
}

/* The last level is fine enough: no run of VW_HTML_LOD_WINDOW of its bins
 * holds more than VW_HTML_RAW_MAX starts. */
static void test_last_level_fine(void)
{
	json_t *lod = json_object_get(meta, "lod");
	json_t *lv = json_array_get(lod, json_array_size(lod) - 1);
	uint64_t w = (uint64_t)json_integer_value(json_object_get(lv, "w"));
	size_t lo, hi = 0;

	for (lo = 0; lo < N; lo++) {
		uint64_t limit = (a[lo].start / w + VW_HTML_LOD_WINDOW) * w;

		if (hi < lo)
			hi = lo;
		while (hi < N && a[hi].start < limit)
			hi++;
		CHECKF(hi - lo <= VW_HTML_RAW_MAX, "%zu starts from %llu", hi - lo,
		       (unsigned long long)a[lo].start);
		if (check_failed())
			break;
	}
}

/* Few allocations: no pyramid, the page draws them all. */
static void test_small_needs_none(void)
{
	struct vw_hbuf b;
	json_t *m = json_object();

	REQUIRE(vw_hbuf_init(&b));
	CHECK(vw_html_lod(a, VW_HTML_RAW_MAX, SPAN, &b, &b, m) == 0);
	CHECK(json_array_size(json_object_get(m, "lod")) == 0);
	vw_hbuf_release(&b);
	json_decref(m);
}

int main(void)
{
	setup();
	TEST(test_levels);
	TEST(test_last_level_fine);
	TEST(test_small_needs_none);
	vw_hbuf_release(&buf);
	json_decref(meta);
	return check_done();
}
