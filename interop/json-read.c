/* json-read.c — a JSON document as the same plain-data tree a pickle
 * gives: PyTorch memory snapshots also travel as JSON (memory_viz reads
 * both). jansson parses; the values are copied into the tree.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "interop-private.h"

static struct io_value *convert(struct io_tree *t, json_t *j)
{
	struct io_value *v = NULL;
	const char *key;
	json_t *item;
	size_t i;

	switch (json_typeof(j)) {
	case JSON_NULL:
		return io_tree_value(t, IO_NONE);
	case JSON_TRUE:
	case JSON_FALSE:
		v = io_tree_value(t, IO_BOOL);
		if (v)
			v->i = json_is_true(j);
		return v;
	case JSON_INTEGER:
		v = io_tree_value(t, IO_INT);
		if (v)
			v->i = json_integer_value(j);
		return v;
	case JSON_REAL:
		v = io_tree_value(t, IO_FLOAT);
		if (v)
			v->f = json_real_value(j);
		return v;
	case JSON_STRING:
		v = io_tree_value(t, IO_STR);
		if (v && json_string_length(j) <= UINT32_MAX) {
			v->n = (uint32_t)json_string_length(j);
			v->s = io_tree_bytes(t, json_string_value(j), v->n);
			if (!v->s)
				v = NULL;
		}
		return v;
	case JSON_ARRAY:
		v = io_tree_value(t, IO_LIST);
		json_array_foreach(j, i, item)
		{
			struct io_value *x = v ? convert(t, item) : NULL;
			if (!x || io_tree_push(t, v, x) < 0)
				return NULL;
		}
		return v;
	case JSON_OBJECT:
		v = io_tree_value(t, IO_DICT);
		json_object_foreach(j, key, item)
		{
			struct io_value *k = v ? io_tree_value(t, IO_STR) : NULL;
			struct io_value *x;
			if (!k)
				return NULL;
			k->n = (uint32_t)strlen(key);
			k->s = io_tree_bytes(t, key, k->n);
			x = convert(t, item);
			if (!k->s || !x || io_tree_set(t, v, k, x) < 0)
				return NULL;
		}
		return v;
	}
	return NULL;
}

int io_json_read(struct io_tree *t, const uint8_t *data, size_t len, struct io_value **root,
                 char *err, size_t errlen)
{
	json_error_t e;
	json_t *j = json_loadb((const char *)data, len, 0, &e);

	*root = NULL;
	if (!j)
		return mt_fail(err, errlen, -EBADMSG, "JSON: %s at line %d, column %d", e.text,
		               e.line, e.column);
	*root = convert(t, j);
	json_decref(j);
	if (!*root)
		return mt_fail(err, errlen, -ENOMEM, "JSON: out of memory");
	return 0;
}
