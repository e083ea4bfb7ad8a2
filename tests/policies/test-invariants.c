/* test-invariants.c — every online policy of the registry against random
 * request streams on the sim backend: live blocks never overlap, every
 * request's block starts at the address returned and holds its bytes,
 * reserved >= allocated >= requested, requested equals what the test holds
 * live, the policy's reserved equals what the backend holds, allocated
 * returns to 0 after all frees, stats count the segments walk shows, empty_cache leaves nothing
 * reserved, and destroy gives everything back. Run once with room to spare and once at a tight
 * capacity where requests fail (-ENOMEM) and the OOM paths run. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "policy-test.h"

#define EVENTS 12000
#define MAX_LIVE 400

struct live {
	uint64_t addr, bytes, stream;
};

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Sizes spread over 1 B .. 64 MiB, log-uniform, with repeats of a few
 * common sizes as real traces have. */
static uint64_t random_size(void)
{
	static const uint64_t common[] = { 4 * MiB, 512, 3 * MiB + 4096, 16 * MiB, 800 * KiB };
	uint64_t r = next_rand();

	if (r % 3 == 0)
		return common[(r >> 8) % 5];
	return 1 + (next_rand() % (1ull << (1 + (r >> 16) % 26)));
}

struct walk_all {
	struct mt_policy_block *blk;
	size_t n, cap;
	struct mt_policy_block *seg;
	size_t nseg, segcap;
};

static int collect(void *data, bool is_segment, const struct mt_policy_block *b)
{
	struct walk_all *w = data;
	struct mt_policy_block **v = is_segment ? &w->seg : &w->blk;
	size_t *n = is_segment ? &w->nseg : &w->n, *cap = is_segment ? &w->segcap : &w->cap;

	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 256;
		*v = realloc(*v, *cap * sizeof(**v));
		if (!*v)
			exit(1);
	}
	(*v)[(*n)++] = *b;
	return 0;
}

static int by_address(const void *a, const void *b)
{
	const struct mt_policy_block *x = a, *y = b;

	return (x->address > y->address) - (x->address < y->address);
}

/* No two of v overlap; returns the number that do. */
static int overlaps(struct mt_policy_block *v, size_t n)
{
	int bad = 0;

	if (n < 2)
		return 0;
	qsort(v, n, sizeof(*v), by_address);
	for (size_t i = 1; i < n; i++)
		bad += v[i - 1].address + v[i - 1].bytes > v[i].address;
	return bad;
}

static const struct mt_policy_block *find_block(const struct walk_all *w, uint64_t addr)
{
	size_t lo = 0, hi = w->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (w->blk[mid].address < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->n && w->blk[lo].address == addr ? &w->blk[lo] : NULL;
}

static void check_state(const char *name, const struct fixture *f, const struct live *live,
                        size_t nlive, uint64_t requested)
{
	struct walk_all w = { 0 };
	struct mt_policy_stats st = pstats(f);
	struct mt_policy_block *alloc_only;
	size_t nalloc = 0;
	int bad;

	CHECK(f->p->ops->walk(f->p, collect, &w) == 0);
	alloc_only = malloc((w.n + 1) * sizeof(*alloc_only));
	for (size_t i = 0; i < w.n; i++)
		if (w.blk[i].allocated)
			alloc_only[nalloc++] = w.blk[i];
	bad = overlaps(alloc_only, nalloc) + overlaps(w.seg, w.nseg);
	if (bad)
		fprintf(stderr, "%s: %d overlapping blocks or segments\n", name, bad);
	CHECK(bad == 0);
	CHECK(nalloc == nlive);
	if (nalloc)
		memcpy(w.blk, alloc_only, nalloc * sizeof(*alloc_only));
	w.n = nalloc;
	for (size_t i = 0; i < nlive; i++) {
		const struct mt_policy_block *b = find_block(&w, live[i].addr);

		CHECK(b && b->bytes >= live[i].bytes);
	}
	CHECK(st.reserved >= st.allocated);
	CHECK(st.allocated >= st.requested);
	CHECK(st.requested == requested);
	CHECK(st.segments == w.nseg);
	CHECK(st.reserved == bstats(f).reserved);
	if (failures)
		fprintf(stderr, "%s: state check failed\n", name);
	free(alloc_only);
	free(w.blk);
	free(w.seg);
}

static void run(const struct mt_policy_ops *ops, uint64_t capacity)
{
	struct fixture f = fixture_new(ops->name, capacity);
	struct live live[MAX_LIVE];
	size_t nlive = 0;
	uint64_t requested = 0, ooms = 0;
	int before = failures;

	for (int i = 0; i < EVENTS && failures == before; i++) {
		bool do_free = nlive == MAX_LIVE || (nlive > 0 && next_rand() % 100 < 48);

		if (do_free) {
			size_t k = next_rand() % nlive;

			CHECK(f.p->ops->free(f.p, live[k].addr, live[k].stream) == 0);
			requested -= live[k].bytes;
			live[k] = live[--nlive];
		} else {
			struct live l = { 0, random_size(), next_rand() % 3 };
			int rc = f.p->ops->alloc(f.p, l.bytes, l.stream, 0, &l.addr);

			CHECK(rc == 0 || rc == -ENOMEM);
			if (rc == 0) {
				live[nlive++] = l;
				requested += l.bytes;
			} else {
				ooms++;
			}
		}
		if (i < 3000 || i % 61 == 0)
			check_state(ops->name, &f, live, nlive, requested);
	}
	if (capacity < GiB)
		CHECK(ooms > 0); /* the tight run does reach its OOM paths */
	else
		CHECK(ooms == 0);
	if (capacity < GiB) {
		/* destroy with blocks live: everything goes back */
		mt_policy_destroy(f.p);
		CHECK(bstats(&f).reserved == 0);
		mt_backend_destroy(f.b);
		return;
	}
	while (nlive) {
		nlive--;
		CHECK(f.p->ops->free(f.p, live[nlive].addr, live[nlive].stream) == 0);
		requested -= live[nlive].bytes;
	}
	check_state(ops->name, &f, live, 0, 0);
	CHECK(pstats(&f).allocated == 0 && pstats(&f).requested == 0);
	CHECK(f.p->ops->empty_cache(f.p) == 0);
	CHECK(pstats(&f).reserved == 0 && bstats(&f).reserved == 0);
	if (failures != before)
		fprintf(stderr, "policy %s (capacity %llu MiB) failed\n", ops->name,
		        (unsigned long long)(capacity / MiB));
	fixture_free(&f);
}

int main(void)
{
	const struct mt_policy_ops *const *list = mt_policy_list();
	int tested = 0;

	for (size_t i = 0; list[i]; i++) {
		if (list[i]->flags & MT_POLICY_OFFLINE)
			continue;
		run(list[i], 64 * GiB);
		run(list[i], 160 * MiB);
		tested++;
	}
	CHECK(tested >= 5);
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	return failures ? 1 : 0;
}
