/* protobuf.c — writing protocol buffers by hand: varints, length-delimited
 * fields, and nested messages whose length is filled in at their end (four
 * bytes reserved, written as a varint padded with continuation bits, which
 * every protobuf reader accepts; a message stays under 256 MiB).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "interop-private.h"

static bool room(struct io_pb *pb, size_t n)
{
	if (pb->failed)
		return false;
	if (pb->n + n > pb->cap) {
		size_t cap = pb->cap ? pb->cap * 2 : 1024;
		uint8_t *b;
		while (cap < pb->n + n)
			cap *= 2;
		b = realloc(pb->buf, cap);
		if (!b) {
			pb->failed = true;
			return false;
		}
		pb->buf = b;
		pb->cap = cap;
	}
	return true;
}

static void varint(struct io_pb *pb, uint64_t v)
{
	if (!room(pb, 10))
		return;
	while (v >= 0x80) {
		pb->buf[pb->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	pb->buf[pb->n++] = (uint8_t)v;
}

void io_pb_uint(struct io_pb *pb, unsigned field, uint64_t v)
{
	varint(pb, (uint64_t)field << 3 | 0);
	varint(pb, v);
}

void io_pb_bytes(struct io_pb *pb, unsigned field, const void *data, size_t n)
{
	varint(pb, (uint64_t)field << 3 | 2);
	varint(pb, n);
	if (room(pb, n)) {
		memcpy(pb->buf + pb->n, data, n);
		pb->n += n;
	}
}

void io_pb_string(struct io_pb *pb, unsigned field, const char *s)
{
	io_pb_bytes(pb, field, s, strlen(s));
}

size_t io_pb_begin(struct io_pb *pb, unsigned field)
{
	varint(pb, (uint64_t)field << 3 | 2);
	if (!room(pb, 4))
		return 0;
	pb->n += 4;
	return pb->n;
}

void io_pb_end(struct io_pb *pb, size_t start)
{
	size_t len = pb->n - start;

	if (pb->failed || !start)
		return;
	for (int i = 0; i < 4; i++)
		pb->buf[start - 4 + i] = (uint8_t)((len >> (7 * i) & 0x7f) | (i < 3 ? 0x80 : 0));
}

void io_pb_release(struct io_pb *pb)
{
	free(pb->buf);
	*pb = (struct io_pb){ 0 };
}
