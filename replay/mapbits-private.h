/* mapbits-private.h — the backend's table of what is mapped (VMM), as two
 * bits per page of the granularity, so that mapping or unmapping n pages
 * is one or two hash probes and bit operations, not n probes.
 *
 * Pages are grouped in chunks of RP_MAPBITS_PAGES (1 GiB at 2 MiB), found
 * by a hash map (addrmap-private.h) and freed when nothing in them is
 * mapped. Per page: `mapped`, and `start` where a mapping begins, so that
 * an unmap must cover whole mappings of the size it names, as the driver
 * requires.
 */
#ifndef MEMTRACE_MAPBITS_PRIVATE_H
#define MEMTRACE_MAPBITS_PRIVATE_H

#include <stdint.h>

#include "addrmap-private.h"

#define RP_MAPBITS_PAGES 512

struct rp_mapbits_chunk;

struct rp_mapbits {
	struct rp_addrmap chunks; /* chunk number + 1 -> struct rp_mapbits_chunk * */
	unsigned shift;           /* log2 of a page's bytes (the granularity) */
	uint64_t hot_key;         /* the chunk last found, and its key */
	struct rp_mapbits_chunk *hot;
};

/* Makes m empty, for pages of `page` bytes, a power of two. */
void rp_mapbits_init(struct rp_mapbits *m, uint64_t page);
/* Frees m's chunks; m is empty afterwards. */
void rp_mapbits_release(struct rp_mapbits *m);

/* Notes n > 0 mappings of unit bytes (a multiple of the page) at va (on a
 * page), va + unit, ... Returns 0, -EEXIST when a page of them is mapped
 * (nothing noted) or -ENOMEM (nothing noted). */
int rp_mapbits_add(struct rp_mapbits *m, uint64_t va, uint64_t unit, uint64_t n);

/* Forgets the n > 0 mappings of unit bytes at va, va + unit, ... Returns 0
 * or -ENOENT (nothing forgotten) unless each is a noted mapping of unit
 * bytes. */
int rp_mapbits_remove(struct rp_mapbits *m, uint64_t va, uint64_t unit, uint64_t n);

/* Calls fn for each noted mapping, in no particular order; m must not
 * change meanwhile. */
void rp_mapbits_each(const struct rp_mapbits *m,
                     void (*fn)(void *data, uint64_t va, uint64_t bytes), void *data);

#endif /* MEMTRACE_MAPBITS_PRIVATE_H */
