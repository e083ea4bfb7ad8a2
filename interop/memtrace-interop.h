/* memtrace-interop.h — the doors in and out: other tools' traces become
 * memtrace traces, and memtrace traces become other tools' files.
 *
 * Import reads a PyTorch memory snapshot (the pickle _dump_snapshot writes,
 * or the same structure as JSON), an RMM log (logging_resource_adaptor CSV)
 * or an Nsight Systems SQLite export, and writes an ordinary trace through
 * the format library. Export walks a trace and writes Perfetto protobuf,
 * Chrome JSON, a PyTorch snapshot pickle, CSV, an RMM log, MiniMalloc CSV or
 * folded stacks; the streaming exports hold only what is live, never the
 * whole trace.
 *
 * Formats live in a registry, one file per format (interop/formats.def
 * lists them). Errors are negative errno values with a one-line message in
 * the caller's buffer: -EBADMSG input that is not what it claims or that a
 * reader refuses, -ENOTSUP a format that cannot do what is asked, -ENOMEM,
 * -EIO, or what the format library returned. Nothing here prints or exits.
 * Uses format, analyze and replay (a replayed policy's segments as a
 * snapshot); jansson for JSON, SQLite for Nsight exports.
 */
#ifndef MEMTRACE_INTEROP_H
#define MEMTRACE_INTEROP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memtrace-format.h"

/* ---- formats -------------------------------------------------------------- */

struct mt_interop_format; /* opaque */

/* Number of formats and the i-th (0-based, in the registry's order), NULL
 * when out of range. */
size_t mt_interop_format_count(void);
const struct mt_interop_format *mt_interop_format_at(size_t i);
/* The format with this name ("snapshot", "rmm", ...), or NULL. */
const struct mt_interop_format *mt_interop_format_find(const char *name);
/* The exporting format whose extension ends path (".perfetto-trace",
 * ".csv", ...), the longest that matches winning (".minimalloc.csv" over
 * ".csv"); NULL when none does, or when two formats share it. */
const struct mt_interop_format *mt_interop_format_for_path(const char *path);
/* The importing format whose content the first len bytes of a file look
 * like, or NULL. */
const struct mt_interop_format *mt_interop_format_detect(const void *data, size_t len);

/* Stable name, one line saying what it is, its extensions (space-separated,
 * with the dot), and whether it reads and writes. */
const char *mt_interop_format_name(const struct mt_interop_format *f);
const char *mt_interop_format_description(const struct mt_interop_format *f);
const char *mt_interop_format_extensions(const struct mt_interop_format *f);
bool mt_interop_format_imports(const struct mt_interop_format *f);
bool mt_interop_format_exports(const struct mt_interop_format *f);

/* ---- import ---------------------------------------------------------------- */

struct mt_import_options {
	const struct mt_interop_format *format; /* NULL: detected from the content */
	/* Called now and then with bytes read so far of the file's size (the
	 * Nsight reader: rows); may be NULL. */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
};

struct mt_import_result {
	const struct mt_interop_format *format; /* the format read */
	uint64_t entries;                       /* records the input held */
	uint64_t events;                        /* events written */
	uint64_t skipped;                       /* records not turned into events */
	uint64_t clamped;                       /* times raised to keep the records' order */
	uint64_t first_ts;                      /* time of the earliest record (ns) */
	/* When history began after allocations already existed, or a ring
	 * buffer wrapped: what was live at the first record, reconstructed
	 * from the final state and the records, written as allocations at
	 * history_from (ns on the trace's clock); meta history_from holds it. */
	bool partial;
	uint64_t history_from;
	uint64_t reconstructed;       /* allocations (both layers) so written */
	uint64_t reconstructed_bytes; /* their request-layer bytes */
};

/* Reads the file at path and writes it as a trace through w (open, empty),
 * with its process and device rows and meta capture = "import",
 * import_format = the format's name; flushes w. *res (may be NULL) gets
 * what happened. On failure the writer may hold part of the trace: the
 * caller removes the file. Returns 0 or a negative errno with a message. */
int mt_import_file(const char *path, struct mt_writer *w, const struct mt_import_options *opt,
                   struct mt_import_result *res, char *err, size_t errlen);

/* ---- export ------------------------------------------------------------------ */

struct mt_export_options {
	const struct mt_interop_format *format; /* required */
	uint32_t device;                        /* device row id; 0 = all */
	bool kernels;                           /* perfetto, chrome: kernel slices too */
	/* folded, and snapshot with policy: the moment (ns since the
	 * device's first memory event); at_set false = the peak of live bytes
	 * (folded) or of the policy's reserved bytes (snapshot) */
	bool at_set;
	uint64_t at;
	/* snapshot: instead of the recorded allocator's, the segments and
	 * blocks of this replay policy (a spec as memtrace replay takes it),
	 * simulated on one device, at the moment; NULL = none */
	const char *policy;
	/* Called now and then with events written of the trace's total; may be
	 * NULL. */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
};

struct mt_export_result {
	uint64_t events;  /* trace events read */
	uint64_t records; /* rows, packets or entries written */
};

/* Writes trace r in opt->format to out (a stream the caller opened and
 * closes; writes are buffered, the caller checks ferror). Returns 0 or a
 * negative errno with a message (-ENOTSUP for a format that only
 * imports). */
int mt_export_file(struct mt_reader *r, FILE *out, const struct mt_export_options *opt,
                   struct mt_export_result *res, char *err, size_t errlen);

#endif
