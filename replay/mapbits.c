/* mapbits.c — mapped pages as bits in chunks found by hash (see
 * mapbits-private.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "mapbits-private.h"

#define WORDS (RP_MAPBITS_PAGES / 64)

struct rp_mapbits_chunk {
	uint64_t mapped[WORDS];
	uint64_t start[WORDS]; /* a mapping begins here */
	uint64_t count;        /* pages mapped */
};

void rp_mapbits_init(struct rp_mapbits *m, uint64_t page)
{
	rp_addrmap_init(&m->chunks);
	m->shift = (unsigned)__builtin_ctzll(page);
	m->hot = NULL;
}

void rp_mapbits_release(struct rp_mapbits *m)
{
	const struct rp_addrmap_slot *s;
	for (size_t i = 0; rp_addrmap_next(&m->chunks, &i, &s);)
		free((void *)(uintptr_t)s->value);
	rp_addrmap_release(&m->chunks);
}

/* The chunk of page, or NULL; the last one found is kept at hand (a range
 * is walked twice, and the next call is often in the same chunk). */
static struct rp_mapbits_chunk *chunk_of(struct rp_mapbits *m, uint64_t page)
{
	uint64_t key = page / RP_MAPBITS_PAGES + 1, v;
	if (m->hot && m->hot_key == key)
		return m->hot;
	if (!rp_addrmap_get(&m->chunks, key, &v))
		return NULL;
	m->hot_key = key;
	return m->hot = (struct rp_mapbits_chunk *)(uintptr_t)v;
}

static bool test(const uint64_t *w, uint64_t page)
{
	unsigned i = (unsigned)(page % RP_MAPBITS_PAGES);
	return w[i / 64] >> (i % 64) & 1;
}

/* A walk over the pages [p, end) a word of a chunk at a time: a piece is
 * the pages of one word, as a mask. */
struct cursor {
	uint64_t p, end;
	uint64_t p0, per;           /* mappings begin at p0 + i per */
	struct rp_mapbits_chunk *k; /* the piece's chunk (NULL: none yet) */
	unsigned w;                 /* the piece's word in it */
	uint64_t mask;              /* the piece's pages */
	unsigned pages;             /* how many */
	uint64_t base;              /* the page of the word's bit 0 */
};

static struct cursor start_at(uint64_t p0, uint64_t per, uint64_t n)
{
	return (struct cursor){ .p = p0, .end = p0 + n * per, .p0 = p0, .per = per };
}

/* Moves to the next piece; false at the end. Looks the chunk up only where
 * one begins. */
static bool next_piece(struct rp_mapbits *m, struct cursor *c, bool first)
{
	if (c->p >= c->end)
		return false;
	unsigned i = (unsigned)(c->p % RP_MAPBITS_PAGES), lo = i % 64;
	uint64_t left = c->end - c->p;
	unsigned hi = left < 64 - lo ? lo + (unsigned)left : 64;
	if (first || i == 0)
		c->k = chunk_of(m, c->p);
	c->w = i / 64;
	c->base = c->p - lo;
	c->mask = (hi == 64 ? ~0ull : (1ull << hi) - 1) & ~((1ull << lo) - 1);
	c->pages = hi - lo;
	c->p += c->pages;
	return true;
}

/* The piece's pages where a mapping begins. */
static uint64_t starts(const struct cursor *c)
{
	if (c->per == 1)
		return c->mask;
	uint64_t v = 0;
	for (uint64_t bits = c->mask; bits; bits &= bits - 1) {
		unsigned b = (unsigned)__builtin_ctzll(bits);
		if ((c->base + b - c->p0) % c->per == 0)
			v |= 1ull << b;
	}
	return v;
}

int rp_mapbits_add(struct rp_mapbits *m, uint64_t va, uint64_t unit, uint64_t n)
{
	uint64_t p0 = va >> m->shift, per = unit >> m->shift;
	struct cursor c = start_at(p0, per, n);
	for (bool first = true; next_piece(m, &c, first); first = false)
		if (c.k && c.k->mapped[c.w] & c.mask)
			return -EEXIST;
	for (uint64_t p = p0; p < c.end; p = (p / RP_MAPBITS_PAGES + 1) * RP_MAPBITS_PAGES) {
		if (chunk_of(m, p))
			continue;
		struct rp_mapbits_chunk *k = calloc(1, sizeof(*k));
		if (!k)
			return -ENOMEM;
		if (rp_addrmap_put(&m->chunks, p / RP_MAPBITS_PAGES + 1, (uint64_t)(uintptr_t)k) <
		    0) {
			free(k);
			return -ENOMEM;
		}
	}
	c = start_at(p0, per, n);
	for (bool first = true; next_piece(m, &c, first); first = false) {
		c.k->mapped[c.w] |= c.mask;
		c.k->start[c.w] |= starts(&c);
		c.k->count += c.pages;
	}
	return 0;
}

int rp_mapbits_remove(struct rp_mapbits *m, uint64_t va, uint64_t unit, uint64_t n)
{
	uint64_t p0 = va >> m->shift, per = unit >> m->shift;
	struct cursor c = start_at(p0, per, n);
	for (bool first = true; next_piece(m, &c, first); first = false)
		if (!c.k || (c.k->mapped[c.w] & c.mask) != c.mask ||
		    (c.k->start[c.w] & c.mask) != starts(&c))
			return -ENOENT;
	/* the last mapping ends where the range does */
	struct rp_mapbits_chunk *k = chunk_of(m, c.end);
	if (k && test(k->mapped, c.end) && !test(k->start, c.end))
		return -ENOENT;
	c = start_at(p0, per, n);
	for (bool first = true; next_piece(m, &c, first); first = false) {
		c.k->mapped[c.w] &= ~c.mask;
		c.k->start[c.w] &= ~c.mask;
		c.k->count -= c.pages;
		if (c.k->count == 0) { /* nothing of the chunk is left mapped */
			rp_addrmap_remove(&m->chunks, c.base / RP_MAPBITS_PAGES + 1, NULL);
			if (m->hot == c.k)
				m->hot = NULL;
			free(c.k);
			c.k = NULL;
		}
	}
	return 0;
}

/* The chunk of page, looked up again only where a chunk begins (k: the
 * previous page's). */
static struct rp_mapbits_chunk *step(const struct rp_mapbits *m, struct rp_mapbits_chunk *k,
                                     uint64_t page)
{
	uint64_t v;
	if (page % RP_MAPBITS_PAGES)
		return k;
	return rp_addrmap_get(&m->chunks, page / RP_MAPBITS_PAGES + 1, &v)
	               ? (struct rp_mapbits_chunk *)(uintptr_t)v
	               : NULL;
}

void rp_mapbits_each(const struct rp_mapbits *m,
                     void (*fn)(void *data, uint64_t va, uint64_t bytes), void *data)
{
	const struct rp_addrmap_slot *s;
	for (size_t i = 0; rp_addrmap_next(&m->chunks, &i, &s);) {
		struct rp_mapbits_chunk *k = (struct rp_mapbits_chunk *)(uintptr_t)s->value;
		uint64_t base = (s->key - 1) * RP_MAPBITS_PAGES;
		for (uint64_t p = base; p < base + RP_MAPBITS_PAGES; p++) {
			if (!test(k->start, p))
				continue;
			/* the mapping goes on while pages are mapped and begin none */
			uint64_t q = p + 1;
			struct rp_mapbits_chunk *kq = k;
			while ((kq = step(m, kq, q)) && test(kq->mapped, q) && !test(kq->start, q))
				q++;
			fn(data, p << m->shift, (q - p) << m->shift);
		}
	}
}
