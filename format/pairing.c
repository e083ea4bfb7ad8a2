/* pairing.c — alloc and free events paired into lifetimes as they stream
 * past (memtrace-format.h "Pairing"; the rules of docs/FORMAT.md
 * "Lifetimes"), holding only what is live: per layer a live map from
 * (process, device, address) to a slot of a slab of live allocations, whose
 * freed slots are reused.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "live-map-private.h"
#include "memtrace-common.h"
#include "memtrace-format.h"

struct mt_pairing {
	struct fmt_live_map live[2]; /* value: index into slab */
	struct mt_live *slab;
	size_t nslab, slab_cap;
	size_t *spare; /* slab slots free again; room for every slot */
	size_t nspare;
	size_t *stranded; /* slab slots an alloc at their address left live */
	size_t nstranded, stranded_cap;
	uint64_t born[2]; /* lifetimes so far per layer */
};

struct mt_pairing *mt_pairing_new(void)
{
	return calloc(1, sizeof(struct mt_pairing));
}

/* A slab slot taken for a new allocation, or -ENOMEM (none taken). */
static int64_t slab_take(struct mt_pairing *p)
{
	size_t cap = p->slab_cap;

	if (p->nspare)
		return (int64_t)p->spare[--p->nspare];
	if (mt_array_grow((void **)&p->slab, &p->slab_cap, p->nslab, sizeof(*p->slab)) < 0)
		return -ENOMEM;
	if (p->slab_cap != cap) {
		size_t *spare = realloc(p->spare, p->slab_cap * sizeof(*spare));
		if (!spare)
			return -ENOMEM;
		p->spare = spare;
	}
	return (int64_t)p->nslab++;
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

static void complete(struct mt_live *live, const struct mt_event *free_ev)
{
	live->l.end = free_ev->ts;
	live->l.reuse_delay = free_ev->alloc.reuse_delay;
	live->l.flags &= ~(uint32_t)MT_LIFETIME_NO_FREE;
}

int mt_pairing_step(struct mt_pairing *p, const struct mt_event *ev, struct mt_pair_step *out)
{
	unsigned layer = ev->alloc.layer;
	struct fmt_live_map *m;
	struct fmt_live_slot *s;
	int64_t slot;

	if (layer > MT_LAYER_REQUEST)
		return 1;
	m = &p->live[layer];
	if (fmt_live_map_reserve(m) < 0)
		return -ENOMEM;
	s = fmt_live_map_slot(m, ev->process, ev->device, ev->alloc.address);
	out->layer = layer;
	if (ev->kind == MT_EVENT_FREE) {
		if (s->used) {
			out->kind = MT_PAIR_DIED;
			out->live = p->slab[s->value];
			complete(&out->live, ev);
			p->spare[p->nspare++] = (size_t)s->value;
			fmt_live_map_remove(m, s);
			return 0;
		}
		out->kind = MT_PAIR_ORPHAN;
		out->live = (struct mt_live){ .l = lifetime_of(ev), .index = p->born[layer]++ };
		out->live.l.start = MT_TIME_UNKNOWN;
		complete(&out->live, ev);
		out->live.l.flags = MT_LIFETIME_NO_ALLOC;
		return 0;
	}
	/* room first, so that a failure changes nothing */
	if (s->used && mt_array_grow((void **)&p->stranded, &p->stranded_cap, p->nstranded,
	                             sizeof(*p->stranded)) < 0)
		return -ENOMEM;
	if ((slot = slab_take(p)) < 0)
		return -ENOMEM;
	if (s->used) { /* the earlier allocation stays live to the end */
		p->stranded[p->nstranded++] = (size_t)s->value;
		s->value = (uint64_t)slot;
	} else {
		fmt_live_map_take(m, s, ev->process, ev->device, ev->alloc.address, (uint64_t)slot);
	}
	p->slab[slot] = (struct mt_live){ .l = lifetime_of(ev), .index = p->born[layer]++ };
	out->kind = MT_PAIR_BORN;
	out->live = p->slab[slot];
	return 0;
}

struct mt_live *mt_pairing_find(struct mt_pairing *p, unsigned layer, uint64_t index,
                                uint32_t process, uint32_t device, uint64_t address)
{
	struct fmt_live_slot *s = fmt_live_map_find(&p->live[layer], process, device, address);
	size_t i;

	if (s && p->slab[s->value].index == index)
		return &p->slab[s->value];
	for (i = p->nstranded; i-- > 0;)
		if (p->slab[p->stranded[i]].l.layer == layer &&
		    p->slab[p->stranded[i]].index == index)
			return &p->slab[p->stranded[i]];
	return NULL;
}

void mt_pairing_each(struct mt_pairing *p, void (*fn)(void *data, struct mt_live *live), void *data)
{
	unsigned layer;
	size_t i;

	for (layer = 0; layer < 2; layer++)
		for (i = 0; i < p->live[layer].cap; i++)
			if (p->live[layer].slots[i].used)
				fn(data, &p->slab[p->live[layer].slots[i].value]);
	for (i = 0; i < p->nstranded; i++)
		fn(data, &p->slab[p->stranded[i]]);
}

void mt_pairing_free(struct mt_pairing *p)
{
	if (!p)
		return;
	fmt_live_map_release(&p->live[0]);
	fmt_live_map_release(&p->live[1]);
	free(p->slab);
	free(p->spare);
	free(p->stranded);
	free(p);
}
