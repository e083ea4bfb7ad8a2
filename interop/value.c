/* value.c — the plain-data tree the pickle and JSON readers build: values
 * and strings in one arena, freed at once; lookups by key; conversion to
 * JSON for what a trace keeps as text.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "interop-private.h"

#define CHUNK_BYTES (1u << 20)

struct chunk {
	struct chunk *next;
	size_t used, size;
	max_align_t data[];
};

struct io_tree {
	struct chunk *chunks;
};

struct io_tree *io_tree_new(void)
{
	return calloc(1, sizeof(struct io_tree));
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

static void *arena_alloc(struct io_tree *t, size_t n)
{
	struct chunk *c = t->chunks;
	size_t align = sizeof(max_align_t);

	n = (n + align - 1) / align * align;
	if (!c || c->size - c->used < n) {
		size_t size = n > CHUNK_BYTES / 4 ? n : CHUNK_BYTES;
		struct chunk *fresh = malloc(sizeof(*fresh) + size);

		if (!fresh)
			return NULL;
		fresh->used = 0;
		fresh->size = size;
		/* A chunk of its own for a large block goes behind the current
		 * one, which keeps filling. */
		if (c && size != CHUNK_BYTES) {
			fresh->next = c->next;
			c->next = fresh;
		} else {
			fresh->next = c;
			t->chunks = fresh;
		}
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
static int reserve(struct io_tree *t, struct io_value *c, size_t used, size_t more)
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

int io_tree_push(struct io_tree *t, struct io_value *c, struct io_value *item)
{
	if (reserve(t, c, c->n, 1) < 0)
		return -ENOMEM;
	c->items[c->n++] = item;
	return 0;
}

int io_tree_set(struct io_tree *t, struct io_value *d, struct io_value *key, struct io_value *value)
{
	size_t used = (size_t)d->n * 2;

	if (reserve(t, d, used, 2) < 0)
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
