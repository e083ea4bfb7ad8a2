/* addrmap-private.h — a hash map from a non-zero 64-bit key (a device
 * address, a handle, a stream id) to a 64-bit value, used wherever the
 * replay module looks something up by address: the backends' bookkeeping,
 * the request stream's address pairing and the policies' live blocks.
 *
 * Open addressing with linear probing and backward-shift deletion (no
 * tombstones), so a long replay with tens of millions of inserts and removes
 * keeps short probe chains. Key 0 is reserved (it marks an empty slot).
 */
#ifndef MEMTRACE_ADDRMAP_PRIVATE_H
#define MEMTRACE_ADDRMAP_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rp_addrmap_slot {
	uint64_t key;
	uint64_t value;
};

struct rp_addrmap {
	struct rp_addrmap_slot *slots;
	size_t mask; /* capacity - 1 (capacity a power of two), 0 before the first put */
	size_t count;
	unsigned shift; /* 64 - log2(capacity): a hash's high bits pick the slot */
};

/* Zero-initialising the struct gives an empty map too. */
void rp_addrmap_init(struct rp_addrmap *m);
void rp_addrmap_release(struct rp_addrmap *m);

/* Inserts or replaces key (!= 0). Returns 0 or -ENOMEM. */
int rp_addrmap_put(struct rp_addrmap *m, uint64_t key, uint64_t value);
/* Inserts key (!= 0) when it is absent, in one probe. Returns 0, -EEXIST
 * when it is present (its value unchanged) or -ENOMEM. */
int rp_addrmap_insert(struct rp_addrmap *m, uint64_t key, uint64_t value);
/* True and *value set (value may be NULL) when key is present. */
bool rp_addrmap_get(const struct rp_addrmap *m, uint64_t key, uint64_t *value);
/* Removes key; true and *value set (value may be NULL) when it was present. */
bool rp_addrmap_remove(struct rp_addrmap *m, uint64_t key, uint64_t *value);

/* Iteration over slots: for (size_t i = 0; rp_addrmap_next(m, &i, &slot);)
 * visits every entry once, in no particular order. The map must not change
 * during the walk. */
bool rp_addrmap_next(const struct rp_addrmap *m, size_t *pos, const struct rp_addrmap_slot **slot);

#endif /* MEMTRACE_ADDRMAP_PRIVATE_H */
