#include "config.h"

/* lifetimes.c — pairs alloc and free events of one layer by (process,
 * device, address) into lifetimes, and computes peak live bytes
 * (docs/FORMAT.md "Lifetimes"). A free without an alloc and an alloc never freed
 * are ordinary results; a second alloc at an address that is still live
 * closes nothing: the earlier allocation is reported never freed. */

#include <errno.h>
#include <stdlib.h>

#include "reader-private.h"

/* Open-addressing map from (process, device, address) to a value, with
 * backward-shift deletion. */
struct live_slot {
	uint64_t address;
	uint64_t value;
	uint32_t process;
	uint32_t device;
	int used;
};

struct live_map {
	struct live_slot *slots;
	size_t cap, n;
};

static size_t slot_hash(const struct mt_event *ev, size_t mask)
{
	uint64_t h =
	        ev->alloc.address ^ ((uint64_t)ev->process << 40) ^ ((uint64_t)ev->device << 20);
	h *= 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 17) & mask;
}

static int same_key(const struct live_slot *s, const struct mt_event *ev)
{
	return s->address == ev->alloc.address && s->process == ev->process &&
	       s->device == ev->device;
}

/* The slot holding ev's key, or the empty slot where it would go. */
static struct live_slot *map_slot(struct live_map *m, const struct mt_event *ev)
{
	size_t mask = m->cap - 1;
	for (size_t i = slot_hash(ev, mask);; i = (i + 1) & mask)
		if (!m->slots[i].used || same_key(&m->slots[i], ev))
			return &m->slots[i];
}

static int map_reserve(struct live_map *m)
{
	if ((m->n + 1) * 2 <= m->cap)
		return 0;
	struct live_map bigger = { .cap = m->cap ? m->cap * 2 : 1024 };
	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		const struct live_slot *s = &m->slots[i];
		if (!s->used)
			continue;
		struct mt_event key = { .process = s->process, .device = s->device };
		key.alloc.address = s->address;
		*map_slot(&bigger, &key) = *s;
	}
	bigger.n = m->n;
	free(m->slots);
	*m = bigger;
	return 0;
}

static void map_remove(struct live_map *m, struct live_slot *s)
{
	size_t mask = m->cap - 1;
	size_t hole = (size_t)(s - m->slots);
	m->slots[hole].used = 0;
	m->n--;
	for (size_t i = (hole + 1) & mask; m->slots[i].used; i = (i + 1) & mask) {
		struct mt_event key = { .process = m->slots[i].process,
			                .device = m->slots[i].device };
		key.alloc.address = m->slots[i].address;
		size_t home = slot_hash(&key, mask);
		/* Move slot i into the hole unless its home lies in (hole, i]. */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			m->slots[hole] = m->slots[i];
			m->slots[i].used = 0;
			hole = i;
		}
	}
}

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
	struct live_map live; /* value: index into out */
	struct mt_lifetime *out;
	size_t n, cap;
};

static struct mt_lifetime *push_lifetime(struct lifetimes_ctx *c)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 1024;
		struct mt_lifetime *o = realloc(c->out, cap * sizeof(*o));
		if (!o)
			return NULL;
		c->out = o;
		c->cap = cap;
	}
	return &c->out[c->n++];
}

static int visit_lifetime(void *ctx, const struct mt_event *ev)
{
	struct lifetimes_ctx *c = ctx;
	if (map_reserve(&c->live) < 0)
		return -ENOMEM;
	struct live_slot *s = map_slot(&c->live, ev);
	if (ev->kind == MT_EVENT_FREE && s->used) {
		struct mt_lifetime *l = &c->out[s->value];
		l->end = ev->ts;
		l->reuse_delay = ev->alloc.reuse_delay;
		l->flags &= ~(uint32_t)MT_LIFETIME_NO_FREE;
		map_remove(&c->live, s);
		return 0;
	}
	struct mt_lifetime *l = push_lifetime(c);
	if (!l)
		return -ENOMEM;
	*l = (struct mt_lifetime){
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
	if (ev->kind == MT_EVENT_FREE) {
		l->start = MT_TIME_UNKNOWN;
		l->end = ev->ts;
		l->reuse_delay = ev->alloc.reuse_delay;
		l->flags = MT_LIFETIME_NO_ALLOC;
		return 0;
	}
	/* An alloc at a live address replaces the earlier one, which keeps
	 * its NO_FREE flag. */
	if (!s->used) {
		*s = (struct live_slot){ .address = ev->alloc.address,
			                 .process = ev->process,
			                 .device = ev->device,
			                 .used = 1 };
		c->live.n++;
	}
	s->value = c->n - 1;
	return 0;
}

int mt_reader_lifetimes(struct mt_reader *r, const struct mt_query *q, unsigned layer,
                        struct mt_lifetime **out, size_t *n)
{
	if (!out || !n || fmt_reader_ready(r) < 0)
		return -EINVAL;
	struct lifetimes_ctx c = { 0 };
	int err = walk(r, q, layer, visit_lifetime, &c);
	free(c.live.slots);
	if (err < 0) {
		free(c.out);
		if (err == -ENOMEM)
			mt_fail(r->message, FMT_MESSAGE_MAX, err, "out of memory");
		return err;
	}
	*out = c.out;
	*n = c.n;
	return 0;
}

struct peak_ctx {
	struct live_map live; /* value: bytes */
	uint64_t bytes, peak, peak_ts;
};

static int visit_peak(void *ctx, const struct mt_event *ev)
{
	struct peak_ctx *c = ctx;
	if (map_reserve(&c->live) < 0)
		return -ENOMEM;
	struct live_slot *s = map_slot(&c->live, ev);
	if (ev->kind == MT_EVENT_FREE) {
		if (s->used) {
			c->bytes -= s->value;
			map_remove(&c->live, s);
		}
		return 0;
	}
	/* As in the lifetimes, an earlier alloc at this address stays live. */
	if (!s->used)
		c->live.n++;
	*s = (struct live_slot){ .address = ev->alloc.address,
		                 .value = ev->alloc.bytes,
		                 .process = ev->process,
		                 .device = ev->device,
		                 .used = 1 };
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
	free(c.live.slots);
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
