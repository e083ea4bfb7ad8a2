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
	struct io_out *o;
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
	if (!(p->o = io_out_new(out))) {
		free(p);
		return NULL;
	}
	io_out_char(p->o, (char)0x80); /* PROTO */
	io_out_char(p->o, 4);
	return p;
}

void io_pickler_free(struct io_pickler *p)
{
	if (!p)
		return;
	io_out_flush(p->o);
	free(p->o);
	io_map_release(&p->keys);
	free(p->fix);
	free(p);
}

static void le(struct io_out *o, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++, v >>= 8)
		io_out_char(o, (char)(v & 0xff));
}

static void op(struct io_pickler *p, int code)
{
	io_out_char(p->o, (char)code);
}

void io_pk_none(struct io_pickler *p)
{
	op(p, 'N');
}

void io_pk_bool(struct io_pickler *p, bool v)
{
	op(p, v ? 0x88 : 0x89);
}

void io_pk_int(struct io_pickler *p, int64_t v)
{
	unsigned n = 1;

	if (v >= 0 && v < 0x100) {
		op(p, 'K'); /* BININT1 */
		op(p, (int)v);
	} else if (v >= 0 && v < 0x10000) {
		op(p, 'M'); /* BININT2 */
		le(p->o, (uint64_t)v, 2);
	} else if (v >= INT32_MIN && v <= INT32_MAX) {
		op(p, 'J'); /* BININT */
		le(p->o, (uint64_t)v, 4);
	} else {
		/* LONG1: the fewest two's-complement bytes that keep the sign */
		while (n < 8 && (v >> (8 * n - 1)) != 0 && (v >> (8 * n - 1)) != -1)
			n++;
		op(p, 0x8a);
		op(p, (int)n);
		le(p->o, (uint64_t)v, n);
	}
}

void io_pk_float(struct io_pickler *p, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	op(p, 'G'); /* BINFLOAT, big-endian */
	for (int i = 7; i >= 0; i--)
		op(p, (int)(bits >> (8 * i) & 0xff));
}

void io_pk_uint(struct io_pickler *p, uint64_t v)
{
	if (v <= INT64_MAX) {
		io_pk_int(p, (int64_t)v);
		return;
	}
	op(p, 0x8a); /* LONG1, a ninth byte keeps it positive */
	op(p, 9);
	le(p->o, v, 8);
	op(p, 0);
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
		op(p, 0x8c); /* SHORT_BINUNICODE */
		op(p, (int)n);
	} else {
		op(p, 'X'); /* BINUNICODE */
		le(p->o, n, 4);
	}
	io_out_bytes(p->o, s, n);
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
	op(p, '}');
}

void io_pk_empty_list(struct io_pickler *p)
{
	op(p, ']');
}

void io_pk_mark(struct io_pickler *p)
{
	op(p, '(');
}

void io_pk_setitems(struct io_pickler *p)
{
	op(p, 'u');
}

void io_pk_appends(struct io_pickler *p)
{
	op(p, 'e');
}

void io_pk_tuple2(struct io_pickler *p)
{
	op(p, 0x86);
}

uint32_t io_pk_memoize(struct io_pickler *p)
{
	op(p, 0x94);
	return p->memo++;
}

void io_pk_get(struct io_pickler *p, uint32_t index)
{
	if (index < 0x100) {
		op(p, 'h'); /* BINGET */
		op(p, (int)index);
	} else {
		op(p, 'j'); /* LONG_BINGET */
		le(p->o, index, 4);
	}
}

void io_pk_stop(struct io_pickler *p)
{
	op(p, '.');
}
