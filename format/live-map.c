/* live-map.c — (process, device, address) → value while a trace streams
 * past (live-map-private.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "live-map-private.h"

static size_t slot_hash(uint32_t process, uint32_t device, uint64_t address, size_t mask)
{
	uint64_t h = address ^ ((uint64_t)process << 40) ^ ((uint64_t)device << 20);

	h *= 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 17) & mask;
}

struct fmt_live_slot *fmt_live_map_slot(struct fmt_live_map *m, uint32_t process, uint32_t device,
                                        uint64_t address)
{
	size_t mask = m->cap - 1, i;

	for (i = slot_hash(process, device, address, mask);; i = (i + 1) & mask)
		if (!m->slots[i].used ||
		    (m->slots[i].address == address && m->slots[i].process == process &&
		     m->slots[i].device == device))
			return &m->slots[i];
}

struct fmt_live_slot *fmt_live_map_find(struct fmt_live_map *m, uint32_t process, uint32_t device,
                                        uint64_t address)
{
	struct fmt_live_slot *s;

	if (!m->cap)
		return NULL;
	s = fmt_live_map_slot(m, process, device, address);
	return s->used ? s : NULL;
}

void fmt_live_map_take(struct fmt_live_map *m, struct fmt_live_slot *s, uint32_t process,
                       uint32_t device, uint64_t address, uint64_t value)
{
	*s = (struct fmt_live_slot){ .address = address,
		                     .value = value,
		                     .process = process,
		                     .device = device,
		                     .used = true };
	m->n++;
}

int fmt_live_map_reserve(struct fmt_live_map *m)
{
	struct fmt_live_map bigger;
	size_t i;

	if ((m->n + 1) * 2 <= m->cap)
		return 0;
	bigger = (struct fmt_live_map){ .cap = m->cap ? m->cap * 2 : 1024, .n = m->n };
	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++)
		if (m->slots[i].used)
			*fmt_live_map_slot(&bigger, m->slots[i].process, m->slots[i].device,
			                   m->slots[i].address) = m->slots[i];
	free(m->slots);
	*m = bigger;
	return 0;
}

void fmt_live_map_remove(struct fmt_live_map *m, struct fmt_live_slot *s)
{
	size_t mask = m->cap - 1, hole = (size_t)(s - m->slots), i;

	m->slots[hole].used = false;
	m->n--;
	for (i = (hole + 1) & mask; m->slots[i].used; i = (i + 1) & mask) {
		size_t home = slot_hash(m->slots[i].process, m->slots[i].device,
		                        m->slots[i].address, mask);

		/* Move slot i into the hole unless its home lies in (hole, i]. */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			m->slots[hole] = m->slots[i];
			m->slots[i].used = false;
			hole = i;
		}
	}
}

void fmt_live_map_release(struct fmt_live_map *m)
{
	free(m->slots);
	*m = (struct fmt_live_map){ 0 };
}
