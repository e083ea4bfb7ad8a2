#include "config.h"

/* chunk-codec.c — the column-wise chunk codec (MT_CODEC_COLUMNS_ZSTD).
 *
 * A chunk's events, sorted by (ts, seq), are written column by column into
 * streams of one raw buffer (timestamp deltas split into first bytes and
 * the rest, sequence numbers as zigzag deltas, each allocation's size with
 * its address predicted from the last address of the same size, streams
 * and small enums run-length coded) behind a directory of stream lengths,
 * and compressed as one zstd frame with a content checksum, a zstd block
 * ending after each large stream. docs/FORMAT.md ("Codec 1") describes the
 * bytes. Each kind's columns are listed once (the *_COLUMNS macros) and
 * expand into both the encoder and the decoder, so the two cannot disagree.
 *
 * Speed: both sides walk the events in blocks of BLOCK events, all columns
 * per block, so the events being worked on stay in cache (a column at a
 * time over a whole chunk would stream the event array through memory once
 * per column). Buffers live per thread and are reused.
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
/* zstd level: on these columns level 3 saves about 3% of the bytes and costs
 * a third of the encoding speed. */
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
	if (end - p < 10)
		return get_varint_slow(pp, end, v);
	/* At least 10 bytes left: no bounds checks inside. */
	uint64_t x = 0;
	for (unsigned shift = 0; shift < 63; shift += 7) {
		uint64_t b = *p++;
		x |= (b & 0x7f) << shift;
		if (b < 0x80) {
			*pp = p;
			*v = x;
			return true;
		}
	}
	if (*p > 1)
		return false;
	*v = x | (uint64_t)*p << 63;
	*pp = p + 1;
	return true;
}

/* ---- address prediction by size ---------------------------------------------- */

#define SIZE_SLOTS_BITS 10
#define SIZE_SLOTS (1u << SIZE_SLOTS_BITS)

struct size_predictor {
	uint64_t last;
	uint64_t value[SIZE_SLOTS];
	uint8_t used[SIZE_SLOTS];
};

static inline size_t size_slot(uint64_t bytes)
{
	return (size_t)((bytes * 0x9e3779b97f4a7c15ull) >> (64 - SIZE_SLOTS_BITS));
}

static inline uint64_t size_predict(const struct size_predictor *sp, size_t slot)
{
	return sp->used[slot] ? sp->value[slot] : sp->last;
}

static inline void size_update(struct size_predictor *sp, size_t slot, uint64_t v)
{
	sp->value[slot] = v;
	sp->used[slot] = 1;
	sp->last = v;
}

/* ---- kernel launch configurations ------------------------------------------- */

/* A kernel's name, grid[3], block[3] and shared_bytes: a training loop
 * launches the same few hundred configurations over and over. */
struct launch {
	uint32_t v[8];
};

/* The distinct launches of a chunk, in order of first use; the encoder
 * finds them through an open-addressing table of index + 1 (0 = empty). */
struct launch_table {
	struct launch *entries;
	size_t n, cap;
	uint32_t *slots;
	size_t slot_cap;
};

static inline void launch_of(const struct mt_event *ev, struct launch *l)
{
	const struct mt_kernel_event *k = &ev->kernel;
	*l = (struct launch){ { k->name, k->grid[0], k->grid[1], k->grid[2], k->block[0],
		                k->block[1], k->block[2], k->shared_bytes } };
}

static inline void launch_set(struct mt_event *ev, const struct launch *l)
{
	struct mt_kernel_event *k = &ev->kernel;
	k->name = l->v[0];
	memcpy(k->grid, &l->v[1], sizeof(k->grid));
	memcpy(k->block, &l->v[4], sizeof(k->block));
	k->shared_bytes = l->v[7];
}

static inline size_t launch_hash(const struct launch *l)
{
	uint64_t h = 0;
	for (int i = 0; i < 8; i++)
		h = (h ^ l->v[i]) * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 32);
}

static int launch_push(struct launch_table *t, const struct launch *l)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct launch *e = realloc(t->entries, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		t->entries = e;
		t->cap = cap;
	}
	t->entries[t->n++] = *l;
	return 0;
}

/* Empties the table; an encoder of n events also gets an empty hash table
 * of at least 2n slots. */
static int launch_reset(struct launch_table *t, size_t n, int encoder)
{
	t->n = 0;
	if (!encoder)
		return 0;
	size_t cap = 64;
	while (cap < 2 * n)
		cap *= 2;
	if (cap > t->slot_cap) {
		uint32_t *s = realloc(t->slots, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		t->slots = s;
		t->slot_cap = cap;
	}
	memset(t->slots, 0, t->slot_cap * sizeof(*t->slots));
	return 0;
}

/* Index of l in the table, adding it (and setting *added) if new; -1 when
 * out of memory. */
static inline long launch_find(struct launch_table *t, const struct launch *l, int *added)
{
	size_t mask = t->slot_cap - 1;
	size_t h = launch_hash(l) & mask;
	while (t->slots[h]) {
		if (memcmp(&t->entries[t->slots[h] - 1], l, sizeof(*l)) == 0) {
			*added = 0;
			return (long)t->slots[h] - 1;
		}
		h = (h + 1) & mask;
	}
	if (launch_push(t, l) < 0)
		return -1;
	t->slots[h] = (uint32_t)t->n;
	*added = 1;
	return (long)t->n - 1;
}

/* Per-thread state, kept for the thread's life: zstd contexts (costly to
 * set up), the predictor and launch tables and the raw column buffers. */
struct codec_ctx {
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
	struct size_predictor sizes;
	struct launch_table launches;
	uint8_t *enc_buf, *dec_buf;
	size_t enc_cap, dec_cap;
};

/* Events per block (see the top of this file). */
#define BLOCK 256

/* ---- columns ---------------------------------------------------------------
 *
 * Column types (each value is one field of each event, in event order):
 *   DELTA   v - previous v (ts only: sorted), split in two streams: the
 *           first byte of its varint in one, the rest of the varint
 *           (v >> 7, when the first byte has its top bit set) in a second
 *   ZDELTA  zigzag varint of (v - previous v), wrapping, first vs 0
 *   END     zigzag varint of (v - ts of the same event), wrapping
 *   PLAIN   varint of v
 *   SIZE_ADDRESS  alloc.bytes as a varint, then the address as a zigzag
 *           varint of (address - the address of the last event whose bytes
 *           hashed to the same slot, or of the previous event if none did):
 *           allocators hand the same addresses out again for the same
 *           sizes, and a repeated (size, address) pair is one zstd match
 *   RLE     runs: varint value, varint run length (>= 1), covering n events
 *   LAUNCH  kernel name, grid, block and shared_bytes together: stream A
 *           holds each event's index in the chunk's table of distinct
 *           launches; an index equal to the table's size adds the next
 *           entry, whose 8 values (varints) come from stream B
 * Most types are one stream; DELTA and LAUNCH are two. The raw buffer holds a
 * directory (each stream's length as a varint, in column order) and then
 * the streams back to back.
 * Each column entry is C(TYPE, field, largest allowed value).
 */

#define COMMON_COLUMNS(C)                                                                          \
	C(DELTA, ev->ts, UINT64_MAX)                                                               \
	C(ZDELTA, ev->seq, UINT64_MAX)

#define ALLOC_COLUMNS(C)                                                                           \
	C(SIZE_ADDRESS, ev->alloc.address, UINT64_MAX)                                             \
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
	C(LAUNCH, ev->kernel, UINT32_MAX)

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

/* Number of columns of a kind (at most MAX_COLUMNS). */
#define MAX_COLUMNS 16
#define SLOTS_DELTA 2
#define SLOTS_ZDELTA 1
#define SLOTS_END 1
#define SLOTS_PLAIN 1
#define SLOTS_SIZE_ADDRESS 1
#define SLOTS_RLE 1
#define SLOTS_LAUNCH 2
#define ONE(type, field, max) +SLOTS_##type
#define COUNT_COLUMNS(COLUMNS) count = COMMON_COLUMNS(ONE) COLUMNS(ONE)

static size_t column_count(unsigned kind)
{
	size_t count = 0;
	FOR_KIND(kind, COUNT_COLUMNS, count = 0);
	return count;
}

/* Worst-case raw bytes per event of a column type and of a kind. */
#define WIDTH_DELTA 10 /* per stream */
#define WIDTH_ZDELTA 10
#define WIDTH_END 10
#define WIDTH_PLAIN 10
#define WIDTH_SIZE_ADDRESS 20
#define WIDTH_RLE 20
#define WIDTH_LAUNCH 40 /* per stream: an index, or 8 values of a new launch */
#define WIDTH_OF(type, field, max) +SLOTS_##type *WIDTH_##type
#define SUM_WIDTH(COLUMNS) width = COMMON_COLUMNS(WIDTH_OF) COLUMNS(WIDTH_OF)

static size_t max_bytes_per_event(unsigned kind)
{
	size_t width = 0;
	FOR_KIND(kind, SUM_WIDTH, width = 0);
	return width;
}

/* ---- per-thread state ---------------------------------------------------------- */

static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;

static void free_ctx(void *p)
{
	struct codec_ctx *c = p;
	ZSTD_freeCCtx(c->cctx);
	ZSTD_freeDCtx(c->dctx);
	free(c->enc_buf);
	free(c->dec_buf);
	free(c->launches.entries);
	free(c->launches.slots);
	free(c);
}

static void make_key(void)
{
	pthread_key_create(&ctx_key, free_ctx);
}

/* This thread's state, with a compression (compress) or decompression
 * context; NULL when out of memory. */
static struct codec_ctx *thread_ctx(int compress)
{
	pthread_once(&ctx_once, make_key);
	struct codec_ctx *c = pthread_getspecific(ctx_key);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c || pthread_setspecific(ctx_key, c) != 0) {
			free(c);
			return NULL;
		}
	}
	if (compress && !c->cctx) {
		ZSTD_CCtx *z = ZSTD_createCCtx();
		if (!z ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, ZSTD_LEVEL)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_contentSizeFlag, 1))) {
			ZSTD_freeCCtx(z);
			return NULL;
		}
		c->cctx = z;
	}
	if (!compress && !c->dctx && !(c->dctx = ZSTD_createDCtx()))
		return NULL;
	return c;
}

/* Grows a per-thread buffer to at least len bytes; NULL when out of memory. */
static uint8_t *scratch(uint8_t **buf, size_t *cap, size_t len)
{
	if (len > *cap) {
		uint8_t *b = realloc(*buf, len);
		if (!b)
			return NULL;
		*buf = b;
		*cap = len;
	}
	return *buf;
}

/* ---- encoder ---------------------------------------------------------------- */

/* Where a column is being written, and its running state. */
struct enc_col {
	uint8_t *start, *p;
	uint64_t prev;
	uint64_t run_value, run_len; /* RLE: the open run */
};

#define ENC_DELTA(cs, field)                                                                       \
	do {                                                                                       \
		uint8_t *a_ = cs[0].p, *b_ = cs[1].p;                                              \
		for (size_t i_ = base; i_ < lim; i_++) {                                           \
			const struct mt_event *ev = &e[i_];                                        \
			uint64_t v_ = (field), d_ = v_ - cs->prev;                                 \
			if (d_ < 0x80) {                                                           \
				*a_++ = (uint8_t)d_;                                               \
			} else {                                                                   \
				*a_++ = (uint8_t)(d_ | 0x80);                                      \
				b_ = put_varint(b_, d_ >> 7);                                      \
			}                                                                          \
			cs->prev = v_;                                                             \
		}                                                                                  \
		cs[0].p = a_;                                                                      \
		cs[1].p = b_;                                                                      \
	} while (0)
#define ENC_ZDELTA(cs, field) ENC_WITH(cs, field, zigzag(v_ - cs->prev))
#define ENC_END(cs, field) ENC_WITH(cs, field, zigzag(v_ - ev->ts))
#define ENC_PLAIN(cs, field) ENC_WITH(cs, field, v_)
#define ENC_WITH(cs, field, coded)                                                                 \
	do {                                                                                       \
		uint8_t *p_ = cs->p;                                                               \
		for (size_t i_ = base; i_ < lim; i_++) {                                           \
			const struct mt_event *ev = &e[i_];                                        \
			uint64_t v_ = (field);                                                     \
			p_ = put_varint(p_, coded);                                                \
			cs->prev = v_;                                                             \
		}                                                                                  \
		cs->p = p_;                                                                        \
	} while (0)
#define ENC_SIZE_ADDRESS(cs, field)                                                                \
	do {                                                                                       \
		uint8_t *p_ = cs->p;                                                               \
		for (size_t i_ = base; i_ < lim; i_++) {                                           \
			const struct mt_event *ev = &e[i_];                                        \
			uint64_t v_ = (field);                                                     \
			size_t slot_ = size_slot(ev->alloc.bytes);                                 \
			p_ = put_varint(p_, ev->alloc.bytes);                                      \
			p_ = put_varint(p_, zigzag(v_ - size_predict(sizes, slot_)));              \
			size_update(sizes, slot_, v_);                                             \
		}                                                                                  \
		cs->p = p_;                                                                        \
	} while (0)
#define ENC_LAUNCH(cs, field)                                                                      \
	do {                                                                                       \
		uint8_t *a_ = cs[0].p, *b_ = cs[1].p;                                              \
		for (size_t i_ = base; i_ < lim; i_++) {                                           \
			struct launch l_;                                                          \
			int added_;                                                                \
			launch_of(&e[i_], &l_);                                                    \
			long idx_ = launch_find(launches, &l_, &added_);                           \
			if (idx_ < 0)                                                              \
				return NULL;                                                       \
			a_ = put_varint(a_, (uint64_t)idx_);                                       \
			for (int k_ = 0; added_ && k_ < 8; k_++)                                   \
				b_ = put_varint(b_, l_.v[k_]);                                     \
		}                                                                                  \
		cs[0].p = a_;                                                                      \
		cs[1].p = b_;                                                                      \
	} while (0)
#define ENC_RLE(cs, field)                                                                         \
	do {                                                                                       \
		for (size_t i_ = base; i_ < lim; i_++) {                                           \
			const struct mt_event *ev = &e[i_];                                        \
			uint64_t v_ = (field);                                                     \
			if (cs->run_len > 0 && v_ == cs->run_value) {                              \
				cs->run_len++;                                                     \
				continue;                                                          \
			}                                                                          \
			if (cs->run_len > 0) {                                                     \
				cs->p = put_varint(cs->p, cs->run_value);                          \
				cs->p = put_varint(cs->p, cs->run_len);                            \
			}                                                                          \
			cs->run_value = v_;                                                        \
			cs->run_len = 1;                                                           \
		}                                                                                  \
	} while (0)
#define ENC_COLUMN(type, field, max)                                                               \
	do {                                                                                       \
		struct enc_col *cs_ = &col[c_];                                                    \
		c_ += SLOTS_##type;                                                                \
		ENC_##type(cs_, field);                                                            \
	} while (0);
#define ENC_ALL(COLUMNS)                                                                           \
	do {                                                                                       \
		COMMON_COLUMNS(ENC_COLUMN)                                                         \
		COLUMNS(ENC_COLUMN)                                                                \
	} while (0)
/* Each column gets a region of n times its worst-case width. */
#define ENC_REGION(type, field, max)                                                               \
	for (size_t s_ = 0; s_ < SLOTS_##type; s_++) {                                             \
		col[c_].start = col[c_].p = region;                                                \
		region += n * WIDTH_##type;                                                        \
		c_++;                                                                              \
	}
#define ENC_REGIONS(COLUMNS)                                                                       \
	do {                                                                                       \
		COMMON_COLUMNS(ENC_REGION)                                                         \
		COLUMNS(ENC_REGION)                                                                \
	} while (0)

/* Writes the directory and columns of n sorted events of `kind` into the
 * thread's buffer; ends[c] receives the offset where stream c ends (the
 * directory goes with stream 0; the last is the raw length). NULL when out
 * of memory. */
static uint8_t *encode_columns(unsigned kind, const struct mt_event *e, size_t n,
                               struct codec_ctx *ctx, size_t *ends)
{
	size_t ncol = column_count(kind);
	size_t head = ncol * 10;
	uint8_t *out =
	        scratch(&ctx->enc_buf, &ctx->enc_cap, head + n * max_bytes_per_event(kind) + 1);
	if (!out)
		return NULL;
	struct enc_col col[MAX_COLUMNS] = { { 0 } };
	struct size_predictor *sizes = &ctx->sizes;
	memset(sizes->used, 0, sizeof(sizes->used));
	sizes->last = 0;
	struct launch_table *launches = &ctx->launches;
	if (launch_reset(launches, kind == MT_EVENT_KERNEL ? n : 0, 1) < 0)
		return NULL;
	uint8_t *region = out + head;
	size_t c_ = 0;
	FOR_KIND(kind, ENC_REGIONS, return NULL);
	for (size_t base = 0; base < n; base += BLOCK) {
		size_t lim = base + BLOCK < n ? base + BLOCK : n;
		c_ = 0;
		FOR_KIND(kind, ENC_ALL, return NULL);
	}
	/* Close the open runs, then pack directory and columns together
	 * (each column moves down: the directory is at most `head` long). */
	uint8_t *p = out;
	for (size_t c = 0; c < ncol; c++) {
		if (col[c].run_len > 0) {
			col[c].p = put_varint(col[c].p, col[c].run_value);
			col[c].p = put_varint(col[c].p, col[c].run_len);
		}
		p = put_varint(p, (uint64_t)(col[c].p - col[c].start));
	}
	for (size_t c = 0; c < ncol; c++) {
		size_t len = (size_t)(col[c].p - col[c].start);
		memmove(p, col[c].start, len);
		p += len;
		ends[c] = (size_t)(p - out);
	}
	return out;
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

/* Streams shorter than this share a zstd block with the next one. */
#define FLUSH_MIN 4096

/* Compresses raw[0, ends[n - 1]) as one zstd frame, ending a block after
 * each stream (after those shorter than FLUSH_MIN: after the next) so that
 * every block's entropy tables fit one column. */
static int compress_streams(ZSTD_CCtx *c, const uint8_t *raw, const size_t *ends, size_t n,
                            uint8_t *dst, size_t cap, size_t *written)
{
	if (ZSTD_isError(ZSTD_CCtx_reset(c, ZSTD_reset_session_only)) ||
	    ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(c, ends[n - 1])))
		return -EIO;
	ZSTD_outBuffer out = { dst, cap, 0 };
	size_t from = 0;
	for (size_t i = 0; i < n; i++) {
		int last = i + 1 == n;
		if (!last && ends[i] - from < FLUSH_MIN)
			continue;
		ZSTD_inBuffer in = { raw, ends[i], from };
		size_t left;
		do {
			left = ZSTD_compressStream2(c, &out, &in, last ? ZSTD_e_end : ZSTD_e_flush);
			if (ZSTD_isError(left) || (left > 0 && out.pos == out.size))
				return -EIO;
		} while (left > 0);
		from = ends[i];
	}
	*written = out.pos;
	return 0;
}

int mt_chunk_encode(unsigned kind, const struct mt_event *events, size_t n, void **blob,
                    size_t *blob_len)
{
	if (max_bytes_per_event(kind) == 0 || n > MT_CHUNK_MAX_EVENTS || (n > 0 && !events) ||
	    !blob || !blob_len)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (events[i].kind != kind)
			return -EINVAL;

	const struct mt_event *sorted;
	struct mt_event *copy = NULL;
	uint8_t *out = NULL;
	int rc = sorted_events(events, n, &sorted, &copy);
	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	struct codec_ctx *ctx = thread_ctx(1);
	size_t ends[MAX_COLUMNS], ncol = column_count(kind);
	uint8_t *raw = ctx ? encode_columns(kind, sorted, n, ctx, ends) : NULL;
	if (!raw)
		goto out;
	size_t raw_len = ends[ncol - 1];
	size_t bound = 2 + 2 * 10 + ZSTD_compressBound(raw_len) + ncol * 16;
	out = malloc(bound);
	if (!out)
		goto out;
	uint8_t *p = out;
	*p++ = BLOB_LAYOUT;
	*p++ = (uint8_t)kind;
	p = put_varint(p, n);
	p = put_varint(p, raw_len);
	size_t header = (size_t)(p - out);
	size_t z;
	rc = compress_streams(ctx->cctx, raw, ends, ncol, p, bound - header, &z);
	if (rc < 0)
		goto out;
	*blob = out;
	*blob_len = header + z;
	out = NULL;
	rc = 0;
out:
	free(out);
	free(copy);
	return rc;
}

/* ---- decoder ---------------------------------------------------------------- */

/* Where a column is being read, and its running state. */
struct dec_col {
	const uint8_t *p, *end;
	uint64_t prev;
	uint64_t run_value, run_left; /* RLE: the current run */
};

#define DEC_DELTA(cs, field, max)                                                                  \
	do {                                                                                       \
		const uint8_t *a_ = cs[0].p, *b_ = cs[1].p;                                        \
		if ((size_t)(cs[0].end - a_) < lim - base)                                         \
			return "column cut short";                                                 \
		for (size_t i_ = base; i_ < lim; i_++) {                                           \
			struct mt_event *ev = &e[i_];                                              \
			*ev = *proto; /* ts is the first column: it starts each event */           \
			uint64_t d_ = *a_++;                                                       \
			if (d_ >= 0x80) {                                                          \
				uint64_t rest_;                                                    \
				if (!get_varint(&b_, cs[1].end, &rest_))                           \
					return "column cut short";                                 \
				if (rest_ >> 57)                                                   \
					return "value out of range";                               \
				d_ = (d_ & 0x7f) | rest_ << 7;                                     \
			}                                                                          \
			(field) = cs->prev += d_;                                                  \
		}                                                                                  \
		cs[0].p = a_;                                                                      \
		cs[1].p = b_;                                                                      \
	} while (0)
#define DEC_ZDELTA(cs, field, max) DEC_WITH(cs, field, max, cs->prev + unzigzag(z_))
#define DEC_END(cs, field, max) DEC_WITH(cs, field, max, ev->ts + unzigzag(z_))
#define DEC_PLAIN(cs, field, max) DEC_WITH(cs, field, max, z_)
#define DEC_WITH(cs, field, max, value)                                                            \
	do {                                                                                       \
		const uint8_t *p_ = cs->p, *end_ = cs->end;                                        \
		for (size_t i_ = base; i_ < lim; i_++) {                                           \
			struct mt_event *ev = &e[i_];                                              \
			uint64_t z_;                                                               \
			if (!get_varint(&p_, end_, &z_))                                           \
				return "column cut short";                                         \
			uint64_t v_ = (value);                                                     \
			if (v_ > (uint64_t)(max))                                                  \
				return "value out of range";                                       \
			(field) = v_;                                                              \
			cs->prev = v_;                                                             \
		}                                                                                  \
		cs->p = p_;                                                                        \
	} while (0)
#define DEC_SIZE_ADDRESS(cs, field, max)                                                           \
	do {                                                                                       \
		const uint8_t *p_ = cs->p, *end_ = cs->end;                                        \
		for (size_t i_ = base; i_ < lim; i_++) {                                           \
			struct mt_event *ev = &e[i_];                                              \
			uint64_t z_;                                                               \
			if (!get_varint(&p_, end_, &ev->alloc.bytes) ||                            \
			    !get_varint(&p_, end_, &z_))                                           \
				return "column cut short";                                         \
			size_t slot_ = size_slot(ev->alloc.bytes);                                 \
			uint64_t v_ = size_predict(sizes, slot_) + unzigzag(z_);                   \
			(field) = v_;                                                              \
			size_update(sizes, slot_, v_);                                             \
		}                                                                                  \
		cs->p = p_;                                                                        \
	} while (0)
#define DEC_LAUNCH(cs, field, max)                                                                 \
	do {                                                                                       \
		const uint8_t *a_ = cs[0].p, *b_ = cs[1].p;                                        \
		for (size_t i_ = base; i_ < lim; i_++) {                                           \
			uint64_t x_;                                                               \
			if (!get_varint(&a_, cs[0].end, &x_))                                      \
				return "column cut short";                                         \
			if (x_ == launches->n) {                                                   \
				struct launch l_;                                                  \
				for (int k_ = 0; k_ < 8; k_++) {                                   \
					uint64_t v_;                                               \
					if (!get_varint(&b_, cs[1].end, &v_))                      \
						return "column cut short";                         \
					if (v_ > (uint64_t)(max))                                  \
						return "value out of range";                       \
					l_.v[k_] = (uint32_t)v_;                                   \
				}                                                                  \
				if (launch_push(launches, &l_) < 0)                                \
					return out_of_memory;                                      \
			} else if (x_ > launches->n) {                                             \
				return "launch index out of range";                                \
			}                                                                          \
			launch_set(&e[i_], &launches->entries[x_]);                                \
		}                                                                                  \
		cs[0].p = a_;                                                                      \
		cs[1].p = b_;                                                                      \
	} while (0)
#define DEC_RLE(cs, field, max)                                                                    \
	do {                                                                                       \
		size_t i_ = base;                                                                  \
		while (i_ < lim) {                                                                 \
			if (cs->run_left == 0) {                                                   \
				uint64_t run_;                                                     \
				if (!get_varint(&cs->p, cs->end, &cs->run_value) ||                \
				    !get_varint(&cs->p, cs->end, &run_))                           \
					return "column cut short";                                 \
				if (cs->run_value > (uint64_t)(max))                               \
					return "value out of range";                               \
				if (run_ == 0 || run_ > n - i_)                                    \
					return "bad run length";                                   \
				cs->run_left = run_;                                               \
			}                                                                          \
			size_t j_ = lim - i_ < cs->run_left ? lim : i_ + cs->run_left;             \
			cs->run_left -= j_ - i_;                                                   \
			for (; i_ < j_; i_++) {                                                    \
				struct mt_event *ev = &e[i_];                                      \
				(field) = cs->run_value;                                           \
			}                                                                          \
		}                                                                                  \
	} while (0)
#define DEC_COLUMN(type, field, max)                                                               \
	do {                                                                                       \
		struct dec_col *cs_ = &col[c_];                                                    \
		c_ += SLOTS_##type;                                                                \
		DEC_##type(cs_, field, max);                                                       \
	} while (0);
#define DEC_ALL(COLUMNS)                                                                           \
	do {                                                                                       \
		COMMON_COLUMNS(DEC_COLUMN)                                                         \
		COLUMNS(DEC_COLUMN)                                                                \
	} while (0)

/* What decode_columns says when memory runs out (not a corrupt blob). */
static const char out_of_memory[] = "out of memory";

/* Fills the n events at e (set to proto first) from the directory and
 * columns in [p, end); NULL on success, else what was wrong. */
static const char *decode_columns(unsigned kind, const uint8_t *p, const uint8_t *end,
                                  const struct mt_event *proto, struct mt_event *e, size_t n,
                                  struct codec_ctx *ctx)
{
	size_t ncol = column_count(kind);
	struct dec_col col[MAX_COLUMNS] = { { 0 } };
	uint64_t len[MAX_COLUMNS];
	for (size_t c = 0; c < ncol; c++)
		if (!get_varint(&p, end, &len[c]))
			return "column directory cut short";
	for (size_t c = 0; c < ncol; c++) {
		if (len[c] > (uint64_t)(end - p))
			return "column longer than the chunk";
		col[c].p = p;
		col[c].end = p + len[c];
		p += len[c];
	}
	if (p != end)
		return "trailing bytes after the columns";
	struct size_predictor *sizes = &ctx->sizes;
	memset(sizes->used, 0, sizeof(sizes->used));
	sizes->last = 0;
	struct launch_table *launches = &ctx->launches;
	launch_reset(launches, 0, 0);
	for (size_t base = 0; base < n; base += BLOCK) {
		size_t lim = base + BLOCK < n ? base + BLOCK : n;
		size_t c_ = 0;
		FOR_KIND(kind, DEC_ALL, return "unknown kind");
	}
	for (size_t c = 0; c < ncol; c++)
		if (col[c].p != col[c].end || col[c].run_left != 0)
			return "trailing bytes in a column";
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

int fmt_chunk_blob_info(const void *blob, size_t blob_len, unsigned *kind, uint64_t *count,
                        uint64_t *raw_len)
{
	const uint8_t *frame;
	if (!blob)
		return -EBADMSG;
	return parse_header(blob, (const uint8_t *)blob + blob_len, kind, count, raw_len, &frame)
	               ? -EBADMSG
	               : 0;
}

/* Checks the header and frame of a blob and decompresses it into the
 * thread's buffer (*raw; NULL when out of memory). */
static const char *decompress_blob(unsigned kind, const uint8_t *blob, size_t blob_len,
                                   size_t expected, struct codec_ctx *ctx, uint8_t **raw,
                                   size_t *raw_len_out)
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
	if (raw_len > column_count(kind) * 10 + count * max_bytes_per_event(kind))
		return "impossible column length";

	/* A zstd frame (magic FD2FB528 little-endian) whose descriptor sets
	 * the content checksum flag (RFC 8878, 3.1.1.1.1). */
	size_t frame_len = (size_t)(end - frame);
	static const uint8_t zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	if (frame_len < 5 || memcmp(frame, zstd_magic, 4) != 0)
		return "no zstd frame";
	if (ZSTD_getFrameContentSize(frame, frame_len) != raw_len || !(frame[4] & 0x04))
		return "zstd frame header differs from the blob header";
	size_t zlen = ZSTD_findFrameCompressedSize(frame, frame_len);
	if (ZSTD_isError(zlen) || zlen != frame_len)
		return zlen < frame_len ? "trailing bytes after the zstd frame"
		                        : "zstd frame cut short";

	uint8_t *buf = scratch(&ctx->dec_buf, &ctx->dec_cap, raw_len + 1);
	if (!buf)
		return NULL;
	size_t got = ZSTD_decompressDCtx(ctx->dctx, buf, raw_len, frame, frame_len);
	if (ZSTD_isError(got) || got != raw_len)
		return "zstd decompression failed (corrupt data or checksum)";
	*raw = buf;
	*raw_len_out = raw_len;
	return NULL;
}

int fmt_chunk_decode_why(unsigned kind, const void *blob, size_t blob_len, size_t expected,
                         uint32_t process, uint32_t device, struct mt_event **events,
                         size_t *capacity, const char **why)
{
	*why = NULL;
	if (max_bytes_per_event(kind) == 0) {
		*why = "unknown kind";
		return -EINVAL;
	}
	if (!blob) {
		*why = "no blob";
		return -EBADMSG;
	}
	struct codec_ctx *ctx = thread_ctx(0);
	if (!ctx)
		return -ENOMEM;
	uint8_t *raw = NULL;
	size_t raw_len = 0;
	*why = decompress_blob(kind, blob, blob_len, expected, ctx, &raw, &raw_len);
	if (*why)
		return -EBADMSG;
	if (!raw)
		return -ENOMEM;
	if (expected > *capacity) {
		/* a fresh array: the old contents need not be copied */
		struct mt_event *e = malloc(expected * sizeof(*e));
		if (!e)
			return -ENOMEM;
		free(*events);
		*events = e;
		*capacity = expected;
	}
	const struct mt_event proto = { .process = process,
		                        .device = device,
		                        .kind = (uint8_t)kind };
	*why = decode_columns(kind, raw, raw + raw_len, &proto, *events, expected, ctx);
	if (*why)
		return *why == out_of_memory ? -ENOMEM : -EBADMSG;
	return 0;
}

int mt_chunk_decode(unsigned kind, const void *blob, size_t blob_len, size_t expected,
                    uint32_t process, uint32_t device, struct mt_event **events, size_t *n)
{
	struct mt_event *e = NULL;
	size_t capacity = 0;
	const char *why;
	int err = fmt_chunk_decode_why(kind, blob, blob_len, expected, process, device, &e,
	                               &capacity, &why);
	*events = NULL;
	*n = 0;
	if (err < 0) {
		free(e);
		return err;
	}
	*events = e;
	*n = expected;
	return 0;
}
