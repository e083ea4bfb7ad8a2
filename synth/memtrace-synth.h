/* memtrace-synth.h — synthetic traces with the structure of a real capture
 * (memtrace synth), for tests, benchmarks and trying the other commands
 * without a GPU. Writes through the format module's writer; deterministic
 * for a seed. synth.c's opening comment describes the models.
 *
 * Errors are negative errno values, with the writer's message set. Nothing
 * here prints or exits.
 */
#ifndef MEMTRACE_SYNTH_H
#define MEMTRACE_SYNTH_H

#include <stdint.h>

#include "memtrace-format.h"

enum mt_synth_pattern {
	MT_SYNTH_TRAIN = 0,  /* training loop: weights, activations freed in
	                        reverse in backward, optimizer states, temporaries */
	MT_SYNTH_RANDOM = 1, /* random sizes and lifetimes */
	MT_SYNTH_SMALL = 2,  /* swarms of small allocations */
};

/* The most alloc/free events mt_synth_write writes: about 30 GiB of trace
 * and hours of work; a larger count is a mistake, not a wish. */
#define MT_SYNTH_MAX_EVENTS 10000000000ull

/* Writes a synthetic trace of about `events` alloc/free events (plus, for
 * the train pattern, kernels and forward/backward/optimizer ranges) into an
 * open writer, deterministic for a seed. Adds its own process and device rows
 * and meta (capture = "synth"). Returns 0 or a negative errno (-EINVAL for
 * an unknown pattern or more than MT_SYNTH_MAX_EVENTS events). */
int mt_synth_write(struct mt_writer *w, unsigned pattern, uint64_t events, uint64_t seed);

#endif /* MEMTRACE_SYNTH_H */
