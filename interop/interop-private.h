/* interop-private.h — what the interop files share: the format table's
 * entry, the sink importers write into, the plain-data value tree that the
 * pickle and JSON readers build, and small helpers (messages, growing
 * arrays, a live-allocation table, a time-ordered queue of pending ends).
 */
#ifndef MEMTRACE_INTEROP_PRIVATE_H
#define MEMTRACE_INTEROP_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memtrace-format.h"
#include "memtrace-interop.h"

/* Formats a message into err (when err and errlen) and returns rc. */
int io_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* Makes room for item n in *p (capacity *cap items of size bytes),
 * doubling; 0 or -ENOMEM. */
int io_grow(void **p, size_t *cap, size_t n, size_t size);

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
