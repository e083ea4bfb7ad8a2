/* test-codec.c — chunk codec round trips: random events of every kind,
 * extremes (0 and UINT64_MAX in every field), equal and out-of-order
 * timestamps, a single event, none; and the decoder's refusals (wrong
 * count or kind, truncation at every length, trailing bytes, flipped bytes). */
#include "config.h"

#include <errno.h>

#include "test-events.h"

/* Encodes, decodes and compares with a stable (ts, seq) sort of the input. */
static void round_trip(unsigned kind, const struct mt_event *in, size_t n)
{
	void *blob = NULL;
	size_t len = 0;
	REQUIRE(mt_chunk_encode(kind, in, n, &blob, &len) == 0);
	CHECK(blob && len > 0);
	struct mt_event *out;
	size_t got;
	REQUIRE(mt_chunk_decode(kind, blob, len, n, 5, 9, &out, &got) == 0);
	REQUIRE(got == n);
	struct mt_event *ref = codec_order_copy(in, n);
	REQUIRE(ref);
	for (size_t i = 0; i < n && !check_failed(); i++) {
		ref[i].process = 5;
		ref[i].device = 9;
		CHECKF(events_equal(&ref[i], &out[i]), "%s: event %zu of %zu differs",
		       mt_event_kind_name(kind), i, n);
	}
	free(ref);
	free(out);
	free(blob);
}

static struct mt_event *random_events(unsigned kind, size_t n, uint64_t *s, int sorted)
{
	struct mt_event *e = calloc(n + 1, sizeof(*e));
	REQUIRE(e);
	uint64_t ts = mt_splitmix64(s) % 1000000;
	for (size_t i = 0; i < n; i++) {
		e[i].kind = (uint8_t)kind;
		e[i].process = 77; /* not stored: decode overrides */
		if (sorted) {
			ts += mt_splitmix64(s) % 3 == 0
			              ? 0
			              : mt_splitmix64(s) % 10000; /* equal timestamps too */
			e[i].ts = ts;
			e[i].seq = i;
		} else {
			e[i].ts =
			        mt_splitmix64(s) % 4 == 0 ? rnd_value(s) : mt_splitmix64(s) % 1000;
			e[i].seq = mt_splitmix64(s) % 3 == 0 ? rnd_value(s) : mt_splitmix64(s) % 50;
		}
		random_payload(&e[i], s);
	}
	return e;
}

/* Every field of every event set to v. */
static void extremes(unsigned kind, uint64_t v)
{
	struct mt_event e[3];
	memset(e, v ? 0xff : 0, sizeof(e));
	for (int i = 0; i < 3; i++) {
		e[i].kind = (uint8_t)kind;
		e[i].ts = v;
		e[i].seq = v - (uint64_t)i; /* distinct, sorted differently from input */
	}
	round_trip(kind, e, 3);
}

static void refusals(unsigned kind, uint64_t *s)
{
	struct mt_event *e = random_events(kind, 50, s, 1);
	void *blob;
	size_t len;
	REQUIRE(mt_chunk_encode(kind, e, 50, &blob, &len) == 0);
	struct mt_event *out = (void *)1;
	size_t n = 1;
	const unsigned char *b = blob;

	CHECK(mt_chunk_decode(kind, blob, len, 49, 0, 0, &out, &n) == -EBADMSG);
	CHECK(out == NULL && n == 0);
	CHECK(mt_chunk_decode(kind, blob, len, 51, 0, 0, &out, &n) == -EBADMSG);
	unsigned other = kind % MT_EVENT_KIND_MAX + 1;
	CHECK(mt_chunk_decode(other, blob, len, 50, 0, 0, &out, &n) == -EBADMSG);
	CHECK(mt_chunk_decode(0, blob, len, 50, 0, 0, &out, &n) == -EINVAL);
	CHECK(mt_chunk_decode(kind, NULL, 0, 0, 0, 0, &out, &n) == -EBADMSG);

	/* Every truncation, each copied to its own buffer so ASan sees reads
	 * past the end. */
	for (size_t cut = 0; cut < len; cut++) {
		unsigned char *t = malloc(cut + 1);
		REQUIRE(t);
		memcpy(t, b, cut);
		CHECKF(mt_chunk_decode(kind, t, cut, 50, 0, 0, &out, &n) == -EBADMSG,
		       "%s cut at %zu of %zu bytes is not refused", mt_event_kind_name(kind), cut,
		       len);
		free(t);
	}
	unsigned char *longer = malloc(len + 1);
	REQUIRE(longer);
	memcpy(longer, b, len);
	longer[len] = 0;
	CHECK(mt_chunk_decode(kind, longer, len + 1, 50, 0, 0, &out, &n) == -EBADMSG);

	/* Each byte flipped: refused, or (where zstd ignores the bit) the very
	 * same events. */
	struct mt_event *good;
	REQUIRE(mt_chunk_decode(kind, blob, len, 50, 1, 2, &good, &n) == 0);
	for (size_t i = 0; i < len; i++) {
		memcpy(longer, b, len);
		longer[i] ^= (unsigned char)(1u << (i % 8));
		int rc = mt_chunk_decode(kind, longer, len, 50, 1, 2, &out, &n);
		CHECKF(rc == 0 || rc == -EBADMSG, "byte %zu flipped: rc %d", i, rc);
		if (rc == 0) {
			CHECK(n == 50);
			for (size_t k = 0; k < n && k < 50; k++)
				CHECKF(events_equal(&good[k], &out[k]),
				       "byte %zu flipped: event %zu decodes differently", i, k);
			free(out);
		}
	}
	free(good);
	free(longer);
	free(blob);

	/* Encoder refusals. */
	e[3].kind = (uint8_t)other;
	CHECK(mt_chunk_encode(kind, e, 50, &blob, &len) == -EINVAL);
	CHECK(mt_chunk_encode(0, e, 0, &blob, &len) == -EINVAL);
	CHECK(mt_chunk_encode(kind, e, (size_t)MT_CHUNK_MAX_EVENTS + 1, &blob, &len) == -EINVAL);
	free(e);
}

static void test_round_trips(void)
{
	static const size_t sizes[] = { 0, 1, 2, 7, 100, 4099 };
	uint64_t s = 42;

	for (unsigned kind = 1; kind <= MT_EVENT_KIND_MAX; kind++) {
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			for (int sorted = 0; sorted < 2; sorted++) {
				struct mt_event *e = random_events(kind, sizes[i], &s, sorted);
				round_trip(kind, e, sizes[i]);
				free(e);
			}
		}
		extremes(kind, 0);
		extremes(kind, UINT64_MAX);
	}
}

static void test_refusals(void)
{
	uint64_t s = 43;

	for (unsigned kind = 1; kind <= MT_EVENT_KIND_MAX; kind++)
		refusals(kind, &s);
}

/* Kernels repeating a few launch configurations, and a new one late (the
 * codec keeps a table of distinct launches per chunk). */
static void test_launch_table(void)
{
	struct mt_event *k = calloc(3000, sizeof(*k));
	REQUIRE(k);
	for (size_t i = 0; i < 3000; i++) {
		k[i].kind = MT_EVENT_KERNEL;
		k[i].ts = 100 * i;
		k[i].seq = i;
		k[i].kernel.end = k[i].ts + 50;
		k[i].kernel.name = (uint32_t)(1 + i % 5);
		k[i].kernel.grid[0] = (uint32_t)(128 << (i % 5));
		k[i].kernel.block[2] = i % 5 == 3 ? UINT32_MAX : 1;
		k[i].kernel.shared_bytes = i >= 2990 ? 4096 : 0;
	}
	round_trip(MT_EVENT_KERNEL, k, 3000);
	free(k);
}

/* n = 0 decodes to no events and a NULL array. */
static void test_empty_chunk(void)
{
	void *blob;
	size_t len, n = 7;
	struct mt_event *out = (void *)1;
	REQUIRE(mt_chunk_encode(MT_EVENT_ALLOC, NULL, 0, &blob, &len) == 0);
	CHECK(mt_chunk_decode(MT_EVENT_ALLOC, blob, len, 0, 0, 0, &out, &n) == 0);
	CHECK(n == 0 && out == NULL);
	free(blob);
}

static void test_names(void)
{
	for (unsigned kind = 1; kind <= MT_EVENT_KIND_MAX; kind++)
		CHECK(mt_event_kind_from_name(mt_event_kind_name(kind)) == kind);
	CHECK(mt_event_kind_name(0) == NULL && mt_event_kind_name(MT_EVENT_KIND_MAX + 1) == NULL);
	CHECK(mt_event_kind_from_name("nonsense") == 0 && mt_event_kind_from_name(NULL) == 0);
	CHECK(strcmp(mt_event_kind_name(MT_EVENT_ALLOC_FAILED), "alloc_failed") == 0);
	CHECK(strcmp(mt_layer_name(MT_LAYER_REQUEST), "request") == 0);
	CHECK(strcmp(mt_mem_kind_name(MT_MEM_ASYNC_POOL), "async_pool") == 0);
	CHECK(strcmp(mt_api_name(MT_API_CU_MEM_CREATE), "cuMemCreate") == 0);
	CHECK(strcmp(mt_api_name(MT_API_MAX + 1), "unknown") == 0);
	CHECK(strcmp(mt_layer_name(9), "unknown") == 0);
}

int main(void)
{
	TEST(test_round_trips);
	TEST(test_refusals);
	TEST(test_launch_table);
	TEST(test_empty_chunk);
	TEST(test_names);
	return check_done();
}
