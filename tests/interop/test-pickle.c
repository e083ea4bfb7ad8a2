/* test-pickle.c — the plain-data pickle reader: every opcode a memory
 * snapshot uses (protocols 2 to 5, hand-assembled), and one clear refusal
 * naming the byte for everything else: objects, unknown opcodes, other
 * protocols, truncation, memo references out of range, deep nesting, huge
 * lengths, trailing bytes. The writer's output reads back as written. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "interop-private.h"
#include "tap.h"

#define P(s) (const uint8_t *)(s), sizeof(s) - 1

static char err[256];

/* Reads a pickle into a fresh tree; the caller frees *t. */
static int read_pickle(struct io_tree **t, const uint8_t *data, size_t len, struct io_value **root)
{
	*t = io_tree_new();
	REQUIRE(*t);
	err[0] = 0;
	return io_pickle_read(*t, data, len, root, err, sizeof(err));
}

static int64_t int_of(const struct io_value *v)
{
	int64_t i = -12345;
	CHECK(io_as_i64(v, &i));
	return i;
}

/* Protocol 2, as torch.jit's pickler writes: BINPUT/BINGET, MARK ...
 * SETITEMS, APPENDS, BININT*, LONG1, BINFLOAT, bools, None, tuples. */
static void test_protocol2_plain_data(void)
{
	static const char pk[] = "\x80\x02"
	                         "}q\x00(" /* dict, memo 0, mark */
	                         "X\x03\x00\x00\x00"
	                         "addq\x01"                         /* key 'add' memo 1 */
	                         "\x8a\x06\x00\x00\x00\x00\x7f\x7f" /* LONG1 6 bytes */
	                         "X\x01\x00\x00\x00n"               /* 'n' */
	                         "J\xfe\xff\xff\xff"                /* BININT -2 */
	                         "X\x01\x00\x00\x00l"               /* 'l' */
	                         "](K\x01M\x00\x01h\x01"            /* [1, 256, 'add'] */
	                         "e"
	                         "X\x01\x00\x00\x00t"     /* 't' */
	                         "(K\x01K\x02K\x03K\x04t" /* (1,2,3,4) */
	                         "X\x01\x00\x00\x00"
	                         "f"
	                         "G\x3f\xf8\x00\x00\x00\x00\x00\x00" /* 1.5 */
	                         "X\x01\x00\x00\x00"
	                         "b\x88"
	                         "X\x01\x00\x00\x00"
	                         "c\x89"
	                         "X\x01\x00\x00\x00zN"
	                         "X\x01\x00\x00\x00"
	                         "e)"
	                         "X\x02\x00\x00\x00t2K\x07K\x08\x86"
	                         "u.";
	struct io_tree *t;
	struct io_value *root;
	struct io_value *const *items;
	size_t n;

	CHECKF(read_pickle(&t, P(pk), &root) == 0, "%s", err);
	REQUIRE(root && root->type == IO_DICT);
	CHECK(root->n == 10);
	CHECK(int_of(io_get(root, "add")) == 0x7f7f00000000ll);
	CHECK(int_of(io_get(root, "n")) == -2);
	items = io_items(io_get(root, "l"), &n);
	CHECK(n == 3 && int_of(items[0]) == 1 && int_of(items[1]) == 256);
	CHECK(n == 3 && io_is_str(items[2], "add"));
	items = io_items(io_get(root, "t"), &n);
	CHECK(n == 4 && io_get(root, "t")->type == IO_TUPLE && int_of(items[3]) == 4);
	CHECK(io_get(root, "f") && io_get(root, "f")->type == IO_FLOAT &&
	      io_get(root, "f")->f == 1.5);
	CHECK(io_get(root, "b")->type == IO_BOOL && io_get(root, "b")->i == 1);
	CHECK(io_get(root, "c")->type == IO_BOOL && io_get(root, "c")->i == 0);
	CHECK(io_get(root, "z")->type == IO_NONE);
	CHECK(io_get(root, "e")->type == IO_TUPLE && io_get(root, "e")->n == 0);
	items = io_items(io_get(root, "t2"), &n);
	CHECK(n == 2 && int_of(items[1]) == 8);
	CHECK(!io_get(root, "missing"));
	io_tree_free(t);
}

/* Protocol 4 and 5 as Python writes them: FRAME, MEMOIZE,
 * SHORT_BINUNICODE, BINUNICODE8, LONG_BINGET, SETITEM, APPEND, and the NUL
 * padding _memory_viz adds. Addresses past 2^63 read as unsigned. */
static void test_protocol4_and_5(void)
{
	static const char pk4[] = "\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00"
	                          "}\x94"
	                          "\x8c\x01k\x94"
	                          "]\x94"
	                          "\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00"
	                          "a" /* 2^63 */
	                          "s"
	                          "\x8d\x02\x00\x00\x00\x00\x00\x00\x00k2"
	                          "j\x00\x00\x00\x00" /* LONG_BINGET 0: the dict itself */
	                          "s."
	                          "\x00\x00";
	static const char pk5[] = "\x80\x05]\x94(K\x05K\x06"
	                          "e.";
	struct io_tree *t;
	struct io_value *root;
	struct io_value *const *items;
	uint64_t u = 0;
	size_t n;

	CHECKF(read_pickle(&t, P(pk4), &root) == 0, "%s", err);
	REQUIRE(root && root->type == IO_DICT);
	items = io_items(io_get(root, "k"), &n);
	CHECK(n == 1 && io_as_u64(items[0], &u) && u == 1ull << 63);
	CHECK(n == 1 && !io_as_i64(items[0], &(int64_t){ 0 }));
	CHECK(io_get(root, "k2") == root); /* a reference, not a copy */
	io_tree_free(t);

	CHECKF(read_pickle(&t, P(pk5), &root) == 0, "%s", err);
	items = io_items(root, &n);
	CHECK(n == 2 && int_of(items[1]) == 6);
	io_tree_free(t);
}

struct refusal {
	const char *name;
	const char *data;
	size_t len;
	const char *says; /* in the message */
};

#define R(name, s, says)                                                                           \
	{                                                                                          \
		name, s, sizeof(s) - 1, says                                                       \
	}

static const struct refusal refusals[] = {
	R("GLOBAL", "\x80\x02\x63os\nsystem\n.", "GLOBAL would build Python objects"),
	R("REDUCE", "\x80\x02)K\x01R.", "REDUCE"),
	R("STACK_GLOBAL", "\x80\x04\x8c\x02os\x8c\x06system\x93.", "STACK_GLOBAL"),
	R("BUILD", "\x80\x02}}b.", "BUILD"),
	R("NEWOBJ", "\x80\x02))\x81.", "NEWOBJ"),
	R("persistent id", "\x80\x02K\x01Q.", "BINPERSID"),
	R("unknown opcode", "\x80\x02\xff.", "opcode 0xff"),
	R("bytes", "\x80\x03\x43\x01x.", "opcode 0x43"),
	R("protocol 0", "(dp0\n.", "not a pickle of protocol 2 to 5"),
	R("protocol 6", "\x80\x06K\x01.", "pickle protocol 6"),
	R("truncated string",
	  "\x80\x02X\x10\x00\x00\x00"
	  "abc",
	  "truncated"),
	R("truncated int", "\x80\x02J\x01\x00", "BININT: truncated"),
	R("no STOP", "\x80\x02K\x01", "ends before STOP"),
	R("memo out of range", "\x80\x02h\x05.", "memo index 5 out of range"),
	R("memo out of order", "\x80\x02K\x01q\x07.", "memo index 7 out of order"),
	R("huge length", "\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\xff", "truncated"),
	R("huge frame", "\x80\x04\x95\x00\x00\x00\x00\x01\x00\x00\x00K\x01.", "FRAME"),
	R("append to a dict",
	  "\x80\x02}K\x01"
	  "a.",
	  "APPEND to something not a list"),
	R("setitem on a list", "\x80\x02]K\x01K\x02s.", "SETITEM on something not a dict"),
	R("odd setitems", "\x80\x02}(K\x01u.", "a key and no value"),
	R("STOP on nothing", "\x80\x02.", "STOP with nothing built"),
	R("APPENDS without MARK", "\x80\x02]e.", "without a MARK"),
	R("TUPLE2 on one value", "\x80\x02K\x01\x86.", "stack too short"),
	R("trailing bytes", "\x80\x02K\x01.\x00x", "trailing bytes after STOP"),
};

static void test_refusals(void)
{
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		const struct refusal *r = &refusals[i];
		struct io_tree *t;
		struct io_value *root = (struct io_value *)1;
		int rc = read_pickle(&t, (const uint8_t *)r->data, r->len, &root);

		CHECKF(rc == -EBADMSG, "%s: rc %d", r->name, rc);
		CHECKF(root == NULL, "%s: a root was returned", r->name);
		CHECKF(strstr(err, r->says), "%s: message '%s' lacks '%s'", r->name, err, r->says);
		CHECKF(!strncmp(err, "pickle at byte ", 15) && !strchr(err, '\n'), "%s: '%s'",
		       r->name, err);
		io_tree_free(t);
	}
}

/* 4096 marks are fine (nothing recursive), the 4097th is refused. */
static void test_deep_nesting(void)
{
	static uint8_t buf[2 + 5000 + 2];
	struct io_tree *t;
	struct io_value *root;

	buf[0] = 0x80;
	buf[1] = 2;
	memset(buf + 2, '(', 5000);
	CHECK(read_pickle(&t, buf, sizeof(buf), &root) == -EBADMSG);
	CHECKF(strstr(err, "nesting deeper than 4096") && strstr(err, "pickle at byte 4098: "),
	       "%s", err);
	io_tree_free(t);

	/* lists nested 100000 deep without marks: built, no recursion */
	static uint8_t deep[2 + 2 * 100000 + 1];
	size_t n = 0;
	deep[n++] = 0x80;
	deep[n++] = 2;
	for (int i = 0; i < 50000; i++)
		deep[n++] = ']';
	for (int i = 0; i < 49999; i++)
		deep[n++] = 'a';
	deep[n++] = '.';
	CHECKF(read_pickle(&t, deep, n, &root) == 0, "%s", err);
	CHECK(root && root->type == IO_LIST && root->n == 1);
	io_tree_free(t);
}

/* What the pickler writes, the reader reads: ints at every width, strings
 * short and long, invalid UTF-8 repaired, memoized keys. */
static void test_writer_round_trip(void)
{
	static const int64_t ints[] = { 0,         255,       256,
		                        65535,     65536,     -1,
		                        INT32_MIN, INT32_MAX, (int64_t)INT32_MAX + 1,
		                        INT64_MIN, INT64_MAX };
	char path[] = "/tmp/test-pickle-XXXXXX";
	char long_str[300];
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w+b") : NULL;
	struct io_pickler *p;
	struct io_tree *t;
	struct io_value *root;
	struct io_value *const *items;
	static uint8_t data[4096];
	size_t n, len;
	uint64_t u = 0;

	REQUIRE(f);
	p = io_pickler_new(f);
	REQUIRE(p);
	memset(long_str, 'x', sizeof(long_str));
	io_pk_empty_list(p);
	io_pk_mark(p);
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		io_pk_int(p, ints[i]);
	io_pk_uint(p, UINT64_MAX);
	io_pk_str(p, long_str, sizeof(long_str));
	io_pk_str(p,
	          "a\xff"
	          "b",
	          3);
	io_pk_key(p, "key");
	io_pk_key(p, "key");
	io_pk_float(p, -2.25);
	io_pk_appends(p);
	io_pk_stop(p);
	io_pickler_free(p);
	len = (size_t)ftell(f);
	rewind(f);
	REQUIRE(len < sizeof(data) && fread(data, 1, len, f) == len);
	fclose(f);
	unlink(path);

	CHECKF(read_pickle(&t, data, len, &root) == 0, "%s", err);
	items = io_items(root, &n);
	REQUIRE(n == sizeof(ints) / sizeof(ints[0]) + 6);
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		CHECKF(int_of(items[i]) == ints[i], "int %zu", i);
	n = sizeof(ints) / sizeof(ints[0]);
	CHECK(io_as_u64(items[n], &u) && u == UINT64_MAX);
	CHECK(items[n + 1]->type == IO_STR && items[n + 1]->n == sizeof(long_str));
	CHECK(io_is_str(items[n + 2], "a?b"));
	CHECK(io_is_str(items[n + 3], "key") && items[n + 4] == items[n + 3]);
	CHECK(items[n + 5]->type == IO_FLOAT && items[n + 5]->f == -2.25);
	io_tree_free(t);
}

/* JSON reads into the same tree. */
static void test_json(void)
{
	static const char doc[] =
	        "{\"a\": [1, -2, 3.5, true, null, \"s\"], \"b\": {\"c\": 140000000000000}}";
	struct io_tree *t = io_tree_new();
	struct io_value *root;
	struct io_value *const *items;
	uint64_t u = 0;
	size_t n;

	REQUIRE(t);
	CHECK(io_json_read(t, P(doc), &root, err, sizeof(err)) == 0);
	items = io_items(io_get(root, "a"), &n);
	CHECK(n == 6 && int_of(items[1]) == -2 && items[2]->f == 3.5 && items[4]->type == IO_NONE);
	CHECK(n == 6 && io_is_str(items[5], "s"));
	CHECK(io_as_u64(io_get(io_get(root, "b"), "c"), &u) && u == 140000000000000ull);
	io_tree_free(t);

	t = io_tree_new();
	CHECK(io_json_read(t, P("{\"a\": [1,"), &root, err, sizeof(err)) == -EBADMSG);
	CHECKF(strstr(err, "line 1"), "%s", err);
	io_tree_free(t);
}

int main(void)
{
	TEST(test_protocol2_plain_data);
	TEST(test_protocol4_and_5);
	TEST(test_refusals);
	TEST(test_deep_nesting);
	TEST(test_writer_round_trip);
	TEST(test_json);
	return check_done();
}
