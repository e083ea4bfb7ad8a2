/* export.c — mt_export_file: checks the request and runs the format's
 * writer; what every writer shares: the walk over the trace's events and
 * progress.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "interop-private.h"

void io_export_progress(struct io_export *x, uint64_t done)
{
	if (x->opt->progress)
		x->opt->progress(x->opt->progress_arg, done, x->total);
}

int io_export_iter(struct io_export *x, uint32_t kinds, struct mt_iter **it, uint64_t *total)
{
	struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { .kinds = kinds, .device = x->opt->device };
	int rc;

	*it = NULL;
	if ((rc = mt_reader_kind_stats(x->r, &q, stats)) < 0)
		return mt_fail(x->err, x->errlen, rc, "%s", mt_reader_message(x->r));
	if (total) {
		*total = 0;
		for (unsigned k = 1; k <= MT_EVENT_KIND_MAX; k++)
			if (!kinds || (kinds & MT_KIND_BIT(k)))
				*total += stats[k].events;
	}
	if ((rc = mt_reader_iter(x->r, &q, it)) < 0)
		return mt_fail(x->err, x->errlen, rc, "%s", mt_reader_message(x->r));
	return 0;
}

/* The extremes of the selected events' times from the chunk index. */
static void span(struct io_export *x, uint64_t *first, uint64_t *last)
{
	struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { .device = x->opt->device };

	*first = MT_TIME_UNKNOWN;
	*last = 0;
	if (mt_reader_kind_stats(x->r, &q, stats) < 0)
		return;
	for (unsigned k = 1; k <= MT_EVENT_KIND_MAX; k++)
		if (stats[k].events) {
			if (stats[k].first_ts < *first)
				*first = stats[k].first_ts;
			if (stats[k].last_ts > *last)
				*last = stats[k].last_ts;
		}
}

uint64_t io_export_first_ts(struct io_export *x)
{
	uint64_t first, last;

	span(x, &first, &last);
	return first == MT_TIME_UNKNOWN ? 0 : first;
}

uint64_t io_export_last_ts(struct io_export *x)
{
	uint64_t first, last;

	span(x, &first, &last);
	return last;
}

int io_export_next(struct io_export *x, struct mt_iter *it, struct mt_event *ev)
{
	int rc = mt_iter_next(it, ev);

	if (rc < 0)
		return mt_fail(x->err, x->errlen, rc, "%s", mt_reader_message(x->r));
	if (rc > 0 && (++x->res->events & 0xffff) == 0)
		io_export_progress(x, x->res->events);
	return rc;
}

int mt_export_file(struct mt_reader *r, FILE *out, const struct mt_export_options *opt,
                   struct mt_export_result *res, char *err, size_t errlen)
{
	struct mt_export_result scratch;
	struct io_export x = { .r = r,
		               .out = out,
		               .opt = opt,
		               .res = res ? res : &scratch,
		               .err = err,
		               .errlen = errlen };
	int rc;

	memset(x.res, 0, sizeof(*x.res));
	if (!opt || !opt->format)
		return mt_fail(err, errlen, -EINVAL, "no export format given");
	if (!opt->format->export)
		return mt_fail(err, errlen, -ENOTSUP, "memtrace imports %s but does not export it",
		               opt->format->name);
	if (opt->device && !mt_reader_device_by_id(r, opt->device))
		return mt_fail(err, errlen, -ENOENT, "the trace has no device %u", opt->device);
	rc = opt->format->export(&x);
	if (rc >= 0)
		io_export_progress(&x, x.res->events);
	return rc < 0 ? rc : 0;
}
