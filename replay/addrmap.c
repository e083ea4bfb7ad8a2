/* addrmap.c — open-addressing hash map from 64-bit keys to 64-bit values
 * (see addrmap-private.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "addrmap-private.h"

static inline size_t slot_of(uint64_t key, unsigned shift)
{
	/* Fibonacci hashing: the product's high bits mix every bit of the key
	 * (addresses share many low zero bits, so the low bits would not). */
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> shift);
}

void rp_addrmap_init(struct rp_addrmap *m)
{
	m->slots = NULL;
	m->mask = 0;
	m->count = 0;
	m->shift = 0;
}

void rp_addrmap_release(struct rp_addrmap *m)
{
	free(m->slots);
	rp_addrmap_init(m);
}

static int grow(struct rp_addrmap *m)
{
	size_t cap = m->slots ? (m->mask + 1) * 2 : 64;
	unsigned shift = m->slots ? m->shift - 1 : 64 - 6;
	struct rp_addrmap_slot *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; m->slots && i <= m->mask; i++) {
		if (!m->slots[i].key)
			continue;
		size_t j = slot_of(m->slots[i].key, shift);
		while (slots[j].key)
			j = (j + 1) & (cap - 1);
		slots[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = slots;
	m->mask = cap - 1;
	m->shift = shift;
	return 0;
}

/* put (replace) or insert (!replace) */
static int store(struct rp_addrmap *m, uint64_t key, uint64_t value, bool replace)
{
	/* load <= 1/4: chains of one, mostly */
	if (!m->slots || (m->count + 1) * 4 > m->mask + 1) {
		int rc = grow(m);
		if (rc < 0)
			return rc;
	}
	size_t i = slot_of(key, m->shift);
	while (m->slots[i].key && m->slots[i].key != key)
		i = (i + 1) & m->mask;
	if (!m->slots[i].key)
		m->count++;
	else if (!replace)
		return -EEXIST;
	m->slots[i].key = key;
	m->slots[i].value = value;
	return 0;
}

int rp_addrmap_put(struct rp_addrmap *m, uint64_t key, uint64_t value)
{
	return store(m, key, value, true);
}

int rp_addrmap_insert(struct rp_addrmap *m, uint64_t key, uint64_t value)
{
	return store(m, key, value, false);
}

static struct rp_addrmap_slot *lookup(const struct rp_addrmap *m, uint64_t key)
{
	if (!m->slots)
		return NULL;
	size_t i = slot_of(key, m->shift);
	while (m->slots[i].key) {
		if (m->slots[i].key == key)
			return &m->slots[i];
		i = (i + 1) & m->mask;
	}
	return NULL;
}

bool rp_addrmap_get(const struct rp_addrmap *m, uint64_t key, uint64_t *value)
{
	struct rp_addrmap_slot *s = lookup(m, key);
	if (s && value)
		*value = s->value;
	return s != NULL;
}

bool rp_addrmap_remove(struct rp_addrmap *m, uint64_t key, uint64_t *value)
{
	struct rp_addrmap_slot *s = lookup(m, key);
	if (!s)
		return false;
	if (value)
		*value = s->value;
	/* Backward-shift: pull later entries of the chain into the hole. */
	size_t hole = (size_t)(s - m->slots);
	size_t i = hole;
	for (;;) {
		i = (i + 1) & m->mask;
		if (!m->slots[i].key)
			break;
		size_t home = slot_of(m->slots[i].key, m->shift);
		/* entry at i may move to hole if home is not in (hole, i] cyclically */
		if (((i - home) & m->mask) >= ((i - hole) & m->mask)) {
			m->slots[hole] = m->slots[i];
			hole = i;
		}
	}
	m->slots[hole].key = 0;
	m->count--;
	return true;
}

bool rp_addrmap_next(const struct rp_addrmap *m, size_t *pos, const struct rp_addrmap_slot **slot)
{
	if (!m->slots)
		return false;
	for (; *pos <= m->mask; (*pos)++) {
		if (m->slots[*pos].key) {
			*slot = &m->slots[(*pos)++];
			return true;
		}
	}
	return false;
}
