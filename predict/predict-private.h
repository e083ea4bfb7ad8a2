/* predict-private.h — the predict module's insides: one loaded input
 * (input.c), the alignment of two request sequences (align.c), the size fit
 * of one request (fit.c), the address pairing (pairs.c) and the predictor
 * they make (model.c), synthesized and replayed by synth.c and run.c. */
#ifndef MEMTRACE_PREDICT_PRIVATE_H
#define MEMTRACE_PREDICT_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memtrace-predict.h"

#define PR_NONE UINT32_MAX

/* Writes a one-line message into err and returns rc. */
int pr_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* ---- pairs.c: (process, address) -> request ------------------------------- */

struct pr_pairs {
	uint64_t *keys; /* 0 = empty slot */
	uint32_t *values;
	size_t mask, count;
};

/* Zeroed = empty. The key of an allocation's address in a process. */
uint64_t pr_pairs_key(uint32_t process, uint64_t address);
/* Puts key -> value; *prev = the value it replaces, or PR_NONE. */
int pr_pairs_put(struct pr_pairs *m, uint64_t key, uint32_t value, uint32_t *prev);
/* Removes key; its value, or PR_NONE when absent. */
uint32_t pr_pairs_take(struct pr_pairs *m, uint64_t key);
void pr_pairs_release(struct pr_pairs *m);

/* ---- input.c: one trace's request stream ----------------------------------- */

/* An event of the stream, as synthesis copies it. Requests are paired
 * here, so synthesis gives each its own address: an alloc at an address
 * still live ends the earlier request there with a free of its own. */
struct pr_event {
	uint64_t ts;
	uint64_t reuse_delay; /* frees */
	uint32_t request;     /* the request allocated or freed */
	bool is_free;
};

struct pr_input {
	struct mt_predict_input_info info;
	char *name;
	struct mt_reader *reader; /* while building only */
	uint32_t device;
	unsigned layer;
	/* requests, in allocation order */
	uint64_t *key; /* alignment token: call site, memory kind, stream, NVTX range */
	uint64_t *bytes;
	uint64_t *stream;       /* recorded stream id */
	uint32_t *site;         /* call-site string id, 0 none */
	uint32_t *range;        /* innermost NVTX range name id, 0 none */
	uint32_t *stream_index; /* streams numbered by first use */
	size_t nreq;
	/* alloc and free events in order; frees of requests never seen are left out */
	struct pr_event *ev;
	size_t nev;
	uint64_t peak_ts;                   /* when its live bytes first reach info.peak_live */
	struct mt_request_stream *recorded; /* built on first use */
	bool vmm; /* driver-layer memory mapped with cuMemCreate (expandable segments) */
};

/* Reads the request layer (else the driver layer) of in->device into pi.
 * -ENOENT when it holds no allocation. */
int pr_input_load(struct pr_input *pi, const struct mt_predict_input *in, char *err, size_t errlen);
void pr_input_release(struct pr_input *pi);
/* "site (frame), range NAME, stream S, SIZE" of request r, into buf. */
char *pr_input_describe(const struct pr_input *pi, size_t r, char *buf, size_t len);

/* ---- synth.c --------------------------------------------------------------- */

/* The request stream of pi's events with request r at bytes[r] (0: left
 * out with its free), through ev, room for pi->nev events. */
int pr_stream_build(const struct pr_input *pi, const uint64_t *bytes, struct mt_event *ev,
                    struct mt_request_stream **out, char *err, size_t errlen);
/* Walks pi's events with request r at bytes[r], frees counted when
 * requested (as PyTorch's requested_bytes.all.peak and the trace format's
 * peak count them): the peak of live bytes, the ts it is first reached and,
 * when marked is given, the bytes of marked requests live then. */
uint64_t pr_peak_live(const struct pr_input *pi, const uint64_t *bytes, const bool *marked,
                      uint64_t *ts, uint64_t *marked_at_peak);
/* Makes p->scratch hold at least n events. */
int pr_scratch(struct mt_predictor *p, size_t n, char *err, size_t errlen);

/* ---- align.c --------------------------------------------------------------- */

/* Aligns sequence b to sequence a: runs of equal tokens are matched in
 * order; at a mismatch the smallest skip (i, j), with i and j at most
 * max_gap, after which the next `window` tokens agree (or both sequences
 * end) is taken, the skipped tokens staying unmatched. match_a[i] is the
 * index in b matched to a[i] (PR_NONE if none), match_b likewise. Returns 0,
 * or -EDOM when no skip resynchronises the sequences: *stop_a and *stop_b
 * are then the positions where they diverge. */
int pr_align(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, size_t max_gap,
             size_t window, uint32_t *match_a, uint32_t *match_b, size_t *stop_a, size_t *stop_b);

/* ---- fit.c ------------------------------------------------------------------ */

enum pr_fit_kind {
	PR_FIT_CONSTANT = 0,
	PR_FIT_AFFINE = 1,
	PR_FIT_QUADRATIC = 2,
	PR_FIT_APPROXIMATE = 3,
};

/* size(N) = c0 + c1 N + c2 N^2 */
struct pr_fit {
	double c0, c1, c2;
	uint8_t kind; /* enum pr_fit_kind */
};

/* Fits k >= 1 points (sizes x[i] distinct, bytes y[i]): constant when
 * equal; affine when every point lies on one line; with k >= 3 quadratic
 * when one parabola with integer coefficients, a positive square term that
 * holds at least 1/16 of the largest point's size, passes through every
 * point; else the least-squares line (approximate, *residual = the largest
 * relative error on the points, else 0). */
void pr_fit_points(const uint64_t *x, const uint64_t *y, size_t k, struct pr_fit *fit,
                   double *residual);
/* The least-squares line through k points (one point: flat through it;
 * none: 0). */
void pr_least_squares(const uint64_t *x, const uint64_t *y, size_t k, double *intercept,
                      double *slope);
/* The fitted size at n, rounded; 0 when it falls to 0 or below. */
uint64_t pr_fit_eval(const struct pr_fit *fit, uint64_t n);

/* ---- model.c ----------------------------------------------------------------- */

struct mt_predictor {
	struct pr_input *in;
	size_t n;
	size_t ref;         /* the input with the largest size */
	struct pr_fit *fit; /* per request of the reference */
	uint64_t *bytes;    /* per request of the reference: the sizes of the last synthesis */
	struct mt_predict_summary summary;
	/* the events a synthesis hands the request stream, kept from one to the
	 * next (fresh memory of that size costs more than the synthesis) */
	struct mt_event *scratch;
	size_t scratch_len;
};

#endif /* MEMTRACE_PREDICT_PRIVATE_H */
