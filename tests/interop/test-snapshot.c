/* test-snapshot.c — PyTorch memory snapshots in and out: every trace
 * entry's mapping (documents written by hand as JSON, the same structure
 * memory_viz reads), partial history reconstructed from the final state,
 * expandable segments' maps and unmaps, times that go backwards, bad input
 * refused with one line, and the round trip memtrace trace → snapshot →
 * trace giving the same alloc/free stream. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>

#include "interop-test.h"

#define S(x) #x

static const char complete[] =
        "{\"segments\": [{\"device\": 0, \"address\": 1048576, \"total_size\": 2097152,"
        "  \"stream\": 0, \"is_expandable\": false, \"blocks\": ["
        "    {\"address\": 1048576, \"size\": 1024, \"requested_size\": 1000,"
        "     \"state\": \"active_allocated\"},"
        "    {\"address\": 1049600, \"size\": 2096128, \"requested_size\": 0,"
        "     \"state\": \"inactive\"}]}],"
        " \"device_traces\": [["
        "  {\"action\": \"segment_alloc\", \"addr\": 1048576, \"size\": 2097152, \"stream\": 0,"
        "   \"time_us\": 10},"
        "  {\"action\": \"alloc\", \"addr\": 1048576, \"size\": 1000, \"stream\": 0,"
        "   \"time_us\": 11, \"user_metadata\": \"step1\", \"frames\": ["
        "     {\"filename\": \"/w/a.py\", \"line\": 3, \"name\": \"f\"},"
        "     {\"filename\": \"/w/main.py\", \"line\": 9, \"name\": \"<module>\"}]},"
        "  {\"action\": \"alloc\", \"addr\": 1049600, \"size\": 4000, \"stream\": 7,"
        "   \"time_us\": 12, \"user_metadata\": \"step1\"},"
        "  {\"action\": \"free_requested\", \"addr\": 1049600, \"size\": 4000, \"stream\": 7,"
        "   \"time_us\": 13},"
        "  {\"action\": \"alloc\", \"addr\": 1060000, \"size\": 512, \"stream\": 0,"
        "   \"time_us\": 14},"
        "  {\"action\": \"free_completed\", \"addr\": 1049600, \"size\": 4000, \"stream\": 7,"
        "   \"time_us\": 20},"
        "  {\"action\": \"free_requested\", \"addr\": 1060000, \"size\": 512, \"stream\": 0,"
        "   \"time_us\": 21},"
        "  {\"action\": \"free_completed\", \"addr\": 1060000, \"size\": 512, \"stream\": 0,"
        "   \"time_us\": 21},"
        "  {\"action\": \"oom\", \"device_free\": 777, \"size\": 99999999, \"stream\": 0,"
        "   \"time_us\": 22},"
        "  {\"action\": \"bogus\", \"addr\": 1, \"size\": 1, \"stream\": 0, \"time_us\": 23},"
        "  {\"action\": \"snapshot\", \"addr\": 0, \"size\": 1000, \"stream\": 0, \"time_us\": 24}"
        " ]],"
        " \"allocator_settings\": {\"max_split_size\": -1, \"expandable_segments\": false},"
        " \"external_annotations\": ["
        "  {\"name\": \"fwd\", \"stage\": \"START\", \"device\": 0, \"time_us\": 11},"
        "  {\"name\": \"fwd\", \"stage\": \"END\", \"device\": 0, \"time_us\": 14}]}";

static struct mt_reader *import_doc(const char *doc, const char *name, struct mt_import_result *res)
{
	char in[128], out[128];

	write_text(in_scratch(in, sizeof(in), name), doc, strlen(doc));
	REQUIRE(import_to(in, in_scratch(out, sizeof(out), "out.db"), res) == 0);
	return open_trace(out);
}

static void test_complete_history(void)
{
	struct mt_import_result res;
	struct mt_reader *r;
	struct mt_event *e;
	uint64_t peak = 0, at = 0;
	unsigned layer;
	size_t n, k = 0;

	scratch_make();
	r = import_doc(complete, "complete.json", &res);
	CHECK(res.entries == 11 && res.skipped == 1 && res.clamped == 0 && !res.partial);
	CHECK(!strcmp(mt_interop_format_name(res.format), "snapshot"));
	CHECK(!strcmp(mt_reader_meta(r, "capture"), "import"));
	CHECK(!strcmp(mt_reader_meta(r, "import_format"), "snapshot"));
	CHECK(!strcmp(mt_reader_meta(r, "stacks"), "python"));
	CHECKF(!strcmp(mt_reader_meta(r, "allocator_settings"),
	               "{\"expandable_segments\":false,\"max_split_size\":-1}"),
	       "%s", mt_reader_meta(r, "allocator_settings"));
	CHECK(!mt_reader_meta(r, "history_from"));
	CHECK(mt_reader_device_count(r) == 1 && mt_reader_device(r, 0)->ordinal == 0);

	e = read_events(r,
	                MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE) |
	                        MT_KIND_BIT(MT_EVENT_ALLOC_FAILED),
	                &n);
	REQUIRE(n == 7);
	CHECK(e[0].kind == MT_EVENT_ALLOC && e[0].ts == 10000 &&
	      e[0].alloc.layer == MT_LAYER_DRIVER && e[0].alloc.bytes == 2097152 &&
	      e[0].alloc.api == MT_API_TORCH);
	CHECK(e[1].kind == MT_EVENT_ALLOC && e[1].ts == 11000 &&
	      e[1].alloc.layer == MT_LAYER_REQUEST && e[1].alloc.bytes == 1000);
	CHECKF(e[1].alloc.site && !strcmp(mt_reader_string(r, e[1].alloc.site),
	                                  "/w/a.py:3:f\n/w/main.py:9:<module>"),
	       "site '%s'", mt_reader_string(r, e[1].alloc.site));
	CHECK(e[2].alloc.stream == 7 && e[2].alloc.site == 0);
	CHECK(e[3].kind == MT_EVENT_FREE && e[3].ts == 13000 && e[3].alloc.reuse_delay == 7000 &&
	      e[3].alloc.bytes == 4000);
	CHECK(e[4].kind == MT_EVENT_ALLOC && e[4].alloc.bytes == 512);
	CHECK(e[5].kind == MT_EVENT_FREE && e[5].ts == 21000 && e[5].alloc.reuse_delay == 0);
	CHECK(e[6].kind == MT_EVENT_ALLOC_FAILED && e[6].failed.bytes == 99999999 &&
	      e[6].failed.free_bytes == 777 && e[6].failed.layer == MT_LAYER_REQUEST);
	free(e);

	CHECK(mt_reader_request_layer(r, &layer) == 0 && layer == MT_LAYER_REQUEST);
	CHECK(mt_reader_peak_live(r, &(struct mt_query){ 0 }, layer, &peak, &at) == 0);
	CHECK(peak == 5000 && at == 12000);

	/* ranges by start: fwd [11, 14], step1 [11, 13), snapshot at 24 */
	e = read_events(r, MT_KIND_BIT(MT_EVENT_RANGE), &n);
	REQUIRE(n == 3);
	for (size_t i = 0; i < n; i++) {
		const char *name = mt_reader_string(r, e[i].range.name);
		const char *domain = mt_reader_string(r, e[i].range.domain);
		if (!strcmp(name, "fwd"))
			k += !strcmp(domain, "annotation") && e[i].ts == 11000 &&
			     e[i].range.end == 14000;
		else if (!strcmp(name, "step1"))
			k += !strcmp(domain, "user_metadata") && e[i].ts == 11000 &&
			     e[i].range.end == 13000;
		else if (!strcmp(name, "snapshot"))
			k += e[i].ts == 24000 && e[i].range.end == 24000;
	}
	CHECK(k == 3);
	free(e);
	mt_reader_free(r);
	scratch_clean();
}

/* History enabled mid-run: frees of blocks and segments the entries never
 * allocated, a final block and segment never allocated. */
static const char partial[] =
        "{\"segments\": [{\"device\": 0, \"address\": 4194304, \"total_size\": 2097152,"
        "  \"stream\": 0, \"blocks\": ["
        "    {\"address\": 4194304, \"size\": 512, \"requested_size\": 500,"
        "     \"state\": \"active_allocated\", \"frames\": [{\"filename\": \"/w/m.py\","
        "     \"line\": 5, \"name\": \"init\"}]},"
        "    {\"address\": 4194816, \"size\": 1024, \"requested_size\": 1000,"
        "     \"state\": \"active_allocated\"},"
        "    {\"address\": 4195840, \"size\": 2095616, \"state\": \"inactive\"}]}],"
        " \"device_traces\": [["
        "  {\"action\": \"free_requested\", \"addr\": 8388608, \"size\": 3000, \"stream\": 0,"
        "   \"time_us\": 100},"
        "  {\"action\": \"free_completed\", \"addr\": 8388608, \"size\": 3000, \"stream\": 0,"
        "   \"time_us\": 100},"
        "  {\"action\": \"segment_free\", \"addr\": 8388608, \"size\": 2097152, \"stream\": 0,"
        "   \"time_us\": 101},"
        "  {\"action\": \"free_completed\", \"addr\": 9999, \"size\": 1, \"stream\": 0,"
        "   \"time_us\": 102},"
        "  {\"action\": \"alloc\", \"addr\": 4194816, \"size\": 1000, \"stream\": 0,"
        "   \"time_us\": 103}]]}";

static void test_partial_history(void)
{
	struct mt_import_result res;
	struct mt_reader *r;
	struct mt_event *e;
	uint64_t peak = 0, at = 0;
	size_t n, driver = 0, request = 0;

	scratch_make();
	r = import_doc(partial, "partial.json", &res);
	CHECK(res.partial && res.history_from == 100000 && res.first_ts == 100000);
	CHECK(res.reconstructed == 4 && res.reconstructed_bytes == 3500 && res.skipped == 1);
	CHECK(mt_reader_meta(r, "history_from") &&
	      !strcmp(mt_reader_meta(r, "history_from"), "100000"));
	CHECK(!strcmp(mt_reader_meta(r, "stacks"), "python"));

	e = read_events(r, MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE), &n);
	REQUIRE(n == 7);
	/* the four live before come first, at the first entry's time */
	for (size_t i = 0; i < 4; i++) {
		CHECKF(e[i].kind == MT_EVENT_ALLOC && e[i].ts == 100000, "event %zu", i);
		driver += e[i].alloc.layer == MT_LAYER_DRIVER && e[i].alloc.bytes == 2097152;
		request += e[i].alloc.layer == MT_LAYER_REQUEST &&
		           (e[i].alloc.bytes == 3000 || e[i].alloc.bytes == 500);
	}
	CHECK(driver == 2 && request == 2);
	CHECK(e[4].kind == MT_EVENT_FREE && e[4].alloc.address == 8388608 &&
	      e[4].alloc.layer == MT_LAYER_REQUEST);
	CHECK(e[5].kind == MT_EVENT_FREE && e[5].alloc.layer == MT_LAYER_DRIVER);
	CHECK(e[6].kind == MT_EVENT_ALLOC && e[6].ts == 103000);
	free(e);
	CHECK(mt_reader_peak_live(r, &(struct mt_query){ 0 }, MT_LAYER_REQUEST, &peak, &at) == 0);
	CHECK(peak == 3500 && at == 100000);
	mt_reader_free(r);
	scratch_clean();
}

/* segment_map/unmap: an unmap across two maps frees both and maps again
 * what stays; an unmap of memory mapped before the first entry. */
static const char expandable[] =
        "{\"segments\": ["
        "  {\"device\": 0, \"address\": 268435456, \"total_size\": 2097152,"
        "   \"stream\": 0, \"is_expandable\": true, \"blocks\": []},"
        "  {\"device\": 0, \"address\": 274726912, \"total_size\": 2097152,"
        "   \"stream\": 0, \"is_expandable\": true, \"blocks\": []}],"
        " \"device_traces\": [["
        "  {\"action\": \"segment_map\", \"addr\": 268435456, \"size\": 4194304, \"time_us\": 1},"
        "  {\"action\": \"segment_map\", \"addr\": 272629760, \"size\": 4194304, \"time_us\": 2},"
        "  {\"action\": \"segment_unmap\", \"addr\": 270532608, \"size\": 4194304, \"time_us\": 3},"
        "  {\"action\": \"segment_unmap\", \"addr\": 278921216, \"size\": 2097152, \"time_us\": 4}"
        " ]]}";

static void test_expandable_segments(void)
{
	struct mt_import_result res;
	struct mt_reader *r;
	struct mt_event *e;
	size_t n;
	const uint64_t base = 268435456, M2 = 2097152;

	scratch_make();
	r = import_doc(expandable, "expandable.json", &res);
	CHECK(res.partial && res.reconstructed == 1);
	e = read_events(r, MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE), &n);
	REQUIRE(n == 8);
	for (size_t i = 0; i < n; i++)
		CHECK(e[i].alloc.mem_kind == MT_MEM_VMM && e[i].alloc.layer == MT_LAYER_DRIVER);
	/* mapped before: [base + 10M, +2M) */
	CHECK(e[0].kind == MT_EVENT_ALLOC && e[0].alloc.address == base + 5 * M2 &&
	      e[0].ts == 1000);
	CHECK(e[1].kind == MT_EVENT_ALLOC && e[1].alloc.address == base &&
	      e[1].alloc.bytes == 2 * M2);
	CHECK(e[2].kind == MT_EVENT_ALLOC && e[2].alloc.address == base + 2 * M2);
	/* the unmap of [2M, 6M): both pieces freed, [0, 2M) and [6M, 8M) mapped again */
	CHECK(e[3].kind == MT_EVENT_FREE && e[3].ts == 3000 && e[3].alloc.address == base);
	CHECK(e[4].kind == MT_EVENT_FREE && e[4].alloc.address == base + 2 * M2);
	CHECK(e[5].kind == MT_EVENT_ALLOC && e[5].alloc.address == base && e[5].alloc.bytes == M2);
	CHECK(e[6].kind == MT_EVENT_ALLOC && e[6].alloc.address == base + 3 * M2 &&
	      e[6].alloc.bytes == M2);
	CHECK(e[7].kind == MT_EVENT_FREE && e[7].alloc.address == base + 5 * M2);
	free(e);
	mt_reader_free(r);
	scratch_clean();
}

/* Entries out of time order keep their order: the later time is raised. A
 * list is a snapshot of segments only. */
static void test_times_and_segments_only(void)
{
	static const char backwards[] =
	        "{\"device_traces\": [["
	        " {\"action\": \"alloc\", \"addr\": 4096, \"size\": 10, \"time_us\": 50},"
	        " {\"action\": \"free_requested\", \"addr\": 4096, \"size\": 10, \"time_us\": 40},"
	        " {\"action\": \"free_completed\", \"addr\": 4096, \"size\": 10, \"time_us\": "
	        "40}]]}";
	static const char segments_only[] =
	        "[{\"device\": 0, \"address\": 4194304, \"total_size\": 2097152, \"stream\": 0,"
	        "  \"blocks\": [{\"size\": 512, \"requested_size\": 400,"
	        "               \"state\": \"active_allocated\"}]}]";
	struct mt_import_result res;
	struct mt_reader *r;
	struct mt_event *e;
	size_t n;

	scratch_make();
	r = import_doc(backwards, "backwards.json", &res);
	CHECK(res.clamped == 2);
	e = read_events(r, 0, &n);
	CHECK(n == 2 && e[0].kind == MT_EVENT_ALLOC && e[1].kind == MT_EVENT_FREE &&
	      e[1].ts == 50000);
	free(e);
	mt_reader_free(r);

	r = import_doc(segments_only, "segments.json", &res);
	CHECK(res.partial && res.reconstructed == 2 && res.reconstructed_bytes == 400);
	e = read_events(r, 0, &n);
	CHECK(n == 2 && e[1].alloc.address == 4194304 && e[1].alloc.bytes == 400);
	free(e);
	mt_reader_free(r);
	scratch_clean();
}

static void test_bad_input(void)
{
	static const struct {
		const char *name, *text, *says;
		int rc;
	} cases[] = {
		{ "other.json", "{\"foo\": 1}", "not a PyTorch memory snapshot", -EBADMSG },
		{ "noaddr.json", "{\"device_traces\": [[{\"action\": \"alloc\", \"size\": 5}]]}",
		  "device_traces[0][0]: alloc without addr", -EBADMSG },
		{ "notlist.json", "{\"device_traces\": 5}", "device_traces is not a list",
		  -EBADMSG },
		{ "broken.json", "{\"device_traces\": [", "JSON: ", -EBADMSG },
		{ "global.pickle", "\x80\x02\x63os\nsystem\n.", "GLOBAL", -EBADMSG },
		{ "text.txt", "hello", "not a file memtrace imports", -EBADMSG },
		{ "empty.json", "", "empty", -EBADMSG },
	};
	char in[128], out[128];

	scratch_make();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;
		write_text(in_scratch(in, sizeof(in), cases[i].name), cases[i].text,
		           strlen(cases[i].text));
		rc = import_to(in, in_scratch(out, sizeof(out), "bad.db"), NULL);
		CHECKF(rc == cases[i].rc, "%s: rc %d", cases[i].name, rc);
		CHECKF(strstr(err, cases[i].says) && !strchr(err, '\n'), "%s: '%s'", cases[i].name,
		       err);
	}
	CHECK(import_to(in_scratch(in, sizeof(in), "missing.json"), out, NULL) == -ENOENT);
	scratch_clean();
}

/* The lifetimes of one layer of the trace's device i. */
static struct mt_lifetime *lifetimes(struct mt_reader *r, size_t i, unsigned layer, size_t *n)
{
	struct mt_query q = { .device = mt_reader_device(r, i)->id };
	struct mt_lifetime *l = NULL;

	REQUIRE(mt_reader_lifetimes(r, &q, layer, &l, n) == 0);
	return l;
}

static uint64_t us(uint64_t ns)
{
	return ns == MT_TIME_UNKNOWN ? ns : ns / 1000;
}

/* memtrace trace → snapshot → trace: the same allocations of both layers,
 * in the same order, with the same sizes, addresses, streams, call sites
 * and times (to the microsecond snapshots keep). */
static void test_round_trip(void)
{
	char a[128], pk[128], b[128];
	struct mt_import_result res;
	struct mt_reader *ra, *rb;

	scratch_make();
	synth_trace(in_scratch(a, sizeof(a), "synth.db"), 20000, 7);
	CHECKF(export_to(a, "snapshot", in_scratch(pk, sizeof(pk), "synth.pickle"), NULL) == 0,
	       "%s", err);
	CHECKF(import_to(pk, in_scratch(b, sizeof(b), "back.db"), &res) == 0, "%s", err);
	CHECK(!res.partial && res.skipped == 0);
	ra = open_trace(a);
	rb = open_trace(b);
	REQUIRE(mt_reader_device_count(ra) == mt_reader_device_count(rb));
	for (size_t d = 0; d < mt_reader_device_count(ra); d++)
		for (unsigned layer = MT_LAYER_DRIVER; layer <= MT_LAYER_REQUEST; layer++) {
			size_t na, nb, bad = 0;
			struct mt_lifetime *la = lifetimes(ra, d, layer, &na);
			struct mt_lifetime *lb = lifetimes(rb, d, layer, &nb);
			CHECKF(na == nb && na > 0, "device %zu layer %u: %zu then %zu lifetimes", d,
			       layer, na, nb);
			for (size_t i = 0; i < na && i < nb; i++) {
				const char *sa = mt_reader_string(ra, la[i].site);
				const char *sb = mt_reader_string(rb, lb[i].site);
				bad += la[i].address != lb[i].address ||
				       la[i].bytes != lb[i].bytes || la[i].stream != lb[i].stream ||
				       la[i].flags != lb[i].flags ||
				       us(la[i].start) != us(lb[i].start) ||
				       us(la[i].end) != us(lb[i].end) || strcmp(sa, sb);
				if (bad == 1 && !check_failed())
					CHECKF(0, "device %zu layer %u lifetime %zu differs", d,
					       layer, i);
			}
			CHECKF(bad == 0, "%zu lifetimes differ", bad);
			free(la);
			free(lb);
		}
	mt_reader_free(ra);
	mt_reader_free(rb);
	scratch_clean();
}

int main(void)
{
	TEST(test_complete_history);
	TEST(test_partial_history);
	TEST(test_expandable_segments);
	TEST(test_times_and_segments_only);
	TEST(test_bad_input);
	TEST(test_round_trip);
	return check_done();
}
