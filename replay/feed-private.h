/* feed-private.h — one pass over a trace's request stream shared by several
 * replays running at once: a thread of its own reads the trace and orders
 * its events (a cursor) into a ring of chunks; each replay (a consumer,
 * numbered 0..n-1) reads the chunks in order. The ring holds RP_FEED_CHUNKS
 * chunks, so the reader runs at most that far ahead of the slowest replay:
 * memory stays that of a few chunks however long the trace. */
#ifndef MEMTRACE_FEED_PRIVATE_H
#define MEMTRACE_FEED_PRIVATE_H

#include <stddef.h>

#include "request-stream-private.h"

#define RP_FEED_CHUNKS 8

struct rp_feed;

/* Starts reading s for n consumers. interrupted (may be NULL) stops the
 * reading when it becomes non-zero (consumers then get -EINTR). Returns 0 or
 * a negative errno (message in err). */
int rp_feed_start(struct rp_feed **out, const struct mt_request_stream *s, unsigned n,
                  volatile int *interrupted, char *err, size_t errlen);
/* Consumer c's next chunk, once the reader has it: *steps points at *n
 * steps (0: the end), valid until c's next call, which gives the chunk back.
 * Returns 0, or the reader's negative errno with its message in err. */
int rp_feed_next(struct rp_feed *f, unsigned c, const struct rp_step **steps, size_t *n, char *err,
                 size_t errlen);
/* Consumer c reads no more (done or stopped early): it holds nothing back. */
void rp_feed_leave(struct rp_feed *f, unsigned c);
/* Stops the reader (every consumer having left), frees the feed and returns
 * the reader thread's CPU seconds. Accepts NULL (0). */
double rp_feed_stop(struct rp_feed *f);

/* CPU seconds the calling thread has run. */
double rp_thread_seconds(void);

#endif /* MEMTRACE_FEED_PRIVATE_H */
