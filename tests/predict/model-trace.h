/* model-trace.h — synthetic traces of a "model" whose memory follows a size
 * parameter N exactly as written here, for predict's tests and benchmark:
 * the ground truth at any N is the trace written at that N.
 *
 * The model: `layers` weights (and gradients, Adam states) that never
 * vary; per training step, in the NVTX ranges forward, backward and
 * optimizer, per layer an input activation of act x N bytes kept for
 * backward, a temporary of act x N / 2 freed at once and, when quad > 0,
 * attention scores of quad x N^2 bytes (kept for backward), each from its
 * own call site (Python frames, as `record --stacks python` writes them);
 * backward frees them in reverse with gradients of the same sizes. Options
 * add what a real run has: a workspace allocated only at one N (tolerated
 * by the alignment), a data-dependent branch taken only at one N (a block
 * of extra activations kept for backward: refused) and a request whose size
 * depends on data, not on N (refused), and a size threshold below which
 * the run takes another code path (that input left out). Samples of the device memory in use give
 * the anatomy a CUDA context of `context` bytes and `outside` bytes outside the process, beside the
 * allocator's one driver-layer segment.
 */
#ifndef MEMTRACE_TESTS_MODEL_TRACE_H
#define MEMTRACE_TESTS_MODEL_TRACE_H

#include <stdbool.h>
#include <stdint.h>

struct model_params {
	unsigned layers;
	unsigned steps;
	uint64_t weight;       /* bytes of each layer's weight */
	uint64_t act;          /* bytes per unit of N of an activation */
	uint64_t quad;         /* bytes per N^2 of attention scores (0: none) */
	uint64_t workspace_at; /* N at which a workspace (4 MiB) is taken in forward (0: never) */
	uint64_t branch_at;    /* N at which a branch of 12 extra requests runs (0: never) */
	bool data_size;        /* one request per step whose size depends on data */
	uint64_t other_path_below; /* below this N, every temporary and activation gradient
	                              takes another size (another code path, as at batch 1) */
	uint64_t device_total;     /* the device's total bytes */
	uint64_t segment;          /* a driver-layer segment held throughout (0: none, then
	                              the anatomy takes the requests as the allocator's memory) */
	uint64_t context;          /* CUDA context and libraries, in the samples */
	uint64_t outside;          /* memory outside the process, in the samples */
};

/* The defaults: 12 layers, 3 steps, 8 MiB weights, 2 MiB activations per
 * unit of N, no quadratic term, no workspace, no branch, an 80 GiB device
 * with a 2 GiB segment, 512 MiB of context and 500 MiB outside. */
void model_params_default(struct model_params *mp);

/* Writes the trace of the model at size n (>= 1) to path (replacing a file
 * there). Returns 0 or a negative errno. */
int model_trace_write(const char *path, const struct model_params *mp, uint64_t n);

#endif /* MEMTRACE_TESTS_MODEL_TRACE_H */
