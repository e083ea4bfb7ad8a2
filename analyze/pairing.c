/* pairing.c — a device's alloc and free events paired into lifetimes as
 * they stream past, with the rules of mt_reader_lifetimes (docs/FORMAT.md
 * "Lifetimes"): per layer, by (process, address); a free without an alloc
 * is a lifetime of its own (NO_ALLOC), an alloc at an address still live
 * leaves the earlier one live to the end (NO_FREE). Only what is live is
 * held, so a pass costs memory for what is live at once, not for the
 * trace's length.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze-private.h"

static size_t slot_hash(uint32_t process, uint64_t address, size_t mask)
{
	uint64_t h = address ^ ((uint64_t)process << 40);

	h *= 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 17) & mask;
}

/* The slot holding (process, address), or the empty one where it goes. */
static struct an_live *slot_of(struct an_live_map *m, uint32_t process, uint64_t address)
{
	size_t mask = m->cap - 1, i;

	for (i = slot_hash(process, address, mask);; i = (i + 1) & mask)
		if (!m->slots[i].used ||
		    (m->slots[i].l.process == process && m->slots[i].l.address == address))
			return &m->slots[i];
}

static int map_reserve(struct an_live_map *m)
{
	struct an_live_map bigger;
	size_t i;

	if ((m->n + 1) * 2 <= m->cap)
		return 0;
	bigger = (struct an_live_map){ .cap = m->cap ? m->cap * 2 : 1024, .n = m->n };
	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++)
		if (m->slots[i].used)
			*slot_of(&bigger, m->slots[i].l.process, m->slots[i].l.address) =
			        m->slots[i];
	free(m->slots);
	*m = bigger;
	return 0;
}

/* Backward-shift deletion. */
static void map_remove(struct an_live_map *m, struct an_live *s)
{
	size_t mask = m->cap - 1, hole = (size_t)(s - m->slots), i;

	m->slots[hole].used = false;
	m->n--;
	for (i = (hole + 1) & mask; m->slots[i].used; i = (i + 1) & mask) {
		size_t home = slot_hash(m->slots[i].l.process, m->slots[i].l.address, mask);

		if (((i - home) & mask) >= ((i - hole) & mask)) {
			m->slots[hole] = m->slots[i];
			m->slots[i].used = false;
			hole = i;
		}
	}
}

static struct mt_lifetime lifetime_of(const struct mt_event *ev)
{
	return (struct mt_lifetime){
		.start = ev->ts,
		.end = MT_TIME_UNKNOWN,
		.address = ev->alloc.address,
		.bytes = ev->alloc.bytes,
		.stream = ev->alloc.stream,
		.alloc_seq = ev->seq,
		.process = ev->process,
		.device = ev->device,
		.site = ev->alloc.site,
		.flags = MT_LIFETIME_NO_FREE,
		.layer = ev->alloc.layer,
		.mem_kind = ev->alloc.mem_kind,
		.api = ev->alloc.api,
	};
}

int an_pairing_step(struct an_pairing *p, const struct mt_event *ev, struct an_step *out)
{
	unsigned layer = ev->alloc.layer;
	struct an_live_map *m;
	struct an_live *s;

	if (layer > MT_LAYER_REQUEST)
		return 1;
	m = &p->live[layer];
	if (map_reserve(m) < 0)
		return -ENOMEM;
	s = slot_of(m, ev->process, ev->alloc.address);
	out->layer = layer;
	if (ev->kind == MT_EVENT_FREE) {
		if (s->used) {
			out->kind = AN_DIED;
			out->live = *s;
			out->live.l.end = ev->ts;
			out->live.l.reuse_delay = ev->alloc.reuse_delay;
			out->live.l.flags &= ~(uint32_t)MT_LIFETIME_NO_FREE;
			map_remove(m, s);
			return 0;
		}
		out->kind = AN_ORPHAN;
		out->live = (struct an_live){ .l = lifetime_of(ev), .index = p->born[layer]++ };
		out->live.l.start = MT_TIME_UNKNOWN;
		out->live.l.end = ev->ts;
		out->live.l.reuse_delay = ev->alloc.reuse_delay;
		out->live.l.flags = MT_LIFETIME_NO_ALLOC;
		return 0;
	}
	if (s->used) { /* the earlier allocation stays live to the end */
		if (mt_array_grow((void **)&p->stranded, &p->stranded_cap, p->nstranded,
		            sizeof(*p->stranded)) < 0)
			return -ENOMEM;
		p->stranded[p->nstranded++] = *s;
	} else {
		m->n++;
	}
	*s = (struct an_live){ .l = lifetime_of(ev), .index = p->born[layer]++, .used = true };
	out->kind = AN_BORN;
	out->live = *s;
	return 0;
}

struct an_live *an_pairing_find(struct an_pairing *p, unsigned layer, uint64_t index,
                                uint32_t process, uint64_t address)
{
	struct an_live_map *m = &p->live[layer];
	struct an_live *s;
	size_t i;

	if (m->cap) {
		s = slot_of(m, process, address);
		if (s->used && s->index == index)
			return s;
	}
	for (i = p->nstranded; i-- > 0;)
		if (p->stranded[i].l.layer == layer && p->stranded[i].index == index)
			return &p->stranded[i];
	return NULL;
}

void an_pairing_each(struct an_pairing *p, void (*fn)(void *data, struct an_live *live), void *data)
{
	unsigned layer;
	size_t i;

	for (layer = 0; layer < 2; layer++)
		for (i = 0; i < p->live[layer].cap; i++)
			if (p->live[layer].slots[i].used)
				fn(data, &p->live[layer].slots[i]);
	for (i = 0; i < p->nstranded; i++)
		fn(data, &p->stranded[i]);
}

void an_pairing_release(struct an_pairing *p)
{
	free(p->live[0].slots);
	free(p->live[1].slots);
	free(p->stranded);
	memset(p, 0, sizeof(*p));
}
