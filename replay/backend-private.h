/* backend-private.h — what a backend implementation (backend-sim.c,
 * backend-cuda.c) provides to backend.c, which keeps the bookkeeping common
 * to all backends: capacity, driver-call counters, and the tables of plain
 * allocations, physical handles, VA reservations and mappings, so that
 * mt_backend_destroy can release everything still held whatever happened.
 *
 * Implementation hooks perform the raw operation only; arguments have been
 * checked and capacity enforced for plain and VMM memory. The pool hooks
 * enforce capacity themselves (the pool grows inside the driver) using
 * rp_backend_room(), and keep b->pool_reserved up to date.
 */
#ifndef MEMTRACE_BACKEND_PRIVATE_H
#define MEMTRACE_BACKEND_PRIVATE_H

#include <stdarg.h>

#include "addrmap-private.h"
#include "mapbits-private.h"
#include "memtrace-replay.h"

struct rp_backend_impl {
	enum mt_backend_kind kind;
	const char *name;
	int (*alloc)(struct mt_backend *b, uint64_t bytes, uint64_t *address);
	int (*free)(struct mt_backend *b, uint64_t address);
	int (*va_reserve)(struct mt_backend *b, uint64_t bytes, uint64_t *va);
	int (*va_free)(struct mt_backend *b, uint64_t va, uint64_t bytes);
	int (*mem_create)(struct mt_backend *b, uint64_t bytes, uint64_t *handle);
	int (*mem_release)(struct mt_backend *b, uint64_t handle);
	/* NULL (both) when a mapping is only bookkeeping, which backend.c keeps */
	int (*map)(struct mt_backend *b, uint64_t va, uint64_t bytes, uint64_t handle);
	int (*unmap)(struct mt_backend *b, uint64_t va, uint64_t bytes);
	/* *grew: driver calls the pool made to grow (counted as alloc_calls) */
	int (*pool_alloc)(struct mt_backend *b, uint64_t bytes, uint64_t stream, uint64_t *address,
	                  unsigned *grew);
	int (*pool_free)(struct mt_backend *b, uint64_t address, uint64_t stream);
	/* *released: chunks given back (counted as free_calls) */
	int (*pool_trim)(struct mt_backend *b, uint64_t keep_bytes, unsigned *released);
	/* NULL when the pool's layout cannot be seen (the driver's own) */
	int (*pool_walk)(struct mt_backend *b, mt_policy_walk_fn fn, void *data);
	/* free and total device memory (mt_backend_mem_info) */
	int (*mem_info)(struct mt_backend *b, uint64_t *free_bytes, uint64_t *total_bytes);
	/* Releases what the implementation itself holds (pool, streams,
	 * context) after backend.c has released its tables. */
	void (*destroy)(struct mt_backend *b);
};

struct mt_backend {
	const struct rp_backend_impl *impl;
	void *priv; /* the implementation's state */
	uint64_t capacity;
	uint64_t granularity;
	uint64_t pool_reserved; /* kept by the pool hooks */
	uint64_t held;          /* plain + created handles */
	struct mt_backend_stats stats;
	struct rp_addrmap plain;   /* address -> bytes */
	struct rp_addrmap handles; /* handle -> bytes */
	struct rp_addrmap vas;     /* va -> bytes */
	struct rp_mapbits maps;    /* what is mapped */
	char message[256];
};

/* Each implementation's constructor fills b->impl, b->priv, b->granularity
 * and (cuda, capacity 0) b->capacity. */
int rp_backend_sim_init(struct mt_backend *b, unsigned ordinal);
int rp_backend_cuda_init(struct mt_backend *b, unsigned ordinal);

/* Bytes the backend may still take before reaching its capacity. */
static inline uint64_t rp_backend_room(const struct mt_backend *b)
{
	return b->stats.reserved >= b->capacity ? 0 : b->capacity - b->stats.reserved;
}

/* Sets the backend's message; returns rc (a negative errno) for chaining
 * (backend-fail.c). */
int rp_backend_fail(struct mt_backend *b, int rc, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Current reserved bytes, without copying the stats (the driver's hot loop). */
static inline uint64_t rp_backend_reserved_now(const struct mt_backend *b)
{
	return b->stats.reserved;
}

#endif /* MEMTRACE_BACKEND_PRIVATE_H */
