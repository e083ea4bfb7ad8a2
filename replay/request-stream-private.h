/* request-stream-private.h — the request stream as the replay driver reads
 * it: steps (one per event of the replay order) handed out a chunk at a
 * time by a cursor, never the whole trace at once.
 *
 * A stream is either loaded from a trace (the reader stays open; each
 * cursor makes one pass over the trace's alloc and free events and orders
 * them as it goes, so what is resident is what is live plus one chunk) or
 * built from an event array (its steps kept in memory, for tests, benches
 * and importers). Loading makes one pass already, for the summary: how many
 * events and requests, the first and last step times, the lower bound, the
 * most slots live at once.
 *
 * A live request occupies a slot, a small number reused once its free has
 * been replayed (a delayed free holds its slot until its reuse time), so a
 * replay keeps its per-request state in a table as long as the most
 * requests live at once, not as long as the trace.
 */
#ifndef MEMTRACE_REQUEST_STREAM_PRIVATE_H
#define MEMTRACE_REQUEST_STREAM_PRIVATE_H

#include "memtrace-replay.h"

/* One event of the replay order. */
struct rp_step {
	uint64_t ts;     /* when it applies (a free: at its reuse time) */
	uint64_t bytes;  /* the request's bytes */
	uint64_t stream; /* the request's stream id */
	uint32_t slot;   /* the request's slot */
	uint32_t code;   /* (request number in alloc order << 1) | is_free */
};

#define RP_STEP_IS_FREE(code) ((code)&1u)
#define RP_STEP_REQUEST(code) ((code) >> 1)

struct mt_request_stream {
	/* summary, from the pass that loaded or built it */
	uint32_t device;
	uint64_t nevents;
	uint64_t requests;
	uint64_t t0, t1; /* times of the first and last step */
	uint64_t peak_live;
	uint32_t slots; /* slots used: the most requests live at once, delayed frees included */
	uint64_t *iteration_ts; /* starts of the iterations, ascending */
	size_t iterations;
	/* a request layer's driver allocations (device memory), in recorded
	 * order: for the policies' place_segments */
	struct mt_recorded_segment *segments;
	size_t nsegments, segments_cap;
	/* the steps: in memory (built from events), or read from a trace */
	struct rp_step *steps;
	struct mt_reader *reader;
	unsigned layer;
	/* every request's lifetime, by request number, when loaded with them
	 * (mt_request_stream_load_with_lifetimes); else NULL */
	struct mt_plan_request *lifetimes;
};

/* A pass over a stream's steps, in replay order. */
struct rp_cursor;

/* Opens a pass. A stream loaded from a trace has one pass open at a time
 * (its reader is not shared between threads). Returns 0 or a negative
 * errno (message in err). */
int rp_cursor_open(const struct mt_request_stream *s, struct rp_cursor **out, char *err,
                   size_t errlen);
/* The next steps: *steps points at *n of them (0 at the end), valid until
 * the next call. Returns 0 or a negative errno (message in err). */
int rp_cursor_next(struct rp_cursor *c, const struct rp_step **steps, size_t *n, char *err,
                   size_t errlen);
/* Accepts NULL. */
void rp_cursor_close(struct rp_cursor *c);

/* Steps a cursor hands out at a time (about; a chunk ends after the event
 * that fills it). */
#define RP_CHUNK_STEPS 16384

/* Every lifetime of the stream as positions in replay order, indexed by
 * request number (one pass; malloc'd, s->requests of them; the driver
 * takes s->lifetimes instead when the load kept them). opt (NULL:
 * none) is the replay's: the pass stops with -EINTR once *opt->interrupted
 * is set, and calls opt->progress with 0 events done as it goes (nothing
 * is replayed yet). Returns 0 or a negative errno (message in err). */
int rp_request_stream_lifetimes(const struct mt_request_stream *s,
                                const struct mt_replay_options *opt, struct mt_plan_request **out,
                                char *err, size_t errlen);

#endif /* MEMTRACE_REQUEST_STREAM_PRIVATE_H */
