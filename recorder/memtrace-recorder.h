/* memtrace-recorder.h — recording a CUDA program (`memtrace record`).
 *
 * The recorder has two halves. libmemtrace-inject.so is loaded by CUDA into
 * the recorded program (CUDA_INJECTION64_PATH) and writes its CUPTI records,
 * failed allocations, device samples and, for PyTorch, the caching
 * allocator's own requests (recorder/torch-bridge.cpp) into the trace. This
 * header is the other half, the launcher: it finds the injection library and
 * CUPTI, builds the environment that makes a program record itself, runs the
 * program with its signals forwarded, and summarises the trace afterwards.
 * Nothing here prints or exits; errors are negative errno values with a
 * one-line message in the caller's buffer.
 *
 * Environment understood by the injection library (set by the launcher):
 *   MEMTRACE_OUTPUT     trace path; '%p' becomes the process id
 *   MEMTRACE_CAPTURE    "requests" or "as-is" (--capture); each process
 *                       decides its own capture label from it
 *   MEMTRACE_CAPTURE_ENV  the variables the launcher set, for meta
 *   MEMTRACE_KERNELS    how kernels are recorded (--kernels): "gpu",
 *                       "launch" or "none" (mt_record_kernels_parse);
 *                       written to the trace's meta "kernels"
 *   MEMTRACE_SAMPLE_MS  device-memory sampling period, 0 = none
 *   MEMTRACE_MOMENT_READINGS  "0" = no device-memory readings at failed
 *                       allocations and reserved-peak raises (a bench knob)
 *   MEMTRACE_STACKS     call sites: "python", "native" or "none"
 *   MEMTRACE_TORCH_BRIDGE  path of torch-bridge.cpp (requests capture)
 *   PYTHONPATH          gains recorder/python (requests capture): every
 *                       Python descendant runs its sitecustomize.py
 * and by the Python startup hook in a process: MEMTRACE_PYTHON_HOOK, the
 * pid of the process it ran in.
 */
#ifndef MEMTRACE_RECORDER_H
#define MEMTRACE_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memtrace-format.h"

/* Pool id of the pool events that carry the PyTorch caching allocator's
 * reserved bytes (reserved_bytes) and allocated bytes (used_bytes) after
 * each segment alloc/free/map/unmap ("torch" in ASCII). */
#define MT_TORCH_POOL 0x746f726368ull

enum mt_capture {
	MT_CAPTURE_REQUESTS = 0, /* framework requests through their hooks */
	MT_CAPTURE_AS_IS = 1,    /* only what reaches the driver */
};

enum mt_record_stacks {
	MT_RECORD_STACKS_NONE = 0, /* no call sites: the default */
	MT_RECORD_STACKS_PYTHON,
	MT_RECORD_STACKS_NATIVE,
};

/* How kernels come onto the timeline (--kernels). */
enum mt_record_kernels {
	/* CUPTI's kernel, memcpy and memset activity records: GPU start and
	 * end of each */
	MT_RECORD_KERNELS_GPU = 0,
	/* the default: CUPTI callbacks on the launch APIs: each kernel at the
	 * CPU time its launch call returned (name, stream, correlation id), no
	 * GPU times; memcpy and memset activity records as with gpu */
	MT_RECORD_KERNELS_LAUNCH,
	MT_RECORD_KERNELS_NONE, /* no kernel, memcpy or memset records */
};

/* The mode a word names ("gpu", "launch", "none") into *mode; 0, or
 * -EINVAL for any other word. */
int mt_record_kernels_parse(const char *word, unsigned *mode);
/* The word of a mode ("gpu", "launch", "none"); "gpu" for an unknown one. */
const char *mt_record_kernels_name(unsigned mode);

struct mt_record_options {
	const char *output; /* trace path (may hold '%p'); NULL = memtrace.db */
	unsigned capture;   /* enum mt_capture */
	unsigned kernels;   /* enum mt_record_kernels */
	unsigned sample_ms; /* sampling period; 0 = no samples */
	unsigned stacks;    /* enum mt_record_stacks */
	const char *self;   /* path of the running memtrace binary (argv[0] or
	                       /proc/self/exe) to find the injection library */
};

/* Finds libmemtrace-inject.so for the memtrace binary at `self`: beside it
 * in the build tree (../recorder/), installed (../lib/memtrace/,
 * ../lib64/memtrace/, ../lib/<triplet>/memtrace/), or MEMTRACE_INJECT_PATH.
 * Writes its absolute path into buf. Returns 0 or -ENOENT with a message. */
int mt_record_find_inject(const char *self, char *buf, size_t len, char *err, size_t errlen);

/* Finds the folder holding libcupti.so: MEMTRACE_CUPTI_PATH (file or
 * folder), CUDA_HOME / CUDA_PATH, the toolkit the build used, /usr/local/cuda,
 * /usr/lib/x86_64-linux-gnu and the folders of LD_LIBRARY_PATH. Writes the
 * full path of the library into buf. -ENOENT with a message naming
 * MEMTRACE_CUPTI_PATH when not found. */
int mt_record_find_cupti(char *buf, size_t len, char *err, size_t errlen);

/* A prepared run: the environment to start PROG with. */
struct mt_record_run;

/* Prepares a run: resolves the output path (an existing trace is kept as
 * FILE.N with its -wal/-shm side files; anything else there is refused,
 * -EEXIST), finds the libraries and
 * builds the environment from `environ`. argv[0] names the program (looked up
 * in PATH by mt_record_exec). Returns 0 or a negative errno with a message. */
int mt_record_prepare(const struct mt_record_options *opts, char *const *argv,
                      struct mt_record_run **run, char *err, size_t errlen);

/* The absolute trace path the run writes ('%p' unexpanded). Owned by run. */
const char *mt_record_output(const struct mt_record_run *run);

/* Starts the program with the prepared environment, forwards SIGINT,
 * SIGTERM, SIGHUP and SIGQUIT to it, waits, and stores its exit status the
 * shell's way in *status (code, or 128 + signal when killed). Returns 0, or
 * a negative errno when the program could not be started (-ENOENT not found,
 * -EACCES not executable), with a message. */
int mt_record_exec(struct mt_record_run *run, int *status, char *err, size_t errlen);

/* The traces the run wrote, after mt_record_exec: its output, or with '%p'
 * in the output's file name, each file of that pattern (digits in place of
 * '%p') modified since the program started, in name order. Sets *paths to
 * an array owned by run (valid until the next call or mt_record_run_free)
 * and returns its length; 0 when nothing was written. */
size_t mt_record_written(struct mt_record_run *run, const char *const **paths);

/* Accepts NULL. */
void mt_record_run_free(struct mt_record_run *run);

/* Sets the trace's meta "capture" from its processes' capture labels once
 * every recording process has ended: the label shared by all processes
 * that allocated something (all of them, when none did), else "mixed (see
 * the processes' capture)". A trace without labels (recorded before they
 * existed) is left as it is. Returns 0 or a negative errno with a
 * message. */
int mt_record_settle_capture(const char *path, char *err, size_t errlen);

/* A process of a trace whose label says its requests are not in it
 * ("segments only (WHY)"). */
struct mt_record_process {
	int64_t pid;
	char command_line[256]; /* cut to fit */
	char capture[512];
};

/* What `memtrace record` prints after the run, read back from the trace. */
struct mt_record_summary {
	uint64_t events[MT_EVENT_KIND_MAX + 1]; /* by kind */
	uint64_t peak_live;                     /* request layer if present, else driver */
	unsigned peak_layer;                    /* enum mt_layer of peak_live */
	uint64_t file_bytes;
	uint64_t dropped; /* meta dropped_records, summed */
	size_t processes;
	char capture[512]; /* meta capture */
	/* the processes recorded as segments only that allocated something,
	 * in row order (owned; mt_record_summary_release) */
	struct mt_record_process *segments_only;
	size_t n_segments_only;
};

/* Reads the summary of a trace. Returns 0 or a negative errno (message);
 * on success, release it with mt_record_summary_release. */
int mt_record_summarize(const char *path, struct mt_record_summary *s, char *err, size_t errlen);

/* Frees what a summary owns; accepts a zeroed summary. */
void mt_record_summary_release(struct mt_record_summary *s);

#endif
