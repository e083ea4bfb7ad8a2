#include "config.h"

/* iter.c — the ordered walk over a trace's events: a k-way merge over the
 * chunks a query selects, in (ts, process, seq) order (docs/FORMAT.md
 * "Ordering"). Chunks are listed from the index, sorted by first_ts, and
 * decompressed only when the merge frontier reaches their first_ts, so only
 * the chunks whose time ranges overlap are in memory at once. */

#include <errno.h>
#include <stdlib.h>

#include "reader-private.h"

/* The decoded events of an open chunk still to be returned. */
struct cursor {
	struct mt_event *events;
	size_t capacity;
	size_t pos, end;
};

struct mt_iter {
	struct mt_reader *r;
	struct mt_query q;
	struct fmt_chunk_row *chunks; /* selected chunks by (first_ts, id) */
	size_t n_chunks, next_chunk;
	struct cursor *heap; /* min-heap on the cursors' next events */
	size_t heap_n;
	int error;           /* sticky: once a chunk is corrupt, every call says so */
	struct cursor spare; /* a finished chunk's array, reused by the next */
};

static int chunk_cmp(const void *a, const void *b)
{
	const struct fmt_chunk_row *x = a, *y = b;
	if (x->first_ts != y->first_ts)
		return x->first_ts < y->first_ts ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* The end (exclusive) of the window for a chunk of this process: the
 * query's, and for an incomplete trace the end of what is complete of the
 * process (FORMAT.md "Incomplete traces"). UINT64_MAX: no end. */
static uint64_t chunk_end(const struct mt_iter *it, uint32_t process)
{
	uint64_t to = it->q.to ? it->q.to : UINT64_MAX;
	uint64_t until = fmt_complete_until(it->r, process);
	return until < to ? until : to;
}

/* Appends the chunks of one kind the query selects. */
static int list_chunks(struct mt_iter *it, sqlite3_stmt *st, unsigned kind, size_t *cap)
{
	const struct mt_query *q = &it->q;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, kind);
	sqlite3_bind_int64(st, 2, q->device);
	sqlite3_bind_int64(st, 3, q->process);
	/* first_ts < to through the index (-1: no bound); values past
	 * INT64_MAX (stored negative) pass and are filtered below. */
	sqlite3_bind_int64(st, 4, q->to == 0 || q->to > INT64_MAX ? -1 : (int64_t)q->to);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct fmt_chunk_row c = {
			.id = sqlite3_column_int64(st, 0),
			.process = (uint32_t)sqlite3_column_int64(st, 1),
			.device = (uint32_t)sqlite3_column_int64(st, 2),
			.kind = kind,
			.first_ts = fmt_u64_from_sql(st, 3),
			.last_ts = fmt_u64_from_sql(st, 4),
			.count = fmt_u64_from_sql(st, 5),
			.codec = sqlite3_column_int64(st, 6),
		};
		uint64_t end = chunk_end(it, c.process);
		if (c.last_ts < q->from || (end != UINT64_MAX && c.first_ts >= end))
			continue;
		if (it->n_chunks == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			struct fmt_chunk_row *nc = realloc(it->chunks, *cap * sizeof(*nc));
			if (!nc)
				return mt_fail(it->r->message, FMT_MESSAGE_MAX, -ENOMEM,
				               "out of memory");
			it->chunks = nc;
		}
		it->chunks[it->n_chunks++] = c;
	}
	return rc == SQLITE_DONE ? 0
	                         : fmt_reader_sql_fail(it->r, rc, "cannot read the chunk index");
}

void mt_iter_free(struct mt_iter *it)
{
	if (!it)
		return;
	for (size_t i = 0; i < it->heap_n; i++)
		free(it->heap[i].events);
	free(it->spare.events);
	free(it->heap);
	free(it->chunks);
	free(it);
}

int mt_reader_iter(struct mt_reader *r, const struct mt_query *q, struct mt_iter **out)
{
	if (!out || fmt_reader_ready(r) < 0)
		return -EINVAL;
	*out = NULL;
	struct mt_iter *it = calloc(1, sizeof(*it));
	if (!it)
		return mt_fail(r->message, FMT_MESSAGE_MAX, -ENOMEM, "out of memory");
	it->r = r;
	if (q)
		it->q = *q;
	uint32_t kinds = it->q.kinds ? it->q.kinds : ~0u;
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(
	        r->db,
	        "SELECT id, process, device, first_ts, last_ts, count, codec"
	        " FROM chunks WHERE kind = ?1 AND (?2 = 0 OR device = ?2)"
	        " AND (?3 = 0 OR process = ?3) AND (?4 < 0 OR first_ts < ?4 OR first_ts < 0)",
	        -1, &st, NULL);
	int err = rc == SQLITE_OK ? 0 : fmt_reader_sql_fail(r, rc, "cannot read the chunk index");
	size_t cap = 0;
	for (unsigned k = 1; err == 0 && k <= MT_EVENT_KIND_MAX; k++)
		if (kinds & MT_KIND_BIT(k))
			err = list_chunks(it, st, k, &cap);
	sqlite3_finalize(st);
	if (err == 0 && it->n_chunks > 0) {
		qsort(it->chunks, it->n_chunks, sizeof(*it->chunks), chunk_cmp);
		it->heap = malloc(it->n_chunks * sizeof(*it->heap));
		if (!it->heap)
			err = mt_fail(r->message, FMT_MESSAGE_MAX, -ENOMEM, "out of memory");
	}
	if (err < 0) {
		mt_iter_free(it);
		return err;
	}
	*out = it;
	return 0;
}

/* Index of the first of n sorted events with ts >= t. */
static size_t lower_bound(const struct mt_event *e, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e[mid].ts < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Decodes a chunk into *cur, keeping only the events inside the window. */
static int open_chunk(struct mt_iter *it, const struct fmt_chunk_row *c, struct cursor *cur)
{
	int err = fmt_chunk_load(it->r, c, &it->spare.events, &it->spare.capacity);

	if (err < 0)
		return err;
	*cur = it->spare;
	it->spare = (struct cursor){ 0 };
	uint64_t end = chunk_end(it, c->process);
	cur->pos = lower_bound(cur->events, (size_t)c->count, it->q.from);
	cur->end = end == UINT64_MAX ? (size_t)c->count
	                             : lower_bound(cur->events, (size_t)c->count, end);
	return 0;
}

static int event_before(const struct mt_event *a, const struct mt_event *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->process != b->process)
		return a->process < b->process;
	return a->seq < b->seq;
}

static int cursor_before(const struct cursor *a, const struct cursor *b)
{
	return event_before(&a->events[a->pos], &b->events[b->pos]);
}

static void sift_down(struct mt_iter *it, size_t i)
{
	struct cursor *h = it->heap;
	size_t n = it->heap_n;
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < n && cursor_before(&h[l], &h[m]))
			m = l;
		if (l + 1 < n && cursor_before(&h[l + 1], &h[m]))
			m = l + 1;
		if (m == i)
			return;
		struct cursor t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void sift_up(struct mt_iter *it, size_t i)
{
	struct cursor *h = it->heap;
	while (i > 0 && cursor_before(&h[i], &h[(i - 1) / 2])) {
		struct cursor t = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

/* Keeps a finished cursor's array for the next chunk (the larger of it and
 * the spare one). */
static void recycle(struct mt_iter *it, struct cursor *done)
{
	if (done->capacity > it->spare.capacity) {
		struct cursor t = it->spare;
		it->spare = *done;
		*done = t;
	}
	free(done->events);
	*done = (struct cursor){ 0 };
}

/* Opens every pending chunk that could hold the next event. */
static int advance_frontier(struct mt_iter *it)
{
	while (it->next_chunk < it->n_chunks) {
		const struct fmt_chunk_row *c = &it->chunks[it->next_chunk];
		if (it->heap_n > 0) {
			const struct cursor *top = &it->heap[0];
			if (c->first_ts > top->events[top->pos].ts)
				return 0;
		}
		struct cursor cur;
		int err = open_chunk(it, c, &cur);
		if (err < 0)
			return err;
		it->next_chunk++;
		if (cur.pos == cur.end) {
			recycle(it, &cur);
			continue;
		}
		it->heap[it->heap_n++] = cur;
		sift_up(it, it->heap_n - 1);
	}
	return 0;
}

int mt_iter_next(struct mt_iter *it, struct mt_event *ev)
{
	if (!it || !ev)
		return -EINVAL;
	if (it->error)
		return it->error;
	int err = advance_frontier(it);
	if (err < 0) {
		it->error = err;
		return err;
	}
	if (it->heap_n == 0)
		return 0;
	struct cursor *top = &it->heap[0];
	*ev = top->events[top->pos++];
	if (top->pos == top->end) {
		recycle(it, top);
		it->heap[0] = it->heap[--it->heap_n];
	}
	/* With one chunk open (the usual case) the heap has nothing to do. */
	if (it->heap_n > 1)
		sift_down(it, 0);
	return 1;
}
