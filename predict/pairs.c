/* pairs.c — which request an address holds: a hash map from (process,
 * address) to the request allocated there, with the rules of the request
 * stream (an alloc at a live address replaces the earlier request there, a
 * free takes the request away). Open addressing, linear probing,
 * backward-shift deletion. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "predict-private.h"

uint64_t pr_pairs_key(uint32_t process, uint64_t address)
{
	/* device addresses stay below 2^48; 0 marks an empty slot */
	uint64_t key = address ^ ((uint64_t)process << 48);
	return key ? key : 1ull << 63;
}

static size_t slot_of(const struct pr_pairs *m, uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & m->mask;
}

static int grow(struct pr_pairs *m)
{
	size_t cap = m->mask ? (m->mask + 1) * 2 : 1024;
	struct pr_pairs g = { calloc(cap, sizeof(uint64_t)), malloc(cap * sizeof(uint32_t)),
		              cap - 1, 0 };
	if (!g.keys || !g.values) {
		pr_pairs_release(&g);
		return -ENOMEM;
	}
	for (size_t i = 0; m->mask && i <= m->mask; i++)
		if (m->keys[i])
			pr_pairs_put(&g, m->keys[i], m->values[i], NULL);
	pr_pairs_release(m);
	*m = g;
	return 0;
}

int pr_pairs_put(struct pr_pairs *m, uint64_t key, uint32_t value, uint32_t *prev)
{
	if ((m->count + 1) * 2 > m->mask + 1 && grow(m) < 0)
		return -ENOMEM;
	size_t i = slot_of(m, key);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & m->mask;
	if (prev)
		*prev = m->keys[i] ? m->values[i] : PR_NONE;
	m->count += !m->keys[i];
	m->keys[i] = key;
	m->values[i] = value;
	return 0;
}

uint32_t pr_pairs_take(struct pr_pairs *m, uint64_t key)
{
	if (!m->mask)
		return PR_NONE;
	size_t i = slot_of(m, key);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & m->mask;
	if (!m->keys[i])
		return PR_NONE;
	uint32_t value = m->values[i];
	m->keys[i] = 0;
	m->count--;
	/* backward shift: move up every entry whose home lies at or before the hole */
	for (size_t j = (i + 1) & m->mask; m->keys[j]; j = (j + 1) & m->mask) {
		size_t home = slot_of(m, m->keys[j]);
		if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
			m->keys[i] = m->keys[j];
			m->values[i] = m->values[j];
			m->keys[j] = 0;
			i = j;
		}
	}
	return value;
}

void pr_pairs_release(struct pr_pairs *m)
{
	free(m->keys);
	free(m->values);
	m->keys = NULL;
	m->values = NULL;
	m->mask = m->count = 0;
}
