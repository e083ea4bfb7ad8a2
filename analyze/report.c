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

/* Attribution at the peak and the allocations never freed. */
static void tally(struct mt_report *rep)
{
	const struct mt_analysis *d = &rep->data;
	size_t i;

	for (i = 0; i < d->nlive; i++) {
		const struct mt_lifetime *l = &d->live[i];

		if (l->flags & MT_LIFETIME_NO_FREE) {
			rep->never_freed_count++;
			rep->never_freed_bytes += l->bytes;
		}
		if ((l->site || rep->range_of[i]) && mt_lifetime_live_at(l, rep->peak_at))
			rep->attributed_bytes += l->bytes;
	}
	rep->attributed_fraction =
	        rep->peak_bytes ? (double)rep->attributed_bytes / (double)rep->peak_bytes : 0.0;
	rep->nnever_freed = an_largest(rep, never_freed, NULL, rep->never_freed, MT_REPORT_TOP);
}

int mt_report_build(struct mt_report *rep, struct mt_reader *r, uint32_t device,
                    const struct mt_report_options *opt, char *err, size_t errlen)
{
	struct mt_analysis *d = &rep->data;
	int rc;

	memset(rep, 0, sizeof(*rep));
	rc = mt_analysis_load(d, r, device, opt && opt->all_ranges, err, errlen);
	if (rc < 0)
		return rc;
	stage(opt, 0);
	rc = mt_peak_moment(d->live, d->nlive, &rep->peak_bytes, &rep->peak_at);
	if (rc < 0) {
		rc = an_fail(err, errlen, rc, "out of memory");
		goto fail;
	}
	if (!rep->peak_bytes)
		rep->peak_at = d->t0;
	rep->at = rep->peak_at;
	if (opt && opt->at_set) {
		if (opt->at > d->t1 - d->t0) {
			char a[32], b[32];

			rc = an_fail(err, errlen, -ERANGE,
			             "--at %s lies after the end of device %u's events (+%s)",
			             mt_duration_format(opt->at, a, sizeof(a)), d->device,
			             mt_duration_format(d->t1 - d->t0, b, sizeof(b)));
			goto fail;
		}
		rep->at = d->t0 + opt->at;
	}
	rc = an_ranges_sweep(rep, opt, err, errlen);
	if (rc < 0)
		goto fail;
	tally(rep);
	rep->live_at_bytes = mt_live_at(d->live, d->nlive, rep->at);
	rep->ntop = an_largest(rep, live_then, &rep->at, rep->top, MT_REPORT_TOP);
	rep->ntop_peak = an_largest(rep, live_then, &rep->peak_at, rep->top_peak, MT_REPORT_TOP);
	rc = mt_anatomy_compute(&rep->anatomy, d->live, d->nlive, d->layer, d->seg, d->nseg,
	                        d->samples, d->nsamples, rep->at, err, errlen);
	if (rc == 0)
		rc = an_ooms(rep, err, errlen);
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
		free(rep->ooms[i].fits);
	free(rep->ooms);
	free(rep->replays);
	free(rep->ranges);
	free(rep->range_of);
	mt_analysis_release(&rep->data);
	memset(rep, 0, sizeof(*rep));
}
