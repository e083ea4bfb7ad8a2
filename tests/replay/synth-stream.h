/* synth-stream.h — random request streams for the replay tests and bench:
 * log-uniform sizes (1 B .. max_bytes), random lifetimes (mostly short, a
 * few long, a few never freed), a handful of streams, deterministic for a
 * seed. Produces alloc/free mt_events in time order. */
#ifndef MEMTRACE_TESTS_SYNTH_STREAM_H
#define MEMTRACE_TESTS_SYNTH_STREAM_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-common.h"
#include "memtrace-format.h"

static inline uint64_t synth_rand(uint64_t *state)
{
	return mt_splitmix64(state);
}

/* n_allocs allocations with at most ~live_target live at once; *out holds
 * the events (malloc'd), *n_out their count. Returns 0 or -1. */
static inline int synth_stream(uint64_t seed, size_t n_allocs, size_t live_target,
                               uint64_t max_bytes, struct mt_event **out, size_t *n_out)
{
	struct mt_event *ev = malloc(2 * n_allocs * sizeof(*ev));
	uint64_t *live = malloc((live_target + 1) * sizeof(*live)); /* addresses */
	uint64_t *live_bytes = malloc((live_target + 1) * sizeof(*live_bytes));
	uint64_t st = seed, ts = 1000, addr = 0x10000;
	size_t n = 0, nlive = 0;
	if (!ev || !live || !live_bytes) {
		free(ev);
		free(live);
		free(live_bytes);
		return -1;
	}
	double lmax = log((double)max_bytes);
	for (size_t i = 0; i < n_allocs; i++) {
		/* free some live ones first: more when near the target */
		while (nlive && (nlive >= live_target || synth_rand(&st) % 100 < 45)) {
			size_t k = synth_rand(&st) % nlive;
			struct mt_event *e = &ev[n++];
			memset(e, 0, sizeof(*e));
			e->kind = MT_EVENT_FREE;
			e->ts = ts;
			e->process = 1;
			e->device = 1;
			e->alloc.address = live[k];
			e->alloc.bytes = live_bytes[k];
			e->alloc.layer = MT_LAYER_REQUEST;
			e->alloc.reuse_delay = synth_rand(&st) % 8 == 0 ? 3 : 0;
			ts += synth_rand(&st) % 3;
			live[k] = live[--nlive];
			live_bytes[k] = live_bytes[nlive];
		}
		double u = (double)(synth_rand(&st) >> 11) / 9007199254740992.0;
		uint64_t bytes = (uint64_t)exp(u * lmax);
		struct mt_event *e = &ev[n++];
		memset(e, 0, sizeof(*e));
		e->kind = MT_EVENT_ALLOC;
		e->ts = ts;
		e->process = 1;
		e->device = 1;
		e->alloc.address = addr;
		e->alloc.bytes = bytes ? bytes : 1;
		e->alloc.stream = (uint64_t[]){ 0, 7, 9 }[synth_rand(&st) % 3];
		e->alloc.layer = MT_LAYER_REQUEST;
		addr += ((bytes + 4095) & ~4095ull) + 4096;
		ts += 1 + synth_rand(&st) % 3;
		if (synth_rand(&st) % 50) { /* 2% are never freed */
			live[nlive] = e->alloc.address;
			live_bytes[nlive++] = e->alloc.bytes;
		}
	}
	free(live);
	free(live_bytes);
	*out = ev;
	*n_out = n;
	return 0;
}

#endif

/* A training loop: `weights` tensors allocated first and never freed, then
 * iterations of a forward pass allocating `layers` activations (freed in
 * reverse order by the backward pass) each with a short-lived temporary,
 * about n_allocs allocations in all. Sizes log-uniform up to max_bytes. */
static inline int synth_train(uint64_t seed, size_t n_allocs, size_t weights, size_t layers,
                              uint64_t max_bytes, struct mt_event **out, size_t *n_out)
{
	struct mt_event *ev = malloc((2 * n_allocs + 2 * weights + 4 * layers) * sizeof(*ev));
	uint64_t *act = malloc(layers * sizeof(*act)), *act_bytes = malloc(layers * sizeof(*act));
	uint64_t st = seed, ts = 1000, addr = 0x10000;
	double lmax = log((double)max_bytes);
	size_t n = 0, allocs = 0;
	if (!ev || !act || !act_bytes) {
		free(ev);
		free(act);
		free(act_bytes);
		return -1;
	}
#define SYNTH_PUT(k, a, b)                                                                         \
	do {                                                                                       \
		struct mt_event *e_ = &ev[n++];                                                    \
		memset(e_, 0, sizeof(*e_));                                                        \
		e_->kind = (k);                                                                    \
		e_->ts = ts++;                                                                     \
		e_->process = 1;                                                                   \
		e_->device = 1;                                                                    \
		e_->alloc.address = (a);                                                           \
		e_->alloc.bytes = (b);                                                             \
		e_->alloc.layer = MT_LAYER_REQUEST;                                                \
	} while (0)
#define SYNTH_SIZE()                                                                               \
	((uint64_t)exp((double)(synth_rand(&st) >> 11) / 9007199254740992.0 * lmax) + 1)
	for (size_t i = 0; i < weights; i++, allocs++) {
		uint64_t b = SYNTH_SIZE();
		SYNTH_PUT(MT_EVENT_ALLOC, addr, b);
		addr += b + 4096;
	}
	while (allocs + 2 * layers <= n_allocs) {
		for (size_t l = 0; l < layers; l++, allocs += 2) {
			act[l] = addr;
			act_bytes[l] = SYNTH_SIZE();
			SYNTH_PUT(MT_EVENT_ALLOC, addr, act_bytes[l]);
			addr += act_bytes[l] + 4096;
			uint64_t tb = SYNTH_SIZE();
			SYNTH_PUT(MT_EVENT_ALLOC, addr, tb);
			SYNTH_PUT(MT_EVENT_FREE, addr, tb);
			addr += tb + 4096;
		}
		for (size_t l = layers; l-- > 0;)
			SYNTH_PUT(MT_EVENT_FREE, act[l], act_bytes[l]);
	}
#undef SYNTH_PUT
#undef SYNTH_SIZE
	free(act);
	free(act_bytes);
	*out = ev;
	*n_out = n;
	return 0;
}
