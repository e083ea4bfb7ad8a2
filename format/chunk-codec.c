#include "config.h"

/* chunk-codec.c — the column-wise chunk codec (MT_CODEC_COLUMNS_ZSTD).
 *
 * A chunk's events, sorted by (ts, seq), are written column by column into
 * one raw buffer (timestamps as delta varints, sequence numbers, addresses
 * and sizes as zigzag-delta varints, streams and small enums run-length
 * coded), which is compressed as one zstd frame with a content checksum.
 * FORMAT.md ("Chunk blob") describes the bytes. Each kind's columns are
 * listed once (the *_COLUMNS macros) and expand into both the encoder and
 * the decoder, so the two cannot disagree.
 */

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "chunk-codec-private.h"
#include "memtrace-format.h"

/* First byte of every blob: the layout of the header and columns. */
#define BLOB_LAYOUT 1
/* zstd level: level 1 keeps encoding well above 20 M events/s; higher levels
 * gain little on these columns (FORMAT.md). */
#define ZSTD_LEVEL 1

/* ---- varints -------------------------------------------------------------- */

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t zigzag(uint64_t delta)
{
	return (delta << 1) ^ (uint64_t)((int64_t)delta >> 63);
}

static inline uint64_t unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

/* Reads a varint of at most 10 bytes from [*pp, end); false if it is cut
 * short or longer than 64 bits. */
static bool get_varint_slow(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	uint64_t x = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (p == end)
			return false;
		uint8_t b = *p++;
		if (shift == 63 && b > 1)
			return false;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (b < 0x80) {
			*pp = p;
			*v = x;
			return true;
		}
	}
	return false;
}

static inline bool get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	if (p < end && *p < 0x80) {
		*v = *p;
		*pp = p + 1;
		return true;
	}
	return get_varint_slow(pp, end, v);
}

/* ---- columns ---------------------------------------------------------------
 *
 * Column types (each value is one field of each event, in event order):
 *   DELTA   varint of (v - previous v); only for ts, which is sorted
 *   ZDELTA  zigzag varint of (v - previous v), wrapping, first vs 0
 *   END     zigzag varint of (v - ts of the same event), wrapping
 *   PLAIN   varint of v
 *   RLE     runs: varint value, varint run length (>= 1), covering n events
 * Each column entry is C(TYPE, field, largest allowed value).
 */

#define COMMON_COLUMNS(C)                                                                          \
	C(DELTA, ev->ts, UINT64_MAX)                                                               \
	C(ZDELTA, ev->seq, UINT64_MAX)

#define ALLOC_COLUMNS(C)                                                                           \
	C(ZDELTA, ev->alloc.address, UINT64_MAX)                                                   \
	C(ZDELTA, ev->alloc.bytes, UINT64_MAX)                                                     \
	C(RLE, ev->alloc.stream, UINT64_MAX)                                                       \
	C(ZDELTA, ev->alloc.correlation, UINT64_MAX)                                               \
	C(RLE, ev->alloc.reuse_delay, UINT64_MAX)                                                  \
	C(RLE, ev->alloc.site, UINT32_MAX)                                                         \
	C(RLE, ev->alloc.layer, UINT8_MAX)                                                         \
	C(RLE, ev->alloc.mem_kind, UINT8_MAX)                                                      \
	C(RLE, ev->alloc.api, UINT8_MAX)

#define FAILED_COLUMNS(C)                                                                          \
	C(ZDELTA, ev->failed.bytes, UINT64_MAX)                                                    \
	C(ZDELTA, ev->failed.free_bytes, UINT64_MAX)                                               \
	C(RLE, ev->failed.stream, UINT64_MAX)                                                      \
	C(RLE, ev->failed.error, UINT32_MAX)                                                       \
	C(RLE, ev->failed.site, UINT32_MAX)                                                        \
	C(RLE, ev->failed.layer, UINT8_MAX)                                                        \
	C(RLE, ev->failed.api, UINT8_MAX)

#define KERNEL_COLUMNS(C)                                                                          \
	C(END, ev->kernel.end, UINT64_MAX)                                                         \
	C(RLE, ev->kernel.stream, UINT64_MAX)                                                      \
	C(ZDELTA, ev->kernel.correlation, UINT64_MAX)                                              \
	C(PLAIN, ev->kernel.name, UINT32_MAX)                                                      \
	C(PLAIN, ev->kernel.grid[0], UINT32_MAX)                                                   \
	C(PLAIN, ev->kernel.grid[1], UINT32_MAX)                                                   \
	C(PLAIN, ev->kernel.grid[2], UINT32_MAX)                                                   \
	C(PLAIN, ev->kernel.block[0], UINT32_MAX)                                                  \
	C(PLAIN, ev->kernel.block[1], UINT32_MAX)                                                  \
	C(PLAIN, ev->kernel.block[2], UINT32_MAX)                                                  \
	C(PLAIN, ev->kernel.shared_bytes, UINT32_MAX)

#define COPY_COLUMNS(C)                                                                            \
	C(END, ev->copy.end, UINT64_MAX)                                                           \
	C(ZDELTA, ev->copy.bytes, UINT64_MAX)                                                      \
	C(RLE, ev->copy.stream, UINT64_MAX)                                                        \
	C(RLE, ev->copy.copy_kind, UINT8_MAX)

#define RANGE_COLUMNS(C)                                                                           \
	C(END, ev->range.end, UINT64_MAX)                                                          \
	C(PLAIN, ev->range.name, UINT32_MAX)                                                       \
	C(RLE, ev->range.domain, UINT32_MAX)                                                       \
	C(RLE, ev->range.thread, UINT32_MAX)                                                       \
	C(PLAIN, ev->range.depth, UINT32_MAX)

#define SAMPLE_COLUMNS(C)                                                                          \
	C(ZDELTA, ev->sample.used_bytes, UINT64_MAX)                                               \
	C(ZDELTA, ev->sample.process_bytes, UINT64_MAX)

#define POOL_COLUMNS(C)                                                                            \
	C(RLE, ev->pool.pool, UINT64_MAX)                                                          \
	C(ZDELTA, ev->pool.reserved_bytes, UINT64_MAX)                                             \
	C(ZDELTA, ev->pool.used_bytes, UINT64_MAX)                                                 \
	C(RLE, ev->pool.op, UINT8_MAX)

/* Calls X(columns macro) with the column list of `kind` in a switch. */
#define FOR_KIND(kind, X, on_unknown)                                                              \
	switch (kind) {                                                                            \
	case MT_EVENT_ALLOC:                                                                       \
	case MT_EVENT_FREE:                                                                        \
		X(ALLOC_COLUMNS);                                                                  \
		break;                                                                             \
	case MT_EVENT_ALLOC_FAILED:                                                                \
		X(FAILED_COLUMNS);                                                                 \
		break;                                                                             \
	case MT_EVENT_KERNEL:                                                                      \
		X(KERNEL_COLUMNS);                                                                 \
		break;                                                                             \
	case MT_EVENT_MEMCPY:                                                                      \
	case MT_EVENT_MEMSET:                                                                      \
		X(COPY_COLUMNS);                                                                   \
		break;                                                                             \
	case MT_EVENT_RANGE:                                                                       \
		X(RANGE_COLUMNS);                                                                  \
		break;                                                                             \
	case MT_EVENT_SAMPLE:                                                                      \
		X(SAMPLE_COLUMNS);                                                                 \
		break;                                                                             \
	case MT_EVENT_POOL:                                                                        \
		X(POOL_COLUMNS);                                                                   \
		break;                                                                             \
	default:                                                                                   \
		on_unknown;                                                                        \
	}

/* Worst-case raw bytes per event of a column type and of a kind. */
#define WIDTH_DELTA 10
#define WIDTH_ZDELTA 10
#define WIDTH_END 10
#define WIDTH_PLAIN 10
#define WIDTH_RLE 20
#define WIDTH_OF(type, field, max) +WIDTH_##type
#define SUM_WIDTH(COLUMNS) width = COMMON_COLUMNS(WIDTH_OF) COLUMNS(WIDTH_OF)

static size_t max_bytes_per_event(unsigned kind)
{
	size_t width = 0;
	FOR_KIND(kind, SUM_WIDTH, width = 0);
	return width;
}

/* ---- encoder ---------------------------------------------------------------- */

#define ENC_DELTA(field) ENC_WITH(field, v_ - prev_)
#define ENC_ZDELTA(field) ENC_WITH(field, zigzag(v_ - prev_))
#define ENC_END(field) ENC_WITH(field, zigzag(v_ - ev->ts))
#define ENC_PLAIN(field) ENC_WITH(field, v_)
#define ENC_WITH(field, coded)                                                                     \
	do {                                                                                       \
		uint64_t prev_ = 0;                                                                \
		for (size_t i_ = 0; i_ < n; i_++) {                                                \
			const struct mt_event *ev = &e[i_];                                        \
			uint64_t v_ = (field);                                                     \
			p = put_varint(p, coded);                                                  \
			prev_ = v_;                                                                \
		}                                                                                  \
		(void)prev_;                                                                       \
	} while (0)
#define ENC_RLE(field)                                                                             \
	do {                                                                                       \
		size_t i_ = 0;                                                                     \
		while (i_ < n) {                                                                   \
			const struct mt_event *ev = &e[i_];                                        \
			uint64_t v_ = (field);                                                     \
			size_t j_ = i_ + 1;                                                        \
			for (; j_ < n; j_++) {                                                     \
				ev = &e[j_];                                                       \
				if ((uint64_t)(field) != v_)                                       \
					break;                                                     \
			}                                                                          \
			p = put_varint(p, v_);                                                     \
			p = put_varint(p, j_ - i_);                                                \
			i_ = j_;                                                                   \
		}                                                                                  \
	} while (0)
#define ENC_COLUMN(type, field, max) ENC_##type(field);
#define ENC_ALL(COLUMNS)                                                                           \
	do {                                                                                       \
		COMMON_COLUMNS(ENC_COLUMN)                                                         \
		COLUMNS(ENC_COLUMN)                                                                \
	} while (0)

/* Writes the columns of n sorted events of `kind` at out; returns the end. */
static uint8_t *encode_columns(unsigned kind, const struct mt_event *e, size_t n, uint8_t *out)
{
	uint8_t *p = out;
	FOR_KIND(kind, ENC_ALL, return NULL);
	return p;
}

static bool before(const struct mt_event *a, const struct mt_event *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->seq < b->seq);
}

/* Stable bottom-up merge sort of an index array by (ts, seq). */
static int sort_order(const struct mt_event *events, size_t n, uint32_t **order_out)
{
	uint32_t *a = malloc(n * sizeof(*a));
	uint32_t *b = malloc(n * sizeof(*b));
	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		a[i] = (uint32_t)i;
	for (size_t width = 1; width < n; width *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * width) {
			size_t mid = lo + width < n ? lo + width : n;
			size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
			size_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				b[k++] = before(&events[a[j]], &events[a[i]]) ? a[j++] : a[i++];
			while (i < mid)
				b[k++] = a[i++];
			while (j < hi)
				b[k++] = a[j++];
		}
		uint32_t *t = a;
		a = b;
		b = t;
	}
	free(b);
	*order_out = a;
	return 0;
}

/* The events in (ts, seq) order: `events` itself when already sorted, else
 * a sorted copy stored in *copy (to free). */
static int sorted_events(const struct mt_event *events, size_t n, const struct mt_event **sorted,
                         struct mt_event **copy)
{
	*copy = NULL;
	*sorted = events;
	size_t i = 1;
	while (i < n && !before(&events[i], &events[i - 1]))
		i++;
	if (i >= n)
		return 0;
	uint32_t *order;
	int rc = sort_order(events, n, &order);
	if (rc < 0)
		return rc;
	*copy = malloc(n * sizeof(**copy));
	if (!*copy) {
		free(order);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		(*copy)[i] = events[order[i]];
	free(order);
	*sorted = *copy;
	return 0;
}

/* One zstd compression and one decompression context per thread, kept for
 * the thread's life (compression contexts are costly to set up). */
static pthread_key_t cctx_key, dctx_key;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

static void free_cctx(void *c)
{
	ZSTD_freeCCtx(c);
}

static void free_dctx(void *d)
{
	ZSTD_freeDCtx(d);
}

static void make_keys(void)
{
	pthread_key_create(&cctx_key, free_cctx);
	pthread_key_create(&dctx_key, free_dctx);
}

static ZSTD_CCtx *thread_cctx(void)
{
	pthread_once(&keys_once, make_keys);
	ZSTD_CCtx *c = pthread_getspecific(cctx_key);
	if (c)
		return c;
	c = ZSTD_createCCtx();
	if (!c)
		return NULL;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, ZSTD_LEVEL)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1)) ||
	    pthread_setspecific(cctx_key, c) != 0) {
		ZSTD_freeCCtx(c);
		return NULL;
	}
	return c;
}

static ZSTD_DCtx *thread_dctx(void)
{
	pthread_once(&keys_once, make_keys);
	ZSTD_DCtx *d = pthread_getspecific(dctx_key);
	if (d)
		return d;
	d = ZSTD_createDCtx();
	if (d && pthread_setspecific(dctx_key, d) != 0) {
		ZSTD_freeDCtx(d);
		return NULL;
	}
	return d;
}

int mt_chunk_encode(unsigned kind, const struct mt_event *events, size_t n, void **blob,
                    size_t *blob_len)
{
	size_t width = max_bytes_per_event(kind);
	if (width == 0 || n > MT_CHUNK_MAX_EVENTS || (n > 0 && !events) || !blob || !blob_len)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (events[i].kind != kind)
			return -EINVAL;

	const struct mt_event *sorted;
	struct mt_event *copy = NULL;
	uint8_t *raw = NULL, *out = NULL;
	int rc = sorted_events(events, n, &sorted, &copy);
	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	raw = malloc(n * width + 1);
	ZSTD_CCtx *cctx = thread_cctx();
	if (!raw || !cctx)
		goto out;
	size_t raw_len = (size_t)(encode_columns(kind, sorted, n, raw) - raw);

	size_t bound = 2 + 2 * 10 + ZSTD_compressBound(raw_len);
	out = malloc(bound);
	if (!out)
		goto out;
	uint8_t *p = out;
	*p++ = BLOB_LAYOUT;
	*p++ = (uint8_t)kind;
	p = put_varint(p, n);
	p = put_varint(p, raw_len);
	size_t header = (size_t)(p - out);
	size_t z = ZSTD_compress2(cctx, p, bound - header, raw, raw_len);
	if (ZSTD_isError(z)) {
		rc = -EIO;
		goto out;
	}
	*blob = out;
	*blob_len = header + z;
	out = NULL;
	rc = 0;
out:
	free(out);
	free(raw);
	free(copy);
	return rc;
}

/* ---- decoder ---------------------------------------------------------------- */

#define DEC_DELTA(field, max) DEC_WITH(field, max, prev_ + z_)
#define DEC_ZDELTA(field, max) DEC_WITH(field, max, prev_ + unzigzag(z_))
#define DEC_END(field, max) DEC_WITH(field, max, ev->ts + unzigzag(z_))
#define DEC_PLAIN(field, max) DEC_WITH(field, max, z_)
#define DEC_WITH(field, max, value)                                                                \
	do {                                                                                       \
		uint64_t prev_ = 0;                                                                \
		for (size_t i_ = 0; i_ < n; i_++) {                                                \
			struct mt_event *ev = &e[i_];                                              \
			uint64_t z_;                                                               \
			if (!get_varint(&p, end, &z_))                                             \
				return "column cut short";                                         \
			uint64_t v_ = (value);                                                     \
			if (v_ > (uint64_t)(max))                                                  \
				return "value out of range";                                       \
			(field) = v_;                                                              \
			prev_ = v_;                                                                \
		}                                                                                  \
		(void)prev_;                                                                       \
	} while (0)
#define DEC_RLE(field, max)                                                                        \
	do {                                                                                       \
		size_t i_ = 0;                                                                     \
		while (i_ < n) {                                                                   \
			uint64_t v_, run_;                                                         \
			if (!get_varint(&p, end, &v_) || !get_varint(&p, end, &run_))              \
				return "column cut short";                                         \
			if (v_ > (uint64_t)(max))                                                  \
				return "value out of range";                                       \
			if (run_ == 0 || run_ > n - i_)                                            \
				return "bad run length";                                           \
			for (size_t j_ = i_ + run_; i_ < j_; i_++) {                               \
				struct mt_event *ev = &e[i_];                                      \
				(field) = v_;                                                      \
			}                                                                          \
		}                                                                                  \
	} while (0)
#define DEC_COLUMN(type, field, max) DEC_##type(field, max);
#define DEC_ALL(COLUMNS)                                                                           \
	do {                                                                                       \
		COMMON_COLUMNS(DEC_COLUMN)                                                         \
		COLUMNS(DEC_COLUMN)                                                                \
	} while (0)

/* Fills the n events at e (whose ts and seq columns come first) from the
 * columns in [p, end); NULL on success, else what was wrong. */
static const char *decode_columns(unsigned kind, const uint8_t *p, const uint8_t *end,
                                  struct mt_event *e, size_t n)
{
	FOR_KIND(kind, DEC_ALL, return "unknown kind");
	if (p != end)
		return "trailing bytes after the columns";
	return NULL;
}

/* Parses the blob header; on success *frame points at the zstd frame. */
static const char *parse_header(const uint8_t *p, const uint8_t *end, unsigned *kind,
                                uint64_t *count, uint64_t *raw_len, const uint8_t **frame)
{
	if (end - p < 2)
		return "blob too short";
	if (p[0] != BLOB_LAYOUT)
		return "unknown blob layout";
	*kind = p[1];
	p += 2;
	if (!get_varint(&p, end, count) || !get_varint(&p, end, raw_len))
		return "header cut short";
	*frame = p;
	return NULL;
}

int mt_chunk_blob_info(const void *blob, size_t blob_len, unsigned *kind, uint64_t *count,
                       uint64_t *raw_len)
{
	const uint8_t *frame;
	if (!blob)
		return -EBADMSG;
	return parse_header(blob, (const uint8_t *)blob + blob_len, kind, count, raw_len, &frame)
	               ? -EBADMSG
	               : 0;
}

/* Checks the header and frame of a blob and decompresses it into *raw. */
static const char *decompress_blob(unsigned kind, const uint8_t *blob, size_t blob_len,
                                   size_t expected, uint8_t **raw, size_t *raw_len_out)
{
	const uint8_t *end = blob + blob_len, *frame;
	unsigned blob_kind;
	uint64_t count, raw_len;
	const char *why = parse_header(blob, end, &blob_kind, &count, &raw_len, &frame);
	if (why)
		return why;
	if (blob_kind != kind)
		return "blob holds another event kind";
	if (count != expected)
		return "event count differs from the chunk row";
	if (count > MT_CHUNK_MAX_EVENTS)
		return "too many events";
	if (raw_len > count * max_bytes_per_event(kind) || raw_len < count)
		return "impossible column length";

	size_t frame_len = (size_t)(end - frame);
	/* A zstd frame (magic FD2FB528 little-endian) whose descriptor sets
	 * the content checksum flag (RFC 8878, 3.1.1.1.1). */
	static const uint8_t zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	if (frame_len < 5 || memcmp(frame, zstd_magic, 4) != 0)
		return "no zstd frame";
	if (ZSTD_getFrameContentSize(frame, frame_len) != raw_len || !(frame[4] & 0x04))
		return "zstd frame header differs from the blob header";
	size_t zlen = ZSTD_findFrameCompressedSize(frame, frame_len);
	if (ZSTD_isError(zlen) || zlen != frame_len)
		return zlen < frame_len ? "trailing bytes after the zstd frame"
		                        : "zstd frame cut short";

	ZSTD_DCtx *dctx = thread_dctx();
	uint8_t *buf = malloc(raw_len + 1);
	if (!dctx || !buf) {
		free(buf);
		return NULL; /* caller sees *raw == NULL: out of memory */
	}
	size_t got = ZSTD_decompressDCtx(dctx, buf, raw_len, frame, frame_len);
	if (ZSTD_isError(got) || got != raw_len) {
		free(buf);
		return "zstd decompression failed (corrupt data or checksum)";
	}
	*raw = buf;
	*raw_len_out = raw_len;
	return NULL;
}

int mt_chunk_decode_why(unsigned kind, const void *blob, size_t blob_len, size_t expected,
                        uint32_t process, uint32_t device, struct mt_event **events, size_t *n,
                        const char **why)
{
	*events = NULL;
	*n = 0;
	*why = NULL;
	if (max_bytes_per_event(kind) == 0) {
		*why = "unknown kind";
		return -EINVAL;
	}
	if (!blob) {
		*why = "no blob";
		return -EBADMSG;
	}
	uint8_t *raw = NULL;
	size_t raw_len = 0;
	*why = decompress_blob(kind, blob, blob_len, expected, &raw, &raw_len);
	if (*why)
		return -EBADMSG;
	if (!raw)
		return -ENOMEM;
	struct mt_event *e = NULL;
	if (expected > 0) {
		e = malloc(expected * sizeof(*e));
		if (!e) {
			free(raw);
			return -ENOMEM;
		}
		const struct mt_event proto = { .process = process,
			                        .device = device,
			                        .kind = (uint8_t)kind };
		for (size_t i = 0; i < expected; i++)
			e[i] = proto;
		*why = decode_columns(kind, raw, raw + raw_len, e, expected);
	}
	free(raw);
	if (*why) {
		free(e);
		return -EBADMSG;
	}
	*events = e;
	*n = expected;
	return 0;
}

int mt_chunk_decode(unsigned kind, const void *blob, size_t blob_len, size_t expected,
                    uint32_t process, uint32_t device, struct mt_event **events, size_t *n)
{
	const char *why;
	return mt_chunk_decode_why(kind, blob, blob_len, expected, process, device, events, n,
	                           &why);
}
