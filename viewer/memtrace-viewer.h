/* memtrace-viewer.h — pictures of a trace, drawn with cairo.
 *
 * Four views, each written as PNG, SVG or PDF:
 *  - timeline: live allocations as stacked bands over time (the largest by
 *    byte-seconds one band each, the rest merged into one grey band), the
 *    reserved memory of the recorded allocator or of replayed policies, the
 *    device memory in use from the samples, a kernel lane, NVTX phases, and
 *    the peak and the failed allocations marked;
 *  - segments: the segment map at a moment for the recorded allocator and/or
 *    policies replayed to that moment, one row per segment;
 *  - policies: peak reserved per policy against the lower bound, and each
 *    policy's reserved memory over time;
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

enum mt_view {
	MT_VIEW_TIMELINE = 0,
	MT_VIEW_SEGMENTS = 1,
	MT_VIEW_POLICIES = 2,
	MT_VIEW_ANATOMY = 3,
};

enum mt_image_format {
	MT_IMAGE_PNG = 0,
	MT_IMAGE_SVG = 1,
	MT_IMAGE_PDF = 2,
	MT_IMAGE_HTML = 3, /* the interactive page, whatever the view */
};

#define MT_RENDER_DEFAULT_WIDTH 1600
#define MT_RENDER_DEFAULT_HEIGHT 900
/* Accepted range for either side, in pixels (PNG) or points (SVG, PDF). */
#define MT_RENDER_MIN_SIDE 320
#define MT_RENDER_MAX_SIDE 16384

struct mt_render_options {
	enum mt_view view;
	enum mt_image_format format;
	unsigned width, height; /* 0 = the defaults above */
	uint32_t device;        /* trace device row id; 0 = the first with allocations */
	const char *trace_name; /* shown in titles; NULL = "trace" */
	/* Policy specs separated by commas ("caching,bestfit",
	 * "caching:max_split_size=4MiB,bfc"); NULL = none. The timeline draws
	 * their reserved memory, segments draws their maps, policies compares
	 * them (NULL there = the saved replays, else every policy under sim). */
	const char *policies;
	bool at_set;   /* false: the peak (reserved for segments, live for anatomy) */
	uint64_t at;   /* moment for segments and anatomy */
	uint64_t from; /* window for timeline and policies */
	uint64_t to;   /* 0 = the end of the trace */
	/* A second run: the picture is then both timelines aligned by phase,
	 * whatever the view (PNG, SVG or PDF); compare_name titles it. */
	struct mt_reader *compare;
	const char *compare_name;
};

/* The view named "timeline", "segments", "policies" or "anatomy".
 * Returns 0, or -EINVAL for another name. */
int mt_view_from_name(const char *name, enum mt_view *view);

/* Stable name of a view, or NULL for an unknown value. */
const char *mt_view_name(enum mt_view view);

/* The image format for a path's extension (.png, .svg, .pdf, .html, any case).
 * Returns 0, or -EINVAL for another or no extension. */
int mt_image_format_from_path(const char *path, enum mt_image_format *format);

/* Draws one view of the trace open in r into out_path (created or
 * replaced). Policies are replayed under the sim backend when the trace has
 * no saved replay of them. Returns 0 or a negative errno with a message in
 * err (errlen >= 1). */
int mt_render(struct mt_reader *r, const struct mt_render_options *opt, const char *out_path,
              char *err, size_t errlen);

#endif /* MEMTRACE_VIEWER_H */
