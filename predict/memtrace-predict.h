/* memtrace-predict.h — the memory of a run not yet made, from traces of
 * the same program at small values of one size parameter N (batch size,
 * sequence length, tokens), and the largest N that fits a card.
 *
 * The inputs' request streams are aligned request by request (call site,
 * memory kind, stream, the innermost NVTX range open at the allocation,
 * order), with a sequence alignment that tolerates a few requests present in
 * some inputs only (workspaces). Each aligned request's size is fitted as a
 * function of N: constant, affine, or, with three inputs or more, quadratic
 * (attention scores over a sequence) when that fits every input exactly;
 * sizes that follow no such function are fitted by least squares and
 * counted. The stream at a target N is the largest input's stream, in its
 * recorded order and lifetimes, with every request at its fitted size; it is
 * replayed through allocator policies (sim backend) for peak live, peak
 * reserved, driver calls and OOMs. Inputs that cannot be aligned (another
 * code path, data-dependent control flow) or whose sizes do not follow N
 * are refused, with a message naming the first place they diverge; nothing
 * is guessed. docs/PREDICT.md describes the method.
 *
 * Errors are negative errno values with a one-line message in the caller's
 * buffer: -EINVAL bad arguments, -ENOENT an input without allocations,
 * -EDOM inputs that cannot be predicted from (the message says why and
 * where), -ENOMEM, or what the reader or the replay returned. Nothing here
 * prints or exits. Uses format, replay and analyze.
 */
#ifndef MEMTRACE_PREDICT_H
#define MEMTRACE_PREDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memtrace-format.h"
#include "memtrace-replay.h"

/* One trace of the program, recorded (or imported) at size N. */
struct mt_predict_input {
	struct mt_reader *reader; /* open; needed only while building */
	const char *name;         /* for messages (the trace's path); copied */
	uint64_t size;            /* the size parameter N of this run, >= 1 */
	uint32_t device;          /* device row; 0 = the first with allocations */
};

/* The aligned and fitted inputs, from which any N is synthesized. The
 * functions that synthesize reuse a buffer of the predictor: one thread at a
 * time. */
struct mt_predictor;

/* Loads, aligns and fits 2 to 255 inputs with distinct sizes. An input
 * most of whose sizes fit no function with the larger inputs' is left out
 * (with the smaller ones), as long as two inputs remain. Returns 0, or -EDOM
 * when the inputs cannot be predicted from: fewer than two share the
 * largest input's code path, requests missing from a neighbouring input
 * hold more than 5% of an input's peak (another path, a data-dependent
 * branch), or sizes that break their fit hold more than 2% of the largest
 * input's peak (sizes that follow the data); err then names the first place
 * they diverge, with call site, NVTX range and size in each input. *out is
 * set only on success. */
int mt_predictor_build(struct mt_predictor **out, const struct mt_predict_input *inputs, size_t n,
                       char *err, size_t errlen);

/* Accepts NULL. */
void mt_predictor_free(struct mt_predictor *p);

/* What one input contributed. */
struct mt_predict_input_info {
	const char *name;
	uint64_t size;
	uint64_t requests;  /* allocations in its stream */
	uint64_t aligned;   /* of them, aligned with a request of every input used */
	bool left_out;      /* its stream runs another code path than the larger inputs' */
	uint64_t peak_live; /* its recorded peak of requested bytes live (frees counted
	                       when requested, as the trace format counts them) */
};

/* How the fit held, over the largest input's requests. */
struct mt_predict_fit_stats {
	uint64_t constant, affine, quadratic; /* the function each request's size follows */
	uint64_t partial;      /* not seen in every input used: fitted on those that have it */
	uint64_t inferred;     /* seen in no other input: the fit of most requests of its size */
	uint64_t inconsistent; /* a used input's size breaks the fit: fitted on the others */
	double inconsistent_peak_share; /* their bytes live at the largest input's peak / peak */
};

struct mt_predict_summary {
	size_t inputs;
	size_t reference;        /* the input whose order and lifetimes are synthesized */
	double aligned_fraction; /* requests aligned across every input / all requests */
	struct mt_predict_fit_stats fit;
	const char *policy; /* the allocator the runs used: "caching", or "expandable" when
	                       the reference's segments were mapped (expandable segments) */
	/* the default capacity for the allocator: the reference's device total
	 * less the CUDA context and libraries, the driver allocations that held
	 * no request and the memory outside the process, from its anatomy at
	 * the peak (mt_capacity_recorded; sampled = false: no sample, capacity
	 * = the device total) */
	uint64_t device_total;
	uint64_t context_bytes;
	uint64_t library_bytes;
	uint64_t outside_bytes;
	bool capacity_sampled;
	uint64_t capacity;
};

void mt_predictor_summary(const struct mt_predictor *p, struct mt_predict_summary *s);
/* Input i (0 <= i < summary.inputs), in the order given. */
const struct mt_predict_input_info *mt_predictor_input(const struct mt_predictor *p, size_t i);

/* The request stream at size N: the reference's stream with every request
 * at its fitted size (a request whose size falls to 0 or below is left
 * out). *out is freed with mt_request_stream_free. */
int mt_predict_stream(struct mt_predictor *p, uint64_t size, struct mt_request_stream **out,
                      char *err, size_t errlen);

/* Predicts size N: *peak_live (requested bytes live at once, a free counted
 * when it is requested, as PyTorch's requested_bytes.all.peak counts it),
 * and one sim replay per policy spec (as
 * mt_policy_create takes it) at `capacity` bytes (0 = unlimited) into
 * results[0..npolicies) (release each with mt_replay_result_release; on
 * failure none is left to release). */
int mt_predict_at(struct mt_predictor *p, uint64_t size, const char *const *policies,
                  size_t npolicies, uint64_t capacity, uint64_t *peak_live,
                  struct mt_replay_result *results, char *err, size_t errlen);

/* The largest N <= limit whose predicted run has no OOM under `policy` at
 * `capacity` bytes (> 0): above the smallest N whose live bytes alone
 * exceed the capacity nothing fits; below it the allocator's cache may
 * fail some N and not a larger one, so the N below that bound are replayed
 * from the top down (64 at most, then a bisection further down). *size = 0
 * when even N = 1 does not fit, limit when limit still fits. */
int mt_predict_max_fit(struct mt_predictor *p, const char *policy, uint64_t capacity,
                       uint64_t limit, uint64_t *size, char *err, size_t errlen);

/* The naive extrapolation shown beside a prediction: the least-squares line
 * through the points (sizes[i], values[i]) evaluated at `at`, rounded and
 * floored at 0 (one point: its value). */
uint64_t mt_predict_naive(const uint64_t *sizes, const uint64_t *values, size_t n, uint64_t at);

/* Peak reserved of each input's recorded stream replayed (sim, no
 * capacity) through `policy`, into reserved[0..inputs): the recorded peaks
 * that mt_predict_naive extrapolates. */
int mt_predictor_input_reserved(struct mt_predictor *p, const char *policy, uint64_t *reserved,
                                char *err, size_t errlen);

#endif /* MEMTRACE_PREDICT_H */
