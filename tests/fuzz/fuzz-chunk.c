/* fuzz-chunk.c — fuzz target for the chunk decoder. The first byte picks
 * the event kind (low 7 bits) and the mode (high bit):
 *   0: the rest is a blob; the decoder is told the count the blob's own
 *      header claims, so inputs reach past the count check;
 *   1: the next two bytes are a count (little-endian) and the rest is the
 *      raw column data, which this target wraps into a well-formed blob
 *      (header, zstd frame with checksum; docs/FORMAT.md) so that mutations
 *      reach the column decoder instead of failing the checksum.
 * Decoding must never crash or read out of bounds; whatever decodes must
 * encode and decode again to the same events. */
#include "config.h"

#include <stdlib.h>

#include <zstd.h>

#include "../format/test-events.h"
#include "chunk-codec-private.h"
#include "fuzz-target.h"

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	for (; v >= 0x80; v >>= 7)
		*p++ = (uint8_t)(v | 0x80);
	*p++ = (uint8_t)v;
	return p;
}

/* A blob of layout 1 around raw column data; NULL on failure. */
static uint8_t *wrap_raw(unsigned kind, uint64_t count, const uint8_t *raw, size_t raw_len,
                         size_t *len)
{
	size_t bound = 32 + ZSTD_compressBound(raw_len);
	static ZSTD_CCtx *c; /* kept: creating one per input is slow */
	uint8_t *blob = malloc(bound), *p = blob;
	if (!c)
		c = ZSTD_createCCtx();
	if (!blob || !c)
		abort();
	*p++ = 1;
	*p++ = (uint8_t)kind;
	p = put_varint(p, count);
	p = put_varint(p, raw_len);
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	size_t z = ZSTD_compress2(c, p, bound - (size_t)(p - blob), raw, raw_len);
	if (ZSTD_isError(z))
		abort();
	*len = (size_t)(p - blob) + z;
	return blob;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned kind = 1 + (data[0] & 0x7f) % MT_EVENT_KIND_MAX;
	const uint8_t *blob = data + 1;
	size_t len = size - 1;
	uint8_t *wrapped = NULL;
	unsigned blob_kind;
	uint64_t count = 0, raw_len;
	if (data[0] & 0x80) {
		if (size < 3)
			return 0;
		count = data[1] | (uint64_t)data[2] << 8;
		blob = wrapped = wrap_raw(kind, count, data + 3, size - 3, &len);
	} else if (fmt_chunk_blob_info(blob, len, &blob_kind, &count, &raw_len) < 0 ||
	           count > MT_CHUNK_MAX_EVENTS) {
		count = 0;
	}
	struct mt_event *events;
	size_t n;
	int rc = mt_chunk_decode(kind, blob, len, (size_t)count, 1, 2, &events, &n);
	free(wrapped);
	if (rc != 0)
		return 0;
	if (n != count)
		abort();

	/* The encoder stores (ts, seq) order, stable for equal keys. */
	struct mt_event *sorted = codec_order_copy(events, n);
	if (!sorted)
		abort();

	void *again;
	size_t again_len, n2;
	struct mt_event *events2;
	if (mt_chunk_encode(kind, events, n, &again, &again_len) != 0 ||
	    mt_chunk_decode(kind, again, again_len, n, 1, 2, &events2, &n2) != 0 || n2 != n)
		abort();
	for (size_t i = 0; i < n; i++)
		if (!events_equal(&sorted[i], &events2[i]))
			abort();
	free(events2);
	free(again);
	free(sorted);
	free(events);
	return 0;
}
