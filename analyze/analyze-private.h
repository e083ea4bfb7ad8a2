/* analyze-private.h — what the analyze files share: error messages
 * and the steps of the report that live in files of their own.
 */
#ifndef MEMTRACE_ANALYZE_PRIVATE_H
#define MEMTRACE_ANALYZE_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>

#include "memtrace-analyze.h"
#include "memtrace-common.h"

/* Formats a message into err and returns rc (a negative errno): the
 * common helper. */
#define an_fail mt_fail

/* The reader's message (or "out of memory") into err; returns rc. */
int an_reader_fail(struct mt_reader *r, int rc, char *err, size_t errlen);
/* Event counts and times per kind on a device (0: all). */
int an_device_stats(struct mt_reader *r, uint32_t device,
                    struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1]);

/* A time and a value (a byte count, an index). */
struct an_timed {
	uint64_t t, v;
};
/* Sorts by t (stable: equal times keep their order); 0 or -ENOMEM. */
int an_sort_timed(struct an_timed *v, size_t n);

/* data.c: what a pass keeping lifetimes shows an observer (the report's
 * range sweep): every alloc and free in order, and the end of each moment
 * (after the last event with that timestamp, before the next). */
struct an_observer {
	int (*step)(void *data, struct mt_pairing *p, const struct mt_pair_step *st, uint64_t ts);
	int (*moment_end)(void *data, struct mt_pairing *p, uint64_t ts);
	void *data;
};

/* mt_analysis_keep with an observer (NULL: none); *tags (when tags is not
 * NULL) receives, per lifetime of d->live, the tag the observer left on it.
 * Returns 0 or a negative errno, no message. */
int an_keep(struct mt_analysis *d, const uint64_t *moments, size_t n, const struct an_observer *obs,
            size_t **tags);

/* anatomy.c: the index of the sample nearest `at` (the earlier one on a
 * tie), samples in time order; (size_t)-1 when n is 0. */
size_t an_nearest_sample(const struct mt_sample *samples, size_t n, uint64_t at);

/* anatomy.c: the moments an anatomy at `at` may weigh lie in [*from, *to]:
 * `at` and the samples it tries (samples in time order), so lifetimes live
 * at some moment of that span are all it needs (mt_reader_lifetimes_during). */
void an_anatomy_span(const struct mt_sample *samples, size_t nsamples, uint64_t at, uint64_t *from,
                     uint64_t *to);

/* anatomy.c: mt_anatomy_compute with the driver-layer bytes live at each
 * sample's time given (NULL: computed from the lifetimes) and whether the
 * recorded segments are known apart from segs (which may hold only those
 * live at the moments that matter). */
int an_anatomy(struct mt_anatomy *a, const struct mt_lifetime *live, size_t nlive, unsigned layer,
               bool segments, const struct mt_lifetime *segs, size_t nsegs,
               const struct mt_sample *samples, size_t nsamples, const uint64_t *driver_at_sample,
               uint64_t at, char *err, size_t errlen);

/* library-ranges.c: whether an NVTX range (name, domain; either may be
 * NULL) is one a library opened for its own work (CUB, Thrust, cuBLAS,
 * cuDNN...), not a phase of the program. */
bool an_range_is_library(const char *name, const char *domain);

/* ranges.c: the sweep over allocations, frees and ranges that gives each
 * live lifetime its innermost range (rep->range_of) and the per-name table
 * (rep->ranges). */
int an_ranges_sweep(struct mt_report *rep, const struct mt_report_options *opt,
                    const uint64_t *moments, size_t nmoments, char *err, size_t errlen);

/* top.c: the n largest lifetimes of rep's live layer that pass keep(l, data),
 * descending by bytes (ties: earlier first), with their ranges, into out
 * (room for n); returns how many. an_largest_new allocates *out (n + 1
 * entries); -ENOMEM. */
size_t an_largest(const struct mt_report *rep,
                  bool (*keep)(const struct mt_lifetime *l, const void *data), const void *data,
                  struct mt_report_alloc *out, size_t n);
int an_largest_new(const struct mt_report *rep,
                   bool (*keep)(const struct mt_lifetime *l, const void *data), const void *data,
                   size_t n, struct mt_report_alloc **out, size_t *found);

/* groups.c: rep->groups, the allocations live at rep->at grouped by call
 * site (else range) or by range; 0 or -ENOMEM. */
int an_groups(struct mt_report *rep, bool by_site);

/* oom.c: saved replays of the device and the OOMs the program saw among
 * the failed allocations (rep->failures, rep->ooms; needs d surveyed);
 * then, with the lifetimes live at each detailed OOM's moment and at the
 * sample nearest to it loaded, each explained. */
int an_ooms_find(struct mt_report *rep, char *err, size_t errlen);
int an_ooms_explain(struct mt_report *rep, char *err, size_t errlen);

#endif
