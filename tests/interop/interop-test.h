/* interop-test.h — what the interop tests share: a scratch folder, files
 * written from strings, importing into a fresh trace, synthetic traces and
 * reading a trace's events back. */
#ifndef MEMTRACE_INTEROP_TEST_H
#define MEMTRACE_INTEROP_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memtrace-interop.h"
#include "memtrace-synth.h"
#include "tap.h"

static char scratch[64];
static char err[512];

/* A fresh folder for the test's files (removed by scratch_clean). */
static inline void scratch_make(void)
{
	snprintf(scratch, sizeof(scratch), "/tmp/test-interop-XXXXXX");
	REQUIRE(mkdtemp(scratch));
}

static inline void scratch_clean(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	REQUIRE(system(cmd) == 0);
}

/* scratch/name into buf. */
static inline const char *in_scratch(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", scratch, name);
	return buf;
}

static inline void write_text(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");
	REQUIRE(f && fwrite(text, 1, len, f) == len && fclose(f) == 0);
}

/* Imports path into a new trace at trace (removed first); returns what
 * mt_import_file returned, err holds its message. */
static inline int import_to(const char *path, const char *trace, struct mt_import_result *res)
{
	struct mt_writer *w = mt_writer_new();
	int rc;

	unlink(trace);
	REQUIRE(w && mt_writer_open(w, trace, MT_WRITER_CREATE) == 0);
	err[0] = 0;
	rc = mt_import_file(path, w, NULL, res, err, sizeof(err));
	mt_writer_free(w);
	return rc;
}

/* Every event of the query, in trace order; *n their count. */
static inline struct mt_event *read_events(struct mt_reader *r, uint32_t kinds, size_t *n)
{
	struct mt_query q = { .kinds = kinds };
	struct mt_event *v = NULL, ev;
	struct mt_iter *it;
	size_t cap = 0;
	int rc;

	*n = 0;
	REQUIRE(mt_reader_iter(r, &q, &it) == 0);
	while ((rc = mt_iter_next(it, &ev)) == 1) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(v, cap * sizeof(*v));
			REQUIRE(v);
		}
		v[(*n)++] = ev;
	}
	REQUIRE(rc == 0);
	mt_iter_free(it);
	return v;
}

static inline struct mt_reader *open_trace(const char *path)
{
	struct mt_reader *r = mt_reader_new();
	REQUIRE(r);
	REQUIRE(mt_reader_open(r, path) == 0);
	return r;
}

/* A synthetic training trace of about `events` alloc/free events. */
static inline void synth_trace(const char *path, uint64_t events, uint64_t seed)
{
	struct mt_writer *w = mt_writer_new();

	unlink(path);
	REQUIRE(w && mt_writer_open(w, path, MT_WRITER_CREATE) == 0);
	REQUIRE(mt_synth_write(w, MT_SYNTH_TRAIN, events, seed) == 0);
	REQUIRE(mt_writer_flush(w) == 0);
	mt_writer_free(w);
}

/* Exports trace in format (by name) to out; returns mt_export_file's
 * result. */
static inline int export_to(const char *trace, const char *format, const char *out,
                            struct mt_export_options *opt_in)
{
	struct mt_export_options opt = { 0 };
	struct mt_reader *r = open_trace(trace);
	FILE *f = fopen(out, "wb");
	int rc;

	if (opt_in)
		opt = *opt_in;
	opt.format = mt_interop_format_find(format);
	REQUIRE(opt.format && f);
	err[0] = 0;
	rc = mt_export_file(r, f, &opt, NULL, err, sizeof(err));
	REQUIRE(fclose(f) == 0);
	mt_reader_free(r);
	return rc;
}

#endif
