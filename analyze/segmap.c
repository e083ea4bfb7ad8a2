/* segmap.c — segment maps at a moment: segments with their live blocks and
 * the free space between them, built from the recorded allocator's
 * lifetimes (driver-layer segments, request blocks inside them) or by hand
 * from a policy's walk. The viewer draws them; the anatomy splits the
 * allocator's memory with them.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze-private.h"

void mt_segmap_release(struct mt_segmap *m)
{
	free(m->segs);
	free(m->blocks);
	memset(m, 0, sizeof(*m));
}

int mt_segmap_add_segment(struct mt_segmap *m, uint64_t address, uint64_t bytes)
{
	if (mt_array_grow((void **)&m->segs, &m->scap, m->nsegs, sizeof(*m->segs)) < 0)
		return -ENOMEM;
	m->segs[m->nsegs++] = (struct mt_segmap_segment){ address, bytes, m->nblocks, 0 };
	return 0;
}

int mt_segmap_add_block(struct mt_segmap *m, uint64_t address, uint64_t bytes, bool allocated)
{
	if (!bytes)
		return 0;
	if (mt_array_grow((void **)&m->blocks, &m->bcap, m->nblocks, sizeof(*m->blocks)) < 0)
		return -ENOMEM;
	m->blocks[m->nblocks++] = (struct mt_segmap_block){ address, bytes, allocated };
	if (m->nsegs)
		m->segs[m->nsegs - 1].nblocks++;
	return 0;
}

static int largest_first(const void *a, const void *b)
{
	const struct mt_segmap_segment *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->address < y->address ? -1 : x->address > y->address;
}

void mt_segmap_finish(struct mt_segmap *m)
{
	size_t i;

	if (m->nsegs)
		qsort(m->segs, m->nsegs, sizeof(*m->segs), largest_first);
	m->reserved = m->allocated = m->largest_free = 0;
	for (i = 0; i < m->nsegs; i++)
		m->reserved += m->segs[i].bytes;
	for (i = 0; i < m->nblocks; i++) {
		if (m->blocks[i].allocated)
			m->allocated += m->blocks[i].bytes;
		else if (m->blocks[i].bytes > m->largest_free)
			m->largest_free = m->blocks[i].bytes;
	}
}

uint64_t mt_segmap_segment_live(const struct mt_segmap *m, size_t i)
{
	uint64_t live = 0;
	size_t j;

	for (j = m->segs[i].first; j < m->segs[i].first + m->segs[i].nblocks; j++)
		if (m->blocks[j].allocated)
			live += m->blocks[j].bytes;
	return live;
}

uint64_t mt_segmap_fragmentation(const struct mt_segmap *m)
{
	uint64_t bytes = 0, live;
	size_t i;

	for (i = 0; i < m->nsegs; i++)
		if ((live = mt_segmap_segment_live(m, i)))
			bytes += m->segs[i].bytes - live;
	return bytes;
}

uint64_t mt_segmap_cache(const struct mt_segmap *m)
{
	uint64_t bytes = 0;
	size_t i;

	for (i = 0; i < m->nsegs; i++)
		if (!mt_segmap_segment_live(m, i))
			bytes += m->segs[i].bytes;
	return bytes;
}

double mt_fragmentation_share(uint64_t fragmentation, uint64_t reserved)
{
	return reserved ? (double)fragmentation / (double)reserved : 0.0;
}

struct span {
	uint64_t address, bytes;
};

static int by_address(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->address < y->address ? -1 : x->address > y->address;
}

/* The lifetimes live at `at`, sorted by address. */
static struct span *live_sorted(const struct mt_lifetime *l, size_t n, uint64_t at, size_t *m)
{
	struct span *r = malloc((n ? n : 1) * sizeof(*r));
	size_t i, k = 0;

	if (!r)
		return NULL;
	for (i = 0; i < n; i++)
		if (l[i].bytes && mt_lifetime_live_at(&l[i], at))
			r[k++] = (struct span){ l[i].address, l[i].bytes };
	if (k)
		qsort(r, k, sizeof(*r), by_address);
	*m = k;
	return r;
}

/* Each segment of segs, split into the blocks that fall inside it and the
 * free space between them. */
static int assemble(struct mt_segmap *m, const struct span *segs, size_t nsegs,
                    const struct span *blocks, size_t nblocks)
{
	size_t i, j = 0;

	for (i = 0; i < nsegs; i++) {
		uint64_t pos = segs[i].address, end = segs[i].address + segs[i].bytes;

		if (mt_segmap_add_segment(m, segs[i].address, segs[i].bytes) < 0)
			return -ENOMEM;
		while (j < nblocks && blocks[j].address < segs[i].address)
			j++;
		for (; j < nblocks && blocks[j].address < end; j++) {
			uint64_t b0 = blocks[j].address > pos ? blocks[j].address : pos;
			uint64_t b1 = blocks[j].address + blocks[j].bytes;

			if (b1 > end)
				b1 = end;
			if (b1 <= b0)
				continue;
			if (mt_segmap_add_block(m, pos, b0 - pos, false) < 0 ||
			    mt_segmap_add_block(m, b0, b1 - b0, true) < 0)
				return -ENOMEM;
			pos = b1;
		}
		if (mt_segmap_add_block(m, pos, end - pos, false) < 0)
			return -ENOMEM;
	}
	return 0;
}

int mt_segmap_recorded(struct mt_segmap *m, const struct mt_lifetime *segs, size_t nsegs,
                       const struct mt_lifetime *blocks, size_t nblocks, uint64_t at)
{
	struct span *s, *b;
	size_t ns = 0, nb = 0;
	int rc;

	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "recorded (%s)",
	         segs ? "allocator segments" : "driver allocations");
	m->at = at;
	s = live_sorted(segs ? segs : blocks, segs ? nsegs : nblocks, at, &ns);
	b = live_sorted(blocks, nblocks, at, &nb);
	rc = s && b ? assemble(m, s, ns, b, nb) : -ENOMEM;
	free(s);
	free(b);
	if (rc < 0) {
		mt_segmap_release(m);
		return rc;
	}
	mt_segmap_finish(m);
	return 0;
}
