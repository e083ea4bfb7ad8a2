/* site-table-private.h — the table of call sites seen before, shared by the
 * injection library's native stacks (inject-stacks.c) and the PyTorch
 * bridge's Python stacks (torch-bridge.cpp, which includes this header and
 * compiles site-table.c as C++).
 *
 * A stack is a list of machine words (return addresses; code objects and
 * byte offsets) and the site id it was interned as. Finding a stack takes
 * no lock: an entry is written once, by an adder holding the lock that
 * every adder of the table holds, and published by storing its hash last;
 * readers load the hash first. Past 3/4 full the table takes no more
 * stacks, and those are named and interned each time they are seen.
 */
#ifndef MEMTRACE_SITE_TABLE_PRIVATE_H
#define MEMTRACE_SITE_TABLE_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REC_SITE_KEYS 40    /* words of one stack, at most */
#define REC_SITE_SLOTS 8192 /* entries of one table */

struct rec_site_entry {
	uint64_t hash; /* 0 = empty; stored last */
	uint32_t id;
	uint32_t nkeys;
	uintptr_t key[REC_SITE_KEYS];
};

/* Zero-initialised: empty. The entries are allocated on the first add and
 * kept while the process lives (readers may be inside them at any time). */
struct rec_site_table {
	struct rec_site_entry *slots; /* REC_SITE_SLOTS, or NULL */
	size_t used;
};

/* The hash of a stack's N words (never 0). */
__attribute__((visibility("hidden"))) uint64_t rec_site_hash(const uintptr_t *key, size_t n);

/* The site id of the stack KEY[0..N) with hash H in T, or 0 when T does
 * not hold it. Any thread, no lock. */
__attribute__((visibility("hidden"))) uint32_t
rec_site_find(const struct rec_site_table *t, uint64_t h, const uintptr_t *key, size_t n);

/* Remembers that the stack KEY[0..N) with hash H is site ID. The caller
 * holds the lock every adder of T holds and has seen rec_site_find miss
 * under it. Nothing is kept when ID is 0, N exceeds REC_SITE_KEYS, T is 3/4
 * full or memory runs out (the site is then named again next time). */
__attribute__((visibility("hidden"))) void
rec_site_add(struct rec_site_table *t, uint64_t h, const uintptr_t *key, size_t n, uint32_t id);

#ifdef __cplusplus
}
#endif

#endif
