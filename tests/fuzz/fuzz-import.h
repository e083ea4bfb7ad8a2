/* fuzz-import.h — what the importers' fuzz targets share: a sink that
 * writes nothing and checks what a reader hands it (rows before their
 * events, known row ids, known kinds and layers), and a run of one format's
 * reader over the input. A broken rule aborts, which the fuzzer and the
 * regression driver report as a crash. */
#ifndef MEMTRACE_FUZZ_IMPORT_H
#define MEMTRACE_FUZZ_IMPORT_H

#include <stdlib.h>
#include <string.h>

#include "fuzz-target.h"
#include "interop-private.h"

struct fuzz_sink {
	struct io_sink sink;
	uint32_t processes, devices, strings;
};

static int fz_add_process(struct io_sink *s, const struct mt_process *p, uint32_t *id)
{
	if (!p->command_line || !p->hostname)
		abort();
	*id = ++((struct fuzz_sink *)s)->processes;
	return 0;
}

static int fz_add_device(struct io_sink *s, const struct mt_device *d, uint32_t *id)
{
	if (!d->name || !d->uuid || !d->driver_version || !d->cuda_version)
		abort();
	*id = ++((struct fuzz_sink *)s)->devices;
	return 0;
}

static int fz_intern(struct io_sink *s, const char *str, uint32_t *id)
{
	(void)strlen(str);
	*id = ++((struct fuzz_sink *)s)->strings;
	return 0;
}

static int fz_append(struct io_sink *s, const struct mt_event *ev)
{
	struct fuzz_sink *f = (struct fuzz_sink *)s;

	if (!ev->process || ev->process > f->processes || !ev->device || ev->device > f->devices ||
	    !ev->kind || ev->kind > MT_EVENT_KIND_MAX)
		abort();
	if ((ev->kind == MT_EVENT_ALLOC || ev->kind == MT_EVENT_FREE) &&
	    (ev->alloc.layer > MT_LAYER_REQUEST || ev->alloc.site > f->strings))
		abort();
	if (ev->kind == MT_EVENT_RANGE &&
	    (ev->range.name > f->strings || ev->range.domain > f->strings))
		abort();
	return 0;
}

static int fz_set_meta(struct io_sink *s, const char *key, const char *value)
{
	(void)s;
	(void)strlen(key);
	(void)strlen(value);
	return 0;
}

/* Runs format's reader over data; the message must be one line. */
static inline void fuzz_import(const struct mt_interop_format *format, const char *path,
                               const uint8_t *data, size_t len)
{
	struct fuzz_sink s = { .sink = { fz_add_process, fz_add_device, fz_intern, fz_append,
		                         fz_set_meta } };
	struct mt_import_result res = { 0 };
	char err[512] = "";
	struct io_import im = { .path = path,
		                .data = data,
		                .len = len,
		                .sink = &s.sink,
		                .res = &res,
		                .err = err,
		                .errlen = sizeof(err) };
	int rc = format->import(&im);

	if (rc > 0 || (rc < 0 && (!*err || strchr(err, '\n'))))
		abort();
}

#endif
