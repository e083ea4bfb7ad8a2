/* analyze-private.h — what the analyze files share: error messages, growing
 * arrays, and the steps of the report that live in files of their own.
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

/* Makes room for item n in *p (capacity *cap items of size bytes),
 * doubling; 0 or -ENOMEM. */
int an_grow(void **p, size_t *cap, size_t n, size_t size);

/* A time and a value (a byte count, an index). */
struct an_timed {
	uint64_t t, v;
};
/* Sorts by t (stable: equal times keep their order); 0 or -ENOMEM. */
int an_sort_timed(struct an_timed *v, size_t n);

/* library-ranges.c: whether an NVTX range (name, domain; either may be
 * NULL) is one a library opened for its own work (CUB, Thrust, cuBLAS,
 * cuDNN...), not a phase of the program. */
bool an_range_is_library(const char *name, const char *domain);

/* ranges.c: the sweep over allocations, frees and ranges that gives each
 * live lifetime its innermost range (rep->range_of) and the per-name table
 * (rep->ranges). */
int an_ranges_sweep(struct mt_report *rep, const struct mt_report_options *opt, char *err,
                    size_t errlen);

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

/* oom.c: saved replays of the device, the OOMs the program saw among the
 * failed allocations (rep->failures, rep->ooms), each explained. */
int an_ooms(struct mt_report *rep, char *err, size_t errlen);

#endif
