/* predict-private.h — the predict module's insides: one loaded input
 * (input.c), the alignment of two request sequences (align.c), the size fit
 * of one request (fit.c), the address pairing (pairs.c) and the predictor
 * they make (model.c), synthesized and replayed by synth.c and run.c. */
#ifndef MEMTRACE_PREDICT_PRIVATE_H
#define MEMTRACE_PREDICT_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memtrace-common.h"
#include "memtrace-predict.h"

#define PR_NONE UINT32_MAX

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

/* Whether request i of the first sequence and request j of the second can
 * be one request of the program. */
typedef bool (*pr_match_fn)(void *ctx, size_t i, size_t j);

/* Aligns two sequences of na and nb requests: the longest common
 * subsequence under `match` (Myers' algorithm). match_a[i] is the index in
 * the second sequence matched to i (PR_NONE if none), match_b likewise.
 * Returns 0, -EDOM when more than max_d requests differ (the alignment is
 * not tried further), -E2BIG or -ENOMEM. Memory: about 2 max_d^2 bytes at
 * worst. */
int pr_align(size_t na, size_t nb, pr_match_fn match, void *ctx, size_t max_d, uint32_t *match_a,
             uint32_t *match_b);

/* ---- links.c --------------------------------------------------------------- */

/* Aligns neighbouring inputs a and b (a at the smaller N) into ma and mb
 * (as pr_align). below (with a_to_below, a's matches there) and above
 * (with b_to_above) are the inputs next to them already aligned, or NULL:
 * their sizes predict a's and b's at each other's N. Returns 0, -EDOM when
 * more than max_d requests differ, or -ENOMEM. */
int pr_link(const struct pr_input *a, const struct pr_input *b, const struct pr_input *below,
            const uint32_t *a_to_below, const struct pr_input *above, const uint32_t *b_to_above,
            size_t max_d, uint32_t *ma, uint32_t *mb);

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

/* ---- capacity.c ------------------------------------------------------------- */

/* Fills the summary's device total, context, outside and default capacity
 * from the reference's anatomy at its peak. */
int pr_capacity(struct mt_predictor *p, char *err, size_t errlen);

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
