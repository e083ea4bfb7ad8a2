/* memtrace-analyze.h — what used the memory: the computations behind
 * `memtrace report` and the viewer's anatomy.
 *
 * One device of a trace at a time. mt_analysis_load reads what the
 * analyses need (lifetimes of the request and driver layers, samples, the
 * NVTX ranges of the device's processes, failed allocations); the pieces
 * below work on that data:
 *  - anatomy: the sampled device memory in use at a moment split into other
 *    processes, CUDA context and libraries, allocator cache,
 *    fragmentation, live allocations and what is unexplained — parts that
 *    add up to the sample exactly;
 *  - peak and the largest allocations live at a moment, with call site and
 *    the innermost NVTX range open when each was made;
 *  - per NVTX range name: bytes allocated inside it and peak live bytes;
 *  - allocations never freed; failed allocations (OOM) explained with what
 *    was live and which saved replays would have fit;
 *  - segment maps of the recorded allocator at a moment;
 *  - call-site strings (one frame per line, innermost first).
 * mt_report_build runs them all in a few passes over the data.
 *
 * Times are nanoseconds on the trace's clock. Errors are negative errno
 * values (-ENOMEM, -ENOENT nothing to analyse, or what the reader returned)
 * with a one-line message in the caller's buffer. Nothing here prints or
 * exits. Uses format only (and jansson to read saved replay results).
 */
#ifndef MEMTRACE_ANALYZE_H
#define MEMTRACE_ANALYZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memtrace-format.h"

/* ---- one device's data ------------------------------------------------------- */

/* A sample: device memory in use (what nvidia-smi shows) and, when known
 * (else 0), the recorded process's share. */
struct mt_sample {
	uint64_t ts;
	uint64_t used_bytes;
	uint64_t process_bytes;
};

/* An NVTX range; end = MT_TIME_UNKNOWN when never closed (open to the end). */
struct mt_range {
	uint64_t start, end;
	uint32_t process;
	uint32_t name, domain; /* interned strings */
	uint32_t thread, depth;
};

/* A failed allocation (alloc_failed event). */
struct mt_failure {
	uint64_t ts;
	uint64_t bytes;      /* requested */
	uint64_t free_bytes; /* device free memory then, as recorded */
	uint64_t stream;
	uint32_t process, site, error;
	uint8_t layer, api;
};

struct mt_analysis {
	struct mt_reader *r;
	const struct mt_device *dev;
	uint32_t device;
	/* first memory event of the device (kernels and copies do not count:
	 * a stray activity record may lack its start time) and last event */
	uint64_t t0, t1;
	unsigned layer;           /* the layer of live: request, else driver */
	struct mt_lifetime *live; /* what the program asked for, in start order */
	size_t nlive;
	struct mt_lifetime *seg; /* driver-layer segments when layer is request */
	size_t nseg;
	struct mt_sample *samples; /* in time order */
	size_t nsamples;
	/* NVTX ranges of the processes with events on this device (ranges are
	 * recorded on a process's first device row, so every device's are read
	 * and matched by process), in start order; without the ranges libraries
	 * open for their own work (CUB, Thrust, cuBLAS, cuDNN...) unless loaded
	 * with all_ranges */
	struct mt_range *ranges;
	size_t nranges;
	size_t library_names; /* distinct names of the library ranges left out */
	struct mt_failure *fails;
	size_t nfails;
	/* Figures of a pass over every lifetime, whichever are loaded: */
	size_t nlive_all, nseg_all;   /* lifetimes of live's layer and driver segments */
	uint64_t peak_bytes, peak_at; /* of live's layer, as mt_peak_moment finds them */
	uint64_t orphan_bytes;        /* of live's NO_ALLOC lifetimes */
	uint64_t seg_orphan_bytes;    /* of the segments' NO_ALLOC lifetimes */
	uint64_t *driver_at_sample;   /* per sample: driver-layer bytes live at its time */
	uint64_t *fail_next_driver;   /* per failure: the next driver-layer allocation of
	                                 its process after it, UINT64_MAX none */
	uint32_t *request_processes;  /* processes with request-layer lifetimes */
	size_t nrequest_processes;
	uint32_t *sites; /* distinct call sites of live's lifetimes and the failures */
	size_t nsites;
};

/* The device row ids of r with alloc, free or alloc_failed events,
 * ascending. *ids is malloc'd (may be NULL when *n is 0). */
int mt_analyze_devices(struct mt_reader *r, uint32_t **ids, size_t *n, char *err, size_t errlen);

/* Devices are named for people by the CUDA ordinal the program saw, with
 * the PCI bus id when recorded ("device 0 (PCI 00000000:1B:00.0)",
 * mt_analyze_device_label), in reports, pictures and info; options take the
 * ordinal;
 * the trace's row ids stay inside. mt_analyze_device_by_ordinal finds the
 * row of an ordinal: -ENOENT when none has it, -EEXIST when several do
 * (processes that each saw a different GPU as that ordinal), with a
 * message. */
int mt_analyze_device_by_ordinal(struct mt_reader *r, unsigned ordinal, uint32_t *id, char *err,
                                 size_t errlen);
char *mt_analyze_device_label(const struct mt_device *dev, char *buf, size_t len);

/* The first memory event (alloc, free, alloc_failed, range, sample, pool)
 * and the last event of any kind on the device; t0 = t1 = 0 when none.
 * "Time since the start" in reports and pictures counts from t0. */
int mt_analyze_span(struct mt_reader *r, uint32_t device, uint64_t *t0, uint64_t *t1);

/* Loads device (0 = the first that mt_analyze_devices lists) of r into d,
 * with the library-internal NVTX ranges when all_ranges. Lifetimes are as
 * mt_reader_lifetimes gives them (a NO_ALLOC one has start
 * MT_TIME_UNKNOWN, a NO_FREE one end MT_TIME_UNKNOWN). -ENOENT when the
 * device holds no allocations. Release with mt_analysis_release.
 * Memory grows with the trace's length: mt_analysis_survey and
 * mt_analysis_keep hold what is live at chosen moments instead. */
int mt_analysis_load(struct mt_analysis *d, struct mt_reader *r, uint32_t device, bool all_ranges,
                     char *err, size_t errlen);
/* The first step of mt_analysis_load: everything but the lifetimes (live,
 * seg stay empty), and the figures of one streamed pass over every
 * allocation (nlive_all to sites), holding only what is live at once.
 * Errors as mt_analysis_load; release with mt_analysis_release. */
int mt_analysis_survey(struct mt_analysis *d, struct mt_reader *r, uint32_t device, bool all_ranges,
                       char *err, size_t errlen);
/* The second: loads into a surveyed d, in a second streamed pass, the
 * lifetimes (of live's layer, and the driver segments when live holds
 * requests) live at one of the n moments (absolute, any order) and those
 * never freed, in the order mt_analysis_load gives; every lifetime when
 * moments is NULL. Whatever asks about those moments alone (mt_live_at,
 * mt_segmap_recorded, mt_lifetime_live_at) answers as with every lifetime
 * loaded. 0, or -ENOMEM or what the reader returned, with a message. */
int mt_analysis_keep(struct mt_analysis *d, const uint64_t *moments, size_t n, char *err,
                     size_t errlen);
/* One step of a streamed pass over d's allocations (mt_analysis_walk). */
enum mt_walk_kind {
	MT_WALK_ALLOC,       /* l born at ev (l->end not known yet) */
	MT_WALK_FREE,        /* l, complete, freed at ev */
	MT_WALK_ORPHAN,      /* ev freed memory never seen allocated: l is NO_ALLOC */
	MT_WALK_NEVER_FREED, /* after the last event: l is live to the end (ev NULL) */
	MT_WALK_EVENT,       /* ev is of another kind asked for (l NULL) */
};

struct mt_walk_step {
	enum mt_walk_kind kind;
	const struct mt_lifetime *l; /* of live's layer or the segments (l->layer) */
	uint64_t index;              /* l's index among its layer's lifetimes, in load order */
	const struct mt_event *ev;
};

/* Streams the device's alloc and free events of a surveyed d, paired as
 * mt_analysis_load pairs them, and its events of the kinds in mask `kinds`
 * (MT_KIND_BIT), in trace order, to fn; holds only what is live. Stops at
 * fn's first negative return, which it returns; else 0, or what the
 * reader returned (message on the reader) or -ENOMEM. */
int mt_analysis_walk(const struct mt_analysis *d, uint32_t kinds,
                     int (*fn)(void *data, const struct mt_walk_step *st), void *data);

/* The sample nearest to ts (the earlier of two as near), (size_t)-1 when
 * there is none: the moment an anatomy at ts may be measured at instead
 * (mt_anatomy). */
size_t mt_analysis_nearest_sample(const struct mt_analysis *d, uint64_t ts);
/* Frees what d holds (not the reader); accepts a zeroed d. */
void mt_analysis_release(struct mt_analysis *d);

/* Reads the samples of device (0 = all) in time order; *out malloc'd. */
int mt_samples_load(struct mt_reader *r, uint32_t device, struct mt_sample **out, size_t *n);

/* ---- live bytes and the peak ------------------------------------------------- */

/* Whether l is live at ts: allocated at or before ts (a NO_ALLOC lifetime
 * always was) and not freed at or before ts. */
bool mt_lifetime_live_at(const struct mt_lifetime *l, uint64_t ts);
/* Bytes of the lifetimes live at ts. */
uint64_t mt_live_at(const struct mt_lifetime *l, size_t n, uint64_t ts);
/* The first moment at which the bytes live after all events of that moment
 * are the most, and those bytes (0 and the earliest start when nothing is
 * ever live). Frees of memory never seen allocated (NO_ALLOC) count as live
 * from the start. -ENOMEM on allocation failure. */
int mt_peak_moment(const struct mt_lifetime *l, size_t n, uint64_t *peak_bytes, uint64_t *at);

/* ---- segment maps ------------------------------------------------------------- */

struct mt_segmap_block {
	uint64_t address, bytes;
	bool allocated;
};

struct mt_segmap_segment {
	uint64_t address, bytes;
	size_t first; /* index of its first block */
	size_t nblocks;
};

/* Segments (largest first once finished), each with its blocks in address
 * order: live blocks and the free space between them. */
struct mt_segmap {
	char name[96];
	uint64_t at;
	struct mt_segmap_segment *segs;
	size_t nsegs;
	struct mt_segmap_block *blocks;
	size_t nblocks;
	uint64_t reserved, allocated, largest_free;
	size_t scap, bcap; /* capacities (private) */
};

/* The recorded allocator at `at`: the segments live at that moment (segs;
 * NULL = each allocation of blocks is a fully used segment of its own,
 * for traces without a request layer) with the live blocks that fall
 * inside them. m is initialised here; finished (sorted, totals filled).
 * Returns 0 or -ENOMEM. */
int mt_segmap_recorded(struct mt_segmap *m, const struct mt_lifetime *segs, size_t nsegs,
                       const struct mt_lifetime *blocks, size_t nblocks, uint64_t at);
/* Building a map by hand (a policy's walk): start from a zeroed m, add a
 * segment, then its blocks in address order (empty ones are skipped), then
 * mt_segmap_finish. Return 0 or -ENOMEM. */
int mt_segmap_add_segment(struct mt_segmap *m, uint64_t address, uint64_t bytes);
int mt_segmap_add_block(struct mt_segmap *m, uint64_t address, uint64_t bytes, bool allocated);
/* Sorts the segments largest first and fills reserved, allocated and
 * largest_free. */
void mt_segmap_finish(struct mt_segmap *m);
/* Bytes of live blocks in segment i. */
uint64_t mt_segmap_segment_live(const struct mt_segmap *m, size_t i);

/* Fragmentation, memtrace's one definition (the report, replay, every
 * picture): at a moment, the free bytes inside segments that hold at least
 * one live block. Free segments are the allocator's cache, not
 * fragmentation (mt_segmap_cache). As a share, fragmentation counts against
 * the bytes reserved at that moment: mt_fragmentation_share. */
uint64_t mt_segmap_fragmentation(const struct mt_segmap *m);
/* The bytes of segments with nothing live in them. */
uint64_t mt_segmap_cache(const struct mt_segmap *m);
/* fragmentation / reserved, 0 when nothing is reserved. */
double mt_fragmentation_share(uint64_t fragmentation, uint64_t reserved);
/* Frees the arrays; accepts a zeroed map. */
void mt_segmap_release(struct mt_segmap *m);

/* ---- anatomy ------------------------------------------------------------------ */

enum mt_anatomy_part {
	MT_PART_OTHER_PROCESSES = 0, /* sample.used − sample.process when known */
	MT_PART_CONTEXT = 1,         /* this process's use − driver memory live */
	MT_PART_CACHE = 2,           /* segments with nothing live */
	MT_PART_FRAGMENTATION = 3,   /* free space in segments with live blocks */
	MT_PART_LIVE = 4,            /* live requests (tensors), else driver allocations */
	MT_PART_UNEXPLAINED = 5,     /* the rest; negative when the sample lags */
};
#define MT_PART_COUNT 6

struct mt_anatomy {
	/* false: no reading on the device; why says so. The parts that need no
	 * reading (cache, fragmentation, live) are filled all the same. */
	bool available;
	char why[96];
	uint64_t at;          /* the moment asked */
	uint64_t measured_at; /* the parts' moment: `at`, or the reading's (below) */
	/* The reading used (a sample: device memory in use, what nvidia-smi
	 * shows): the nearest taken while the driver-layer memory was the same
	 * as at `at` (same_segments; measured_at = at: the device's use was
	 * the same then), else the nearest (measured_at = its ts). */
	uint64_t sample_ts;
	bool same_segments;
	uint64_t used_bytes;         /* the total: the reading's device memory in use */
	uint64_t process_bytes;      /* the reading's process share, 0 unknown */
	uint64_t driver_live;        /* driver-layer bytes live at `at` */
	uint64_t reserved;           /* segment bytes live (= driver_live with segments) */
	unsigned layer;              /* layer of the live part */
	bool cache_known;            /* false: no segments recorded (as-is capture) */
	int64_t part[MT_PART_COUNT]; /* sum = used_bytes when available */
};

/* Which reading an anatomy used and how far it lies from the moment asked,
 * in words ("the reading at +735 ms, 29.0 ms after, when the allocator held
 * the same segments"), times since t0; into buf, which it returns. "no
 * reading" when none. */
char *mt_anatomy_reading(const struct mt_anatomy *a, uint64_t t0, char *buf, size_t len);

/* Stable JSON key of a part ("other_processes", "cuda_context_and_libraries",
 * "allocator_cache", "fragmentation", "live_allocations", "unexplained"),
 * and its words for people ("live tensors" for the request layer). NULL
 * for an unknown part. */
const char *mt_anatomy_part_key(unsigned part);
const char *mt_anatomy_part_label(unsigned part, unsigned layer);

/* The anatomy at `at`, against the nearest sample taken while the
 * driver-layer memory was the same as at `at`, else measured at the time of
 * the nearest sample (see measured_at): live are the lifetimes of `layer`; segs the driver-layer
 * segments when layer is request (NULL/0 otherwise or when none were recorded: cache unknown,
 * counted 0); samples in time order. The parts add up to the sample exactly (unexplained takes the
 * rest). Returns 0 or -ENOMEM with a message. */
int mt_anatomy_compute(struct mt_anatomy *a, const struct mt_lifetime *live, size_t nlive,
                       unsigned layer, const struct mt_lifetime *segs, size_t nsegs,
                       const struct mt_sample *samples, size_t nsamples, uint64_t at, char *err,
                       size_t errlen);
/* The anatomy at `at` of a surveyed d whose lifetimes include those live at
 * `at` and at the sample nearest to it (mt_analysis_nearest_sample): as
 * mt_anatomy_compute would give with every lifetime loaded. */
int mt_analysis_anatomy(const struct mt_analysis *d, uint64_t at, struct mt_anatomy *a, char *err,
                        size_t errlen);

/* ---- capacity ---------------------------------------------------------------- */

/* The memory the allocator could take on the recorded card (README.md's
 * glossary, "capacity"). */
struct mt_capacity {
	uint64_t bytes;                 /* the capacity; 0 when the device total is not recorded */
	uint64_t device_total;          /* as recorded, 0 unknown */
	bool from_reading;              /* false: no reading, bytes = device_total */
	uint64_t context_bytes;         /* the anatomy's CUDA context and libraries (>= 0) */
	uint64_t outside_bytes;         /* the anatomy's outside this process (>= 0), less
	                                   driver_reserved_bytes */
	uint64_t driver_reserved_bytes; /* the driver's reserve the reading counted and
	                                   CUDA's total leaves out; 0 = not recorded */
	uint64_t library_bytes;         /* driver allocations live at `at` that held no
	                                   request (a request-layer trace only) */
	uint64_t at;                    /* the moment (absolute); MT_TIME_UNKNOWN as asked where
	                                   there is no reading or device total to weigh */
	struct mt_anatomy anatomy;      /* of the driver-layer memory at `at`, when from_reading */
};

/* The capacity of device (a row id) of r: the device total less the CUDA
 * context and libraries and the memory outside the process (without the
 * driver's reserve where the trace records it) in the anatomy at `at`
 * (MT_TIME_UNKNOWN: the peak of live bytes, as mt_reader_peak_live finds
 * it), and less the driver allocations live then in which no request lay
 * (other code's, when the trace has a request layer); computed from the
 * driver-layer lifetimes (the requests when there are none), the request
 * allocations before `at` and the readings; the device total when no
 * reading is available. Returns 0, or -ENOENT (no such device), -ENOMEM or what the
 * reader returned, with a message. */
int mt_capacity_recorded(struct mt_reader *r, uint32_t device, uint64_t at, struct mt_capacity *c,
                         char *err, size_t errlen);
/* Where c's figure comes from, in words ("the device's 79.2 GiB less 646
 * MiB CUDA context and libraries and 489 MiB outside this process, at the
 * peak of live bytes against the reading at +993 ms, ..."), times since t0;
 * into buf, which it returns. */
char *mt_capacity_describe(const struct mt_capacity *c, uint64_t t0, char *buf, size_t len);

/* ---- call sites --------------------------------------------------------------- */

/* A call-site string holds the call stack, one frame per line ('\n'),
 * innermost first: Python frames "path:line:function", native frames
 * "function+0xOFF (module)" or "module+0xOFF". */

/* Number of frames (non-empty lines) in stack; 0 for NULL or "". */
size_t mt_site_frame_count(const char *stack);
/* Frame i (0 = innermost) copied into buf (truncated to len); returns buf,
 * "" when out of range. */
char *mt_site_frame(const char *stack, size_t i, char *buf, size_t len);
/* The frame that names the allocation for people: the innermost frame not
 * inside PyTorch's own installed package (a path containing
 * "/site-packages/torch/" or "/dist-packages/torch/"), else the
 * innermost frame. Returns its index, or (size_t)-1 when stack is empty. */
size_t mt_site_display_index(const char *stack);
/* The directory that the program's own files share: the longest common
 * directory of the display frames (above) of stacks that are Python frames
 * outside installed packages (site-packages, dist-packages) and the
 * standard library (lib/pythonX.Y); "" when there is none or it is "/".
 * Into buf (len bytes), which it returns. */
char *mt_site_program_dir(const char *const *stacks, size_t n, char *buf, size_t len);
/* A frame shortened for people: a path inside an installed package from
 * the package's folder on ("transformers/loss/loss_utils.py:40:f"), a path
 * under program_dir relative to it ("train.py:42:step"), else the frame as
 * it is. Into buf, which it returns. */
char *mt_site_shorten(const char *frame, const char *program_dir, char *buf, size_t len);

/* ---- NVTX ranges ---------------------------------------------------------- */

/* Per range name (and domain): instances, bytes allocated while an instance
 * is open (in the same process; one allocation counts once per name even
 * inside nested or overlapping instances) and the most bytes live on the
 * device at any moment while an instance is open. */
struct mt_range_stats {
	uint32_t name, domain;
	uint64_t instances;
	uint64_t allocations;
	uint64_t bytes_allocated;
	uint64_t peak_live;
	uint64_t peak_at;
};

/* A range's name for people: "NAME" or "NAME [DOMAIN]", "(unnamed)" for
 * none. Into buf, which it returns. */
char *mt_range_label(struct mt_reader *r, uint32_t name, uint32_t domain, char *buf, size_t len);

/* ---- what ran at a moment ------------------------------------------------ */

/* What a trace's kernel events' times are (meta "kernels", set by `memtrace
 * record --kernels`). */
enum mt_kernel_times {
	MT_KERNEL_TIMES_GPU = 0, /* start and end on the GPU (also traces without the key) */
	MT_KERNEL_TIMES_LAUNCH,  /* ts = end = the CPU time the launch call returned */
	MT_KERNEL_TIMES_NONE,    /* kernels not recorded */
};

enum mt_kernel_times mt_kernel_times(struct mt_reader *r);

/* The kernel and the NVTX range that go with a moment of a process. */
struct mt_moment_context {
	uint64_t at;     /* the moment */
	uint64_t stream; /* the moment's stream, UINT64_MAX not known */
	enum mt_kernel_times times;
	/* The kernel on the moment's stream: with GPU times the last to start
	 * on the GPU at or before the moment (running: still running then);
	 * with launch times the last launched at or before it. When that
	 * stream launched none before the moment, one on another stream of
	 * the process (elsewhere: true): with GPU times one still running
	 * then (the latest started of those), else the latest started; with
	 * launch times the latest launched. kernel 0: none recorded before
	 * the moment. */
	uint32_t kernel; /* interned name */
	uint64_t kernel_stream;
	uint64_t kernel_ts, kernel_end; /* the event's times */
	bool running, elsewhere;
	/* the innermost NVTX range open in the process at the moment (the
	 * deepest; the latest started among equals), or NULL */
	const struct mt_range *range;
};

/* Fills *c for the moment `at` (absolute) of process (0: any) on stream
 * (UINT64_MAX, 0 or UINT32_MAX, which name no stream: any) of d's device: the kernel from d's
 * reader (the events before the moment, read backwards in growing windows), the range from
 * d->ranges. Returns 0 or a negative errno with a message. */
int mt_moment_context(const struct mt_analysis *d, uint32_t process, uint64_t stream, uint64_t at,
                      struct mt_moment_context *c, char *err, size_t errlen);

/* ---- the report -------------------------------------------------------------- */

#define MT_REPORT_TOP 20 /* rows of a list unless asked otherwise */
#define MT_REPORT_OOM_LARGEST 5
#define MT_REPORT_OOM_DETAILED 20 /* OOMs explained in full; later ones keep their figures */

/* An allocation in a report's list. */
struct mt_report_alloc {
	const struct mt_lifetime *l;  /* into the report's data */
	const struct mt_range *range; /* innermost range open when allocated, or NULL */
};

/* How the allocations live at the moment are listed. */
enum mt_report_by {
	MT_REPORT_BY_SITE = 0,   /* grouped by the frame that names them (mt_site_display_index),
	                            or the innermost range when they have no call site */
	MT_REPORT_BY_RANGE = 1,  /* grouped by the innermost NVTX range name */
	MT_REPORT_BY_TENSOR = 2, /* one row per allocation */
};

/* A group of the allocations live at the moment: those sharing a key. */
struct mt_report_group {
	char *key;      /* "path:line:function", "in NAME [DOMAIN]", or "" (neither) */
	bool is_site;   /* the key is a call-site frame */
	uint64_t count; /* allocations */
	uint64_t bytes;
	struct mt_report_alloc largest; /* the group's largest allocation */
};

/* A saved replay of the device (the latest per policy and parameters). */
struct mt_report_replay {
	const struct mt_replay_record *rec; /* owned by the reader */
	uint64_t peak_reserved;
	uint64_t oom_count;
	uint64_t capacity; /* it ran against (memtrace replay's "capacity"); 0 none or not saved */
};

/* What a failed allocation was to the program (see mt_report.failures). */
enum mt_failure_role {
	MT_FAILURE_OOM = 0,       /* the failure the program saw: one OOM */
	MT_FAILURE_ATTEMPT = 1,   /* a driver call behind an OOM (the framework's attempts) */
	MT_FAILURE_RECOVERED = 2, /* a driver call the framework recovered from (it freed
	                             its cache and retried): no OOM */
};

struct mt_report_failure {
	enum mt_failure_role role;
	size_t oom; /* OOM and ATTEMPT: the OOM's index, in time order */
};

/* The role of each of d's failures (d surveyed; roles: d->nfails entries) and the
 * number of OOMs the program saw (README.md's glossary, "OOM"). Returns 0
 * or -ENOMEM. */
int mt_failure_roles(const struct mt_analysis *d, struct mt_report_failure *roles, size_t *nooms);

/* A saved replay's verdict on one OOM (README.md, glossary: "held"). */
struct mt_oom_verdict {
	/* the policy's reserved peak up to the OOM's moment (its saved series)
	 * plus the request in 2 MiB pages: a capacity with which it holds it */
	uint64_t needs;
	bool held; /* needs <= the OOM's room */
};

/* One OOM the program saw: a framework's failure (PyTorch's OutOfMemoryError)
 * with the driver attempts that caused it, or a failed driver call where no
 * framework recorded its requests. Figures are defined once, in README.md's
 * glossary. */
struct mt_report_oom {
	const struct mt_failure *f; /* the failure the program saw */
	size_t attempts;            /* driver attempts behind it */
	uint64_t free_bytes;        /* free memory the driver reported on the device then,
	                               from the last attempt (else f); UINT64_MAX unknown */
	bool detailed;              /* false past the first MT_REPORT_OOM_DETAILED: f only */
	uint64_t live_bytes;        /* of the live layer at f's moment */
	uint64_t reserved;          /* the recorded allocator's segments then (0 unknown) */
	struct mt_anatomy anatomy;  /* at f's moment */
	struct mt_report_alloc largest[MT_REPORT_OOM_LARGEST];
	size_t nlargest;
	/* room for the allocator: the device total less what the reading
	 * shows outside the allocator (other processes, CUDA context and
	 * libraries); the device total when there is no reading. room_known
	 * false: the trace does not record the device's memory (an import),
	 * room is 0 and no verdict is held. */
	uint64_t room;
	bool room_from_reading, room_known;
	uint64_t lower_bound;             /* live_bytes + the request: no allocator needs less */
	struct mt_oom_verdict *verdicts;  /* per saved replay, as mt_report.replays */
	size_t smallest;                  /* the replay that needs least, (size_t)-1 none */
	struct mt_moment_context context; /* at f's moment, its process and stream */
};

struct mt_report_options {
	bool all_ranges;      /* keep the library-internal NVTX ranges (mt_analysis_load) */
	bool at_set;          /* false: the peak */
	uint64_t at;          /* since t0 */
	size_t top;           /* rows of the lists, 0 = MT_REPORT_TOP */
	enum mt_report_by by; /* how the allocations live at the moment are listed */
	/* true: data holds only the lifetimes the report lists (those live at
	 * the peak, at the moment asked, at each OOM explained and at the
	 * samples nearest to them, and those never freed), so that memory is
	 * what is live, not the trace's length (memtrace report); false:
	 * every lifetime (comparisons) */
	bool only_listed;
	/* called between stages and every ~1% of the sweep when set */
	void (*progress)(void *data, uint64_t done, uint64_t total);
	void *progress_data;
};

struct mt_report {
	struct mt_analysis data;
	size_t top;                   /* rows of the lists (the options' or MT_REPORT_TOP) */
	uint64_t peak_bytes, peak_at; /* of the live layer */
	uint64_t at;                  /* the moment asked (absolute), = peak_at by default */
	struct mt_anatomy anatomy;    /* at `at` */
	/* at `at`: of the process and stream of the allocation made then (the
	 * one that reached the peak), else of any */
	struct mt_moment_context context;
	uint64_t live_at_bytes;          /* live bytes at `at` */
	uint64_t live_at_count;          /* allocations live at `at` */
	struct mt_report_alloc *tensors; /* the `top` largest live at `at`, descending */
	size_t ntensors;
	struct mt_report_group *groups; /* by site or range: every group, by bytes descending */
	size_t ngroups;
	struct mt_report_alloc *top_peak; /* the `top` largest live at the peak */
	size_t ntop_peak;
	/* the directory the program's own files share (the longest common
	 * directory of the call-site frames outside installed packages), for
	 * shortening paths; "" when none */
	char program_dir[512];
	/* bytes live at the peak whose allocation has a call site or a range,
	 * and their share of peak_bytes (0 when the peak is 0) */
	uint64_t attributed_bytes;
	double attributed_fraction;
	struct mt_range_stats *ranges; /* by bytes allocated, descending */
	size_t nranges;
	uint64_t never_freed_count, never_freed_bytes;
	struct mt_report_alloc *never_freed; /* the `top` largest */
	size_t nnever_freed;
	struct mt_report_replay *replays;
	size_t nreplays;
	struct mt_report_failure *failures; /* per data.fails */
	struct mt_report_oom *ooms;         /* one per OOM the program saw, in time order */
	size_t nooms;
	size_t framework_failures, driver_attempts, recovered_attempts;
	const struct mt_range **range_of; /* per live lifetime (private) */
};

/* Builds the report of device (0 = the first with allocations) of r.
 * Returns 0, -ERANGE when the moment asked lies after the trace, or what
 * loading returned, with a message. Release with mt_report_release. */
int mt_report_build(struct mt_report *rep, struct mt_reader *r, uint32_t device,
                    const struct mt_report_options *opt, char *err, size_t errlen);
/* Accepts a zeroed report. */
void mt_report_release(struct mt_report *rep);

/* ---- two runs compared --------------------------------------------------- */

/* Two traces of the same program (before and after a change), each its
 * first device with allocations, compared: peaks side by side, per NVTX
 * range name, the call sites whose bytes live at the peak changed most,
 * what was allocated in only one run, and the OOMs of each. Call sites are
 * matched by the frame that names them (mt_site_display_index); an
 * allocation without one is named by its innermost NVTX range. Index 0 of
 * every pair is run A, 1 run B. */

#define MT_COMPARE_TOP 20
#define MT_COMPARE_OOMS 5

struct mt_compare_run {
	uint32_t device;
	uint64_t peak_live, peak_live_at; /* since the run's start */
	uint64_t peak_reserved;           /* segments, else driver allocations */
	uint64_t allocations, bytes_allocated;
	unsigned layer;
	uint64_t nooms;
	struct {
		uint64_t at, bytes; /* since the run's start; requested */
	} oom[MT_COMPARE_OOMS];
};

struct mt_compare_range {
	char name[128];
	uint64_t instances[2], allocations[2], bytes_allocated[2], peak_live[2];
};

struct mt_compare_site {
	char name[512]; /* the frame, or "in RANGE", or "(no call site or range)" */
	uint64_t bytes[2], count[2];
};

struct mt_compare {
	struct mt_compare_run run[2];
	struct mt_compare_range *ranges; /* by the larger bytes allocated */
	size_t nranges;
	/* bytes live at each run's peak per call site, by |B - A| descending */
	struct mt_compare_site *at_peak;
	size_t nat_peak;
	/* (call site, requested size) pairs allocated in one run only, by
	 * bytes descending: only[0] in A alone, only[1] in B alone; name holds
	 * "SIZE B at FRAME" or "SIZE B in RANGE" */
	struct mt_compare_site *only[2];
	size_t nonly[2];
	uint64_t only_count[2], only_bytes[2]; /* allocations and bytes in all */
};

/* Compares the runs in a and b. 0, or -ENOENT when one holds no
 * allocations, or what loading returned, with a message. Release with
 * mt_compare_release. */
int mt_compare_build(struct mt_compare *c, struct mt_reader *a, struct mt_reader *b, char *err,
                     size_t errlen);
/* Accepts a zeroed c. */
void mt_compare_release(struct mt_compare *c);

#endif /* MEMTRACE_ANALYZE_H */
