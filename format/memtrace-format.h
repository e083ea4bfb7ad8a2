/* memtrace-format.h — the memtrace trace format (version 1).
 *
 * A trace is one SQLite database (WAL mode) holding metadata, processes,
 * devices, interned strings and a sequence of chunks. A chunk is a batch of
 * events of one kind from one (process, device), stored column-wise and
 * compressed with zstd. This module is the only one that touches SQLite and
 * zstd: the writer batches events into chunks (each committed in its own
 * transaction, so a reader sees every committed chunk even if the writer
 * died), the reader yields events in (timestamp, process, sequence) order
 * across chunks and processes, answers time windows through the chunk index
 * and pairs alloc/free into lifetimes. docs/FORMAT.md is the spec.
 *
 * Errors are negative errno values: -ENOENT missing file, -ENOTSUP a trace
 * written by a newer format version, -EBADMSG a corrupt chunk or schema,
 * -ENOMEM, -EINVAL bad arguments, -EIO a storage failure. Every handle keeps
 * a one-line, human-readable message for its last error. Nothing here prints
 * or exits.
 */
#ifndef MEMTRACE_FORMAT_H
#define MEMTRACE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_FORMAT_VERSION 1

/* Timestamps are nanoseconds on CUPTI's clock. */
#define MT_TIME_UNKNOWN UINT64_MAX

/* ---- event model -------------------------------------------------------- */

enum mt_event_kind {
	MT_EVENT_ALLOC = 1,
	MT_EVENT_FREE = 2,
	MT_EVENT_ALLOC_FAILED = 3,
	MT_EVENT_KERNEL = 4,
	MT_EVENT_MEMCPY = 5,
	MT_EVENT_MEMSET = 6,
	MT_EVENT_RANGE = 7,
	MT_EVENT_SAMPLE = 8,
	MT_EVENT_POOL = 9,
};
#define MT_EVENT_KIND_MAX 9
/* Bit for a kind in a query's kind mask. */
#define MT_KIND_BIT(kind) (1u << (kind))

/* Which allocator layer an alloc/free describes. A requests-capture trace of
 * a framework holds both: the framework's requests and the segments its
 * allocator took from the driver. */
enum mt_layer {
	MT_LAYER_DRIVER = 0,  /* memory the driver handed out (what nvidia-smi sees) */
	MT_LAYER_REQUEST = 1, /* a framework allocator's request (a tensor) */
};

enum mt_mem_kind {
	MT_MEM_DEVICE = 0,
	MT_MEM_ASYNC_POOL = 1,
	MT_MEM_VMM = 2, /* cuMemCreate + cuMemMap */
	MT_MEM_MANAGED = 3,
	MT_MEM_PINNED_HOST = 4,
};

enum mt_api {
	MT_API_UNKNOWN = 0,
	MT_API_CUDA_MALLOC = 1,
	MT_API_CUDA_MALLOC_ASYNC = 2,
	MT_API_CUDA_MALLOC_MANAGED = 3,
	MT_API_CUDA_HOST_ALLOC = 4,
	MT_API_CU_MEM_ALLOC = 5,
	MT_API_CU_MEM_ALLOC_ASYNC = 6,
	MT_API_CU_MEM_CREATE = 7, /* cuMemCreate + cuMemMap */
	MT_API_CU_MEM_ALLOC_MANAGED = 8,
	MT_API_CU_MEM_HOST_ALLOC = 9,
	MT_API_TORCH = 10,  /* PyTorch caching allocator (requests and its segments) */
	MT_API_JAX = 11,    /* XLA/JAX allocator */
	MT_API_SYNTH = 12,  /* memtrace synth */
	MT_API_IMPORT = 13, /* memtrace import */
};
#define MT_API_MAX 13

enum mt_copy_kind {
	MT_COPY_UNKNOWN = 0,
	MT_COPY_HTOD = 1,
	MT_COPY_DTOH = 2,
	MT_COPY_DTOD = 3,
	MT_COPY_HTOH = 4,
	MT_COPY_PTOP = 5,
};

enum mt_pool_op {
	MT_POOL_CREATE = 0,
	MT_POOL_TRIM = 1,
	MT_POOL_DESTROY = 2,
	MT_POOL_GROW = 3,
};

/* alloc and free. For a free, bytes may be 0 when unknown (the reader fills it
 * from the paired alloc). */
struct mt_alloc_event {
	uint64_t address;
	uint64_t bytes;
	uint64_t stream; /* stream id; 0 = default/unknown */
	uint64_t correlation; /* CUPTI correlation id, 0 if none */
	uint64_t reuse_delay; /* free only: ns from the free request until the
	                         memory is reusable (stream uses); else 0 */
	uint32_t site;        /* interned call-site string id, 0 = none */
	uint8_t layer;        /* enum mt_layer */
	uint8_t mem_kind;     /* enum mt_mem_kind */
	uint8_t api;          /* enum mt_api */
};

struct mt_alloc_failed_event {
	uint64_t bytes;      /* requested */
	uint64_t free_bytes; /* device free memory at that moment */
	uint64_t stream;
	uint32_t error;      /* cudaError_t / CUresult value */
	uint32_t site;
	uint8_t layer;
	uint8_t api;
};

struct mt_kernel_event {
	uint64_t end;
	uint64_t stream;
	uint64_t correlation;
	uint32_t name; /* interned kernel name */
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t shared_bytes; /* static + dynamic shared memory */
};

/* memcpy and memset */
struct mt_copy_event {
	uint64_t end;
	uint64_t bytes;
	uint64_t stream;
	uint8_t copy_kind; /* enum mt_copy_kind; memset: 0 */
};

/* A complete NVTX range (push/pop or start/end, paired by the recorder). */
struct mt_range_event {
	uint64_t end; /* MT_TIME_UNKNOWN if never closed */
	uint32_t name;   /* interned */
	uint32_t domain; /* interned, 0 = default domain */
	uint32_t thread; /* OS thread id that pushed it */
	uint32_t depth;  /* nesting depth on that thread, 0 = outermost */
};

struct mt_sample_event {
	uint64_t used_bytes;    /* device memory in use (what nvidia-smi shows) */
	uint64_t process_bytes; /* this process's share if known, else 0 */
};

struct mt_pool_event {
	uint64_t pool; /* pool handle */
	uint64_t reserved_bytes;
	uint64_t used_bytes;
	uint8_t op; /* enum mt_pool_op */
};

/* One event. process and device are row ids of the trace's processes and
 * devices tables; seq orders events of one process that share a timestamp
 * (the writer assigns it in append order). */
struct mt_event {
	uint64_t ts;
	uint64_t seq;
	uint32_t process;
	uint32_t device;
	uint8_t kind; /* enum mt_event_kind */
	union {
		struct mt_alloc_event alloc; /* MT_EVENT_ALLOC and MT_EVENT_FREE */
		struct mt_alloc_failed_event failed;
		struct mt_kernel_event kernel;
		struct mt_copy_event copy; /* MT_EVENT_MEMCPY and MT_EVENT_MEMSET */
		struct mt_range_event range;
		struct mt_sample_event sample;
		struct mt_pool_event pool;
	};
};

/* A row of the processes table. Strings are owned by the handle they came
 * from (reader) or copied (writer). */
struct mt_process {
	uint32_t id;      /* row id, assigned by the writer */
	uint32_t parent;  /* row id of the parent process in this trace, 0 = none */
	int64_t pid;
	uint64_t start_ns;
	const char *command_line;
	const char *hostname;
	/* What the trace holds of this process's requests, in its recorder's
	 * words ("requests (PyTorch allocator hook)", "segments only (...)",
	 * "as-is"...); "" = not said (traces written before the column). */
	const char *capture;
};

/* A row of the devices table; one row per physical GPU (deduplicated by uuid). */
struct mt_device {
	uint32_t id; /* row id, assigned by the writer */
	uint32_t ordinal; /* CUDA ordinal in the process that added it */
	uint64_t total_bytes;
	const char *name;
	const char *uuid;
	const char *driver_version;
	const char *cuda_version;
	const char *pci_bus_id; /* as cuDeviceGetPCIBusId writes it; "" = not known */
	/* device memory the driver keeps for itself (NVML's "reserved"):
	 * outside total_bytes, inside the samples' used_bytes; 0 = not
	 * recorded (traces before this column, or no NVML) */
	uint64_t driver_reserved_bytes;
};

/* Stable lower-case name of a kind ("alloc", "free", "alloc_failed", ...),
 * or NULL for an unknown value. */
const char *mt_event_kind_name(unsigned kind);
/* Kind for a name as returned above; 0 if unknown. */
unsigned mt_event_kind_from_name(const char *name);
/* Stable names of the other enums ("driver"/"request", "device"/"async_pool"/...,
 * "cudaMalloc"/"cuMemCreate"/"torch"/...); "unknown" for out-of-range values. */
const char *mt_layer_name(unsigned layer);
const char *mt_mem_kind_name(unsigned mem_kind);
const char *mt_api_name(unsigned api);

/* ---- chunk codec -------------------------------------------------------- */

/* Codec ids stored in the chunks table. */
#define MT_CODEC_COLUMNS_ZSTD 1

/* Most events one chunk may hold (the decoder refuses more, which bounds
 * the memory a blob can make it allocate). */
#define MT_CHUNK_MAX_EVENTS (1u << 20)

/* Encodes n events (n <= MT_CHUNK_MAX_EVENTS), all of the given kind, into
 * one compressed blob. Events need not be sorted (the blob holds them in
 * (ts, seq) order); the fields process and device are not stored (they
 * belong to the chunk row) and seq is stored. *blob is malloc'd and owned
 * by the caller. Returns 0 or a negative errno (-EINVAL if an event's kind
 * differs or n is too large, -ENOMEM). */
int mt_chunk_encode(unsigned kind, const struct mt_event *events, size_t n,
		    void **blob, size_t *blob_len);

/* Decodes a blob written by mt_chunk_encode. `expected` is the event count
 * the chunk row claims; a blob that decodes to another count, is truncated,
 * has trailing bytes or fails decompression or its checksum returns
 * -EBADMSG. Decoded events come in (ts, seq) order and get process and
 * device as given. *events is malloc'd and owned by the caller (NULL when
 * *n is 0). Never reads outside blob[0, blob_len), for any input. */
int mt_chunk_decode(unsigned kind, const void *blob, size_t blob_len,
		    size_t expected, uint32_t process, uint32_t device,
		    struct mt_event **events, size_t *n);

/* ---- writer ------------------------------------------------------------- */

struct mt_writer;

enum mt_writer_flags {
	/* Create the file if missing. Without it a missing file is -ENOENT. */
	MT_WRITER_CREATE = 1u << 0,
};

/* Allocates an unopened writer; NULL on allocation failure. */
struct mt_writer *mt_writer_new(void);

/* Before a new trace is written at path: a memtrace trace there (of any
 * version) moves, with its -wal and -shm side files, to path.N, the first
 * number free of all three, so that no earlier trace is ever replaced;
 * kept (keptlen bytes) receives that name. Returns 1 when a trace was
 * kept, 0 when there is nothing at path (kept = ""), -EEXIST when something
 * that is not a readable trace is there (a folder, a link, another file, a
 * damaged trace: left alone), or another negative errno; the message goes
 * to err. */
int mt_trace_keep_previous(const char *path, char *kept, size_t keptlen,
			   char *err, size_t errlen);

/* Opens (and with MT_WRITER_CREATE creates) the trace at path for appending:
 * sets WAL mode and a busy timeout so several processes can write one trace,
 * creates the schema if the file is new, refuses a trace of a newer format
 * version (-ENOTSUP) or a file that is not a memtrace trace (-EBADMSG).
 * Returns 0 or a negative errno with a message (mt_writer_message). */
int mt_writer_open(struct mt_writer *w, const char *path, unsigned flags);

/* Sets a meta key (replacing an earlier value). Keys used by memtrace:
 * format_version, memtrace_version, command_line, capture, capture_env,
 * host, start_ns, dropped_records. Returns 0 or a negative errno. */
int mt_writer_set_meta(struct mt_writer *w, const char *key, const char *value);

/* Adds delta to the integer meta value of key (created as delta), in one
 * statement, so that several processes writing one trace each add their own
 * count (dropped_records, untimed_records). Returns 0 or a negative errno. */
int mt_writer_add_meta_count(struct mt_writer *w, const char *key, uint64_t delta);

/* Adds a process row; *id receives its row id (> 0). */
int mt_writer_add_process(struct mt_writer *w, const struct mt_process *p,
			  uint32_t *id);

/* Sets the capture label of a process row already added (the recorder
 * learns it as the process runs). Returns 0 or a negative errno. */
int mt_writer_set_process_capture(struct mt_writer *w, uint32_t id, const char *capture);

/* Adds a device row, or finds the existing row with the same uuid (non-empty
 * uuid) and returns its id. *id > 0. */
int mt_writer_add_device(struct mt_writer *w, const struct mt_device *d,
			 uint32_t *id);

/* Interns a string; *id > 0 is the same for equal strings in this trace,
 * also across processes writing it at once. Cached per writer. */
int mt_writer_intern(struct mt_writer *w, const char *s, uint32_t *id);

/* Appends one event. The writer assigns ev->seq (the value passed is
 * ignored) and buffers events per (process, device, kind); a buffer that
 * reaches the chunk size (default 65536 events) is written as a chunk.
 * Returns 0 or a negative errno. */
int mt_writer_append(struct mt_writer *w, const struct mt_event *ev);

/* Sets the number of events per chunk (>= 1) for buffers filled from now on. */
void mt_writer_set_chunk_events(struct mt_writer *w, size_t n);

/* Commits every buffered event, one transaction per chunk. A buffer's
 * chunk stays open after a flush: the next flush replaces that chunk's row
 * with the longer chunk until it holds the chunk size, so frequent flushes
 * (the recorder's every ~200 ms) keep every event committed without
 * shrinking chunks. Returns 0 or a negative errno; on failure the events not
 * written stay buffered. */
int mt_writer_flush(struct mt_writer *w);

/* Events appended so far / written into committed chunks. */
uint64_t mt_writer_events_appended(const struct mt_writer *w);
uint64_t mt_writer_events_written(const struct mt_writer *w);

/* Message for the last error, or "" if none. Owned by the writer. */
const char *mt_writer_message(const struct mt_writer *w);

/* Closes the database without flushing (call mt_writer_flush first to keep
 * buffered events) and frees the writer. Accepts NULL. */
void mt_writer_free(struct mt_writer *w);

/* ---- reader ------------------------------------------------------------- */

struct mt_reader;

/* Allocates an unopened reader; NULL on allocation failure. */
struct mt_reader *mt_reader_new(void);

/* Opens a trace read-only. -ENOENT missing, -EBADMSG not a memtrace trace
 * (not a database, empty, truncated, schema missing), -ENOTSUP newer format
 * version. Returns 0 or a negative errno with a message. */
int mt_reader_open(struct mt_reader *r, const char *path);

/* Message for the last error, or "" if none. Owned by the reader. */
const char *mt_reader_message(const struct mt_reader *r);

/* Frees the reader and everything it handed out. Accepts NULL. */
void mt_reader_free(struct mt_reader *r);

/* Whether the trace is incomplete: a writer of it stopped without closing
 * (killed, interrupted, or still writing), so some event kinds may be
 * committed further than others. The reader then uses only the span every
 * kind covers, the events before *until (ns): iteration, lifetimes, peaks
 * and statistics all leave the later ones out. Returns 1 and sets *until
 * for an incomplete trace, 0 with *until = MT_TIME_UNKNOWN for a complete
 * one, or -EINVAL. */
int mt_reader_incomplete(struct mt_reader *r, uint64_t *until);

/* Value of a meta key, or NULL if absent. Owned by the reader. */
const char *mt_reader_meta(struct mt_reader *r, const char *key);

/* Number of processes / devices, and the i-th row (0-based, in id order).
 * Returned pointers stay valid until mt_reader_free. NULL if out of range. */
size_t mt_reader_process_count(struct mt_reader *r);
const struct mt_process *mt_reader_process(struct mt_reader *r, size_t i);
size_t mt_reader_device_count(struct mt_reader *r);
const struct mt_device *mt_reader_device(struct mt_reader *r, size_t i);
/* The device row with this id, or NULL. */
const struct mt_device *mt_reader_device_by_id(struct mt_reader *r, uint32_t id);

/* The interned string with this id, "" for id 0, NULL if unknown. Owned by
 * the reader. */
const char *mt_reader_string(struct mt_reader *r, uint32_t id);

/* A selection of events. Zero-initialise, then set what matters:
 * kinds = 0 means all kinds; device/process = 0 means all; to = 0 means
 * no upper bound. An event is selected when from <= ts < to. */
struct mt_query {
	uint32_t kinds; /* mask of MT_KIND_BIT(kind) */
	uint32_t device;
	uint32_t process;
	uint64_t from;
	uint64_t to;
};

/* Per-kind totals from the chunk index (no decompression). */
struct mt_kind_stats {
	uint64_t events;
	uint64_t chunks;
	uint64_t blob_bytes; /* compressed bytes */
	uint64_t first_ts;   /* MT_TIME_UNKNOWN if no events */
	uint64_t last_ts;
};

/* Fills stats[0..MT_EVENT_KIND_MAX] (index = kind) for the devices/processes
 * the query selects (its kinds and time window are ignored). */
int mt_reader_kind_stats(struct mt_reader *r, const struct mt_query *q,
			 struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1]);

struct mt_iter;

/* Starts an ordered walk over the events the query selects: ascending
 * (ts, process, seq) across all chunks; kinds in the mask come merged (alloc
 * and free interleaved as they happened). Chunks outside the window are not
 * decompressed. *it is freed with mt_iter_free. */
int mt_reader_iter(struct mt_reader *r, const struct mt_query *q,
		   struct mt_iter **it);

/* Next event into *ev. Returns 1 for an event, 0 at the end, or a negative
 * errno (-EBADMSG for a corrupt chunk, message on the reader naming the
 * chunk id). */
int mt_iter_next(struct mt_iter *it, struct mt_event *ev);

/* Accepts NULL. */
void mt_iter_free(struct mt_iter *it);

/* One allocation's life, from pairing alloc and free by
 * (process, device, address) within one layer. */
enum mt_lifetime_flags {
	MT_LIFETIME_NO_ALLOC = 1u << 0, /* freed, never seen allocated: start = MT_TIME_UNKNOWN */
	MT_LIFETIME_NO_FREE = 1u << 1,  /* never freed: end = MT_TIME_UNKNOWN */
};

struct mt_lifetime {
	uint64_t start;
	uint64_t end;         /* free request */
	uint64_t reuse_delay; /* from the free event */
	uint64_t address;
	uint64_t bytes;
	uint64_t stream;
	uint64_t alloc_seq; /* seq of the alloc (or of the free if NO_ALLOC) */
	uint32_t process;
	uint32_t device;
	uint32_t site;
	uint32_t flags; /* enum mt_lifetime_flags */
	uint8_t layer;
	uint8_t mem_kind;
	uint8_t api;
};

/* Pairing alloc and free events into lifetimes as they stream past, with
 * the rules of mt_reader_lifetimes (which uses it): per layer, by (process,
 * device, address); a free without an alloc is a lifetime of its own
 * (NO_ALLOC); an alloc at an address still live leaves the earlier one live
 * to the end (NO_FREE, "stranded"). Only what is live is held, so a pass
 * costs memory for what is live at once, not for the trace's length. */
struct mt_live {
	struct mt_lifetime l;
	uint64_t index; /* of the lifetime in its layer, as mt_reader_lifetimes orders them */
	uint64_t tag;   /* the caller's; 0 at birth */
	bool marked;    /* the caller's; false at birth */
};

/* Layers MT_LAYER_DRIVER and MT_LAYER_REQUEST. */
struct mt_pairing;

enum mt_pair_kind {
	MT_PAIR_BORN,   /* an allocation: live (l.end unknown) */
	MT_PAIR_DIED,   /* a free of a live allocation: l complete */
	MT_PAIR_ORPHAN, /* a free never seen allocated: a NO_ALLOC lifetime, complete */
};

struct mt_pair_step {
	enum mt_pair_kind kind;
	unsigned layer;
	struct mt_live live; /* a copy */
};

/* A new, empty pairing; NULL when out of memory. */
struct mt_pairing *mt_pairing_new(void);
/* Pairs alloc or free event ev (in trace order) into *out: 0, 1 when ev is
 * of no layer (skipped), or -ENOMEM (p unchanged). */
int mt_pairing_step(struct mt_pairing *p, const struct mt_event *ev, struct mt_pair_step *out);
/* The live allocation of layer with that index at (process, device,
 * address), stranded ones included, or NULL; valid until the next step. */
struct mt_live *mt_pairing_find(struct mt_pairing *p, unsigned layer, uint64_t index,
				 uint32_t process, uint32_t device, uint64_t address);
/* Calls fn for every allocation live now (both layers, stranded ones
 * last). */
void mt_pairing_each(struct mt_pairing *p, void (*fn)(void *data, struct mt_live *live),
		     void *data);
/* Accepts NULL. */
void mt_pairing_free(struct mt_pairing *p);

/* Pairs the selected alloc/free events (the query's kinds are ignored; its
 * device, process and window apply) of one layer into lifetimes, in order of
 * start (NO_ALLOC ones at the time of their free). *out is malloc'd. */
int mt_reader_lifetimes(struct mt_reader *r, const struct mt_query *q,
			unsigned layer, struct mt_lifetime **out, size_t *n);
/* The lifetimes of one layer (as mt_reader_lifetimes pairs them, for the
 * query's device and process; its kinds and window are ignored) that are
 * live at some moment of [from, to]: every one whose sum mt_live_at-style
 * counting needs at those moments, and possibly a few more. Reads the
 * trace up to `to` only, so one still live at `to` has end MT_TIME_UNKNOWN
 * whenever it ends later; holds what is live at once, not the whole
 * trace's lifetimes. In no particular order. *out is malloc'd. */
int mt_reader_lifetimes_during(struct mt_reader *r, const struct mt_query *q,
			       unsigned layer, uint64_t from, uint64_t to,
			       struct mt_lifetime **out, size_t *n);

/* Peak of live bytes (allocs minus frees, in event order) of one layer for
 * the selected device(s), and the timestamp it was first reached. Frees of
 * memory never seen allocated are ignored. */
int mt_reader_peak_live(struct mt_reader *r, const struct mt_query *q,
			unsigned layer, uint64_t *peak_bytes, uint64_t *peak_ts);

/* The layer that describes what the program asked for: MT_LAYER_REQUEST if
 * the trace holds any request-layer alloc, else MT_LAYER_DRIVER. */
int mt_reader_request_layer(struct mt_reader *r, unsigned *layer);

/* ---- saved replays ------------------------------------------------------- */

struct mt_series_point {
	uint64_t ts;
	uint64_t allocated;
	uint64_t reserved;
};

/* A row of the replays table: a replay's result as JSON and a decimated
 * allocated/reserved series. */
struct mt_replay_record {
	int64_t id;
	uint32_t device;
	uint64_t created_ns; /* wall clock, ns since the epoch */
	const char *policy;
	const char *backend;
	const char *params;
	const char *result_json;
	const struct mt_series_point *series;
	size_t series_len;
};

/* Saves a replay result; *id receives its row id. Recorded events are never
 * touched. Returns 0 or a negative errno. */
int mt_writer_save_replay(struct mt_writer *w, const struct mt_replay_record *rec,
			  int64_t *id);

/* All saved replays, oldest first. The array and its strings and series
 * are owned by the reader. */
int mt_reader_replays(struct mt_reader *r, const struct mt_replay_record **out,
		      size_t *n);

#endif /* MEMTRACE_FORMAT_H */
