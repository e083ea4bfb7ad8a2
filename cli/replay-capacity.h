/* replay-capacity.h — the capacity memtrace replay runs against, and where
 * it comes from (README.md's glossary, "capacity"): --limit SIZE, else the
 * recorded card (analyze: mt_capacity_recorded), else none (--limit none,
 * or a trace that does not record its device's memory: sim is unlimited,
 * cuda has the GPU's own memory). Every output says it: the text, --json
 * and the saved row (cli_capacity_json), and the pictures read it back. */
#ifndef MEMTRACE_CLI_REPLAY_CAPACITY_H
#define MEMTRACE_CLI_REPLAY_CAPACITY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "memtrace-analyze.h"

enum cli_capacity_source {
	CLI_CAPACITY_LIMIT = 0,    /* --limit SIZE */
	CLI_CAPACITY_RECORDED = 1, /* the recorded card */
	CLI_CAPACITY_NONE = 2,     /* no capacity: --limit none, or not recorded */
};

struct cli_capacity {
	uint64_t bytes; /* for mt_replay_options.capacity: 0 with CLI_CAPACITY_NONE */
	enum cli_capacity_source source;
	struct mt_capacity recorded; /* CLI_CAPACITY_RECORDED, else zeroed */
	uint64_t t0;                 /* the device's start (report's "+TIME") */
	char why[512];               /* where it comes from, in words */
};

/* Picks the capacity of device (a row id) of r: limit when limit_arg (the
 * --limit text; limit 0 = none) is given, else the recorded one. cuda: the replay runs on the
 * real GPU (its memory bounds a replay without capacity). Returns 0, or a
 * negative errno with a message in err (the trace could not be read). */
int cli_capacity_choose(struct mt_reader *r, uint32_t device, const char *limit_arg, uint64_t limit,
                        bool cuda, struct cli_capacity *c, char *err, size_t errlen);

/* cli_capacity_choose on a reader of its own over the trace at path, on a
 * thread, while the caller reads the trace too (loads the stream): on two
 * cores the two passes take the time of one. cli_capacity_start returns 0
 * or -1 (no thread: nothing started); cli_capacity_finish waits for the
 * thread and returns what cli_capacity_choose returned. */
struct cli_capacity_job {
	const char *path, *limit_arg;
	uint32_t device;
	uint64_t limit;
	bool cuda;
	struct cli_capacity c;
	char err[256];
	int rc;
	pthread_t thread;
};
int cli_capacity_start(struct cli_capacity_job *j, const char *path, uint32_t device,
                       const char *limit_arg, uint64_t limit, bool cuda);
int cli_capacity_finish(struct cli_capacity_job *j, struct cli_capacity *c, char *err,
                        size_t errlen);

/* {"bytes", "source": "limit"|"recorded"|"none", "description",
 * "device_total", "context_bytes", "outside_bytes" (without the driver's
 * reserve), "library_bytes" (driver allocations that held no request),
 * "driver_reserved_bytes" (null: not recorded), "reading_at_ns" (since the
 * device's start; null without a reading)}. */
json_t *cli_capacity_json(const struct cli_capacity *c);

#endif
