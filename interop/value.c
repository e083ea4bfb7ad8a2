/* value.c — the plain-data tree the pickle and JSON readers build: values
 * and strings in one arena, freed at once; lookups by key; conversion to
 * JSON for what a trace keeps as text.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <jansson.h>

#include "interop-private.h"

/* Chunks grow from 64 KiB to 64 MiB, each twice the one before: a small
 * input stays small, and a large one takes few chunks, which ask for
 * transparent huge pages (a large snapshot's tree is otherwise mostly
 * page faults). */
#define FIRST_CHUNK (64u << 10)
#define LAST_CHUNK (64u << 20)
#define HUGE_PAGE (2u << 20)

struct chunk {
	struct chunk *next;
	size_t used, size;
	max_align_t data[];
};

struct io_tree {
	struct chunk *chunks;
	size_t next_size;
};

struct io_tree *io_tree_new(void)
{
	struct io_tree *t = calloc(1, sizeof(struct io_tree));

	if (t)
		t->next_size = FIRST_CHUNK;
	return t;
}

void io_tree_free(struct io_tree *t)
{
	if (!t)
		return;
	while (t->chunks) {
		struct chunk *c = t->chunks;
		t->chunks = c->next;
		free(c);
	}
	free(t);
}

static struct chunk *new_chunk(size_t size)
{
	struct chunk *c = NULL;

	if (size >= HUGE_PAGE) {
		if (posix_memalign((void **)&c, HUGE_PAGE, sizeof(*c) + size) != 0)
			return NULL;
		madvise(c, sizeof(*c) + size, MADV_HUGEPAGE); /* a hint: failing is fine */
	} else {
		c = malloc(sizeof(*c) + size);
	}
	if (c) {
		c->used = 0;
		c->size = size;
	}
	return c;
}

/* Values are 8-byte aligned; strings need no alignment. */
static void *arena_alloc(struct io_tree *t, size_t n)
{
	struct chunk *c = t->chunks;

	n = (n + 7) & ~(size_t)7;
	if (!c || c->size - c->used < n) {
		size_t size = t->next_size;
		struct chunk *fresh;

		while (size < n)
			size *= 2;
		fresh = new_chunk(size);
		if (!fresh)
			return NULL;
		if (t->next_size < LAST_CHUNK)
			t->next_size *= 2;
		fresh->next = c;
		t->chunks = fresh;
		c = fresh;
	}
	void *p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

struct io_value *io_tree_value(struct io_tree *t, enum io_type type)
{
	struct io_value *v = arena_alloc(t, sizeof(*v));

	if (v) {
		memset(v, 0, sizeof(*v));
		v->type = (uint8_t)type;
	}
	return v;
}

const char *io_tree_bytes(struct io_tree *t, const char *s, size_t n)
{
	char *p = arena_alloc(t, n ? n : 1);

	if (p && n)
		memcpy(p, s, n);
	return p;
}

/* Makes room for `more` item slots in c. */
static int reserve_slots(struct io_tree *t, struct io_value *c, size_t used, size_t more)
{
	size_t cap = c->cap ? c->cap : 4;
	struct io_value **items;

	if (used + more <= c->cap)
		return 0;
	while (cap < used + more)
		cap *= 2;
	if (cap > UINT32_MAX)
		return -ENOMEM;
	items = arena_alloc(t, cap * sizeof(*items));
	if (!items)
		return -ENOMEM;
	if (used)
		memcpy(items, c->items, used * sizeof(*items));
	c->items = items;
	c->cap = (uint32_t)cap;
	return 0;
}

int io_tree_reserve(struct io_tree *t, struct io_value *c, size_t items)
{
	size_t slots = c->type == IO_DICT ? 2 : 1;

	return reserve_slots(t, c, (size_t)c->n * slots, items * slots);
}

int io_tree_push(struct io_tree *t, struct io_value *c, struct io_value *item)
{
	if (reserve_slots(t, c, c->n, 1) < 0)
		return -ENOMEM;
	c->items[c->n++] = item;
	return 0;
}

int io_tree_set(struct io_tree *t, struct io_value *d, struct io_value *key, struct io_value *value)
{
	size_t used = (size_t)d->n * 2;

	if (reserve_slots(t, d, used, 2) < 0)
		return -ENOMEM;
	d->items[used] = key;
	d->items[used + 1] = value;
	d->n++;
	return 0;
}

const struct io_value *io_get(const struct io_value *d, const char *key)
{
	size_t len = strlen(key);

	if (!d || d->type != IO_DICT)
		return NULL;
	for (size_t i = d->n; i-- > 0;) {
		const struct io_value *k = d->items[2 * i];
		if (k->type == IO_STR && k->n == len && !memcmp(k->s, key, len))
			return d->items[2 * i + 1];
	}
	return NULL;
}

bool io_is_str(const struct io_value *v, const char *s)
{
	size_t len = strlen(s);

	return v && v->type == IO_STR && v->n == len && !memcmp(v->s, s, len);
}

bool io_as_u64(const struct io_value *v, uint64_t *out)
{
	if (!v || v->type != IO_INT || v->huge || (!v->wide && v->i < 0))
		return false;
	*out = (uint64_t)v->i;
	return true;
}

bool io_as_i64(const struct io_value *v, int64_t *out)
{
	if (!v || v->type != IO_INT || v->huge || v->wide)
		return false;
	*out = v->i;
	return true;
}

struct io_value *const *io_items(const struct io_value *v, size_t *n)
{
	if (!v || (v->type != IO_LIST && v->type != IO_TUPLE)) {
		*n = 0;
		return NULL;
	}
	*n = v->n;
	return v->items;
}

static json_t *to_json(const struct io_value *v, int depth)
{
	json_t *j;

	if (depth > 32)
		return NULL;
	switch (v->type) {
	case IO_NONE:
		return json_null();
	case IO_BOOL:
		return json_boolean(v->i);
	case IO_INT:
		if (v->huge || v->wide)
			return json_real(v->huge ? 0.0 : (double)(uint64_t)v->i);
		return json_integer(v->i);
	case IO_FLOAT:
		return json_real(v->f);
	case IO_STR:
		return json_stringn(v->s, v->n);
	case IO_LIST:
	case IO_TUPLE:
		j = json_array();
		for (uint32_t i = 0; j && i < v->n; i++)
			if (json_array_append_new(j, to_json(v->items[i], depth + 1)) < 0) {
				json_decref(j);
				return NULL;
			}
		return j;
	case IO_DICT:
		j = json_object();
		for (uint32_t i = 0; j && i < v->n; i++) {
			const struct io_value *k = v->items[2 * i];
			json_t *val;
			if (k->type != IO_STR)
				continue;
			val = to_json(v->items[2 * i + 1], depth + 1);
			/* (setn_new takes val's reference, also when it fails) */
			if (!val || json_object_setn_new(j, k->s, k->n, val) < 0) {
				json_decref(j);
				return NULL;
			}
		}
		return j;
	}
	return NULL;
}

json_t *io_to_json(const struct io_value *v)
{
	return to_json(v, 0);
}
