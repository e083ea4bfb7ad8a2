#include "config.h"

/* lifetimes.c — a layer's lifetimes and its peak of live bytes from the
 * trace (docs/FORMAT.md "Lifetimes"), by the streaming pairing of
 * pairing.c. A free without an alloc and an alloc never freed are ordinary
 * results; a second alloc at an address that is still live closes nothing:
 * the earlier allocation is reported never freed. */

#include <errno.h>
#include <stdlib.h>

#include "live-map-private.h"
#include "memtrace-common.h"
#include "reader-private.h"

/* Calls visit for every alloc/free event of `layer` the query selects, in
 * order; stops at the first negative return. */
static int walk(struct mt_reader *r, const struct mt_query *q, unsigned layer,
                int (*visit)(void *ctx, const struct mt_event *ev), void *ctx)
{
	struct mt_query aq = q ? *q : (struct mt_query){ 0 };
	aq.kinds = MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE);
	struct mt_iter *it;
	int err = mt_reader_iter(r, &aq, &it);
	if (err < 0)
		return err;
	struct mt_event ev;
	while ((err = mt_iter_next(it, &ev)) == 1)
		if (ev.alloc.layer == layer && (err = visit(ctx, &ev)) < 0)
			break;
	mt_iter_free(it);
	return err < 0 ? err : 0;
}

struct lifetimes_ctx {
	struct mt_pairing *pairing;
	uint64_t from; /* mt_reader_lifetimes_during: what ended by then is left out */
	struct mt_lifetime *out;
	size_t n, cap;
	int err;
};

/* Hands c's lifetimes over (err 0) or frees them, the pairing either way. */
static int hand_over(struct mt_reader *r, int err, struct lifetimes_ctx *c,
                     struct mt_lifetime **out, size_t *n)
{
	mt_pairing_free(c->pairing);
	if (err < 0) {
		free(c->out);
		if (err == -ENOMEM)
			mt_fail(r->message, FMT_MESSAGE_MAX, err, "out of memory");
		return err;
	}
	*out = c->out;
	*n = c->n;
	return 0;
}

/* A lifetime's index is its place in the output: born in that order. */
static int visit_lifetime(void *ctx, const struct mt_event *ev)
{
	struct lifetimes_ctx *c = ctx;
	struct mt_pair_step st;
	int rc = mt_pairing_step(c->pairing, ev, &st);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (st.kind == MT_PAIR_DIED) {
		c->out[st.live.index] = st.live.l;
		return 0;
	}
	if (mt_array_grow((void **)&c->out, &c->cap, c->n, sizeof(*c->out)) < 0)
		return -ENOMEM;
	c->out[c->n++] = st.live.l;
	return 0;
}

int mt_reader_lifetimes(struct mt_reader *r, const struct mt_query *q, unsigned layer,
                        struct mt_lifetime **out, size_t *n)
{
	if (!out || !n || fmt_reader_ready(r) < 0)
		return -EINVAL;
	struct lifetimes_ctx c = { .pairing = mt_pairing_new() };
	int err = c.pairing ? walk(r, q, layer, visit_lifetime, &c) : -ENOMEM;
	return hand_over(r, err, &c, out, n);
}

static int keep(struct lifetimes_ctx *c, const struct mt_lifetime *l)
{
	if (mt_array_grow((void **)&c->out, &c->cap, c->n, sizeof(*c->out)) < 0)
		return -ENOMEM;
	c->out[c->n++] = *l;
	return 0;
}

/* Keeps each lifetime that ended after `from`; the live ones come at the
 * end (keep_live). */
static int visit_during(void *ctx, const struct mt_event *ev)
{
	struct lifetimes_ctx *c = ctx;
	struct mt_pair_step st;
	int rc = mt_pairing_step(c->pairing, ev, &st);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (st.kind == MT_PAIR_BORN || st.live.l.end <= c->from)
		return 0;
	return keep(c, &st.live.l);
}

static void keep_live(void *data, struct mt_live *live)
{
	struct lifetimes_ctx *c = data;

	if (!c->err)
		c->err = keep(c, &live->l);
}

int mt_reader_lifetimes_during(struct mt_reader *r, const struct mt_query *q, unsigned layer,
                               uint64_t from, uint64_t to, struct mt_lifetime **out, size_t *n)
{
	if (!out || !n || from > to || fmt_reader_ready(r) < 0)
		return -EINVAL;
	struct mt_query wq = q ? *q : (struct mt_query){ 0 };
	struct lifetimes_ctx c = { .pairing = mt_pairing_new(), .from = from };
	wq.from = 0;
	wq.to = to == MT_TIME_UNKNOWN ? 0 : to + 1;
	int err = c.pairing ? walk(r, &wq, layer, visit_during, &c) : -ENOMEM;
	if (err == 0) {
		mt_pairing_each(c.pairing, keep_live, &c);
		err = c.err;
	}
	return hand_over(r, err, &c, out, n);
}

struct peak_ctx {
	struct fmt_live_map live; /* value: bytes */
	uint64_t bytes, peak, peak_ts;
};

/* As in the lifetimes (pairing.c), a free without an alloc counts nowhere,
 * and an allocation an alloc at its address strands stays live (and
 * counted) to the end. */
static int visit_peak(void *ctx, const struct mt_event *ev)
{
	struct peak_ctx *c = ctx;
	struct fmt_live_slot *s;

	if (fmt_live_map_reserve(&c->live) < 0)
		return -ENOMEM;
	s = fmt_live_map_slot(&c->live, ev->process, ev->device, ev->alloc.address);
	if (ev->kind == MT_EVENT_FREE) {
		if (s->used) {
			c->bytes -= s->value;
			fmt_live_map_remove(&c->live, s);
		}
		return 0;
	}
	if (s->used)
		s->value = ev->alloc.bytes;
	else
		fmt_live_map_take(&c->live, s, ev->process, ev->device, ev->alloc.address,
		                  ev->alloc.bytes);
	c->bytes += ev->alloc.bytes;
	if (c->bytes > c->peak) {
		c->peak = c->bytes;
		c->peak_ts = ev->ts;
	}
	return 0;
}

int mt_reader_peak_live(struct mt_reader *r, const struct mt_query *q, unsigned layer,
                        uint64_t *peak_bytes, uint64_t *peak_ts)
{
	if (!peak_bytes || !peak_ts || fmt_reader_ready(r) < 0)
		return -EINVAL;
	struct peak_ctx c = { .peak_ts = MT_TIME_UNKNOWN };
	int err = walk(r, q, layer, visit_peak, &c);
	fmt_live_map_release(&c.live);
	if (err == -ENOMEM)
		mt_fail(r->message, FMT_MESSAGE_MAX, err, "out of memory");
	if (err < 0)
		return err;
	*peak_bytes = c.peak;
	*peak_ts = c.peak_ts;
	return 0;
}

int mt_reader_request_layer(struct mt_reader *r, unsigned *layer)
{
	if (!layer || fmt_reader_ready(r) < 0)
		return -EINVAL;
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(r->db,
	                            "SELECT 1 FROM chunks WHERE kind = ?1 AND (layers & ?2) <> 0"
	                            " LIMIT 1",
	                            -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int(st, 1, MT_EVENT_ALLOC);
		sqlite3_bind_int(st, 2, 1 << MT_LAYER_REQUEST);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return fmt_reader_sql_fail(r, rc, "cannot read the chunk index");
	*layer = rc == SQLITE_ROW ? MT_LAYER_REQUEST : MT_LAYER_DRIVER;
	return 0;
}
