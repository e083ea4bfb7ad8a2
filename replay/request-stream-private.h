/* request-stream-private.h — the request stream's layout, read by the
 * replay driver. Column arrays per request plus one 32-bit word per event:
 * (request index << 1) | is_free, in replay order. */
#ifndef MEMTRACE_REQUEST_STREAM_PRIVATE_H
#define MEMTRACE_REQUEST_STREAM_PRIVATE_H

#include "memtrace-replay.h"

#define RP_EVENT_IS_FREE(code) ((code)&1u)
#define RP_EVENT_REQUEST(code) ((code) >> 1)

struct mt_request_stream {
	uint32_t device;
	size_t requests;
	uint64_t *bytes;    /* per request */
	uint64_t *alloc_ts; /* per request */
	uint64_t *free_ts;  /* per request: time the free is applied; UINT64_MAX never */
	uint32_t *stream;   /* per request: index into streams */
	uint64_t *streams;  /* distinct recorded stream ids */
	size_t nstreams;
	uint32_t *events; /* replay order */
	size_t nevents;
	uint64_t peak_live;
	uint64_t peak_ts;
	uint64_t *iteration_ts; /* starts of the iterations, ascending */
	size_t iterations;
};

/* Hands an offline policy every lifetime of the stream as positions in
 * replay order (its plan()); returns what plan returns, or -ENOMEM. */
int rp_request_stream_plan(const struct mt_request_stream *s, struct mt_policy *p);

#endif /* MEMTRACE_REQUEST_STREAM_PRIVATE_H */
