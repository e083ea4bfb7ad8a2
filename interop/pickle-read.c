/* pickle-read.c — a reader for the pickles PyTorch memory snapshots are:
 * protocols 2 to 5 holding only plain data.
 *
 * Model: Python's pickle virtual machine (Lib/pickletools.py documents the
 * opcodes), restricted to the opcodes that build dicts, lists, tuples,
 * strings, ints, floats, bools and None, plus the memo and framing. Nothing
 * is ever looked up or called: an opcode that would build an object
 * (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, persistent ids,
 * extension codes) is refused with its byte offset, as is every opcode not
 * listed here. The machine is a loop over the bytes with an explicit stack,
 * so nesting costs memory, not C stack; marks may nest 4096 deep.
 * Everything it builds lives in the caller's tree; strings point into the
 * input, which must outlive the tree.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop-private.h"

#define MAX_MARKS 4096

enum opcode {
	OP_MARK = '(',
	OP_STOP = '.',
	OP_BININT = 'J',
	OP_BININT1 = 'K',
	OP_BININT2 = 'M',
	OP_NONE = 'N',
	OP_BINUNICODE = 'X',
	OP_APPEND = 'a',
	OP_APPENDS = 'e',
	OP_BINGET = 'h',
	OP_LONG_BINGET = 'j',
	OP_EMPTY_LIST = ']',
	OP_BINPUT = 'q',
	OP_LONG_BINPUT = 'r',
	OP_SETITEM = 's',
	OP_TUPLE = 't',
	OP_EMPTY_TUPLE = ')',
	OP_SETITEMS = 'u',
	OP_BINFLOAT = 'G',
	OP_EMPTY_DICT = '}',
	OP_PROTO = 0x80,
	OP_TUPLE1 = 0x85,
	OP_TUPLE2 = 0x86,
	OP_TUPLE3 = 0x87,
	OP_NEWTRUE = 0x88,
	OP_NEWFALSE = 0x89,
	OP_LONG1 = 0x8a,
	OP_LONG4 = 0x8b,
	OP_SHORT_BINUNICODE = 0x8c,
	OP_BINUNICODE8 = 0x8d,
	OP_MEMOIZE = 0x94,
	OP_FRAME = 0x95,
};

struct machine {
	struct io_tree *t;
	const uint8_t *start, *p, *end;
	size_t op_at; /* offset of the opcode being run */
	struct io_value **stack;
	size_t sn, scap;
	size_t *marks;
	size_t mn, mcap;
	struct io_value **memo;
	size_t memon, memocap;
	char *err;
	size_t errlen;
};

static int bad(struct machine *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct machine *m, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mt_fail(m->err, m->errlen, -EBADMSG, "pickle at byte %zu: %s", m->op_at, msg);
}

static int nomem(struct machine *m)
{
	return mt_fail(m->err, m->errlen, -ENOMEM, "pickle at byte %zu: out of memory", m->op_at);
}

/* The next n bytes, or NULL (truncated). */
static const uint8_t *take(struct machine *m, uint64_t n)
{
	const uint8_t *q = m->p;

	if (n > (uint64_t)(m->end - m->p))
		return NULL;
	m->p += n;
	return q;
}

static uint64_t le(const uint8_t *b, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | b[i];
	return v;
}

static int push(struct machine *m, struct io_value *v)
{
	if (!v || mt_array_grow((void **)&m->stack, &m->scap, m->sn, sizeof(*m->stack)) < 0)
		return nomem(m);
	m->stack[m->sn++] = v;
	return 0;
}

/* The stack's top, when there are at least `need` values above the
 * innermost mark. */
static struct io_value *top(struct machine *m, size_t need, const char *op)
{
	size_t floor = m->mn ? m->marks[m->mn - 1] : 0;

	if (m->sn - floor < need) {
		bad(m, "%s on a stack too short", op);
		return NULL;
	}
	return m->stack[m->sn - 1];
}

/* Pops to the innermost mark: *first is the index of the first value above
 * it. */
static int pop_mark(struct machine *m, size_t *first, const char *op)
{
	if (!m->mn)
		return bad(m, "%s without a MARK", op);
	*first = m->marks[--m->mn];
	return 0;
}

static int make_int(struct machine *m, int64_t v)
{
	struct io_value *x = io_tree_value(m->t, IO_INT);

	if (x)
		x->i = v;
	return push(m, x);
}

/* LONG1 / LONG4: n bytes, two's complement, little-endian. */
static int make_long(struct machine *m, const uint8_t *b, uint64_t n)
{
	struct io_value *x = io_tree_value(m->t, IO_INT);

	if (!x)
		return nomem(m);
	/* Drop sign-extension bytes that carry no value. */
	while (n > 1 && ((b[n - 1] == 0x00 && !(b[n - 2] & 0x80)) ||
	                 (b[n - 1] == 0xff && (b[n - 2] & 0x80))))
		n--;
	if (n == 0) {
		x->i = 0;
	} else if (n <= 8) {
		uint64_t u = le(b, (unsigned)n);
		if (n < 8 && (b[n - 1] & 0x80))
			u |= ~0ull << (8 * n); /* sign-extend */
		x->i = (int64_t)u;
	} else if (n == 9 && b[8] == 0x00) {
		x->i = (int64_t)le(b, 8); /* 2^63 .. 2^64 - 1 */
		x->wide = 1;
	} else {
		x->huge = 1;
	}
	return push(m, x);
}

static int make_str(struct machine *m, uint64_t n)
{
	const uint8_t *b = take(m, n);
	struct io_value *x;

	if (!b)
		return bad(m, "truncated: a string of %" PRIu64 " bytes runs past the end", n);
	if (n > UINT32_MAX)
		return bad(m, "a string of 4 GiB or more");
	x = io_tree_value(m->t, IO_STR);
	if (x) {
		x->s = (const char *)b;
		x->n = (uint32_t)n;
	}
	return push(m, x);
}

/* A tuple of the top k values. */
static int make_tuple(struct machine *m, size_t first)
{
	struct io_value *x = io_tree_value(m->t, IO_TUPLE);

	if (!x)
		return nomem(m);
	for (size_t i = first; i < m->sn; i++)
		if (io_tree_push(m->t, x, m->stack[i]) < 0)
			return nomem(m);
	m->sn = first;
	return push(m, x);
}

static int append(struct machine *m, size_t first)
{
	struct io_value *list;

	if (first == 0 || m->stack[first - 1]->type != IO_LIST)
		return bad(m, "APPEND to something not a list");
	list = m->stack[first - 1];
	if (io_tree_reserve(m->t, list, m->sn - first) < 0)
		return nomem(m);
	for (size_t i = first; i < m->sn; i++)
		if (io_tree_push(m->t, list, m->stack[i]) < 0)
			return nomem(m);
	m->sn = first;
	return 0;
}

static int setitems(struct machine *m, size_t first)
{
	struct io_value *dict;

	if (first == 0 || m->stack[first - 1]->type != IO_DICT)
		return bad(m, "SETITEM on something not a dict");
	if ((m->sn - first) % 2)
		return bad(m, "SETITEMS with a key and no value");
	dict = m->stack[first - 1];
	if (io_tree_reserve(m->t, dict, (m->sn - first) / 2) < 0)
		return nomem(m);
	for (size_t i = first; i < m->sn; i += 2)
		if (io_tree_set(m->t, dict, m->stack[i], m->stack[i + 1]) < 0)
			return nomem(m);
	m->sn = first;
	return 0;
}

static int memo_put(struct machine *m, uint64_t index)
{
	struct io_value *v = top(m, 1, "MEMOIZE");

	if (!v)
		return -EBADMSG;
	/* Python's picklers number memo entries 0, 1, 2... in order. */
	if (index > m->memon)
		return bad(m, "memo index %" PRIu64 " out of order (next is %zu)", index, m->memon);
	if (index == m->memon) {
		if (mt_array_grow((void **)&m->memo, &m->memocap, m->memon, sizeof(*m->memo)) < 0)
			return nomem(m);
		m->memon++;
	}
	m->memo[index] = v;
	return 0;
}

static int memo_get(struct machine *m, uint64_t index)
{
	if (index >= m->memon)
		return bad(m, "memo index %" PRIu64 " out of range (the memo holds %zu)", index,
		           m->memon);
	return push(m, m->memo[index]);
}

static const char *object_opcode(uint8_t op)
{
	switch (op) {
	case 'c':
		return "GLOBAL";
	case 0x93:
		return "STACK_GLOBAL";
	case 'R':
		return "REDUCE";
	case 'b':
		return "BUILD";
	case 'i':
		return "INST";
	case 'o':
		return "OBJ";
	case 0x81:
		return "NEWOBJ";
	case 0x92:
		return "NEWOBJ_EX";
	case 'P':
		return "PERSID";
	case 'Q':
		return "BINPERSID";
	case 0x82:
	case 0x83:
	case 0x84:
		return "EXT";
	}
	return NULL;
}

#define NEED(n)                                                                                    \
	do {                                                                                       \
		if (!(b = take(m, (n))))                                                           \
			return bad(m, "%s: truncated", name);                                      \
	} while (0)

/* Runs one opcode; 1 at STOP, 0 to go on, or a negative errno. */
static int step(struct machine *m, struct io_value **root)
{
	const uint8_t *b;
	const char *name = "opcode";
	size_t first = 0;
	uint8_t op;

	m->op_at = (size_t)(m->p - m->start);
	op = *m->p++;
	switch (op) {
	case OP_PROTO:
		name = "PROTO";
		NEED(1);
		if (b[0] < 2 || b[0] > 5)
			return bad(m, "pickle protocol %u (memtrace reads 2 to 5)", b[0]);
		return 0;
	case OP_FRAME:
		name = "FRAME";
		NEED(8);
		if (le(b, 8) > (uint64_t)(m->end - m->p))
			return bad(m, "FRAME: the frame runs past the end of the file");
		return 0;
	case OP_STOP:
		if (!m->sn)
			return bad(m, "STOP with nothing built");
		*root = m->stack[m->sn - 1];
		return 1;
	case OP_NONE:
		return push(m, io_tree_value(m->t, IO_NONE));
	case OP_NEWTRUE:
	case OP_NEWFALSE: {
		struct io_value *x = io_tree_value(m->t, IO_BOOL);
		if (x)
			x->i = op == OP_NEWTRUE;
		return push(m, x);
	}
	case OP_BININT1:
		name = "BININT1";
		NEED(1);
		return make_int(m, b[0]);
	case OP_BININT2:
		name = "BININT2";
		NEED(2);
		return make_int(m, (int64_t)le(b, 2));
	case OP_BININT:
		name = "BININT";
		NEED(4);
		return make_int(m, (int32_t)(uint32_t)le(b, 4));
	case OP_LONG1:
		name = "LONG1";
		NEED(1);
		first = b[0];
		NEED(first);
		return make_long(m, b, first);
	case OP_LONG4:
		name = "LONG4";
		NEED(4);
		first = (size_t)le(b, 4);
		NEED(first);
		return make_long(m, b, first);
	case OP_BINFLOAT: {
		struct io_value *x;
		uint64_t bits = 0;
		name = "BINFLOAT";
		NEED(8);
		for (int i = 0; i < 8; i++)
			bits = bits << 8 | b[i]; /* big-endian */
		x = io_tree_value(m->t, IO_FLOAT);
		if (x)
			memcpy(&x->f, &bits, sizeof(x->f));
		return push(m, x);
	}
	case OP_SHORT_BINUNICODE:
		name = "SHORT_BINUNICODE";
		NEED(1);
		return make_str(m, b[0]);
	case OP_BINUNICODE:
		name = "BINUNICODE";
		NEED(4);
		return make_str(m, le(b, 4));
	case OP_BINUNICODE8:
		name = "BINUNICODE8";
		NEED(8);
		return make_str(m, le(b, 8));
	case OP_EMPTY_DICT:
		return push(m, io_tree_value(m->t, IO_DICT));
	case OP_EMPTY_LIST:
		return push(m, io_tree_value(m->t, IO_LIST));
	case OP_EMPTY_TUPLE:
		return push(m, io_tree_value(m->t, IO_TUPLE));
	case OP_MARK:
		if (m->mn >= MAX_MARKS)
			return bad(m, "MARK: nesting deeper than %d levels", MAX_MARKS);
		if (mt_array_grow((void **)&m->marks, &m->mcap, m->mn, sizeof(*m->marks)) < 0)
			return nomem(m);
		m->marks[m->mn++] = m->sn;
		return 0;
	case OP_TUPLE1:
	case OP_TUPLE2:
	case OP_TUPLE3: {
		size_t k = (size_t)(op - OP_TUPLE1) + 1;
		if (!top(m, k, "TUPLE1-3"))
			return -EBADMSG;
		return make_tuple(m, m->sn - k);
	}
	case OP_TUPLE:
		if (pop_mark(m, &first, "TUPLE") < 0)
			return -EBADMSG;
		return make_tuple(m, first);
	case OP_APPEND:
		if (!top(m, 2, "APPEND"))
			return -EBADMSG;
		return append(m, m->sn - 1);
	case OP_APPENDS:
		if (pop_mark(m, &first, "APPENDS") < 0)
			return -EBADMSG;
		return append(m, first);
	case OP_SETITEM:
		if (!top(m, 3, "SETITEM"))
			return -EBADMSG;
		return setitems(m, m->sn - 2);
	case OP_SETITEMS:
		if (pop_mark(m, &first, "SETITEMS") < 0)
			return -EBADMSG;
		return setitems(m, first);
	case OP_MEMOIZE:
		return memo_put(m, m->memon);
	case OP_BINPUT:
		name = "BINPUT";
		NEED(1);
		return memo_put(m, b[0]);
	case OP_LONG_BINPUT:
		name = "LONG_BINPUT";
		NEED(4);
		return memo_put(m, le(b, 4));
	case OP_BINGET:
		name = "BINGET";
		NEED(1);
		return memo_get(m, b[0]);
	case OP_LONG_BINGET:
		name = "LONG_BINGET";
		NEED(4);
		return memo_get(m, le(b, 4));
	}
	if (object_opcode(op))
		return bad(m,
		           "%s would build Python objects; memtrace reads only plain data "
		           "(dicts, lists, strings, numbers)",
		           object_opcode(op));
	return bad(m, "opcode 0x%02x is not one a memory snapshot uses", op);
}

int io_pickle_read(struct io_tree *t, const uint8_t *data, size_t len, struct io_value **root,
                   char *err, size_t errlen)
{
	struct machine m = {
		.t = t, .start = data, .p = data, .end = data + len, .err = err, .errlen = errlen
	};
	int rc = 0;

	*root = NULL;
	if (len < 2 || data[0] != OP_PROTO)
		return mt_fail(
		        err, errlen, -EBADMSG,
		        "pickle at byte 0: not a pickle of protocol 2 to 5 (no PROTO opcode)");
	while (rc == 0) {
		if (m.p >= m.end) {
			m.op_at = len;
			rc = bad(&m, "truncated: the file ends before STOP");
			break;
		}
		rc = step(&m, root);
	}
	if (rc == 1) {
		rc = 0;
		/* _memory_viz pads the pickle it embeds with NULs. */
		for (const uint8_t *q = m.p; q < m.end; q++)
			if (*q) {
				m.op_at = (size_t)(q - data);
				rc = bad(&m, "trailing bytes after STOP");
				break;
			}
	}
	if (rc < 0)
		*root = NULL;
	free(m.stack);
	free(m.marks);
	free(m.memo);
	return rc;
}
