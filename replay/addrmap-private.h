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

struct mt_addrmap_slot {
	uint64_t key;
	uint64_t value;
};

struct mt_addrmap {
	struct mt_addrmap_slot *slots;
	size_t mask; /* capacity - 1 (capacity a power of two), 0 before the first put */
	size_t count;
};

/* Zero-initialising the struct gives an empty map too. */
void mt_addrmap_init(struct mt_addrmap *m);
void mt_addrmap_release(struct mt_addrmap *m);

/* Inserts or replaces key (!= 0). Returns 0 or -ENOMEM. */
int mt_addrmap_put(struct mt_addrmap *m, uint64_t key, uint64_t value);
/* True and *value set (value may be NULL) when key is present. */
bool mt_addrmap_get(const struct mt_addrmap *m, uint64_t key, uint64_t *value);
/* Removes key; true and *value set (value may be NULL) when it was present. */
bool mt_addrmap_remove(struct mt_addrmap *m, uint64_t key, uint64_t *value);

/* Iteration over slots: for (size_t i = 0; mt_addrmap_next(m, &i, &slot);)
 * visits every entry once, in no particular order. The map must not change
 * during the walk. */
bool mt_addrmap_next(const struct mt_addrmap *m, size_t *pos, const struct mt_addrmap_slot **slot);

#endif /* MEMTRACE_ADDRMAP_PRIVATE_H */
