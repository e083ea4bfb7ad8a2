/* memtrace-viewer.h — pictures of a trace.
 *
 * A view is one kind of picture; the views this build has are listed by
 * mt_view_count/mt_view_at (their names, what each draws, the formats it
 * writes and the options it reads), so that the command line, its help and
 * the tests follow them. Today's views draw with cairo as PNG, SVG or PDF:
 *  - timeline: live allocations as stacked bands over time (the largest by
 *    byte-seconds one band each, the rest merged into one grey band), the
 *    reserved memory of the recorded allocator or of replayed policies, the
 *    device memory in use from the samples, a kernel lane, NVTX phases, and
 *    the peak and the failed allocations marked;
 *  - segments: the segment map at a moment for the recorded allocator and/or
 *    policies replayed to that moment, one row per segment (planned only
 *    within plan_budget);
 *  - policies: peak reserved per policy against the lower bound, and each
 *    policy's reserved memory over time (planned, which holds every
 *    request, only within plan_budget; else a note says what it would need);
 *  - anatomy: one bar per device splitting the device memory in use into CUDA
 *    context and libraries, allocator cache, fragmentation and live tensors.
 * Drawing cost is bounded by pixels, not events: allocations are aggregated
 * per pixel column. Text uses DejaVu Sans so images are reproducible.
 *
 * Times in the options are nanoseconds since the start of the trace (the
 * first event of the chosen device). Errors are negative errno values with a
 * one-line message in the caller's buffer: -EINVAL bad options, -EIO the
 * output could not be written, -ENOENT nothing to draw (no allocations on
 * the device), -ENOMEM, or what the reader or replay engine returned.
 * Nothing here prints or exits.
 */
#ifndef MEMTRACE_VIEWER_H
#define MEMTRACE_VIEWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memtrace-format.h"

enum mt_image_format {
	MT_IMAGE_PNG = 0,
	MT_IMAGE_SVG = 1,
	MT_IMAGE_PDF = 2,
	MT_IMAGE_HTML = 3, /* an interactive page (the html view) */
};

#define MT_RENDER_DEFAULT_WIDTH 1600
#define MT_RENDER_DEFAULT_HEIGHT 900
/* Accepted range for either side, in pixels (PNG) or points (SVG, PDF). */
#define MT_RENDER_MIN_SIDE 320
#define MT_RENDER_MAX_SIDE 16384
/* The memory a picture may spend on replaying an offline policy (planned,
 * which holds every request) when the trace has no saved replay of it:
 * above it (mt_plan_bytes_estimate), the policy is left out and the
 * picture says so. The other policies stream (tens of MiB each). */
#define MT_RENDER_PLAN_BUDGET (256ull << 20)

/* The options a view reads (mt_view_info.uses). */
enum mt_view_uses {
	MT_VIEW_USES_AT = 1u << 0,          /* at_set, at: one moment */
	MT_VIEW_USES_WINDOW = 1u << 1,      /* from, to: a time window */
	MT_VIEW_USES_POLICIES = 1u << 2,    /* policies */
	MT_VIEW_USES_ALL_DEVICES = 1u << 3, /* device 0: every device, else the first */
	MT_VIEW_USES_PHASES = 1u << 4,      /* all_ranges: NVTX phases */
};

/* A view as the registry lists it. */
struct mt_view_info {
	const char *name;    /* "timeline": what --view and file names say */
	const char *summary; /* what it draws, for --help: lines of at most 60
	                        characters separated by '\n' */
	unsigned formats;    /* 1u << enum mt_image_format, per format it writes */
	unsigned uses;       /* enum mt_view_uses */
};

/* Number of views; mt_view_at(i) for i below it is the registry's entry i
 * (the first is the default view), NULL past the end. */
size_t mt_view_count(void);
const struct mt_view_info *mt_view_at(size_t i);
/* The view of that name, or NULL. */
const struct mt_view_info *mt_view_find(const char *name);

struct mt_render_options {
	/* a view's name; NULL = the first in the registry that writes format */
	const char *view;
	enum mt_image_format format;
	unsigned width, height; /* 0 = the defaults above */
	uint32_t device;        /* trace device row id; 0 = the first with allocations */
	const char *trace_name; /* shown in titles; NULL = "trace" */
	/* Policy specs separated by commas ("caching,bestfit",
	 * "caching:max_split_size=4MiB,bfc"); NULL = none. The timeline draws
	 * their reserved memory, segments draws their maps, policies compares
	 * them (NULL there = the saved replays, else every policy under sim). */
	const char *policies;
	/* bytes an offline policy's replay may hold, else it is left out
	 * (timeline, policies) or refused (segments); 0 = MT_RENDER_PLAN_BUDGET,
	 * UINT64_MAX = no limit */
	uint64_t plan_budget;
	bool all_ranges; /* NVTX phases include the ranges libraries open for
	                    their own work (CUB, Thrust, cuBLAS...) */
	bool at_set;     /* false: the peak (reserved for segments, live for anatomy) */
	uint64_t at;     /* moment for segments and anatomy */
	uint64_t from;   /* window for timeline and policies */
	uint64_t to;     /* 0 = the end of the trace */
	/* A second run: the picture is then both runs' timelines, the second
	 * stretched to the first's NVTX phases, whatever the view (PNG, SVG or
	 * PDF); compare_name titles it. */
	struct mt_reader *compare;
	const char *compare_name;
};

/* The image format for a path's extension (.png, .svg, .pdf, .html, any case).
 * Returns 0, or -EINVAL for another or no extension. */
int mt_image_format_from_path(const char *path, enum mt_image_format *format);

/* Draws one view of the trace open in r into out_path (created or
 * replaced). -EINVAL for an unknown view or one that does not write the
 * format. Policies are replayed under the sim backend, one after the
 * other, when the trace has no saved replay of them (an offline one only
 * within plan_budget). Returns 0 or a negative errno with a message in err
 * (errlen >= 1). */
int mt_render(struct mt_reader *r, const struct mt_render_options *opt, const char *out_path,
              char *err, size_t errlen);

#endif /* MEMTRACE_VIEWER_H */
