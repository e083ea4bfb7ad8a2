/* inject-private.h — the pieces of libmemtrace-inject.so, the library that
 * CUDA loads into a recorded program through CUDA_INJECTION64_PATH.
 *
 * One recorder per process (struct rec_state, a single global): a trace
 * writer guarded by one mutex, a queue that cheap producers (the sampler,
 * the PyTorch events' drain) append to, lock-free rings that the PyTorch
 * bridge's calls append to, a background thread that samples device memory
 * and flushes every ~200 ms, and the CUPTI subscriber. Nothing here
 * may harm the host program: every failure becomes one warning line on
 * stderr (rec_warn) and the recorder goes quiet.
 *
 * The files use each other one way only (tools/include-graph checks it):
 * the state at the bottom; the device queries, then the sink (the writer
 * and the queue) above it; the producers (CUPTI's records and callbacks,
 * the PyTorch events, call sites, samples) above the sink; the flushing
 * thread (inject-flush.c), which drives them all, at the top; the entry
 * point (inject.c) starts it.
 */
#ifndef MEMTRACE_INJECT_PRIVATE_H
#define MEMTRACE_INJECT_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memtrace-format.h"
#include "memtrace-recorder.h"

/* Where call sites come from (MEMTRACE_STACKS). */
enum rec_stacks {
	REC_STACKS_NONE = 0,
	REC_STACKS_PYTHON,
	REC_STACKS_NATIVE,
};

/* Devices a process may see. */
#define REC_MAX_DEVICES 64

struct rec_state {
	/* The writer and everything it indexes; lock writer_lock to touch. */
	pthread_mutex_t writer_lock;
	struct mt_writer *writer;
	uint32_t process_row;
	uint32_t device_rows[REC_MAX_DEVICES]; /* CUDA ordinal -> row, 0 = not yet */

	/* Events waiting for the writer (appended by any thread). */
	pthread_mutex_t queue_lock;
	struct mt_event *queue;
	size_t queue_len, queue_cap;

	pid_t pid;           /* the process that opened the writer */
	atomic_bool enabled; /* false after a fatal recorder failure */
	atomic_bool warned;  /* the one warning line has been printed */
	atomic_bool stopping;
	bool root;        /* no recorded parent process */
	unsigned kernels; /* enum mt_record_kernels (MEMTRACE_KERNELS) */
	enum rec_stacks stacks;
	unsigned sample_ms;
	bool moment_readings; /* readings at failures and peaks (MEMTRACE_MOMENT_READINGS) */
	uint64_t dropped;     /* CUPTI records dropped, all buffers */
	uint64_t untimed;     /* kernel/memcpy/memset records without timestamps, skipped */
	pthread_t thread;
	bool thread_started;
};

extern struct rec_state rec_state;

/* ---- state (inject-state.c): the bottom, used by every other file ---- */

/* Prints "memtrace: MESSAGE; the program runs on without recording" once per
 * process and disables recording. Safe from any thread, not from a signal
 * handler. */
void rec_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Nanoseconds on CUPTI's clock (cuptiGetTimestamp's), read directly where
 * rec_clock_init found it to be CLOCK_REALTIME. */
uint64_t rec_now(void);

/* Finds out once, before any event is timed, whether CUPTI's clock is
 * CLOCK_REALTIME (what rec_now then reads). */
void rec_clock_init(void);

/* Whether this process records: recording enabled, and this is the process
 * that opened the writer (not a child forked from it). */
bool rec_mine(void);

/* ---- sink (inject-sink.c): the trace, the writer and the queue ---- */

/* Opens the trace named by MEMTRACE_OUTPUT ('%p' becomes the pid), adds this
 * process's row with its capture label and the run's meta. Returns 0 or
 * -errno (after warning). */
int rec_sink_open(const char *capture);
/* Sets this process's capture label (and meta "capture" when it is a root
 * process); takes writer_lock. */
void rec_sink_set_capture(const char *capture);
/* Appends an event whose device field holds a CUDA ordinal; called with
 * writer_lock held. Maps the ordinal to its device row. */
void rec_sink_append_locked(struct mt_event *ev);
/* Queues an event (device = CUDA ordinal) from any thread; cheap. */
void rec_sink_push(const struct mt_event *ev);
/* Interns a string; writer_lock held. 0 on failure. */
uint32_t rec_sink_intern_locked(const char *s);
/* Moves the queue into the writer and commits what the writer buffers;
 * writer_lock held. */
void rec_sink_commit_locked(void);
/* Adds this process's counts (dropped and untimed records) to the meta,
 * stops recording and closes the writer; writer_lock held. */
void rec_sink_close_locked(void);

/* ---- capture label (inject-capture.c) ---- */

/* The label this process starts with, into buf; at init, on the thread
 * that started CUDA, before the trace is opened (rec_sink_open writes it).
 * Reads the environment the label depends on, once. */
void rec_capture_open(char *buf, size_t len);
/* In a child forked without exec: makes the label's lock usable. */
void rec_capture_after_fork_child(void);
/* Decides the label again and writes it when it changed (the flushing
 * thread, at each flush and at exit); writer_lock not held. */
void rec_capture_update(void);

/* ---- lifecycle (inject-flush.c): the top, drives every producer ---- */

/* Starts the sampling/flushing thread and the exit, signal and fork hooks.
 * Each flush takes CUPTI's buffers, drains them, the PyTorch events and the
 * queue, and commits chunks. */
int rec_flush_start(void);

/* ---- CUPTI (inject-activity.c, inject-callbacks.c) ---- */

/* Enables the activity kinds for kernels_mode (enum mt_record_kernels:
 * kernel, memcpy and memset records with gpu only) and registers the
 * buffer callbacks. */
int rec_activity_start(unsigned kernels_mode);
/* Reads the buffers CUPTI has handed back into the writer and recycles
 * them; writer_lock held. Returns the records CUPTI dropped since the last
 * call. */
uint64_t rec_activity_drain_locked(void);
/* In a child forked without exec: forgets the parent's filled buffers and
 * makes the buffer lock usable. */
void rec_activity_after_fork_child(void);
/* Emits ranges still open (end unknown); writer_lock held. */
void rec_activity_close_ranges_locked(void);
/* Subscribes the allocation-API callbacks; returns 0, or the CUPTI error. */
int rec_callbacks_start(void);
/* The API that made the allocation with this correlation id, or 0. */
unsigned rec_callbacks_api_for(uint32_t correlation);
/* The call site taken when that call started (--stacks), or 0. */
uint32_t rec_callbacks_site_for(uint32_t correlation);

/* Whether an allocation or free call returned since the last call of this
 * function (which clears it). */
bool rec_callbacks_memory_changed(void);

/* ---- kernels from the launch callbacks (inject-launches.c) ---- */

/* Whether CUPTI's callback id of the driver domain is a kernel, cooperative
 * or graph launch. */
bool rec_launches_is_launch(uint32_t cbid);
/* The driver domain's launch callback ids into *ids; returns their number. */
size_t rec_launches_ids(const uint32_t **ids);
/* A driver launch call's callback (enter and exit; cb is
 * CUpti_CallbackData): at the exit of one not made inside another, queues
 * its record. Any thread, lock-free (a full ring drops the record). */
void rec_launches_on_callback(uint32_t cbid, const void *cb);
/* Turns the queued launches into kernel events; writer_lock held. */
void rec_launches_drain_locked(void);
/* In a child forked without exec: forgets the parent's queued launches. */
void rec_launches_after_fork_child(void);

/* ---- libcuda and NVML, loaded with dlopen (inject-device.c) ---- */

/* Adds the device row for a CUDA ordinal (name, uuid, total, versions);
 * writer_lock held. Returns the row id or 0. */
uint32_t rec_device_row_locked(unsigned ordinal);
/* Free device memory of the current context, or UINT64_MAX if unknown. */
uint64_t rec_device_free_bytes(void);
/* The CUDA ordinals with a device row, bit per ordinal < 64. */
uint64_t rec_device_seen(void);
/* The device memory in use on a device (NVML: all processes, and this
 * process's own; else cuMemGetInfo of the current context on ordinal 0,
 * process 0). Returns 0, or -1 when neither can tell. */
int rec_device_usage(unsigned ordinal, uint64_t *used, uint64_t *process);

/* ---- device-memory readings (inject-sample.c) ---- */

/* Queues a sample event for each device in use (rec_device_usage). */
void rec_sample_devices(void);
/* A reading of a device right after a failed allocation on it (at most
 * 100 per device and second); any thread. */
void rec_sample_failure(unsigned ordinal);
/* A reading of a device right after a segment allocation that raised the
 * reserved peak (at most one per device every 10 ms; one asked for sooner
 * is taken by rec_sample_pending); any thread, cheap when rate-limited. */
void rec_sample_peak(unsigned ordinal);
/* Takes the peak readings held back whose gap has passed (the flushing
 * thread, at each tick). */
void rec_sample_pending(void);
/* CUPTI's id for a stream handle (0 = the current context's default). */
uint32_t rec_device_stream_id(uint64_t stream);

/* ---- call sites (inject-stacks.c) ---- */

/* With --stacks native, the interned call site of the calling thread's
 * native stack; else 0 (Python sites come from the PyTorch bridge). Takes
 * writer_lock the first time a stack is seen, so the caller must not hold
 * it. */
uint32_t rec_stacks_site(void);

/* ---- PyTorch requests (inject-torch.c) ---- */

/* Processes the allocator events the bridge has queued (pairs frees, keeps
 * the totals) and queues the resulting events with rec_sink_push; called by
 * the flushing thread before it drains the queue, so a flush writes every
 * event whose memtrace_torch_event() call returned before it (the calls for
 * one device come one at a time, under its allocator lock). Any thread;
 * takes the torch lock, never writer_lock (it may be held). */
void rec_torch_drain(void);
/* Drains (rec_torch_drain), then emits frees still waiting for completion;
 * writer_lock not held. */
void rec_torch_close(void);
/* In a child forked without exec: forgets the parent's queued events (the
 * parent writes them) and makes the torch locks usable. */
void rec_torch_after_fork_child(void);

/* ---- lock-free ring of raw PyTorch events (inject-ring.c) ---- */

/* A kernel launch as the launching thread saw it (--kernels launch). */
struct rec_launch {
	const char *symbol; /* CUPTI's symbolName of the call; NULL for a graph */
	uint32_t correlation;
	uint32_t stream; /* CUPTI stream id */
	uint32_t device; /* CUDA ordinal */
};

/* One record as the producing thread saw it, copied verbatim by the ring:
 * an allocator event of the PyTorch bridge, or a kernel launch. */
struct rec_ring_record {
	uint64_t ts;
	union {
		struct {
			uint64_t address;
			uint64_t bytes;
			uint32_t stream; /* CUPTI stream id */
			uint32_t site;
			int action;
		};
		struct rec_launch launch;
	};
};

/* A bounded queue of records: any number of producers without a lock, one
 * consumer at a time (the callers' lock). */
struct rec_ring;

/* A new empty ring of CAPACITY records (a power of two, at least 2); NULL
 * when CAPACITY is not one or memory runs out. */
struct rec_ring *rec_ring_new(size_t capacity);
/* Frees a ring no thread uses any more; NULL is accepted. */
void rec_ring_free(struct rec_ring *r);
/* The ring in *slot, made with capacity records on first use by whichever
 * thread comes first (the others' copies are freed); NULL when out of
 * memory. */
struct rec_ring *rec_ring_once(_Atomic(struct rec_ring *) *slot, size_t capacity);
/* Appends a copy of *REC; any thread, lock-free (never waits for another
 * thread). Returns 0, or -EAGAIN when the ring is full (nothing appended). */
int rec_ring_push(struct rec_ring *r, const struct rec_ring_record *rec);
/* Appends a copy of *REC; while the ring is full, the caller drains it itself
 * (rec_ring_drain with FN and ARG under LOCK, the lock every consumer holds)
 * and tries again, so nothing is lost. The caller must not hold LOCK, and FN
 * must not push into R. */
void rec_ring_push_wait(struct rec_ring *r, const struct rec_ring_record *rec,
                        pthread_mutex_t *lock,
                        void (*fn)(const struct rec_ring_record *rec, void *arg), void *arg);
/* Calls FN(record, ARG) for the records pushed before this call, oldest
 * (first reserved) first, each slot given back before FN sees its copy;
 * stops early at a slot a producer has reserved and not yet written (the
 * rest waits for the next call). One consumer at a time: every caller holds
 * the same lock. Returns the number of records read. */
size_t rec_ring_drain(struct rec_ring *r, void (*fn)(const struct rec_ring_record *rec, void *arg),
                      void *arg);

#endif
