/* policy-test.h — helpers for the policy tests (tap.h style): a policy on a
 * fresh sim backend, and a walk that checks the segment/block layout
 * (blocks tile their segment in address order, segments add up to
 * reserved) while collecting the blocks for the test to look at. */
#ifndef MEMTRACE_TESTS_POLICY_TEST_H
#define MEMTRACE_TESTS_POLICY_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include "tap.h"
#include "memtrace-replay.h"

struct fixture {
	struct mt_backend *b;
	struct mt_policy *p;
};

/* A policy from spec on a sim backend of the given capacity; exits on failure. */
static inline struct fixture fixture_new(const char *spec, uint64_t capacity)
{
	struct fixture f = { NULL, NULL };
	char err[256] = "";

	if (mt_backend_create(&f.b, MT_BACKEND_SIM, 0, capacity, err, sizeof(err)) < 0 ||
	    mt_policy_create(&f.p, spec, f.b, err, sizeof(err)) < 0) {
		printf("Bail out! cannot create %s: %s\n", spec, err);
		exit(1);
	}
	return f;
}

static inline void fixture_free(struct fixture *f)
{
	mt_policy_destroy(f->p);
	mt_backend_destroy(f->b);
}

static inline struct mt_policy_stats pstats(const struct fixture *f)
{
	struct mt_policy_stats st;

	f->p->ops->stats(f->p, &st);
	return st;
}

static inline struct mt_backend_stats bstats(const struct fixture *f)
{
	struct mt_backend_stats st;

	mt_backend_get_stats(f->b, &st);
	return st;
}

static inline uint64_t xalloc(const struct fixture *f, uint64_t bytes, uint64_t stream)
{
	uint64_t a = 0;
	int rc = f->p->ops->alloc(f->p, bytes, stream, 0, &a);

	CHECK(rc == 0);
	return rc == 0 ? a : 0;
}

static inline void xfree(const struct fixture *f, uint64_t address, uint64_t stream)
{
	CHECK(f->p->ops->free(f->p, address, stream) == 0);
}

#define MAX_BLOCKS 256

/* The layout seen by walk. */
struct layout {
	struct mt_policy_block seg[MAX_BLOCKS];
	struct mt_policy_block blk[MAX_BLOCKS];
	size_t nseg, nblk;
	uint64_t seg_bytes; /* sum of segments */
	uint64_t next;      /* where the next block of the current segment must start */
	uint64_t seg_end;
	bool tiled; /* every segment exactly covered by its blocks */
};

static inline int layout_fn(void *data, bool is_segment, const struct mt_policy_block *b)
{
	struct layout *l = data;

	if (is_segment) {
		if (l->nseg && l->next != l->seg_end)
			l->tiled = false;
		if (l->nseg < MAX_BLOCKS)
			l->seg[l->nseg] = *b;
		l->nseg++;
		l->seg_bytes += b->bytes;
		l->next = b->address;
		l->seg_end = b->address + b->bytes;
		return 0;
	}
	if (b->address != l->next || b->address + b->bytes > l->seg_end)
		l->tiled = false;
	l->next = b->address + b->bytes;
	if (l->nblk < MAX_BLOCKS)
		l->blk[l->nblk] = *b;
	l->nblk++;
	return 0;
}

/* Walks the policy; checks tiling when check_tiling. */
static inline struct layout walk_layout(const struct fixture *f, bool check_tiling)
{
	struct layout l = { .tiled = true };

	CHECK(f->p->ops->walk(f->p, layout_fn, &l) == 0);
	if (l.nseg && l.next != l.seg_end)
		l.tiled = false;
	if (check_tiling)
		CHECK(l.tiled);
	return l;
}

#endif
