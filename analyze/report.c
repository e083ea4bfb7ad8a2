/* report.c — one device's report: the peak of live bytes, the anatomy and
 * the largest live allocations at the moment asked, what share of the peak
 * has a call site or a range, the per-range table, allocations never freed
 * and failed allocations explained.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze-private.h"
#include "memtrace-common.h"

static bool live_then(const struct mt_lifetime *l, const void *data)
{
	return mt_lifetime_live_at(l, *(const uint64_t *)data);
}

static bool never_freed(const struct mt_lifetime *l, const void *data)
{
	return l->flags & MT_LIFETIME_NO_FREE;
}

static void stage(const struct mt_report_options *opt, uint64_t done)
{
	if (opt && opt->progress)
		opt->progress(opt->progress_data, done, 100);
}

/* The directory of the program's own files, from the call sites of the
 * allocations and failures. */
static int program_dir(struct mt_report *rep)
{
	const struct mt_analysis *d = &rep->data;
	const char **stacks = malloc((d->nsites + 1) * sizeof(*stacks));
	size_t i;

	if (!stacks)
		return -ENOMEM;
	for (i = 0; i < d->nsites; i++)
		stacks[i] = mt_reader_string(d->r, d->sites[i]);
	mt_site_program_dir(stacks, d->nsites, rep->program_dir, sizeof(rep->program_dir));
	free(stacks);
	return 0;
}

/* Attribution at the peak and the allocations never freed. */
static int tally(struct mt_report *rep)
{
	const struct mt_analysis *d = &rep->data;
	size_t i;

	for (i = 0; i < d->nlive; i++) {
		const struct mt_lifetime *l = &d->live[i];

		if (l->flags & MT_LIFETIME_NO_FREE) {
			rep->never_freed_count++;
			rep->never_freed_bytes += l->bytes;
		}
		if (mt_lifetime_live_at(l, rep->at))
			rep->live_at_count++;
		if ((l->site || rep->range_of[i]) && mt_lifetime_live_at(l, rep->peak_at))
			rep->attributed_bytes += l->bytes;
	}
	rep->attributed_fraction =
	        rep->peak_bytes ? (double)rep->attributed_bytes / (double)rep->peak_bytes : 0.0;
	return an_largest_new(rep, never_freed, NULL, rep->top, &rep->never_freed,
	                      &rep->nnever_freed);
}

/* The moment asked, checked against the device's events. */
static int moment(struct mt_report *rep, const struct mt_report_options *opt, char *err,
                  size_t errlen)
{
	const struct mt_analysis *d = &rep->data;
	char a[32], b[32];

	rep->at = rep->peak_at;
	if (!opt || !opt->at_set)
		return 0;
	if (opt->at > d->t1 - d->t0)
		return an_fail(err, errlen, -ERANGE,
		               "--at %s lies after the end of device %u's events (+%s)",
		               mt_duration_format(opt->at, a, sizeof(a)), d->dev->ordinal,
		               mt_duration_format(d->t1 - d->t0, b, sizeof(b)));
	rep->at = d->t0 + opt->at;
	return 0;
}

/* What ran at the moment asked, on the process and stream of the
 * allocation made then (at the peak: the one that reached it). */
static int context(struct mt_report *rep, char *err, size_t errlen)
{
	const struct mt_analysis *d = &rep->data;
	uint64_t stream = UINT64_MAX;
	uint32_t process = 0;

	for (size_t i = 0; i < d->nlive; i++) {
		const struct mt_lifetime *l = &d->live[i];
		if (l->start == rep->at && !(l->flags & MT_LIFETIME_NO_ALLOC)) {
			stream = l->stream;
			process = l->process;
		}
	}
	return mt_moment_context(d, process, stream, rep->at, &rep->context, err, errlen);
}

/* The lists of the moment and of the peak. */
static int lists(struct mt_report *rep, const struct mt_report_options *opt)
{
	enum mt_report_by by = opt ? opt->by : MT_REPORT_BY_SITE;

	if (an_largest_new(rep, live_then, &rep->at, rep->top, &rep->tensors, &rep->ntensors) < 0 ||
	    an_largest_new(rep, live_then, &rep->peak_at, rep->top, &rep->top_peak,
	                   &rep->ntop_peak) < 0)
		return -ENOMEM;
	return by == MT_REPORT_BY_TENSOR ? 0 : an_groups(rep, by == MT_REPORT_BY_SITE);
}

/* The moments whose lifetimes the report lists: the peak, the moment
 * asked, each OOM explained, and the sample nearest to each anatomy's
 * moment (it may be measured there). */
static uint64_t *moments(const struct mt_report *rep, size_t *n)
{
	const struct mt_analysis *d = &rep->data;
	uint64_t *v = malloc((2 * rep->nooms + 4) * sizeof(*v));
	size_t i, s;

	*n = 0;
	if (!v)
		return NULL;
	v[(*n)++] = rep->peak_at;
	v[(*n)++] = rep->at;
	if ((s = mt_analysis_nearest_sample(d, rep->at)) != (size_t)-1)
		v[(*n)++] = d->samples[s].ts;
	for (i = 0; i < rep->nooms; i++) {
		if (!rep->ooms[i].detailed)
			continue;
		v[(*n)++] = rep->ooms[i].f->ts;
		if ((s = mt_analysis_nearest_sample(d, rep->ooms[i].f->ts)) != (size_t)-1)
			v[(*n)++] = d->samples[s].ts;
	}
	return v;
}

int mt_report_build(struct mt_report *rep, struct mt_reader *r, uint32_t device,
                    const struct mt_report_options *opt, char *err, size_t errlen)
{
	struct mt_analysis *d = &rep->data;
	uint64_t *at = NULL;
	size_t nat = 0;
	int rc;

	memset(rep, 0, sizeof(*rep));
	rep->top = opt && opt->top ? opt->top : MT_REPORT_TOP;
	stage(opt, 0);
	rc = mt_analysis_survey(d, r, device, opt && opt->all_ranges, err, errlen);
	if (rc < 0)
		return rc;
	rep->peak_bytes = d->peak_bytes;
	rep->peak_at = d->peak_bytes ? d->peak_at : d->t0;
	rc = moment(rep, opt, err, errlen);
	if (rc == 0)
		rc = an_ooms_find(rep, err, errlen);
	if (rc < 0)
		goto fail;
	if (opt && opt->only_listed && !(at = moments(rep, &nat))) {
		rc = an_fail(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	rc = an_ranges_sweep(rep, opt, at, nat, err, errlen);
	free(at);
	if (rc < 0)
		goto fail;
	if (tally(rep) < 0 || lists(rep, opt) < 0 || program_dir(rep) < 0) {
		rc = an_fail(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	rep->live_at_bytes = mt_live_at(d->live, d->nlive, rep->at);
	rc = mt_analysis_anatomy(d, rep->at, &rep->anatomy, err, errlen);
	if (rc == 0)
		rc = context(rep, err, errlen);
	if (rc == 0)
		rc = an_ooms_explain(rep, err, errlen);
	if (rc < 0)
		goto fail;
	stage(opt, 100);
	return 0;
fail:
	mt_report_release(rep);
	return rc;
}

void mt_report_release(struct mt_report *rep)
{
	size_t i;

	for (i = 0; i < rep->nooms; i++)
		free(rep->ooms[i].verdicts);
	for (i = 0; i < rep->ngroups; i++)
		free(rep->groups[i].key);
	free(rep->ooms);
	free(rep->failures);
	free(rep->groups);
	free(rep->tensors);
	free(rep->top_peak);
	free(rep->never_freed);
	free(rep->replays);
	free(rep->ranges);
	free(rep->range_of);
	mt_analysis_release(&rep->data);
	memset(rep, 0, sizeof(*rep));
}
