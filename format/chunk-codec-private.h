/* chunk-codec-private.h — what the writer and reader need from the chunk
 * codec beyond the public encode/decode: the blob header and decoding with
 * a reason for the failure (the reader puts it in its message). */
#ifndef MEMTRACE_CHUNK_CODEC_PRIVATE_H
#define MEMTRACE_CHUNK_CODEC_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace-format.h"

/* Reads the header of a blob (layout version, kind, event count and the
 * length of the uncompressed columns) without decompressing. Returns 0 or
 * -EBADMSG. */
int fmt_chunk_blob_info(const void *blob, size_t blob_len, unsigned *kind, uint64_t *count,
                        uint64_t *raw_len);

/* mt_chunk_decode into a buffer the caller keeps and reuses: *events holds
 * room for *capacity events (NULL and 0 at first); a chunk that needs more
 * gets a larger array there (the old one freed). On success the first
 * `expected` events are the chunk's; on failure the buffer stays the
 * caller's to free, and on -EBADMSG *why says what was wrong (a static
 * string). Reusing one buffer spares a fresh multi-MiB allocation, and its
 * page faults, per chunk. */
int fmt_chunk_decode_why(unsigned kind, const void *blob, size_t blob_len, size_t expected,
                         uint32_t process, uint32_t device, struct mt_event **events,
                         size_t *capacity, const char **why);

#endif
