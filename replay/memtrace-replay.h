/* memtrace-replay.h — replaying a recorded request stream through allocator
 * policies.
 *
 * A policy (replay/policies/NAME.c) is an allocator: it turns requests
 * (alloc bytes on a stream, free an address) into calls on a backend, which
 * hands out device memory. Backends: `sim` keeps a virtual address space with
 * a capacity and needs no GPU; `cuda` gets real memory from the driver
 * (libcuda loaded with dlopen, so the library runs where no driver exists).
 * A policy's logic is identical under both. The replay driver feeds each
 * device's recorded alloc/free stream, in recorded order, through a policy
 * and measures peak allocated/reserved, driver calls, OOMs
 * and (cuda) host latency.
 *
 * Errors are negative errno (-ENOMEM: out of device memory at the capacity,
 * -ENOTSUP: the backend lacks what the policy needs, -EINVAL: bad
 * parameters, -ENODEV: no GPU/driver for the cuda backend) with a message on
 * the handle. Nothing here prints or exits.
 */
#ifndef MEMTRACE_REPLAY_H
#define MEMTRACE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memtrace-format.h"

/* ---- segments and blocks, as walks report them ----------------------------- */

/* A segment (memory a policy, or the backend's pool, holds from the
 * driver) or a block inside it, as reported by a walk. */
struct mt_policy_block {
	uint64_t address;
	uint64_t bytes;
	uint64_t stream;
	bool allocated; /* block: in use; segment: false */
};

/* Called by walk: once per segment (is_segment true), then once per block
 * of that segment in address order. Return non-zero to stop the walk. */
typedef int (*mt_policy_walk_fn)(void *data, bool is_segment, const struct mt_policy_block *blk);

/* ---- backends ------------------------------------------------------------ */

struct mt_backend;

enum mt_backend_kind {
	MT_BACKEND_SIM = 0,
	MT_BACKEND_CUDA = 1,
};

/* Driver-call counters and memory held, kept by every backend. reserved is
 * physical device memory held from the driver: cuMemAlloc'd bytes plus
 * cuMemCreate'd handles plus pool memory. */
struct mt_backend_stats {
	uint64_t alloc_calls; /* cuMemAlloc, cuMemCreate, pool allocations that grew the pool */
	uint64_t free_calls;  /* cuMemFree, cuMemRelease, pool trims */
	uint64_t map_calls;
	uint64_t unmap_calls;
	uint64_t reserved;
	uint64_t peak_reserved;
};

/* Creates a backend for device `ordinal` whose capacity is `capacity` bytes
 * (0 = the device's total for cuda; required > 0 for sim). The cuda backend
 * never lets memory it holds exceed capacity, so a smaller device can be
 * emulated on a larger one. Returns 0, -ENODEV (cuda: no driver or GPU), or
 * another negative errno; *out is set only on success. */
int mt_backend_create(struct mt_backend **out, enum mt_backend_kind kind, unsigned ordinal,
                      uint64_t capacity, char *err, size_t errlen);

/* Releases everything the backend still holds (memory, handles, VA
 * reservations, pools) and frees it. Accepts NULL. */
void mt_backend_destroy(struct mt_backend *b);

enum mt_backend_kind mt_backend_kind(const struct mt_backend *b);
const char *mt_backend_name(const struct mt_backend *b); /* "sim" or "cuda" */
uint64_t mt_backend_capacity(const struct mt_backend *b);
/* Physical page granularity for VMM (2 MiB on current GPUs; sim: 2 MiB). */
uint64_t mt_backend_granularity(const struct mt_backend *b);
void mt_backend_get_stats(const struct mt_backend *b, struct mt_backend_stats *stats);

/* Plain device memory (cuMemAlloc / cuMemFree). -ENOMEM when it would
 * exceed the capacity. Addresses are 256-byte aligned. */
int mt_backend_alloc(struct mt_backend *b, uint64_t bytes, uint64_t *address);
int mt_backend_free(struct mt_backend *b, uint64_t address);

/* Virtual memory management (cuMemAddressReserve/Create/Map/SetAccess/
 * Unmap/Release/AddressFree). Sizes and addresses are multiples of the
 * granularity. Only create counts against capacity. */
int mt_backend_va_reserve(struct mt_backend *b, uint64_t bytes, uint64_t *va);
int mt_backend_va_free(struct mt_backend *b, uint64_t va, uint64_t bytes);
int mt_backend_mem_create(struct mt_backend *b, uint64_t bytes, uint64_t *handle);
int mt_backend_mem_release(struct mt_backend *b, uint64_t handle);
/* Maps handle at va (and grants read/write access). */
int mt_backend_map(struct mt_backend *b, uint64_t va, uint64_t bytes, uint64_t handle);
/* Unmaps the mapping of bytes at va. */
int mt_backend_unmap(struct mt_backend *b, uint64_t va, uint64_t bytes);
/* n mt_backend_map calls in one: handles[i] (each of bytes) at va + i bytes,
 * counted as n map calls; all or nothing (a failed map undoes the ones
 * before it). */
int mt_backend_map_pages(struct mt_backend *b, uint64_t va, uint64_t bytes, const uint64_t *handles,
                         uint64_t n);
/* n mt_backend_unmap calls in one: the mappings of bytes at va + i bytes,
 * i < n, counted as n unmap calls; -EINVAL, with nothing unmapped, unless
 * each is a mapping of bytes. */
int mt_backend_unmap_pages(struct mt_backend *b, uint64_t va, uint64_t bytes, uint64_t n);

/* Stream-ordered pool (cudaMallocAsync semantics on the device's default
 * pool with release threshold = capacity). sim approximates the driver's
 * pool; see replay/backend-sim.c. */
int mt_backend_pool_alloc(struct mt_backend *b, uint64_t bytes, uint64_t stream, uint64_t *address);
int mt_backend_pool_free(struct mt_backend *b, uint64_t address, uint64_t stream);
/* Releases unused pool memory down to keep_bytes (cuMemPoolTrimTo). */
int mt_backend_pool_trim(struct mt_backend *b, uint64_t keep_bytes);
/* Walks the pool's chunks and the blocks inside them (as a policy's walk).
 * sim only: the driver's pool keeps its layout to itself, so cuda returns
 * -ENOTSUP. Returns 0, fn's non-zero return, or -ENOTSUP. */
int mt_backend_pool_walk(struct mt_backend *b, mt_policy_walk_fn fn, void *data);

/* Free and total device memory: cuda asks the driver (cuMemGetInfo: the
 * whole GPU, whoever holds it), sim answers capacity minus reserved and
 * capacity. Lets a caller check that the GPU is left as found. */
int mt_backend_mem_info(struct mt_backend *b, uint64_t *free_bytes, uint64_t *total_bytes);

/* Message for the backend's last error. */
const char *mt_backend_message(const struct mt_backend *b);

/* ---- policies ------------------------------------------------------------ */

struct mt_policy;

/* A request as the offline planner sees it: the whole lifetime. start and
 * end are positions in the replay order (event indices, monotone with
 * time), not timestamps, so that two requests overlap exactly when they are
 * live at once during the replay, even when events share a timestamp:
 * requests a and b overlap iff a.start < b.end && b.start < a.end. A stream
 * has fewer than 2^31 requests, so positions fit 32 bits; 16 bytes a
 * request, as the planner holds every one. */
struct mt_plan_request {
	uint32_t start; /* position of the alloc */
	uint32_t end;   /* position of the free (at its reuse time); UINT32_MAX never freed */
	uint64_t bytes;
};

/* About the bytes a replay of the offline planner (the `planned` policy)
 * holds at its peak for a stream of this many requests
 * (mt_request_stream_requests): what it keeps per request while it plans,
 * within 10 % of what a replay of a synthetic training trace takes; where
 * the addresses in use are fragmented (random lifetimes) it takes up to
 * twice as much. For callers that would rather leave planned out than hold
 * that much. */
uint64_t mt_plan_bytes_estimate(uint64_t requests);

struct mt_policy_stats {
	uint64_t allocated; /* bytes handed to the program (as the policy rounds them) */
	uint64_t requested; /* bytes the program asked for */
	uint64_t reserved;  /* bytes held from the backend */
	uint64_t segments;
	uint64_t largest_free;  /* largest free block inside held segments */
	uint64_t cache_flushes; /* free-cache-and-retry episodes */
};

/* Where the recorded run's driver placed one of its allocations: a
 * driver-layer alloc of the trace (see mt_request_stream_load). */
struct mt_recorded_segment {
	uint64_t address;
	uint64_t bytes;
};

enum mt_policy_flags {
	MT_POLICY_OFFLINE = 1u << 0,    /* needs plan() with every lifetime first */
	MT_POLICY_NEEDS_VMM = 1u << 1,  /* uses va_reserve/mem_create/map */
	MT_POLICY_POOL = 1u << 2,       /* uses the stream-ordered pool */
	MT_POLICY_SIM_APPROX = 1u << 3, /* sim result is a documented approximation */
};

/* What every policy implements. A policy struct starts with a struct
 * mt_policy (its ops and counters) as its first member. */
struct mt_policy_ops {
	const char *name;
	const char *summary; /* one line for --help and tables */
	unsigned flags;      /* enum mt_policy_flags */
	/* params: "key=value,key=value" or NULL; sizes accept units. */
	int (*create)(struct mt_policy **out, struct mt_backend *b, const char *params, char *err,
	              size_t errlen);
	int (*plan)(struct mt_policy *p, const struct mt_plan_request *reqs, size_t n);
	/* request index i of the plan (offline policies), else ignored */
	int (*alloc)(struct mt_policy *p, uint64_t bytes, uint64_t stream, size_t request_index,
	             uint64_t *address);
	int (*free)(struct mt_policy *p, uint64_t address, uint64_t stream);
	int (*empty_cache)(struct mt_policy *p);
	/* NULL, or called once after create, before any request, with the
	 * driver allocations of the recorded run in recorded order (n > 0; the
	 * array outlives the policy's use of it), by a policy whose choices
	 * depend on where the driver places its segments (`caching`: among free
	 * blocks of one size, PyTorch takes the one at the lowest address).
	 * Returns 0 or -ENOMEM. */
	int (*place_segments)(struct mt_policy *p, const struct mt_recorded_segment *segs,
	                      size_t n);
	int (*walk)(struct mt_policy *p, mt_policy_walk_fn fn, void *data);
	void (*stats)(struct mt_policy *p, struct mt_policy_stats *stats);
	void (*destroy)(struct mt_policy *p);
};

struct mt_policy {
	const struct mt_policy_ops *ops;
	/* bytes handed out as the policy rounds them (stats' allocated), kept
	 * by the policy as they change, so the driver follows them per event
	 * without asking for stats */
	uint64_t allocated;
	/* offline policies: plan() returns -EINTR soon after *interrupted
	 * becomes non-zero (NULL: never), and keeps in *planned (NULL: nowhere)
	 * how many requests it has placed, as it goes, for another thread to
	 * read; the driver sets both before plan() */
	volatile int *interrupted;
	uint64_t *planned;
};

/* All policies, NULL-terminated, in a stable order. */
const struct mt_policy_ops *const *mt_policy_list(void);
/* The policy with this name, or NULL. */
const struct mt_policy_ops *mt_policy_find(const char *name);
/* Whether the policy a spec ("NAME" or "NAME:params") names plans from
 * every lifetime first (MT_POLICY_OFFLINE); false for an unknown one. */
bool mt_policy_spec_offline(const char *spec);

/* Creates a policy from a spec "NAME" or "NAME:key=value,key=value". */
int mt_policy_create(struct mt_policy **out, const char *spec, struct mt_backend *b, char *err,
                     size_t errlen);
/* Destroys (releasing its memory through the backend). Accepts NULL. */
void mt_policy_destroy(struct mt_policy *p);

/* ---- replay driver --------------------------------------------------------- */

/* The replay between two events, as an observer sees it (see
 * mt_replay_options.observe). */
struct mt_replay_moment {
	uint64_t position;  /* events replayed so far: a replay position */
	uint64_t ts;        /* time of the last event replayed (0 at position 0) */
	uint64_t next_ts;   /* time of the next event; UINT64_MAX when none is left */
	uint64_t allocated; /* requested bytes live (served), as the series counts them */
	uint64_t reserved;  /* bytes held from the backend, as the series counts them */
};

/* Called at every replay position, from 0 (before the first event) to the
 * end, with the policy in the state the events so far left it: an observer
 * may walk it or ask its stats, never change it. Event times are those of
 * the series (a free counts at its reuse time) and never decrease, so
 * stopping once next_ts > T leaves the state at time T. Returns 0 to go
 * on, > 0 to stop the replay there (mt_replay_result.events says where),
 * or a negative errno to fail it. */
typedef int (*mt_replay_observe_fn)(void *data, const struct mt_replay_moment *m,
                                    struct mt_policy *p);

struct mt_replay_options {
	const char *policy; /* spec, as for mt_policy_create */
	enum mt_backend_kind backend;
	unsigned ordinal;     /* cuda device ordinal */
	uint64_t capacity;    /* 0: sim = unlimited (UINT64_MAX / 2), cuda = device total */
	uint32_t device;      /* trace device row id to replay; 0 = the first with events */
	size_t series_points; /* decimated series length to keep (0 = none) */
	bool measure_latency; /* time each alloc/free (cuda) */
	/* called every ~1% of events when set (see mt_replay_run_many) */
	void (*progress)(void *data, uint64_t done, uint64_t total);
	void *progress_data;
	/* NULL, or called with progress_data while offline policies plan (no
	 * event replayed yet), every ~50 ms: the requests the least advanced
	 * plan has placed, of the stream's requests */
	void (*planning)(void *data, uint64_t placed, uint64_t requests);
	volatile int *interrupted;    /* stop early (SIGINT) when *interrupted != 0 */
	mt_replay_observe_fn observe; /* NULL: none; slows the replay (tools, tests) */
	void *observe_data;
	/* NULL, or called once, right after the allocation with which the
	 * requested bytes live first reach the stream's peak
	 * (mt_request_stream_peak_live; never when OOMs kept them below it),
	 * with the policy in that state; its return value is 0 or a negative
	 * errno that fails the replay. Costs nothing at the other events. */
	mt_replay_observe_fn at_peak;
	void *at_peak_data;
	/* NULL, or (sim backend) how the capacity comes when it is still being
	 * worked out: called once per replay, with capacity_data, before its
	 * first event and, for an offline policy, after its plan, so that
	 * planning need not wait for it; returns 0 with *capacity set (0: none,
	 * as for `capacity`) or a negative errno that fails the replay with the
	 * message it left in err (errlen bytes). `capacity` is not read then. */
	int (*capacity_later)(void *data, uint64_t *capacity, char *err, size_t errlen);
	void *capacity_data;
};

#define MT_REPLAY_OOM_LARGEST 5

/* One OOM during replay. */
struct mt_replay_oom {
	uint64_t ts;
	uint64_t request; /* request index (0-based, in alloc order) */
	uint64_t bytes;
	uint64_t allocated; /* live bytes at that moment */
	uint64_t reserved;
	/* bytes of the largest requests live at that moment, descending, 0-padded */
	uint64_t largest[MT_REPLAY_OOM_LARGEST];
};

struct mt_replay_result {
	char policy[64];
	char backend[8];
	uint64_t events;         /* events replayed: the whole stream unless stopped early */
	uint64_t peak_allocated; /* lower bound: requested bytes live at once */
	/* peak of the bytes handed out as the policy rounds them (for
	 * `caching`: PyTorch's max_memory_allocated) */
	uint64_t peak_allocated_rounded;
	uint64_t peak_reserved;
	struct mt_backend_stats driver;
	uint64_t oom_count;
	struct mt_replay_oom first_oom;
	/* host time of the policy's alloc and free calls together, driver
	 * calls included (measure_latency; meant for cuda), else 0 */
	uint64_t latency_p50_ns; /* bucketed: within 1/64 of the true value */
	uint64_t latency_p99_ns;
	/* CPU time of the replay loop on its thread: the policy's own work and
	 * the driver's, not the reading of the trace */
	double seconds;
	/* an offline policy: wall time of its planning (every lifetime known,
	 * on up to two threads), before the replay loop and not in seconds;
	 * else 0 */
	double plan_seconds;
	/* CPU time spent reading and ordering the trace's events for this run
	 * (one pass shared by the replays of one mt_replay_run_many); 0 for a
	 * stream built from events */
	double stream_seconds;
	/* Driver calls (alloc + free + map + unmap) per steady-state iteration:
	 * iterations start where the trace's most frequent outermost NVTX range
	 * starts (at least 3 of them); the first iteration (caches filling) is
	 * left out. steady_iterations = 0 when the trace has no such ranges. */
	double calls_per_iteration;
	uint64_t steady_iterations;
	struct mt_series_point *series; /* malloc'd, series_len points */
	size_t series_len;
};

/* The requests of one device in replay order, shared by any number of
 * replays. */
struct mt_request_stream;

/* Sets up the request layer (or the driver layer when the trace has no
 * requests) of `device` (0 = first device with alloc events): its alloc and
 * free events in recorded order, paired by (process, address). A free is
 * applied at its reuse time (ts + reuse_delay), merged into the order; a
 * free without an alloc is skipped; an alloc never freed stays live to the
 * end; an alloc at an address still live ends the earlier request there.
 * Also loads the iteration starts (see calls_per_iteration) and, when the
 * stream is the request layer, the device memory allocations of the driver
 * layer (address and bytes, in recorded order), which every replay hands to
 * its policy's place_segments.
 *
 * The events are not kept: loading reads them once for the figures below,
 * and every replay reads them again as it goes, so memory is what is live
 * at once plus a few chunks of events, not the trace's length. r must stay
 * open while the stream is used, by one thread at a time. */
int mt_request_stream_load(struct mt_request_stream **out, struct mt_reader *r, uint32_t device,
                           char *err, size_t errlen);
/* The device a load with device 0 takes: the first (in id order) with
 * alloc events, 0 when none. Returns 0 or the reader's negative errno. */
int mt_request_stream_first_device(struct mt_reader *r, uint32_t *device);
/* mt_request_stream_load, keeping besides every request's lifetime (16
 * bytes a request) for the replays of offline policies, which then need
 * no pass of their own over the trace to read them. */
int mt_request_stream_load_with_lifetimes(struct mt_request_stream **out, struct mt_reader *r,
                                          uint32_t device, char *err, size_t errlen);
/* Builds a stream from alloc/free events given in recorded order (as the
 * reader yields them), keeping those of `layer`, with the rules of
 * mt_request_stream_load. Its steps stay in memory (32 bytes an event).
 * For tests, benchmarks and importers. */
int mt_request_stream_from_events(struct mt_request_stream **out, const struct mt_event *events,
                                  size_t n, unsigned layer, char *err, size_t errlen);
uint64_t mt_request_stream_events(const struct mt_request_stream *s);
/* Number of requests (allocations). */
uint64_t mt_request_stream_requests(const struct mt_request_stream *s);
/* Timestamp of the first event (0 when empty). */
uint64_t mt_request_stream_start(const struct mt_request_stream *s);
/* Peak of requested bytes live at once: the lower bound for any policy. */
uint64_t mt_request_stream_peak_live(const struct mt_request_stream *s);
uint32_t mt_request_stream_device(const struct mt_request_stream *s);
void mt_request_stream_free(struct mt_request_stream *s);

/* Replays the stream through one policy, on the calling thread (a stream
 * loaded from a trace is read by a second thread meanwhile). An OOM does
 * not stop the replay (the request is counted and skipped); a backend error
 * does. Leaves the backend's memory fully released. Returns 0 or a negative
 * errno. */
int mt_replay_run(const struct mt_request_stream *s, const struct mt_replay_options *opt,
                  struct mt_replay_result *res, char *err, size_t errlen);

/* Replays the stream through n policies at once (opts[i] into res[i]), each
 * on a thread of its own, sharing one pass over the trace; the results are
 * those of n calls of mt_replay_run. rcs[i] receives replay i's status and
 * errs + i * errlen its message. progress and interrupted of opts[0] serve
 * the whole run: progress is called on the calling thread with the events
 * the slowest replay has done (every ~50 ms; 0 while the lifetimes that
 * offline policies need are read and their plans made); interruption stops
 * every replay, and the reading of the lifetimes. Replays on the cuda backend run one after the
 * other (they would share one GPU's memory). Returns 0 when every replay returned 0, else the first
 * negative rcs[i]. */
int mt_replay_run_many(const struct mt_request_stream *s, const struct mt_replay_options *opts,
                       size_t n, struct mt_replay_result *res, int *rcs, char *errs, size_t errlen);

/* Smallest capacity (to the granularity) on which the policy replays with
 * no OOM, by binary search between peak_allocated and hi. */
int mt_replay_find_min_capacity(const struct mt_request_stream *s,
                                const struct mt_replay_options *opt, uint64_t hi,
                                uint64_t *capacity, char *err, size_t errlen);

/* Frees what mt_replay_run allocated inside res. */
void mt_replay_result_release(struct mt_replay_result *res);

#endif /* MEMTRACE_REPLAY_H */
