/* addrmap.c — open-addressing hash map from 64-bit keys to 64-bit values
 * (see addrmap-private.h): what the inline lookups leave out. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "addrmap-private.h"

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

int rp_addrmap_grow(struct rp_addrmap *m)
{
	size_t cap = m->slots ? (m->mask + 1) * 2 : 64;
	struct rp_addrmap old = *m;
	struct rp_addrmap_slot *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	m->slots = slots;
	m->mask = cap - 1;
	m->shift = old.slots ? old.shift - 1 : 64 - 6;
	for (size_t i = 0; old.slots && i <= old.mask; i++)
		if (old.slots[i].key)
			*rp_addrmap_probe(m, old.slots[i].key) = old.slots[i];
	free(old.slots);
	return 0;
}

void rp_addrmap_vacate(struct rp_addrmap *m, struct rp_addrmap_slot *s)
{
	/* Backward-shift: pull later entries of the chain into the hole. */
	size_t hole = (size_t)(s - m->slots);
	size_t i = hole;
	for (;;) {
		i = (i + 1) & m->mask;
		if (!m->slots[i].key)
			break;
		size_t home = rp_addrmap_home(m, m->slots[i].key);
		/* entry at i may move to hole if home is not in (hole, i] cyclically */
		if (((i - home) & m->mask) >= ((i - hole) & m->mask)) {
			m->slots[hole] = m->slots[i];
			hole = i;
		}
	}
	m->slots[hole].key = 0;
	m->count--;
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
