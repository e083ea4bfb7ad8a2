/* viewer-private.h — what the views share: colours, text, axes and legends,
 * output surfaces, the trace data a view needs, per-pixel-column
 * aggregation, the stacked allocation bands, and policy replays (series and
 * the segment map at a moment). One view per view-*.c file.
 */
#ifndef MEMTRACE_VIEWER_PRIVATE_H
#define MEMTRACE_VIEWER_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cairo.h>

#include "memtrace-analyze.h"
#include "memtrace-common.h"
#include "memtrace-format.h"
#include "memtrace-replay.h"
#include "memtrace-viewer.h"

/* Formats a message into err and returns rc (a negative errno): the
 * common helper. */
#define vw_fail mt_fail

/* ---- palette.c ------------------------------------------------------------ */

struct vw_rgb {
	double r, g, b;
};

/* Fixed meanings, the same colour in every view. */
enum vw_role {
	VW_ROLE_TEXT,
	VW_ROLE_MUTED_TEXT,
	VW_ROLE_AXIS,
	VW_ROLE_GRID,
	VW_ROLE_BACKGROUND,
	VW_ROLE_MERGED,      /* allocations merged into one band */
	VW_ROLE_FREE,        /* free space inside a segment */
	VW_ROLE_RESERVED,    /* the recorded allocator's reserved memory */
	VW_ROLE_DEVICE_USED, /* device memory in use (samples) */
	VW_ROLE_LOWER_BOUND, /* live bytes: what any allocator needs at least */
	VW_ROLE_PEAK,
	VW_ROLE_OOM,
	VW_ROLE_KERNEL,
	VW_ROLE_CONTEXT,         /* CUDA context and libraries */
	VW_ROLE_CACHE,           /* allocator cache: segments with nothing live */
	VW_ROLE_FRAGMENTATION,   /* free space in segments that hold live blocks */
	VW_ROLE_DEVICE_FREE,     /* device memory nobody holds */
	VW_ROLE_OTHER_PROCESSES, /* device memory of other processes (samples) */
	VW_ROLE_UNEXPLAINED,     /* sampled use the events do not explain */
};

struct vw_rgb vw_role_color(enum vw_role role);
/* Allocation bands and live blocks: light colours (Paul Tol's "light"
 * scheme) cycling with the index, so neighbours differ. */
struct vw_rgb vw_band_color(size_t i);
#define VW_BAND_COLORS 8
/* A policy's colour (lines and bars), the same in every picture: spec is
 * "NAME" or "NAME:params"; the colour is NAME's. */
struct vw_rgb vw_policy_color(const char *spec);
/* NVTX phases (timeline strip, anatomy parts), cycling. */
struct vw_rgb vw_phase_color(size_t i);
void vw_set_rgb(cairo_t *cr, struct vw_rgb c);
/* Text colour readable on bg (white on dark fills, else the text colour). */
struct vw_rgb vw_text_on(struct vw_rgb bg);
/* The colour as an opaque cairo ARGB32 pixel (tests read images with it). */
uint32_t vw_rgb_pixel(struct vw_rgb c);

/* ---- canvas.c: surfaces and text ------------------------------------------ */

struct vw_canvas {
	cairo_surface_t *surface;
	cairo_t *cr;
	enum mt_image_format format;
	double width, height;
	double font;                /* base font size, scaled with the picture */
	cairo_font_face_t *face[2]; /* DejaVu Sans, regular and bold */
};

/* The formats a canvas writes (mt_view_info.formats of cairo views). */
#define VW_CAIRO_FORMATS (1u << MT_IMAGE_PNG | 1u << MT_IMAGE_SVG | 1u << MT_IMAGE_PDF)

/* Creates the output surface and a context with a white background and
 * DejaVu Sans selected. SVG and PDF write to path as they go; PNG on close. */
int vw_canvas_open(struct vw_canvas *c, enum mt_image_format format, const char *path,
                   unsigned width, unsigned height, char *err, size_t errlen);
/* Finishes the picture and writes it; frees the surface. Returns 0 or -EIO. */
int vw_canvas_close(struct vw_canvas *c, const char *path, char *err, size_t errlen);
/* Frees without writing (error paths). Accepts a zeroed canvas. */
void vw_canvas_discard(struct vw_canvas *c);

enum vw_align { VW_LEFT, VW_CENTER, VW_RIGHT };
enum vw_valign { VW_TOP, VW_MIDDLE, VW_BASELINE, VW_BOTTOM };

/* Draws text with its anchor at (x, y) in the current colour; size is a
 * multiple of the base font. Returns the text's width. */
double vw_text(const struct vw_canvas *c, double x, double y, double size, bool bold,
               enum vw_align align, enum vw_valign valign, const char *text);
double vw_text_width(const struct vw_canvas *c, double size, bool bold, const char *text);
/* Text on a white, slightly transparent box, moved inside bounds. */
void vw_label(const struct vw_canvas *c, double x, double y, double size, enum vw_align align,
              enum vw_valign valign, const char *text, double bx0, double bx1);
/* Title (bold) and a subtitle line at the top; returns the y below them. */
double vw_title(const struct vw_canvas *c, const char *title, const char *subtitle);
/* Shortens text with "…" in the middle so that it fits width; out has outlen bytes. */
void vw_fit_text(const struct vw_canvas *c, double size, const char *text, double width, char *out,
                 size_t outlen);

/* ---- axes.c: ticks, axes, legend, markers --------------------------------- */

struct vw_rect {
	double x, y, w, h;
};

#define VW_MAX_TICKS 24
/* A linear axis: values v0..v1 map onto pixels p0..p1. */
struct vw_axis {
	double v0, v1, p0, p1;
	size_t nticks;
	double tick[VW_MAX_TICKS];
	char label[VW_MAX_TICKS][24];
};

/* Byte axis from 0 with readable binary ticks (0, 512 MiB, 1 GiB, ...):
 * v1 becomes the last tick at or above max_bytes. */
void vw_axis_bytes(struct vw_axis *a, double max_bytes, unsigned max_ticks, double p0, double p1);
/* Time axis over [0, span_ns] (times since the trace start offset by
 * origin_ns) with ticks in s, ms, us or ns. */
void vw_axis_time(struct vw_axis *a, double origin_ns, double span_ns, unsigned max_ticks,
                  double p0, double p1);
double vw_axis_map(const struct vw_axis *a, double v);
/* Grid lines across plot for the axis (vertical axis: horizontal lines). */
void vw_draw_grid(const struct vw_canvas *c, struct vw_rect plot, const struct vw_axis *a,
                  bool vertical_axis);
/* Tick labels left of plot (vertical axis). */
void vw_draw_axis_left(const struct vw_canvas *c, struct vw_rect plot, const struct vw_axis *a);
/* Ticks and labels under y, and a caption under them; returns the y below. */
double vw_draw_axis_bottom(const struct vw_canvas *c, struct vw_rect plot, const struct vw_axis *a,
                           double y, const char *caption);

enum vw_swatch {
	VW_SWATCH_FILL,
	VW_SWATCH_LINE,
	VW_SWATCH_DASH,
	VW_SWATCH_PEAK,
	VW_SWATCH_OOM,
	VW_SWATCH_NONE, /* a note: its text alone, in the muted text colour */
};
struct vw_legend_item {
	enum vw_swatch swatch;
	struct vw_rgb color;
	const char *label;
};
/* Legend items in rows from (x, y), wrapping at x + width; returns the
 * height used (draw false: only measures). */
double vw_legend(const struct vw_canvas *c, double x, double y, double width,
                 const struct vw_legend_item *items, size_t n, bool draw);
void vw_draw_swatch(const struct vw_canvas *c, enum vw_swatch s, struct vw_rgb color, double x,
                    double y, double w, double h);
/* A line through per-column values (NAN = no value), one x per column
 * starting at plot.x. */
void vw_stroke_columns(const struct vw_canvas *c, struct vw_rect plot, const struct vw_axis *y,
                       const double *v, size_t n, struct vw_rgb color, double width, bool dashed);
void vw_marker_peak(const struct vw_canvas *c, double x, double y);
void vw_marker_oom(const struct vw_canvas *c, double x, double y);

/* ---- trace-data.c ---------------------------------------------------------- */

struct vw_point {
	uint64_t ts;
	uint64_t value;
};

struct vw_span {
	uint64_t start, end;
};

struct vw_range {
	uint64_t start, end; /* end: MT_TIME_UNKNOWN never closed (t1 used) */
	uint32_t name;
	uint32_t depth;
};

enum vw_load {
	VW_LOAD_SEGMENTS = 1u << 0, /* driver layer as well, when requests exist */
	VW_LOAD_SAMPLES = 1u << 1,
	VW_LOAD_RANGES = 1u << 2,
	VW_LOAD_KERNELS = 1u << 3,
	VW_LOAD_FAILS = 1u << 4,          /* the OOMs the program saw */
	VW_LOAD_LIBRARY_RANGES = 1u << 5, /* with RANGES: the libraries' own as well */
};

/* One device's events as the views use them. Lifetimes are normalised: an
 * allocation from before the trace starts at t0, one never freed ends at
 * UINT64_MAX. */
struct vw_trace {
	struct mt_reader *r;
	const struct mt_device *dev;
	uint32_t device;
	/* first memory event (not kernels or copies: a stray activity record
	 * may lack its start time) and last event of any kind */
	uint64_t t0, t1;
	unsigned layer;          /* the layer of req */
	struct mt_lifetime *req; /* requests (or driver allocations when none), in d */
	size_t nreq;
	struct mt_lifetime *seg; /* driver-layer segments when layer is request, in d */
	size_t nseg;
	struct vw_point *samples;
	size_t nsamples;
	struct vw_range *ranges;
	size_t nranges;
	uint64_t nkernels;      /* kernels stream past in vw_trace_columns */
	struct vw_point *fails; /* one per OOM the program saw: ts, requested bytes */
	size_t nfails;
	unsigned what;        /* enum vw_load */
	struct mt_analysis d; /* analyze's survey (peak, segments in all...) */
};

/* Loads device (0 = the first with allocations) of r with every lifetime
 * (memory grows with the trace); what: enum vw_load, or'ed
 * (VW_LOAD_LIBRARY_RANGES set when the options ask for all ranges). */
int vw_trace_load(struct vw_trace *t, struct mt_reader *r, uint32_t device, unsigned what,
                  char *err, size_t errlen);
/* The same without the lifetimes (req, seg empty): what one streamed pass
 * finds (the peak, t->d), the samples, ranges and OOMs; memory for what is
 * live at once. */
int vw_trace_survey(struct vw_trace *t, struct mt_reader *r, uint32_t device, unsigned what,
                    char *err, size_t errlen);
/* Then the lifetimes live at `at` (and at the sample nearest to it, where
 * its anatomy may be measured) and those never freed, into req and seg. */
int vw_trace_keep_at(struct vw_trace *t, uint64_t at, char *err, size_t errlen);
void vw_trace_release(struct vw_trace *t);
/* One streamed pass over a surveyed t, per column of c: the live bytes of
 * req's layer into stack (started: its changes and allocations) or, when
 * stack is NULL, their largest into live (when not NULL); the segments'
 * largest into reserved, and the kernels' busy share into busy (each when
 * not NULL). 0 or a negative errno with a message. */
struct vw_columns;
struct vw_stack;
int vw_trace_columns(const struct vw_trace *t, const struct vw_columns *c, struct vw_stack *stack,
                     double *live, double *reserved, double *busy, char *err, size_t errlen);
/* The moment live bytes of l first reach their peak (mt_peak_moment; the
 * start of the trace when it cannot tell). */
uint64_t vw_peak_moment(const struct mt_lifetime *l, size_t n, uint64_t *peak_bytes);
/* The anatomy at `at` (analyze's mt_anatomy_compute against the device's
 * readings, loaded here): the parts and which reading they add up to. */
int vw_anatomy_at(const struct vw_trace *t, uint64_t at, struct mt_anatomy *a, char *err,
                  size_t errlen);
/* "NAME · GPU · capture MODE" for subtitles. */
void vw_trace_subtitle(const struct vw_trace *t, const char *trace_name, char *buf, size_t len);

#define VW_MAX_PHASES 8
/* Phases: the NVTX ranges of the shallowest nesting depth that has at least
 * two names (a loop's "step" around forward/backward/optimizer gives the
 * latter), their names in order of first appearance (at most VW_MAX_PHASES;
 * later names share the last slot). */
struct vw_phases {
	uint32_t name[VW_MAX_PHASES];
	size_t n;
	uint32_t depth;
	bool overflow;
};
void vw_phases_collect(const struct vw_trace *t, struct vw_phases *p);
/* Phase index of the phase range open at ts, or -1. */
int vw_phase_at(const struct vw_trace *t, const struct vw_phases *p, uint64_t ts);
int vw_phase_index(const struct vw_phases *p, uint32_t name);

/* ---- columns.c: one value per pixel column --------------------------------- */

/* A change of live bytes: +bytes at an allocation's start, -bytes at its
 * end (none for one never freed), t relative to a base time. */
struct vw_delta {
	int64_t t;
	int64_t bytes;
};

/* The deltas of l sorted by t (radix sort). *out malloc'd. */
int vw_deltas(const struct mt_lifetime *l, size_t n, uint64_t base, struct vw_delta **out,
              size_t *m);

struct vw_columns {
	size_t n;
	uint64_t from, to; /* absolute window, to > from */
};

uint64_t vw_column_start(const struct vw_columns *c, size_t x);
/* Column holding ts (clamped to the window). */
size_t vw_column_of(const struct vw_columns *c, uint64_t ts);
/* Walks sorted deltas (t relative to c->from) across the columns: per
 * column the most bytes live at once and, when instant is not NULL, that
 * moment as 2 * t (or 2 * column start - 1 for "just before the column"). */
void vw_columns_sweep(const struct vw_columns *c, const struct vw_delta *d, size_t m, double *max,
                      int64_t *instant);
/* The same as the deltas stream past: start, add each (t nondecreasing),
 * finish; max and instant (or NULL) have c->n entries. */
struct vw_sweep {
	const struct vw_columns *c;
	double *max;
	int64_t *instant;
	size_t x;     /* the column being filled */
	bool opened;  /* x's first value is set */
	bool pending; /* changes at t not yet weighed */
	int64_t t, cur, best, inst;
};
void vw_sweep_start(struct vw_sweep *s, const struct vw_columns *c, double *max, int64_t *instant);
void vw_sweep_add(struct vw_sweep *s, int64_t t, int64_t bytes);
void vw_sweep_finish(struct vw_sweep *s);
/* Per column, the most bytes live at once. */
int vw_columns_live_max(const struct vw_columns *c, const struct mt_lifetime *l, size_t n,
                        double *out);
/* Step function through points (value holds until the next point): per
 * column the largest value in force; NAN before the first point. */
void vw_columns_steps(const struct vw_columns *c, const struct vw_point *p, size_t n, double *out);
/* The largest of n column values (NAN skipped), 0 if none. */
double vw_columns_max(const double *v, size_t n);
/* Fraction of each column covered by spans (summed, at most 1). */
void vw_columns_busy(const struct vw_columns *c, const struct vw_span *s, size_t n, double *out);
/* The same as the spans stream past: start (0 or -ENOMEM), add each,
 * finish (frees what start took). */
struct vw_busy {
	const struct vw_columns *c;
	double *out;
	double *whole;
};
int vw_busy_start(struct vw_busy *b, const struct vw_columns *c, double *out);
void vw_busy_add(struct vw_busy *b, const struct vw_span *s);
void vw_busy_finish(struct vw_busy *b);

/* ---- bands.c: stacked allocation bands ------------------------------------- */

/* Each column shows the allocations live at the moment within it when the
 * most bytes are live (so the top edge is the true envelope), stacked in
 * allocation order above one band that merges every allocation not among
 * the max_bands largest by byte-seconds in the window (ties: the earlier
 * allocation). Built as the allocations stream past: start; the live
 * bytes' changes in time order (vw_stack_change); every allocation once
 * its end is known (vw_stack_offer, times normalised as vw_trace's, index
 * its place in allocation order), in any order; finish. */
struct vw_band {
	uint64_t start, end, bytes, index;
	double bs; /* byte-seconds inside the window */
};

struct vw_stack {
	struct vw_columns cols;
	double *total;        /* live bytes per column at its moment */
	int64_t *instant;     /* the moment, 2 * (ts - from), -1 for "just before" */
	struct vw_band *band; /* drawn individually, in stacking order once finished */
	size_t nbands, max_bands;
	size_t merged; /* allocations in the merged band */
	double peak;   /* the largest total */
	size_t peak_column;
	uint64_t peak_ts;
	struct vw_sweep sweep;
};

int vw_stack_start(struct vw_stack *s, const struct vw_columns *c, size_t max_bands);
void vw_stack_change(struct vw_stack *s, uint64_t ts, int64_t bytes);
void vw_stack_offer(struct vw_stack *s, uint64_t start, uint64_t end, uint64_t bytes,
                    uint64_t index);
void vw_stack_finish(struct vw_stack *s);
/* The bands as an ARGB32 image of cols.n x height pixels, ymax bytes at the
 * top edge; NULL on allocation failure. */
cairo_surface_t *vw_stack_image(const struct vw_stack *s, size_t height, double ymax);
void vw_stack_release(struct vw_stack *s);

/* ---- policy-runs.c: replays for the views ---------------------------------- */

/* Splits "a,b:k=v,k=v,c" into policy specs (a piece with '=' and no ':'
 * continues the previous spec's parameters). *specs and its strings are
 * malloc'd; free with vw_specs_free. */
int vw_specs_split(const char *text, char ***specs, size_t *n);
void vw_specs_free(char **specs, size_t n);

struct vw_policy_run {
	char name[96];
	bool saved; /* from the trace's replays table, else replayed under sim */
	uint64_t peak_reserved;
	uint64_t peak_allocated;
	uint64_t oom_count;
	/* what it ran under, for people: backend, capacity and where it came
	 * from, options, memtrace version ("sim · capacity 78.1 GiB, the
	 * recorded card · memtrace 0.1.0") */
	char conditions[192];
	struct vw_point *reserved; /* series */
	struct vw_point *allocated;
	size_t npoints;
	/* not replayed: an offline policy with no saved replay whose replay
	 * would hold about `needs` bytes (mt_plan_bytes_estimate of its
	 * `requests`), more than `budget`; no figures or series then */
	bool left_out;
	uint64_t requests, needs, budget;
};

/* Replays for the views: specs NULL = the saved replays of the device
 * (latest per policy), or every policy under sim when none is saved; the
 * replays run one after the other. An offline policy without a saved replay
 * that would hold more than budget bytes (UINT64_MAX: no budget) is left
 * out rather than replayed. *out holds the *n runs to draw, in the specs'
 * order, then the *nleft left out (nleft may be NULL when budget is
 * UINT64_MAX); free it with vw_policy_runs_free(*out, *n + *nleft). */
int vw_policy_runs(const struct vw_trace *t, const char *specs, size_t points, uint64_t budget,
                   struct vw_policy_run **out, size_t *n, size_t *nleft, char *err, size_t errlen);
void vw_policy_runs_free(struct vw_policy_run *runs, size_t n);
/* Whether replaying spec on stream would hold more than budget bytes (an
 * offline policy: mt_plan_bytes_estimate); *requests and *needs are set
 * either way. */
bool vw_plan_over_budget(const struct mt_request_stream *stream, const char *spec, uint64_t budget,
                         uint64_t *requests, uint64_t *needs);
/* "25.0 M requests would need ~1.96 GiB, over the 256 MiB budget" into buf;
 * returns snprintf's count. */
int vw_plan_need_text(uint64_t requests, uint64_t needs, uint64_t budget, char *buf, size_t len);
/* The note a picture shows for a run left out, at 0.9 of the font, fitted
 * to width: its name, why, and how to have it drawn where there is room
 * ("planned: not replayed (25.0 M requests would need ~1.96 GiB, over the
 * 256 MiB budget); `memtrace replay` saves it"). */
void vw_policy_left_out_note(const struct vw_canvas *c, const struct vw_policy_run *run,
                             double width, char *buf, size_t len);

/* ---- segmap.c: segment maps at a moment (struct mt_segmap, analyze) ------- */

/* The recorded allocator at `at`: driver-layer segments with the request
 * blocks inside them (a trace without requests: each driver allocation is
 * one fully used segment). */
int vw_segmap_recorded(const struct vw_trace *t, uint64_t at, struct mt_segmap *m, char *err,
                       size_t errlen);
/* The policy `spec` replayed under sim up to `at` (every event with ts <=
 * at applied), walked. An offline policy that would hold more than budget
 * bytes (vw_plan_over_budget) is not replayed: -EFBIG with a message. */
int vw_segmap_policy(const struct vw_trace *t, const char *spec, uint64_t at, uint64_t budget,
                     struct mt_segmap *m, char *err, size_t errlen);

/* ---- the views -------------------------------------------------------------- */

/* A view: one viewer/view-NAME.c defines `const struct vw_view vw_view_NAME`
 * and NAME is one line of the list in viewer/meson.build, which becomes the
 * registry (render.c) that mt_view_at, mt_render, the command line and the
 * tests read. A view that writes a file of its own instead of drawing on a
 * cairo canvas (an HTML page) gets a member taking the output path beside
 * draw, and mt_render calls whichever the view has. */
struct vw_view {
	struct mt_view_info info;
	/* Draws the trace open in r on c with the options (view and format
	 * checked, sizes set). */
	int (*draw)(struct vw_canvas *c, struct mt_reader *r, const struct mt_render_options *o,
	            char *err, size_t errlen);
	/* Or writes out_path itself (created or replaced). */
	int (*write)(struct mt_reader *r, const struct mt_render_options *o, const char *out_path,
	             char *err, size_t errlen);
};

/* compare-runs.c: two runs' timelines aligned by phase (o->compare). */
int vw_compare_runs(struct vw_canvas *c, struct mt_reader *r, const struct mt_render_options *o,
                    char *err, size_t errlen);

/* The columns of a plot width pixels wide over the options' window
 * (--from/--to) on a loaded trace; -EINVAL if the window is empty. */
int vw_window(const struct vw_trace *t, const struct mt_render_options *o, double width,
              struct vw_columns *cols, char *err, size_t errlen);

#endif
