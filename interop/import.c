/* import.c — mt_import_file: maps the input, picks its format (named, or
 * from its first bytes), and runs the format's reader into a sink backed
 * by the caller's writer.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interop-private.h"

struct writer_sink {
	struct io_sink sink; /* first: the readers see only this */
	struct mt_writer *w;
};

static int writer_failed(struct io_sink *s, int rc)
{
	struct writer_sink *ws = (struct writer_sink *)s;

	snprintf(s->err, sizeof(s->err), "%s", mt_writer_message(ws->w));
	return rc;
}

static int w_add_process(struct io_sink *s, const struct mt_process *p, uint32_t *id)
{
	int rc = mt_writer_add_process(((struct writer_sink *)s)->w, p, id);

	return rc < 0 ? writer_failed(s, rc) : 0;
}

static int w_add_device(struct io_sink *s, const struct mt_device *d, uint32_t *id)
{
	int rc = mt_writer_add_device(((struct writer_sink *)s)->w, d, id);

	return rc < 0 ? writer_failed(s, rc) : 0;
}

static int w_intern(struct io_sink *s, const char *str, uint32_t *id)
{
	int rc = mt_writer_intern(((struct writer_sink *)s)->w, str, id);

	return rc < 0 ? writer_failed(s, rc) : 0;
}

static int w_append(struct io_sink *s, const struct mt_event *ev)
{
	int rc = mt_writer_append(((struct writer_sink *)s)->w, ev);

	return rc < 0 ? writer_failed(s, rc) : 0;
}

static int w_set_meta(struct io_sink *s, const char *key, const char *value)
{
	int rc = mt_writer_set_meta(((struct writer_sink *)s)->w, key, value);

	return rc < 0 ? writer_failed(s, rc) : 0;
}

int mt_import_file(const char *path, struct mt_writer *w, const struct mt_import_options *opt,
                   struct mt_import_result *res, char *err, size_t errlen)
{
	struct writer_sink ws = {
		.sink = { w_add_process, w_add_device, w_intern, w_append, w_set_meta }, .w = w
	};
	struct mt_import_result scratch;
	const struct mt_interop_format *f = opt ? opt->format : NULL;
	struct io_import im = { .path = path,
		                .sink = &ws.sink,
		                .res = res ? res : &scratch,
		                .err = err,
		                .errlen = errlen };
	struct stat st;
	void *map = MAP_FAILED;
	int fd, rc;

	memset(im.res, 0, sizeof(*im.res));
	if (opt) {
		im.progress = opt->progress;
		im.progress_arg = opt->progress_arg;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return mt_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return mt_fail(err, errlen, -EINVAL, "%s: not a regular file", path);
	}
	if (st.st_size == 0) {
		close(fd);
		return mt_fail(err, errlen, -EBADMSG, "%s: the file is empty", path);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return mt_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	im.data = map;
	im.len = (size_t)st.st_size;
	if (!f)
		f = mt_interop_format_detect(im.data, im.len);
	if (!f) {
		rc = mt_fail(err, errlen, -EBADMSG,
		             "%s: not a file memtrace imports (a PyTorch memory snapshot, "
		             "an RMM log or an Nsight Systems SQLite export)",
		             path);
	} else if (!f->import) {
		rc = mt_fail(err, errlen, -ENOTSUP, "memtrace exports %s but does not import it",
		             f->name);
	} else {
		im.res->format = f;
		rc = w_set_meta(&ws.sink, "capture", "import");
		if (rc >= 0)
			rc = w_set_meta(&ws.sink, "import_format", f->name);
		if (rc >= 0)
			rc = w_set_meta(&ws.sink, "memtrace_version", MT_VERSION);
		if (rc < 0)
			rc = mt_fail(err, errlen, rc, "%s", ws.sink.err);
		if (rc >= 0)
			rc = f->import(&im);
		if (rc >= 0 && (rc = mt_writer_flush(w)) < 0)
			rc = mt_fail(err, errlen, rc, "%s", mt_writer_message(w));
	}
	munmap(map, (size_t)st.st_size);
	return rc < 0 ? rc : 0;
}
