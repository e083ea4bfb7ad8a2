/* stitch.c — policy `stitch`: GMLake-style virtual memory stitching.
 *
 * Models the allocator of "GMLake: Efficient and Transparent GPU Memory
 * Defragmentation for Large-scale DNN Training with Virtual Memory
 * Stitching" (Guo et al., ASPLOS 2024), which replaces the large-request
 * path of PyTorch's caching allocator with blocks of physical 2 MiB chunks
 * mapped through the CUDA VMM API, and serves a request no single free
 * block fits by stitching several free blocks' physical chunks into one new
 * contiguous virtual range. Our model of it:
 * - physical memory is pages of the backend's granularity (2 MiB), each its
 *   own handle (mt_backend_mem_create), so blocks can be split and stitched
 *   at any page boundary;
 * - a block is a VA reservation (mt_backend_va_reserve) with its pages
 *   mapped in order; large requests (over 1 MiB) round up to whole pages;
 * - allocation of n pages on a stream, in the paper's order:
 *   1. best fit: the smallest free block of the stream with >= n pages; an
 *      exact fit is used as is, a larger one is split (its tail pages move to
 *      a new reservation and stay free);
 *   2. stitch: when no single block fits but the stream's free blocks hold
 *      >= n pages together, take them largest first (splitting the last one)
 *      and map their pages into a new reservation of n pages; the blocks they
 *      came from are unmapped and their reservations freed;
 *   3. grow: otherwise stitch every free block of the stream with new pages
 *      for the rest, so new physical memory is only what is missing;
 *   4. out of memory: free blocks of the other streams and the small pool's
 *      cache are released (unmapped, pages released) and step 1 retried.
 * - freed blocks are cached whole (no merging: stitching makes adjacency
 *   irrelevant); empty_cache releases every free block.
 * - small requests (<= 1 MiB after PyTorch's rounding) go to an embedded
 *   `caching` allocator (its small pool: 2 MiB segments), as GMLake keeps
 *   PyTorch's path for them.
 *
 * Where it differs from GMLake: GMLake keeps the primitive blocks (pBlocks)
 * mapped at their own addresses after stitching and caches the stitched
 * block (sBlock) for reuse by later requests of the same size; here a
 * stitched block owns its pages and the pieces' reservations are freed, so
 * physical memory (what reserved measures) is the same, while map/unmap
 * counts are higher than GMLake's. Parameters: none. Left out: GMLake's
 * sBlock cache limits and its small-block handling details.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrmap-private.h"
#include "block-pool-private.h"
#include "policy-private.h"
#include "rbtree-private.h"
#include "sizebins-private.h"

extern const struct mt_policy_ops rp_policy_stitch;

/* A VA reservation; blocks split from one block share it, and its array of
 * the handles mapped at va, va + page, ... (a block's pages are a part of
 * it, so splitting a block copies none). */
struct vres {
	uint64_t va, bytes;
	uint64_t seq;  /* creation number */
	unsigned refs; /* blocks inside it */
	uint64_t *pages;
};

struct vblock {
	struct rp_rb_node node; /* in the free bins while free */
	uint64_t stream;
	uint64_t npages;                    /* pages mapped at va, va + page, ... */
	uint64_t seq;                       /* its reservation's creation number */
	uint64_t va;                        /* its first page */
	struct vblock *prev_all, *next_all; /* every block */
	struct vres *res;                   /* the reservation it lies in */
	uint64_t *pages;                    /* their handles: in res->pages */
	uint64_t requested;
	bool allocated;
};

struct stream_pages {
	uint64_t stream, pages;
};

struct stitch {
	struct mt_policy base;
	struct mt_backend *b;
	struct mt_policy *small; /* `caching`, for requests <= 1 MiB */
	uint64_t page;
	struct rp_sizebins free_bins; /* (stream, npages, seq, va) */
	struct rp_addrmap live;       /* va -> struct vblock * */
	/* free pages per stream (streams are few), numbered as free_bins
	 * numbers them (stream_slot prepares a stream's bins and its slot
	 * together) */
	struct stream_pages *streams;
	size_t nstreams;
	struct vblock *all;
	struct vblock *spare; /* dropped records, linked by next_all, to reuse */
	uint64_t nblocks, pages_held, next_seq;
	uint64_t large_allocated, requested, cache_flushes; /* large requests */
};

static const struct vblock *node_vb(const struct rp_rb_node *n)
{
	return rp_rb_entry(n, const struct vblock, node);
}

static struct vblock *vb(struct rp_rb_node *n)
{
	return n ? rp_rb_entry(n, struct vblock, node) : NULL;
}

static int cmp_free(const struct rp_rb_node *a, const struct rp_rb_node *b)
{
	const struct vblock *x = node_vb(a), *y = node_vb(b);

	/* the address, as (reservation creation number, address) */
	return rp_cmp4(x->stream, y->stream, x->npages, y->npages, x->seq, y->seq, x->va, y->va);
}

/* A search key of the free bins' order: a block's ordering fields alone. */
struct vkey {
	uint64_t stream, npages, seq, va;
};

static int key_free(const void *key, const struct rp_rb_node *n)
{
	const struct vkey *k = key;
	const struct vblock *y = node_vb(n);

	return rp_cmp4(k->stream, y->stream, k->npages, y->npages, k->seq, y->seq, k->va, y->va);
}

/* ---- blocks ---- */

/* The free pages of a stream: a slot found by a linear search over the
 * few streams, added when first needed (NULL: out of host memory). */
static struct stream_pages *stream_slot(struct stitch *p, uint64_t stream)
{
	struct stream_pages *v;

	for (size_t i = 0; i < p->nstreams; i++)
		if (p->streams[i].stream == stream)
			return &p->streams[i];
	if (rp_sizebins_prepare(&p->free_bins, stream) < 0)
		return NULL;
	v = realloc(p->streams, (p->nstreams + 1) * sizeof(*v));
	if (!v)
		return NULL;
	p->streams = v;
	v[p->nstreams] = (struct stream_pages){ stream, 0 };
	return &v[p->nstreams++];
}

/* The free bins, with the free pages of each stream kept alongside (the
 * stream's slot and bins exist: alloc_large made them before any block of
 * the stream). */
static void free_insert(struct stitch *p, struct vblock *v)
{
	rp_sizebins_insert(&p->free_bins, &v->node, v->stream, v->npages, cmp_free);
	p->streams[rp_sizebins_stream_number(&v->node)].pages += v->npages;
}

static void free_erase(struct stitch *p, struct vblock *v)
{
	p->streams[rp_sizebins_stream_number(&v->node)].pages -= v->npages;
	rp_sizebins_erase(&p->free_bins, &v->node);
}

/* Unmaps pages [from, npages) of v; they stay held (the caller moves or
 * releases them). */
static int unmap_tail(struct stitch *p, struct vblock *v, uint64_t from)
{
	int rc = 0;

	if (v->npages > from)
		rc = mt_backend_unmap_pages(p->b, v->va + from * p->page, p->page,
		                            v->npages - from);
	if (rc == 0)
		v->npages = from;
	return rc;
}

/* Drops a reference to a reservation, freeing it with the last. */
static int res_put(struct stitch *p, struct vres *r)
{
	int rc = 0;

	if (--r->refs == 0) {
		rc = mt_backend_va_free(p->b, r->va, r->bytes);
		free(r->pages);
		free(r);
	}
	return rc;
}

static void free_records(struct vblock *v)
{
	while (v) {
		struct vblock *next = v->next_all;

		free(v);
		v = next;
	}
}

/* A block record for npages already mapped at va inside reservation r
 * (whose handles they are). */
static int block_record(struct stitch *p, struct vres *r, uint64_t va, uint64_t stream,
                        uint64_t npages, struct vblock **out)
{
	struct vblock *v = p->spare;

	if (v)
		p->spare = v->next_all;
	else if (!(v = rp_rb_record_new(sizeof(*v)))) /* a descent step reads one line */
		return -ENOMEM;
	/* field by field: a compound literal would zero the record first
	 * with a `rep stos`, which costs more than the stores */
	v->node = (struct rp_rb_node){ 0 };
	v->stream = stream;
	v->npages = npages;
	v->seq = r->seq;
	v->va = va;
	v->prev_all = NULL;
	v->next_all = p->all;
	v->res = r;
	v->pages = r->pages + (va - r->va) / p->page;
	v->requested = 0;
	v->allocated = false;
	r->refs++;
	if (p->all)
		p->all->prev_all = v;
	p->all = v;
	p->nblocks++;
	*out = v;
	return 0;
}

/* A new block of npages on a fresh reservation, mapping handles (an array
 * from malloc, which the reservation takes over, or frees on failure). */
static int block_new(struct stitch *p, uint64_t stream, uint64_t *handles, uint64_t npages,
                     struct vblock **out)
{
	struct vres *r = calloc(1, sizeof(*r));
	int rc;

	if (!r) {
		free(handles);
		return -ENOMEM;
	}
	r->pages = handles;
	r->bytes = npages * p->page;
	r->seq = p->next_seq++;
	rc = mt_backend_va_reserve(p->b, r->bytes, &r->va);
	if (rc < 0) {
		free(handles);
		free(r);
		return rc;
	}
	rc = mt_backend_map_pages(p->b, r->va, p->page, handles, npages);
	if (rc == 0 && (rc = block_record(p, r, r->va, stream, npages, out)) < 0)
		mt_backend_unmap_pages(p->b, r->va, p->page, npages);
	if (rc < 0) {
		mt_backend_va_free(p->b, r->va, r->bytes);
		free(handles);
		free(r);
	}
	return rc;
}

/* Unmaps v (in no bin) and frees its record, and its reservation with the
 * last block in it; its pages are not released (they moved to another
 * block, or were released). */
static int block_drop(struct stitch *p, struct vblock *v)
{
	int rc = unmap_tail(p, v, 0);

	if (rc == 0)
		rc = res_put(p, v->res);
	if (rc < 0)
		return rc;
	if (v->prev_all)
		v->prev_all->next_all = v->next_all;
	else
		p->all = v->next_all;
	if (v->next_all)
		v->next_all->prev_all = v->prev_all;
	p->nblocks--;
	v->next_all = p->spare;
	p->spare = v;
	return 0;
}

/* Gives v's pages back to the backend and drops it. */
static int block_release(struct stitch *p, struct vblock *v)
{
	uint64_t n = v->npages;
	int rc = unmap_tail(p, v, 0);

	for (uint64_t i = 0; rc == 0 && i < n; i++)
		rc = mt_backend_mem_release(p->b, v->pages[i]);
	if (rc < 0)
		return rc;
	p->pages_held -= n;
	return block_drop(p, v);
}

/* Splits free block v (in no bin) after keep pages: the tail becomes a new
 * free block of the same stream, in place (same reservation, no remapping). */
static int split(struct stitch *p, struct vblock *v, uint64_t keep)
{
	struct vblock *t;
	int rc = block_record(p, v->res, v->va + keep * p->page, v->stream, v->npages - keep, &t);

	if (rc < 0)
		return rc;
	v->npages = keep;
	free_insert(p, t);
	return 0;
}

/* ---- allocation ---- */

/* The counter the driver follows: large blocks and the small pool's. */
static void sum_allocated(struct stitch *p)
{
	p->base.allocated = p->large_allocated + p->small->allocated;
}

static int take(struct stitch *p, struct vblock *v, uint64_t requested, uint64_t *address)
{
	int rc = rp_addrmap_put(&p->live, v->va, (uint64_t)(uintptr_t)v);

	if (rc < 0) {
		free_insert(p, v);
		return rc;
	}
	v->allocated = true;
	v->requested = requested;
	p->large_allocated += v->npages * p->page;
	sum_allocated(p);
	p->requested += requested;
	*address = v->va;
	return 0;
}

/* The stream's largest free block (the last of its bins). */
static struct vblock *largest_free(struct stitch *p, uint64_t stream)
{
	const struct rp_sizebins_stream *g = rp_sizebins_find(&p->free_bins, stream);

	return g ? vb(rp_sizebins_last_of_rank(&p->free_bins, g->rank)) : NULL;
}

/* Steps 2 and 3: stitches the stream's free blocks, largest first, and
 * `fresh` new pages into one block of need pages. */
static int stitch_blocks(struct stitch *p, uint64_t stream, uint64_t need, uint64_t fresh,
                         struct vblock **out)
{
	uint64_t *handles = malloc(need * sizeof(*handles));
	uint64_t got = 0, created = 0;
	int rc = 0;

	if (!handles)
		return -ENOMEM;
	for (; created < fresh; created++) {
		rc = mt_backend_mem_create(p->b, p->page, &handles[created]);
		if (rc < 0)
			goto undo;
	}
	p->pages_held += fresh;
	got = fresh;
	while (got < need) {
		struct vblock *v = largest_free(p, stream);
		uint64_t use;

		if (!v) { /* the free page count says otherwise */
			rc = -EFAULT;
			break;
		}
		free_erase(p, v);
		use = v->npages < need - got ? v->npages : need - got;
		if (use < v->npages && (rc = split(p, v, use)) < 0)
			break;
		memcpy(handles + got, v->pages, use * sizeof(*handles));
		got += use;
		if ((rc = block_drop(p, v)) < 0)
			break;
	}
	if (rc == 0)
		return block_new(p, stream, handles, need, out);
	free(handles);
	return rc; /* pages of a failed stitch are lost to the model: a backend error */
undo:
	while (created--)
		mt_backend_mem_release(p->b, handles[created]);
	free(handles);
	return rc;
}

/* Releases the free blocks of every stream (all) or of the streams other
 * than `stream`, and the small pool's cache. */
static int release_free(struct stitch *p, bool all, uint64_t stream)
{
	struct rp_rb_node *n = rp_sizebins_first(&p->free_bins);

	while (n) {
		struct vblock *v = vb(n);
		int rc;

		n = rp_sizebins_next(&p->free_bins, n);
		if (!all && v->stream == stream)
			continue;
		free_erase(p, v);
		rc = block_release(p, v);
		if (rc < 0)
			return rc;
	}
	return p->small->ops->empty_cache(p->small);
}

static int alloc_large(struct stitch *p, uint64_t need, uint64_t stream, struct vblock **out)
{
	struct vkey key = { .stream = stream, .npages = need };
	struct vblock *v = vb(rp_sizebins_lower_bound(&p->free_bins, stream, need, &key, key_free));
	struct stream_pages *sp = stream_slot(p, stream);
	uint64_t free_pages;
	int rc;

	if (!sp)
		return -ENOMEM;
	if (v && v->stream == stream) { /* 1. best fit */
		free_erase(p, v);
		if (v->npages > need && (rc = split(p, v, need)) < 0)
			return rc;
		*out = v;
		return 0;
	}
	free_pages = sp->pages;
	if (free_pages >= need) /* 2. stitch */
		return stitch_blocks(p, stream, need, 0, out);
	return stitch_blocks(p, stream, need, need - free_pages, out); /* 3. grow */
}

static int stitch_alloc(struct mt_policy *pol, uint64_t bytes, uint64_t stream, size_t index,
                        uint64_t *address)
{
	struct stitch *p = (struct stitch *)pol;
	uint64_t need;
	struct vblock *v;
	int rc;

	if (bytes <= TORCH_SMALL_SIZE) {
		rc = p->small->ops->alloc(p->small, bytes, stream, index, address);
		sum_allocated(p);
		return rc;
	}
	need = (bytes + p->page - 1) / p->page;
	rc = alloc_large(p, need, stream, &v);
	if (rc == -ENOMEM) { /* 4. release other streams' cache and retry */
		p->cache_flushes++;
		rc = release_free(p, false, stream);
		if (rc == 0)
			rc = alloc_large(p, need, stream, &v);
	}
	return rc < 0 ? rc : take(p, v, bytes, address);
}

static int stitch_free(struct mt_policy *pol, uint64_t address, uint64_t stream)
{
	struct stitch *p = (struct stitch *)pol;
	struct vblock *v;
	uint64_t val;

	if (!rp_addrmap_remove(&p->live, address, &val)) {
		int rc = p->small->ops->free(p->small, address, stream);

		sum_allocated(p);
		return rc;
	}
	v = (struct vblock *)(uintptr_t)val;
	v->allocated = false;
	p->large_allocated -= v->npages * p->page;
	sum_allocated(p);
	p->requested -= v->requested;
	free_insert(p, v);
	return 0;
}

static int stitch_empty_cache(struct mt_policy *pol)
{
	return release_free((struct stitch *)pol, true, 0);
}

static int stitch_walk(struct mt_policy *pol, mt_policy_walk_fn fn, void *data)
{
	struct stitch *p = (struct stitch *)pol;

	for (const struct vblock *v = p->all; v; v = v->next_all) {
		struct mt_policy_block blk = { v->va, v->npages * p->page, v->stream, false };
		int rc = fn(data, true, &blk);

		blk.allocated = v->allocated;
		if (rc || (rc = fn(data, false, &blk)))
			return rc;
	}
	return p->small->ops->walk(p->small, fn, data);
}

static void stitch_stats(struct mt_policy *pol, struct mt_policy_stats *st)
{
	struct stitch *p = (struct stitch *)pol;
	uint64_t largest = 0;

	p->small->ops->stats(p->small, st);
	/* the largest free block: the largest of some stream */
	for (unsigned r = 0; r < p->free_bins.n; r++) {
		struct rp_rb_node *n = rp_sizebins_last_of_rank(&p->free_bins, r);

		if (n && node_vb(n)->npages * p->page > largest)
			largest = node_vb(n)->npages * p->page;
	}
	st->allocated += p->large_allocated;
	st->requested += p->requested;
	st->reserved += p->pages_held * p->page;
	st->segments += p->nblocks;
	if (largest > st->largest_free)
		st->largest_free = largest;
	st->cache_flushes += p->cache_flushes;
}

static void stitch_destroy(struct mt_policy *pol)
{
	struct stitch *p = (struct stitch *)pol;

	if (!p)
		return;
	while (p->all)
		if (block_release(p, p->all) < 0)
			break;
	free_records(p->all); /* left by a failed release */
	free_records(p->spare);
	if (p->small)
		p->small->ops->destroy(p->small);
	rp_addrmap_release(&p->live);
	rp_sizebins_release(&p->free_bins);
	free(p->streams);
	free(p);
}

static int stitch_create(struct mt_policy **out, struct mt_backend *b, const char *params,
                         char *err, size_t errlen)
{
	int rc = rp_params_parse("stitch", params, NULL, 0, err, errlen);
	struct stitch *p;

	if (rc < 0)
		return rc;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->base.ops = &rp_policy_stitch;
	p->b = b;
	p->page = mt_backend_granularity(b);
	rc = mt_policy_create(&p->small, "caching", b, err, errlen);
	if (rc < 0) {
		free(p);
		return rc;
	}
	*out = &p->base;
	return 0;
}

const struct mt_policy_ops rp_policy_stitch = {
	.name = "stitch",
	.summary = "GMLake-style stitching of free 2 MiB VMM pages into new virtual ranges",
	.flags = MT_POLICY_NEEDS_VMM,
	.create = stitch_create,
	.alloc = stitch_alloc,
	.free = stitch_free,
	.empty_cache = stitch_empty_cache,
	.walk = stitch_walk,
	.stats = stitch_stats,
	.destroy = stitch_destroy,
};
