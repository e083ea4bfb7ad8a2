/* site-table.c — the table of call sites seen before (site-table-private.h).
 *
 * Open addressing with linear probing, FNV-style hash over the stack's
 * words. Written in the C that is also C++: the PyTorch bridge compiles
 * this file with its own C++ compiler (torch.utils.cpp_extension), so the
 * atomics are GCC's builtins and conversions are spelled out.
 */
#include <stdlib.h>
#include <string.h>

#include "site-table-private.h"

uint64_t rec_site_hash(const uintptr_t *key, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;

	for (size_t i = 0; i < n; i++) {
		h ^= (uint64_t)key[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

uint32_t rec_site_find(const struct rec_site_table *t, uint64_t h, const uintptr_t *key, size_t n)
{
	const struct rec_site_entry *slots = __atomic_load_n(&t->slots, __ATOMIC_ACQUIRE);

	if (!slots)
		return 0;
	for (size_t i = 0, s = (size_t)(h % REC_SITE_SLOTS); i < REC_SITE_SLOTS;
	     i++, s = (s + 1) % REC_SITE_SLOTS) {
		uint64_t eh = __atomic_load_n(&slots[s].hash, __ATOMIC_ACQUIRE);
		if (!eh)
			return 0;
		if (eh == h && slots[s].nkeys == n && !memcmp(slots[s].key, key, n * sizeof(*key)))
			return slots[s].id;
	}
	return 0;
}

void rec_site_add(struct rec_site_table *t, uint64_t h, const uintptr_t *key, size_t n, uint32_t id)
{
	struct rec_site_entry *slots = t->slots;
	size_t s;

	if (!id || n > REC_SITE_KEYS || t->used >= REC_SITE_SLOTS * 3 / 4)
		return;
	if (!slots) {
		slots = (struct rec_site_entry *)calloc(REC_SITE_SLOTS, sizeof(*slots));
		if (!slots)
			return;
		__atomic_store_n(&t->slots, slots, __ATOMIC_RELEASE);
	}
	for (s = (size_t)(h % REC_SITE_SLOTS); slots[s].hash; s = (s + 1) % REC_SITE_SLOTS)
		;
	slots[s].id = id;
	slots[s].nkeys = (uint32_t)n;
	memcpy(slots[s].key, key, n * sizeof(*key));
	__atomic_store_n(&slots[s].hash, h, __ATOMIC_RELEASE);
	t->used++;
}
