/* test-lifetimes.c — alloc/free pairing by (process, device, address) per
 * layer: a normal pair, a free without its alloc, an alloc never freed, a
 * second alloc at a live address, an address used again after its free,
 * the same address in two processes; peak live bytes per device and over
 * all; time windows; the lifetimes live during a span, read only up to
 * its end; the request layer. Expected values worked out by hand
 * from the event list below. */
#include "config.h"

#include <errno.h>

#include "test-events.h"

static uint32_t proc[2], dev[2];

static void put(struct mt_writer *w, unsigned kind, int p, int d, unsigned layer, uint64_t ts,
                uint64_t address, uint64_t bytes)
{
	struct mt_event ev = {
		.kind = (uint8_t)kind, .ts = ts, .process = proc[p], .device = dev[d]
	};
	ev.alloc.address = address;
	ev.alloc.bytes = bytes;
	ev.alloc.layer = (uint8_t)layer;
	ev.alloc.stream = 3;
	ev.alloc.reuse_delay = kind == MT_EVENT_FREE ? 7 : 0;
	REQUIRE(mt_writer_append(w, &ev) == 0);
}

static void write_trace(const char *path, int with_requests)
{
	struct mt_writer *w = mt_writer_new();
	REQUIRE(mt_writer_open(w, path, MT_WRITER_CREATE) == 0);
	struct mt_process p = { .pid = 1 };
	REQUIRE(mt_writer_add_process(w, &p, &proc[0]) == 0);
	REQUIRE(mt_writer_add_process(w, &p, &proc[1]) == 0);
	struct mt_device d = { .uuid = "GPU-1" };
	REQUIRE(mt_writer_add_device(w, &d, &dev[0]) == 0);
	d.uuid = "GPU-2";
	REQUIRE(mt_writer_add_device(w, &d, &dev[1]) == 0);
	mt_writer_set_chunk_events(w, 3);
	const unsigned A = MT_EVENT_ALLOC, F = MT_EVENT_FREE, R = MT_LAYER_REQUEST,
	               D = MT_LAYER_DRIVER;
	put(w, A, 0, 0, D, 5, 0x1000, 2 << 20); /* a segment, never freed */
	if (with_requests) {
		put(w, A, 0, 0, R, 10, 0x1000, 100);
		put(w, A, 0, 1, R, 12, 0x1000, 1000); /* other device, never freed */
		put(w, A, 0, 0, R, 20, 0x2000, 200);
		put(w, A, 1, 0, R, 25, 0x2000, 150); /* other process, same address */
		put(w, F, 0, 0, R, 30, 0x1000, 0);   /* bytes unknown: from the alloc */
		put(w, F, 1, 0, R, 35, 0x2000, 150);
		put(w, F, 0, 0, R, 40, 0x3000, 50); /* never seen allocated */
		put(w, A, 0, 0, R, 50, 0x4000, 300);
		put(w, A, 0, 0, R, 60, 0x4000, 400); /* again while live */
		put(w, F, 0, 0, R, 70, 0x4000, 400);
		put(w, A, 0, 0, R, 80, 0x1000, 100); /* address used again */
	}
	REQUIRE(mt_writer_flush(w) == 0);
	mt_writer_free(w);
}

struct want {
	uint64_t start, end, bytes, address;
	int p, d;
	uint32_t flags;
};

static void check_lifetimes(struct mt_reader *r, const struct mt_query *q, unsigned layer,
                            const struct want *want, size_t n_want)
{
	struct mt_lifetime *l;
	size_t n;
	REQUIRE(mt_reader_lifetimes(r, q, layer, &l, &n) == 0);
	CHECKF(n == n_want, "%zu lifetimes, want %zu", n, n_want);
	for (size_t i = 0; i < n && i < n_want; i++) {
		CHECK(l[i].start == want[i].start && l[i].end == want[i].end);
		CHECK(l[i].bytes == want[i].bytes && l[i].address == want[i].address);
		CHECK(l[i].process == proc[want[i].p] && l[i].device == dev[want[i].d]);
		CHECK(l[i].flags == want[i].flags && l[i].layer == layer && l[i].stream == 3);
		CHECK(l[i].reuse_delay == (l[i].flags & MT_LIFETIME_NO_FREE ? 0u : 7u));
	}
	free(l);
}

static char path[256];
static struct mt_reader *r;

static void test_pairs(void)
{
	const uint64_t U = MT_TIME_UNKNOWN;
	const uint32_t NA = MT_LIFETIME_NO_ALLOC, NF = MT_LIFETIME_NO_FREE;
	struct mt_query all = { 0 };
	static const struct want requests[] = {
		{ 10, 30, 100, 0x1000, 0, 0, 0 }, { 12, U, 1000, 0x1000, 0, 1, NF },
		{ 20, U, 200, 0x2000, 0, 0, NF }, { 25, 35, 150, 0x2000, 1, 0, 0 },
		{ U, 40, 50, 0x3000, 0, 0, NA },  { 50, U, 300, 0x4000, 0, 0, NF },
		{ 60, 70, 400, 0x4000, 0, 0, 0 }, { 80, U, 100, 0x1000, 0, 0, NF },
	};
	check_lifetimes(r, &all, MT_LAYER_REQUEST, requests, 8);
	static const struct want driver[] = { { 5, U, 2 << 20, 0x1000, 0, 0, NF } };
	check_lifetimes(r, &all, MT_LAYER_DRIVER, driver, 1);
}

/* Window from 30: the frees at 30 and 35 lost their allocs. */
static void test_window(void)
{
	const uint64_t U = MT_TIME_UNKNOWN;
	const uint32_t NA = MT_LIFETIME_NO_ALLOC, NF = MT_LIFETIME_NO_FREE;
	struct mt_query from30 = { .from = 30, .device = dev[0] };
	static const struct want windowed[] = {
		{ U, 30, 0, 0x1000, 0, 0, NA },   { U, 35, 150, 0x2000, 1, 0, NA },
		{ U, 40, 50, 0x3000, 0, 0, NA },  { 50, U, 300, 0x4000, 0, 0, NF },
		{ 60, 70, 400, 0x4000, 0, 0, 0 }, { 80, U, 100, 0x1000, 0, 0, NF },
	};
	check_lifetimes(r, &from30, MT_LAYER_REQUEST, windowed, 6);
}

/* Bytes live at ts among n lifetimes (born at start, or always when
 * NO_ALLOC; live until end). */
static uint64_t live_sum(const struct mt_lifetime *l, size_t n, uint64_t ts)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		if ((l[i].flags & MT_LIFETIME_NO_ALLOC || l[i].start <= ts) &&
		    (l[i].end == MT_TIME_UNKNOWN || ts < l[i].end))
			sum += l[i].bytes;
	return sum;
}

/* Those live at some moment of [32, 55] on device 0, read up to 55: 20-
 * (200), 25-35 (150), -40 (50, never seen allocated), 50- (300, stranded
 * only at 60, so still open at 55); not 10-30 (ended before) nor 60-70
 * (born after). At every moment of the span they hold what all do. */
static void test_during(void)
{
	struct mt_query d0 = { .device = dev[0], .from = 99, .to = 1 }; /* window ignored */
	struct mt_query all0 = { .device = dev[0] };
	struct mt_lifetime *l, *full;
	size_t n, nfull;
	static const uint64_t moments[] = { 32, 34, 35, 39, 40, 45, 50, 55 };

	REQUIRE(mt_reader_lifetimes_during(r, &d0, MT_LAYER_REQUEST, 32, 55, &l, &n) == 0);
	REQUIRE(mt_reader_lifetimes(r, &all0, MT_LAYER_REQUEST, &full, &nfull) == 0);
	CHECKF(n == 4, "%zu lifetimes, want 4", n);
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += l[i].bytes;
	CHECK(bytes == 200 + 150 + 50 + 300);
	for (size_t i = 0; i < sizeof(moments) / sizeof(moments[0]); i++)
		CHECKF(live_sum(l, n, moments[i]) == live_sum(full, nfull, moments[i]),
		       "at %llu: %llu live, all lifetimes say %llu", (unsigned long long)moments[i],
		       (unsigned long long)live_sum(l, n, moments[i]),
		       (unsigned long long)live_sum(full, nfull, moments[i]));
	CHECK(live_sum(l, n, 32) == 400 && live_sum(l, n, 50) == 500);
	free(l);
	free(full);
	CHECK(mt_reader_lifetimes_during(r, &d0, MT_LAYER_REQUEST, 55, 32, &l, &n) == -EINVAL);
}

/* Peaks: device 0 reaches 100+200+150 = 450 at 25, then 300+400 on top of
 * 200 = 900 at 60 (the earlier 300 stays live); with device 1's 1000 the
 * total is 1900 at 60. */
static void test_peaks(void)
{
	uint64_t peak, at;
	struct mt_query all = { 0 }, d0 = { .device = dev[0] }, early = { .to = 26 };
	CHECK(mt_reader_peak_live(r, &d0, MT_LAYER_REQUEST, &peak, &at) == 0);
	CHECK(peak == 900 && at == 60);
	CHECK(mt_reader_peak_live(r, &all, MT_LAYER_REQUEST, &peak, &at) == 0);
	CHECK(peak == 1900 && at == 60);
	CHECK(mt_reader_peak_live(r, &early, MT_LAYER_REQUEST, &peak, &at) == 0);
	CHECK(peak == 1450 && at == 25);
	CHECK(mt_reader_peak_live(r, &all, MT_LAYER_DRIVER, &peak, &at) == 0);
	CHECK(peak == 2 << 20 && at == 5);
	unsigned layer = 99;
	CHECK(mt_reader_request_layer(r, &layer) == 0 && layer == MT_LAYER_REQUEST);
}

/* Driver events only: the request layer is the driver's, no request peak. */
static void test_driver_only(void)
{
	struct mt_reader *d = mt_reader_new();
	struct mt_query all = { 0 };
	uint64_t peak, at;
	unsigned layer = 99;

	remove_trace(path);
	write_trace(path, 0);
	REQUIRE(mt_reader_open(d, path) == 0);
	CHECK(mt_reader_request_layer(d, &layer) == 0 && layer == MT_LAYER_DRIVER);
	CHECK(mt_reader_peak_live(d, &all, MT_LAYER_REQUEST, &peak, &at) == 0);
	CHECK(peak == 0 && at == MT_TIME_UNKNOWN);
	mt_reader_free(d);
}

int main(void)
{
	temp_trace(path, sizeof(path), "lifetimes");
	remove_trace(path);
	write_trace(path, 1);
	r = mt_reader_new();
	REQUIRE(mt_reader_open(r, path) == 0);
	TEST(test_pairs);
	TEST(test_window);
	TEST(test_peaks);
	TEST(test_during);
	mt_reader_free(r);
	TEST(test_driver_only);
	remove_trace(path);
	return check_done();
}
