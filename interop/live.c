/* live.c — the allocations open while events are walked in order, paired
 * as docs/FORMAT.md's "Lifetimes" pairs them, with the bytes live per device and
 * layer. Holds only what is open: the memory of a streaming export is
 * bounded by the live set, not the trace.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interop-private.h"

struct io_live {
	struct io_map open; /* key → index into entries */
	struct io_live_entry *entries;
	size_t nentries, cap;
	size_t *free_slots; /* indices of entries no longer used */
	size_t nfree, free_cap;
	uint64_t *bytes; /* [device * 2 + layer] */
	size_t nbytes;
	uint64_t total[2]; /* per layer, all devices */
};

static uint64_t qualifier(uint32_t process, uint32_t device, unsigned layer)
{
	return (uint64_t)process << 32 | (uint64_t)device << 8 | layer;
}

struct io_live *io_live_new(void)
{
	return calloc(1, sizeof(struct io_live));
}

void io_live_free(struct io_live *l)
{
	if (!l)
		return;
	io_map_release(&l->open);
	free(l->entries);
	free(l->free_slots);
	free(l->bytes);
	free(l);
}

static int count(struct io_live *l, uint32_t device, unsigned layer, uint64_t add, uint64_t sub)
{
	size_t i = (size_t)device * 2 + (layer & 1);

	if (i >= l->nbytes) {
		size_t n = i + 16;
		uint64_t *b = realloc(l->bytes, n * sizeof(*b));
		if (!b)
			return -ENOMEM;
		memset(b + l->nbytes, 0, (n - l->nbytes) * sizeof(*b));
		l->bytes = b;
		l->nbytes = n;
	}
	l->bytes[i] += add - sub;
	l->total[layer & 1] += add - sub;
	return 0;
}

int io_live_apply(struct io_live *l, const struct mt_event *ev, struct io_live_entry *closed)
{
	const struct mt_alloc_event *a = &ev->alloc;
	uint64_t q = qualifier(ev->process, ev->device, a->layer);
	uint64_t index;
	size_t slot;

	if (ev->kind == MT_EVENT_FREE) {
		if (!io_map_take(&l->open, a->address, q, &index))
			return 0;
		if (closed)
			*closed = l->entries[index];
		if (count(l, ev->device, a->layer, 0, l->entries[index].bytes) < 0 ||
		    mt_array_grow((void **)&l->free_slots, &l->free_cap, l->nfree,
		            sizeof(*l->free_slots)) < 0)
			return -ENOMEM;
		l->free_slots[l->nfree++] = (size_t)index;
		return 1;
	}
	if (ev->kind != MT_EVENT_ALLOC)
		return 0;
	/* An alloc over an open one: the earlier stays counted, never
	 * closed; its slot is reused for the newer. */
	if (io_map_get(&l->open, a->address, q, &index)) {
		slot = (size_t)index;
	} else if (l->nfree) {
		slot = l->free_slots[--l->nfree];
	} else {
		if (mt_array_grow((void **)&l->entries, &l->cap, l->nentries, sizeof(*l->entries)) < 0)
			return -ENOMEM;
		slot = l->nentries++;
	}
	l->entries[slot] = (struct io_live_entry){
		.address = a->address,
		.bytes = a->bytes,
		.stream = a->stream,
		.ts = ev->ts,
		.process = ev->process,
		.device = ev->device,
		.site = a->site,
		.layer = a->layer,
		.mem_kind = a->mem_kind,
	};
	if (io_map_put(&l->open, a->address, q, slot) < 0)
		return -ENOMEM;
	return count(l, ev->device, a->layer, a->bytes, 0);
}

uint64_t io_live_bytes(const struct io_live *l, uint32_t device, unsigned layer)
{
	size_t i = (size_t)device * 2 + (layer & 1);

	if (!device)
		return l->total[layer & 1];
	return i < l->nbytes ? l->bytes[i] : 0;
}

int io_live_each(const struct io_live *l, int (*fn)(void *arg, const struct io_live_entry *e),
                 void *arg)
{
	for (size_t i = 0; i < l->open.cap; i++)
		if (l->open.slots[i].used) {
			int rc = fn(arg, &l->entries[l->open.slots[i].value]);
			if (rc)
				return rc;
		}
	return 0;
}
