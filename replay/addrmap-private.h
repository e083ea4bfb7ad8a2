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

#include <errno.h>
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

/* The lookups, puts and removes are inline (every policy makes one of each
 * per event); growing and pulling entries back after a remove are not. */

/* The home slot of key: Fibonacci hashing, whose product's high bits mix
 * every bit of the key (addresses share many low zero bits, so the low bits
 * would not). */
static inline size_t rp_addrmap_home(const struct rp_addrmap *m, uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> m->shift);
}

/* The slot holding key, or the empty slot that ends its chain (the map has
 * slots). */
static inline struct rp_addrmap_slot *rp_addrmap_probe(const struct rp_addrmap *m, uint64_t key)
{
	size_t i = rp_addrmap_home(m, key);

	while (m->slots[i].key && m->slots[i].key != key)
		i = (i + 1) & m->mask;
	return &m->slots[i];
}

/* Doubles the table (makes the first one). Returns 0 or -ENOMEM. */
int rp_addrmap_grow(struct rp_addrmap *m);
/* Empties slot s of a remove, pulling later entries of its chain back. */
void rp_addrmap_vacate(struct rp_addrmap *m, struct rp_addrmap_slot *s);

/* put (replace) or insert (!replace) */
static inline int rp_addrmap_store(struct rp_addrmap *m, uint64_t key, uint64_t value, bool replace)
{
	/* load <= 1/4: chains of one, mostly */
	if (__builtin_expect((m->count + 1) * 4 > m->mask + 1, 0)) {
		int rc = rp_addrmap_grow(m);
		if (rc < 0)
			return rc;
	}
	struct rp_addrmap_slot *s = rp_addrmap_probe(m, key);
	if (!s->key)
		m->count++;
	else if (!replace)
		return -EEXIST;
	s->key = key;
	s->value = value;
	return 0;
}

/* Inserts or replaces key (!= 0). Returns 0 or -ENOMEM. */
static inline int rp_addrmap_put(struct rp_addrmap *m, uint64_t key, uint64_t value)
{
	return rp_addrmap_store(m, key, value, true);
}

/* Inserts key (!= 0) when it is absent, in one probe. Returns 0, -EEXIST
 * when it is present (its value unchanged) or -ENOMEM. */
static inline int rp_addrmap_insert(struct rp_addrmap *m, uint64_t key, uint64_t value)
{
	return rp_addrmap_store(m, key, value, false);
}

/* True and *value set (value may be NULL) when key is present. */
static inline bool rp_addrmap_get(const struct rp_addrmap *m, uint64_t key, uint64_t *value)
{
	if (!m->slots)
		return false;
	const struct rp_addrmap_slot *s = rp_addrmap_probe(m, key);
	if (s->key && value)
		*value = s->value;
	return s->key != 0;
}

/* Removes key; true and *value set (value may be NULL) when it was present. */
static inline bool rp_addrmap_remove(struct rp_addrmap *m, uint64_t key, uint64_t *value)
{
	if (!m->slots)
		return false;
	struct rp_addrmap_slot *s = rp_addrmap_probe(m, key);
	if (!s->key)
		return false;
	if (value)
		*value = s->value;
	if (m->slots[(size_t)(s - m->slots + 1) & m->mask].key) {
		rp_addrmap_vacate(m, s);
	} else { /* the end of its chain: nothing to pull back */
		s->key = 0;
		m->count--;
	}
	return true;
}

/* Iteration over slots: for (size_t i = 0; rp_addrmap_next(m, &i, &slot);)
 * visits every entry once, in no particular order. The map must not change
 * during the walk. */
bool rp_addrmap_next(const struct rp_addrmap *m, size_t *pos, const struct rp_addrmap_slot **slot);

#endif /* MEMTRACE_ADDRMAP_PRIVATE_H */
