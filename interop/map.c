/* map.c — an open-addressing hash table from a two-word key to a word,
 * for pairing frees with allocations by address (and process, device,
 * layer) while walking events. Linear probing, deletion by backward shift,
 * grows at half full.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "interop-private.h"

static size_t slot_of(const struct io_map *m, uint64_t a, uint64_t b)
{
	uint64_t h = (a ^ (b * 0xff51afd7ed558ccdull)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 17) & (m->cap - 1);
}

static int rehash(struct io_map *m, size_t cap)
{
	struct io_map bigger = { .cap = cap };

	bigger.slots = calloc(cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].used) {
			size_t s = slot_of(&bigger, m->slots[i].a, m->slots[i].b);
			while (bigger.slots[s].used)
				s = (s + 1) & (cap - 1);
			bigger.slots[s] = m->slots[i];
		}
	bigger.n = m->n;
	free(m->slots);
	*m = bigger;
	return 0;
}

static struct io_map_slot *find(const struct io_map *m, uint64_t a, uint64_t b)
{
	if (!m->cap)
		return NULL;
	for (size_t s = slot_of(m, a, b);; s = (s + 1) & (m->cap - 1)) {
		struct io_map_slot *x = &m->slots[s];
		if (!x->used)
			return NULL;
		if (x->a == a && x->b == b)
			return x;
	}
}

bool io_map_get(const struct io_map *m, uint64_t a, uint64_t b, uint64_t *value)
{
	const struct io_map_slot *x = find(m, a, b);

	if (x && value)
		*value = x->value;
	return x != NULL;
}

int io_map_put(struct io_map *m, uint64_t a, uint64_t b, uint64_t value)
{
	struct io_map_slot *x = find(m, a, b);
	size_t s;

	if (x) {
		x->value = value;
		return 0;
	}
	if ((m->n + 1) * 2 > m->cap && rehash(m, m->cap ? m->cap * 2 : 64) < 0)
		return -ENOMEM;
	for (s = slot_of(m, a, b); m->slots[s].used; s = (s + 1) & (m->cap - 1))
		;
	m->slots[s] = (struct io_map_slot){ .a = a, .b = b, .value = value, .used = true };
	m->n++;
	return 0;
}

bool io_map_take(struct io_map *m, uint64_t a, uint64_t b, uint64_t *value)
{
	struct io_map_slot *x = find(m, a, b);
	size_t i, j, mask = m->cap - 1;

	if (!x)
		return false;
	if (value)
		*value = x->value;
	i = (size_t)(x - m->slots);
	m->slots[i].used = false;
	/* Backward shift: move later entries of the run into the hole when
	 * their home slot does not lie between the hole and them. */
	for (j = (i + 1) & mask; m->slots[j].used; j = (j + 1) & mask) {
		size_t home = slot_of(m, m->slots[j].a, m->slots[j].b);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			m->slots[j].used = false;
			i = j;
		}
	}
	m->n--;
	return true;
}

void io_map_release(struct io_map *m)
{
	free(m->slots);
	*m = (struct io_map){ 0 };
}
