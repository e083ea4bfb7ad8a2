/* html-buf.c — the HTML view's data buffer: named sections of unsigned
 * integers (signed values zigzag-coded), each stored as byte planes (every
 * value's lowest byte, then every value's next byte, ... as many as the
 * largest value needs), which zlib compresses far better than the values
 * byte by byte; compressed and written as base64 so that the page can
 * carry it in a <script> element and inflate it with the browser's own
 * DecompressionStream (or as base64 alone, which the page reads without
 * waiting); and the page's output, a first buffer and named
 * parts of that kind.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "html-private.h"

bool vw_hbuf_init(struct vw_hbuf *b)
{
	memset(b, 0, sizeof(*b));
	b->sections = json_object();
	b->open = false;
	return b->sections != NULL;
}

void vw_hbuf_release(struct vw_hbuf *b)
{
	free(b->p);
	free(b->v);
	json_decref(b->sections);
	memset(b, 0, sizeof(*b));
}

/* Makes room for n more bytes; false when out of memory. */
static bool reserve(struct vw_hbuf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 1 << 16;
	unsigned char *p;

	if (b->oom)
		return false;
	if (b->cap - b->n >= n)
		return true;
	while (cap - b->n < n)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

/* Writes the open section's values as byte planes. */
static void close_section(struct vw_hbuf *b)
{
	uint64_t max = 0;
	unsigned width = 0, k;
	size_t i, off = b->n;
	json_t *v;

	if (!b->open)
		return;
	b->open = false;
	for (i = 0; i < b->nv; i++)
		max |= b->v[i];
	while (width < 8 && max >> (8 * width))
		width++;
	if (!reserve(b, b->nv * width))
		return;
	for (k = 0; k < width; k++)
		for (i = 0; i < b->nv; i++)
			b->p[b->n++] = (unsigned char)(b->v[i] >> (8 * k));
	v = json_pack("[I, I, i]", (json_int_t)off, (json_int_t)b->nv, (int)width);
	if (!v || json_object_set_new(b->sections, b->name, v) < 0)
		b->oom = true;
}

void vw_hbuf_section(struct vw_hbuf *b, const char *name)
{
	close_section(b);
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->open = true;
	b->nv = 0;
}

void vw_hbuf_u(struct vw_hbuf *b, uint64_t v)
{
	if (b->nv == b->vcap) {
		size_t cap = b->vcap ? b->vcap * 2 : 1 << 12;
		uint64_t *p = b->oom ? NULL : realloc(b->v, cap * sizeof(*p));

		if (!p) {
			b->oom = true;
			return;
		}
		b->v = p;
		b->vcap = cap;
	}
	b->v[b->nv++] = v;
}

void vw_hbuf_s(struct vw_hbuf *b, int64_t v)
{
	vw_hbuf_u(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

int vw_hbuf_finish(struct vw_hbuf *b)
{
	close_section(b);
	return b->oom ? -ENOMEM : 0;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int write_base64(FILE *f, const unsigned char *p, size_t n)
{
	char line[4096];
	size_t i, k = 0;

	for (i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		line[k++] = b64[v >> 18 & 63];
		line[k++] = b64[v >> 12 & 63];
		line[k++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		line[k++] = i + 2 < n ? b64[v & 63] : '=';
		if (k == sizeof(line)) {
			if (fwrite(line, 1, k, f) != k)
				return -EIO;
			k = 0;
		}
	}
	return fwrite(line, 1, k, f) == k ? 0 : -EIO;
}

int vw_hbuf_write_base64(const struct vw_hbuf *b, void *file, bool deflate)
{
	uLongf len = compressBound((uLong)b->n);
	unsigned char *z;
	int rc;

	if (!deflate)
		return write_base64(file, b->p, b->n);
	if (!(z = malloc(len ? len : 1)))
		return -ENOMEM;
	if (compress2(z, &len, b->p ? b->p : (const Bytef *)"", (uLong)b->n, 9) != Z_OK) {
		free(z);
		return -ENOMEM;
	}
	rc = write_base64(file, z, len);
	free(z);
	return rc;
}

bool vw_html_out_init(struct vw_html_out *o)
{
	memset(o, 0, sizeof(*o));
	return vw_hbuf_init(&o->first);
}

void vw_html_out_release(struct vw_html_out *o)
{
	size_t i;

	vw_hbuf_release(&o->first);
	for (i = 0; i < o->nparts; i++) {
		vw_hbuf_release(o->part[i]);
		free(o->part[i]);
	}
	free(o->part);
	free(o->part_name);
	memset(o, 0, sizeof(*o));
}

struct vw_hbuf *vw_html_part(struct vw_html_out *o, const char *name)
{
	struct vw_hbuf *b;

	if (o->nparts == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		struct vw_hbuf **p = realloc(o->part, cap * sizeof(*p));
		char(*n)[16];

		if (!p)
			return NULL;
		o->part = p;
		n = realloc(o->part_name, cap * sizeof(*n));
		if (!n)
			return NULL;
		o->part_name = n;
		o->cap = cap;
	}
	if (strlen(name) >= sizeof(o->part_name[0]) || !(b = malloc(sizeof(*b))))
		return NULL;
	if (!vw_hbuf_init(b)) {
		free(b);
		return NULL;
	}
	strcpy(o->part_name[o->nparts], name);
	o->part[o->nparts] = b;
	return o->part[o->nparts++];
}
