/* interop-private.h — what the interop files share: the format table's
 * entry, the sink importers write into, the plain-data value tree that the
 * pickle and JSON readers build, and small helpers (output
 * buffers, a live-allocation table, a time-ordered queue of pending ends).
 * Messages go through common's mt_fail.
 */
#ifndef MEMTRACE_INTEROP_PRIVATE_H
#define MEMTRACE_INTEROP_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "memtrace-common.h"
#include "memtrace-format.h"
#include "memtrace-interop.h"


/* A hash table from a two-word key (an address and what qualifies it) to a
 * word. Zero-initialise; io_map_release frees it. */
struct io_map_slot {
	uint64_t a, b, value;
	bool used;
};
struct io_map {
	struct io_map_slot *slots;
	size_t n, cap;
};
/* Whether the key is present (and its value into *value, may be NULL). */
bool io_map_get(const struct io_map *m, uint64_t a, uint64_t b, uint64_t *value);
/* Sets the key's value; 0 or -ENOMEM. */
int io_map_put(struct io_map *m, uint64_t a, uint64_t b, uint64_t value);
/* Removes the key; whether it was present (its value into *value). */
bool io_map_take(struct io_map *m, uint64_t a, uint64_t b, uint64_t *value);
void io_map_release(struct io_map *m);

/* ---- the sink an importer writes into ------------------------------------ */

/* What an importer produces: rows, strings, events and meta, in the order
 * a trace needs them. mt_import_file backs it with an mt_writer; the fuzz
 * targets with a sink that only checks and counts. Each returns 0 or a
 * negative errno (message in the sink's err). */
struct io_sink {
	int (*add_process)(struct io_sink *s, const struct mt_process *p, uint32_t *id);
	int (*add_device)(struct io_sink *s, const struct mt_device *d, uint32_t *id);
	int (*intern)(struct io_sink *s, const char *str, uint32_t *id);
	int (*append)(struct io_sink *s, const struct mt_event *ev);
	int (*set_meta)(struct io_sink *s, const char *key, const char *value);
	char err[256];
};

/* An importer's input and what it reports back. */
struct io_import {
	const char *path;    /* the file (the Nsight reader opens it with SQLite) */
	const uint8_t *data; /* its bytes */
	size_t len;
	struct io_sink *sink;
	struct mt_import_result *res;                               /* zeroed by the caller */
	void (*progress)(void *arg, uint64_t done, uint64_t total); /* may be NULL */
	void *progress_arg;
	char *err;
	size_t errlen;
};

/* An exporter's input. Writes go to out; a write error is found by the
 * caller (ferror). */
struct io_export {
	struct mt_reader *r;
	FILE *out;
	const struct mt_export_options *opt;
	struct mt_export_result *res; /* zeroed by the caller */
	uint64_t total;               /* events the export reads in all (progress) */
	char *err;
	size_t errlen;
};

/* Reports progress: done events of x->total (no-op without a callback). */
void io_export_progress(struct io_export *x, uint64_t done);

/* Starts a walk over the events of the kinds in mask (0 = all) on the
 * options' device, in trace order; *total (may be NULL) gets their number
 * from the chunk index. 0 or a negative errno with a message. */
int io_export_iter(struct io_export *x, uint32_t kinds, struct mt_iter **it, uint64_t *total);
/* The next event of the walk: 1, 0 at the end, or a negative errno with a
 * message; counts events read and reports progress. */
int io_export_next(struct io_export *x, struct mt_iter *it, struct mt_event *ev);
/* The first and last event times of the options' device(s), from the chunk
 * index (0 when the trace is empty). */
uint64_t io_export_first_ts(struct io_export *x);
uint64_t io_export_last_ts(struct io_export *x);

/* ---- protocol buffers, written by hand (protobuf.c) ---------------------------- */

/* A message being built; reset n to start another. failed: out of memory
 * (writes stop). */
struct io_pb {
	uint8_t *buf;
	size_t n, cap;
	bool failed;
};
/* A varint field (uint32/64, int64 >= 0, enum, bool). */
void io_pb_uint(struct io_pb *pb, unsigned field, uint64_t v);
/* A length-delimited field (string, bytes). */
void io_pb_bytes(struct io_pb *pb, unsigned field, const void *data, size_t n);
void io_pb_string(struct io_pb *pb, unsigned field, const char *s);
/* Opens a nested message; io_pb_end(pb, what begin returned) closes it. */
size_t io_pb_begin(struct io_pb *pb, unsigned field);
void io_pb_end(struct io_pb *pb, size_t start);
void io_pb_release(struct io_pb *pb);

/* ---- the timeline viewers' model (timeline.c) -------------------------------- */

enum io_track_kind {
	IO_TRACK_PROCESS,     /* a process: its failed allocations as instants */
	IO_TRACK_LIVE,        /* counter: bytes live, request layer (else driver) */
	IO_TRACK_RESERVED,    /* counter: bytes of the driver layer (segments) */
	IO_TRACK_DEVICE_USED, /* counter: sampled device memory in use */
	IO_TRACK_REPLAY,      /* counter: a saved replay's reserved bytes */
	IO_TRACK_RANGES,      /* slices: NVTX ranges of a thread at one depth */
	IO_TRACK_KERNELS,     /* slices: kernels of a stream */
};

struct io_track {
	uint64_t uuid;   /* 1, 2, 3... in the order tracks appear */
	uint64_t parent; /* the process track's uuid; 0 for processes, replays */
	enum io_track_kind kind;
	uint32_t process, device; /* row ids (0 when not of one) */
	uint64_t sub;             /* thread << 16 | depth, stream, replay index */
	uint32_t thread;          /* ranges: the OS thread id */
	int64_t pid;              /* of the process (0 for replays) */
	bool counter;             /* a counter track, in bytes */
	char name[192];
};

/* What a timeline format writes. Each returns 0 or a negative errno. */
struct io_timeline_ops {
	/* a track, before its first event */
	int (*track)(void *arg, const struct io_track *t);
	int (*counter)(void *arg, const struct io_track *t, uint64_t ts, uint64_t value);
	/* a slice from ts to end (end known at its start), then its end when
	 * the walk reaches it */
	int (*slice)(void *arg, const struct io_track *t, uint64_t ts, uint64_t end,
	             const char *name, const char *category);
	int (*slice_end)(void *arg, const struct io_track *t, uint64_t end);
	/* a failed allocation */
	int (*instant)(void *arg, const struct io_track *t, uint64_t ts, uint64_t requested,
	               uint64_t free_bytes);
};

/* Walks the trace (the options' device, kernels when asked) and calls ops
 * in time order. 0 or a negative errno with a message. */
int io_timeline_walk(struct io_export *x, const struct io_timeline_ops *ops, void *arg);

/* One format: a name, what it is, its file extensions (space-separated,
 * with the dot; the first is the one to suggest) and what it can do.
 * detect (imports only) says whether the first bytes of a file look like
 * this format. */
struct mt_interop_format {
	const char *name;
	const char *description;
	const char *extensions;
	bool (*detect)(const uint8_t *data, size_t len);
	int (*import)(struct io_import *im);
	int (*export)(struct io_export *x);
};

/* ---- fast buffered text output ----------------------------------------------- */

/* Text written through a large buffer, numbers formatted by hand: the
 * streaming exports spend their time here. Errors show in ferror(f). */
struct io_out {
	FILE *f;
	size_t n;
	char buf[1 << 16];
};

/* A buffer writing to f (free it with free after io_out_flush); NULL when
 * out of memory. */
struct io_out *io_out_new(FILE *f);

static inline void io_out_flush(struct io_out *o)
{
	if (o->n)
		fwrite(o->buf, 1, o->n, o->f);
	o->n = 0;
}

static inline void io_out_bytes(struct io_out *o, const void *p, size_t n)
{
	if (o->n + n > sizeof(o->buf)) {
		io_out_flush(o);
		if (n > sizeof(o->buf)) {
			fwrite(p, 1, n, o->f);
			return;
		}
	}
	memcpy(o->buf + o->n, p, n);
	o->n += n;
}

static inline void io_out_str(struct io_out *o, const char *s)
{
	io_out_bytes(o, s, strlen(s));
}

static inline void io_out_char(struct io_out *o, char c)
{
	if (o->n == sizeof(o->buf))
		io_out_flush(o);
	o->buf[o->n++] = c;
}

/* Room for n more bytes at the returned pointer (n <= the buffer's size);
 * io_out_commit then says where writing ended. */
static inline char *io_out_reserve(struct io_out *o, size_t n)
{
	if (o->n + n > sizeof(o->buf))
		io_out_flush(o);
	return o->buf + o->n;
}

static inline void io_out_commit(struct io_out *o, char *end)
{
	o->n = (size_t)(end - o->buf);
}

/* Writes v in decimal at p (at most 20 bytes); returns the end. The
 * digits go straight to their place, two at a time from the end. */
static inline char *io_put_u64(char *p, uint64_t v)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324"
	                            "25262728293031323334353637383940414243444546474849"
	                            "50515253545556575859606162636465666768697071727374"
	                            "75767778798081828384858687888990919293949596979899";
	static const uint64_t pow10[20] = {
		1ull,
		10ull,
		100ull,
		1000ull,
		10000ull,
		100000ull,
		1000000ull,
		10000000ull,
		100000000ull,
		1000000000ull,
		10000000000ull,
		100000000000ull,
		1000000000000ull,
		10000000000000ull,
		100000000000000ull,
		1000000000000000ull,
		10000000000000000ull,
		100000000000000000ull,
		1000000000000000000ull,
		10000000000000000000ull,
	};
	/* digits: log10 from the bit length, then one comparison */
	unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233 >> 12;
	unsigned n = t + (v >= pow10[t]);
	char *end = p + (n ? n : 1), *q = end;

	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		q -= 2;
		memcpy(q, pairs + 2 * r, 2);
	}
	if (v >= 10) {
		q -= 2;
		memcpy(q, pairs + 2 * v, 2);
	} else {
		*--q = (char)('0' + v);
	}
	return end;
}

static inline void io_out_u64(struct io_out *o, uint64_t v)
{
	io_out_commit(o, io_put_u64(io_out_reserve(o, 20), v));
}

static inline void io_out_hex(struct io_out *o, uint64_t v)
{
	char d[18];
	int i = 18;

	do {
		d[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	d[--i] = 'x';
	d[--i] = '0';
	io_out_bytes(o, d + i, (size_t)(18 - i));
}

/* ---- plain data: the values a pickle or a JSON document holds ------------- */

enum io_type {
	IO_NONE = 0,
	IO_BOOL,
	IO_INT,
	IO_FLOAT,
	IO_STR,
	IO_LIST,
	IO_TUPLE,
	IO_DICT,
};

/* One value. Strings point into the input (pickle) or the tree's arena
 * (JSON) and are not NUL-terminated. A dict holds n key/value pairs as 2n
 * items (key, value, key, value...); a later equal key wins. */
struct io_value {
	uint8_t type; /* enum io_type */
	uint8_t wide; /* IO_INT: i holds an unsigned value >= 2^63 */
	uint8_t huge; /* IO_INT: the value does not fit 64 bits */
	uint32_t n;   /* IO_STR: bytes; lists and tuples: items; dicts: pairs */
	uint32_t cap; /* item slots allocated (a dict pair takes two) */
	union {
		int64_t i;
		double f;
		const char *s;
		struct io_value **items;
	};
};

/* An arena that owns a tree of values. */
struct io_tree;

struct io_tree *io_tree_new(void);
/* Frees the tree and every value and string in it. Accepts NULL. */
void io_tree_free(struct io_tree *t);
/* A new value of the given type (zeroed); NULL when out of memory. */
struct io_value *io_tree_value(struct io_tree *t, enum io_type type);
/* A copy of n bytes in the arena; NULL when out of memory. */
const char *io_tree_bytes(struct io_tree *t, const char *s, size_t n);
/* Makes room for `items` more items (dict: pairs) at once; 0 or -ENOMEM. */
int io_tree_reserve(struct io_tree *t, struct io_value *container, size_t items);
/* Appends item to a list or tuple; 0 or -ENOMEM. */
int io_tree_push(struct io_tree *t, struct io_value *container, struct io_value *item);
/* Adds a key/value pair to a dict; 0 or -ENOMEM. */
int io_tree_set(struct io_tree *t, struct io_value *dict, struct io_value *key,
                struct io_value *value);

/* The value of key in dict d; NULL when d is not a dict or has no such
 * string key. */
const struct io_value *io_get(const struct io_value *d, const char *key);
/* Whether v is the string s. */
bool io_is_str(const struct io_value *v, const char *s);
/* v as an integer: true when v is an int (not a bool) that fits. */
bool io_as_u64(const struct io_value *v, uint64_t *out);
bool io_as_i64(const struct io_value *v, int64_t *out);
/* Items of a list or tuple; n = 0 and NULL for anything else. */
struct io_value *const *io_items(const struct io_value *v, size_t *n);
/* The value as JSON (dicts with string keys, lists, tuples as arrays,
 * scalars); NULL when out of memory or for depth past 32. */
struct json_t *io_to_json(const struct io_value *v);

/* Reads a pickle of protocol 2 to 5 holding only plain data (dicts, lists,
 * tuples, strings, ints, floats, bools, None) into t; *root receives the
 * value. Refuses, with a message naming the byte offset, anything that
 * would build objects (GLOBAL, REDUCE, ...), other opcodes, truncation,
 * memo references out of range, nesting past 4096 marks and trailing bytes
 * other than NUL padding. 0 or -EBADMSG / -ENOMEM. */
int io_pickle_read(struct io_tree *t, const uint8_t *data, size_t len, struct io_value **root,
                   char *err, size_t errlen);

/* Reads JSON text into t (strings copied into the arena). 0 or -EBADMSG /
 * -ENOMEM with a message (line and column for a syntax error). */
int io_json_read(struct io_tree *t, const uint8_t *data, size_t len, struct io_value **root,
                 char *err, size_t errlen);

/* ---- the PyTorch snapshot's structure ------------------------------------- */

/* Turns a snapshot tree (the dict _dump_snapshot pickles, or its list of
 * segments) into events through im->sink. */
int io_snapshot_to_events(struct io_import *im, const struct io_value *root);
/* Writes the trace as a snapshot pickle (snapshot-export.c). */
int io_snapshot_export(struct io_export *x);

/* ---- writing a pickle (protocol 4, streamed) --------------------------------- */

struct io_pickler;

/* Starts a pickle on out: PROTO 4. NULL when out of memory. */
struct io_pickler *io_pickler_new(FILE *out);
void io_pickler_free(struct io_pickler *p);
void io_pk_none(struct io_pickler *p);
void io_pk_bool(struct io_pickler *p, bool v);
void io_pk_int(struct io_pickler *p, int64_t v);
void io_pk_uint(struct io_pickler *p, uint64_t v);
void io_pk_float(struct io_pickler *p, double v);
void io_pk_str(struct io_pickler *p, const char *s, size_t n);
void io_pk_cstr(struct io_pickler *p, const char *s);
/* A string written once and referred to by a memo index afterwards (keys,
 * repeated names). */
void io_pk_key(struct io_pickler *p, const char *s);
void io_pk_empty_dict(struct io_pickler *p);
void io_pk_empty_list(struct io_pickler *p);
void io_pk_mark(struct io_pickler *p);
void io_pk_setitems(struct io_pickler *p);
void io_pk_appends(struct io_pickler *p);
void io_pk_tuple2(struct io_pickler *p);
/* Remembers the value just written (memo) and returns its index. */
uint32_t io_pk_memoize(struct io_pickler *p);
/* Writes a reference to a remembered value. */
void io_pk_get(struct io_pickler *p, uint32_t index);
void io_pk_stop(struct io_pickler *p);

/* ---- live allocations while walking events --------------------------------- */

/* The allocations open while walking alloc/free events in order, paired by
 * (process, device, layer, address) as docs/FORMAT.md's lifetimes are: an alloc
 * adds its bytes, a free removes the open allocation at its address (none:
 * nothing changes), an alloc over an open one leaves the earlier counted
 * forever. Per (device, layer) it keeps the bytes live. */
struct io_live;

struct io_live_entry {
	uint64_t address, bytes, stream, ts;
	uint32_t process, device, site;
	uint8_t layer, mem_kind;
};

struct io_live *io_live_new(void);
void io_live_free(struct io_live *l);
/* Applies an alloc or free event; *closed (may be NULL) receives the
 * allocation a free closed (returns 1), else 0 is returned for a free
 * that closed nothing. -ENOMEM. */
int io_live_apply(struct io_live *l, const struct mt_event *ev, struct io_live_entry *closed);
/* Bytes live now on device (0 = all) in layer. */
uint64_t io_live_bytes(const struct io_live *l, uint32_t device, unsigned layer);
/* Calls fn for every open allocation (a free-standing order). */
int io_live_each(const struct io_live *l, int (*fn)(void *arg, const struct io_live_entry *e),
                 void *arg);

/* ---- a queue of things that end later, in time order ------------------------ */

/* A min-heap of (time, payload) for ends that must be written in time order
 * (slice ends, free_completed entries). */
struct io_pending_item {
	uint64_t ts;
	uint64_t seq; /* ties: first pushed first out */
	uint64_t a, b, c;
	uint32_t d, e;
};
struct io_pending {
	struct io_pending_item *v;
	size_t n, cap;
	uint64_t seq;
};
int io_pending_push(struct io_pending *q, struct io_pending_item item);
/* The earliest item when its ts <= until (returns true), else false. */
bool io_pending_pop(struct io_pending *q, uint64_t until, struct io_pending_item *out);
void io_pending_release(struct io_pending *q);

#endif
