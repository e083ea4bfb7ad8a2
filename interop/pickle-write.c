/* pickle-write.c — writing plain data as a protocol-4 pickle, streamed:
 * the caller emits opcodes in the order Python's pickler would (containers
 * are built empty, filled with MARK ... APPENDS / SETITEMS), so nothing is
 * held but the memo's count and a table of memoized keys. No FRAME
 * opcodes: they are optional and readers accept their absence.
 * Strings that are not valid UTF-8 (Python's reader would refuse them)
 * have the bad bytes replaced with '?'.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "interop-private.h"

struct io_pickler {
	FILE *out;
	uint32_t memo;      /* entries so far */
	struct io_map keys; /* key string (by address) → memo index */
	char *fix;          /* a string with invalid UTF-8 repaired */
	size_t fix_cap;
};

struct io_pickler *io_pickler_new(FILE *out)
{
	struct io_pickler *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->out = out;
	fputc(0x80, out); /* PROTO */
	fputc(4, out);
	return p;
}

void io_pickler_free(struct io_pickler *p)
{
	if (!p)
		return;
	io_map_release(&p->keys);
	free(p->fix);
	free(p);
}

static void le(FILE *out, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++, v >>= 8)
		fputc((int)(v & 0xff), out);
}

void io_pk_none(struct io_pickler *p)
{
	fputc('N', p->out);
}

void io_pk_bool(struct io_pickler *p, bool v)
{
	fputc(v ? 0x88 : 0x89, p->out);
}

void io_pk_int(struct io_pickler *p, int64_t v)
{
	unsigned n = 1;

	if (v >= 0 && v < 0x100) {
		fputc('K', p->out); /* BININT1 */
		fputc((int)v, p->out);
	} else if (v >= 0 && v < 0x10000) {
		fputc('M', p->out); /* BININT2 */
		le(p->out, (uint64_t)v, 2);
	} else if (v >= INT32_MIN && v <= INT32_MAX) {
		fputc('J', p->out); /* BININT */
		le(p->out, (uint64_t)v, 4);
	} else {
		/* LONG1: the fewest two's-complement bytes that keep the sign */
		while (n < 8 && (v >> (8 * n - 1)) != 0 && (v >> (8 * n - 1)) != -1)
			n++;
		fputc(0x8a, p->out);
		fputc((int)n, p->out);
		le(p->out, (uint64_t)v, n);
	}
}

void io_pk_float(struct io_pickler *p, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	fputc('G', p->out); /* BINFLOAT, big-endian */
	for (int i = 7; i >= 0; i--)
		fputc((int)(bits >> (8 * i) & 0xff), p->out);
}

void io_pk_uint(struct io_pickler *p, uint64_t v)
{
	if (v <= INT64_MAX) {
		io_pk_int(p, (int64_t)v);
		return;
	}
	fputc(0x8a, p->out); /* LONG1, a ninth byte keeps it positive */
	fputc(9, p->out);
	le(p->out, v, 8);
	fputc(0, p->out);
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t c;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, c = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, c = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return len;
}

void io_pk_str(struct io_pickler *p, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n && (k = utf8_seq(u + i, n - i)))
		i += k;
	if (i < n) {
		if (n > p->fix_cap) {
			char *f = realloc(p->fix, n);
			if (!f) {
				n = i; /* out of memory: the valid start only */
			} else {
				p->fix = f;
				p->fix_cap = n;
			}
		}
		if (n > i) {
			memcpy(p->fix, s, n);
			for (; i < n; i += k)
				if (!(k = utf8_seq(u + i, n - i))) {
					p->fix[i] = '?';
					k = 1;
				}
			s = p->fix;
		}
	}
	if (n < 0x100) {
		fputc(0x8c, p->out); /* SHORT_BINUNICODE */
		fputc((int)n, p->out);
	} else {
		fputc('X', p->out); /* BINUNICODE */
		le(p->out, n, 4);
	}
	fwrite(s, 1, n, p->out);
}

void io_pk_cstr(struct io_pickler *p, const char *s)
{
	io_pk_str(p, s, strlen(s));
}

void io_pk_key(struct io_pickler *p, const char *s)
{
	uint64_t index;

	if (io_map_get(&p->keys, (uintptr_t)s, 0, &index)) {
		io_pk_get(p, (uint32_t)index);
		return;
	}
	io_pk_cstr(p, s);
	index = io_pk_memoize(p);
	io_map_put(&p->keys, (uintptr_t)s, 0, index); /* out of memory: written again */
}

void io_pk_empty_dict(struct io_pickler *p)
{
	fputc('}', p->out);
}

void io_pk_empty_list(struct io_pickler *p)
{
	fputc(']', p->out);
}

void io_pk_mark(struct io_pickler *p)
{
	fputc('(', p->out);
}

void io_pk_setitems(struct io_pickler *p)
{
	fputc('u', p->out);
}

void io_pk_appends(struct io_pickler *p)
{
	fputc('e', p->out);
}

void io_pk_tuple2(struct io_pickler *p)
{
	fputc(0x86, p->out);
}

uint32_t io_pk_memoize(struct io_pickler *p)
{
	fputc(0x94, p->out);
	return p->memo++;
}

void io_pk_get(struct io_pickler *p, uint32_t index)
{
	if (index < 0x100) {
		fputc('h', p->out); /* BINGET */
		fputc((int)index, p->out);
	} else {
		fputc('j', p->out); /* LONG_BINGET */
		le(p->out, index, 4);
	}
}

void io_pk_stop(struct io_pickler *p)
{
	fputc('.', p->out);
}
