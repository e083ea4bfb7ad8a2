/* live-map-private.h — a map from (process, device, address) to a 64-bit
 * value, for what is live while a trace streams past: open addressing with
 * linear probing and backward-shift deletion, at most half full. Used by
 * the pairing of allocs and frees (pairing.c) and the peak of live bytes
 * (lifetimes.c). Start from a zeroed map.
 */
#ifndef MEMTRACE_LIVE_MAP_PRIVATE_H
#define MEMTRACE_LIVE_MAP_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fmt_live_slot {
	uint64_t address;
	uint64_t value;
	uint32_t process;
	uint32_t device;
	bool used;
};

struct fmt_live_map {
	struct fmt_live_slot *slots;
	size_t cap, n;
};

/* Makes room for one more key, so that the slot fmt_live_map_slot returns
 * next may be taken: 0 or -ENOMEM (m unchanged). */
int fmt_live_map_reserve(struct fmt_live_map *m);
/* The slot of the key, or the empty slot where it goes (set used, the key
 * and n++ to take it); m must have room (fmt_live_map_reserve). */
struct fmt_live_slot *fmt_live_map_slot(struct fmt_live_map *m, uint32_t process, uint32_t device,
                                        uint64_t address);
/* The slot of the key, or NULL. */
struct fmt_live_slot *fmt_live_map_find(struct fmt_live_map *m, uint32_t process, uint32_t device,
                                        uint64_t address);
/* Takes the empty slot s (from fmt_live_map_slot) for the key. */
void fmt_live_map_take(struct fmt_live_map *m, struct fmt_live_slot *s, uint32_t process,
                       uint32_t device, uint64_t address, uint64_t value);
/* Removes the used slot s; other slots may move. */
void fmt_live_map_remove(struct fmt_live_map *m, struct fmt_live_slot *s);
/* Frees the slots and zeroes m. */
void fmt_live_map_release(struct fmt_live_map *m);

#endif
