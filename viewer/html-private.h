/* html-private.h — what the interactive HTML view's files share: the data
 * the page reads (a compressed buffer of sections of integers, stored as
 * byte planes and named in a JSON description), the allocations in the page's order, the
 * level-of-detail pyramid, and the page's own sources embedded at build
 * time (viewer/html/, turned into html-assets.c by embed.py).
 *
 * The page (the scripts in viewer/html/) decodes every section into a typed array by
 * its name; the names and meanings are listed where each is written
 * (html-data.c, html-lod.c) and read (viewer/html/data.js).
 */
#ifndef MEMTRACE_VIEWER_HTML_PRIVATE_H
#define MEMTRACE_VIEWER_HTML_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "viewer-private.h"

/* ---- html-buf.c: sections of integers ------------------------------------ */

struct vw_hbuf {
	unsigned char *p; /* the sections written so far */
	size_t n, cap;
	bool oom;
	json_t *sections; /* name -> [byte offset, value count, bytes a value] */
	char name[64];    /* the open section: its name and values */
	bool open;
	uint64_t *v;
	size_t nv, vcap;
};

/* An empty buffer; false when out of memory. */
bool vw_hbuf_init(struct vw_hbuf *b);
void vw_hbuf_release(struct vw_hbuf *b);
/* Opens a section (closing the previous one). */
void vw_hbuf_section(struct vw_hbuf *b, const char *name);
/* Appends a value to the open section: unsigned, or signed as zigzag. */
void vw_hbuf_u(struct vw_hbuf *b, uint64_t v);
void vw_hbuf_s(struct vw_hbuf *b, int64_t v);
/* Closes the open section; 0, or -ENOMEM when anything failed so far. */
int vw_hbuf_finish(struct vw_hbuf *b);
/* Writes the buffer as base64 to f, compressed (zlib) first when deflate;
 * 0 or -ENOMEM / -EIO. */
int vw_hbuf_write_base64(const struct vw_hbuf *b, void *file, bool deflate);

/* ---- the page's data: a first buffer and parts --------------------------- */

/* The first buffer holds what the first frame needs; the parts follow the
 * page's scripts in the file and the page reads each as it arrives
 * (html-data.c names them). */
struct vw_html_out {
	struct vw_hbuf first;
	struct vw_hbuf **part; /* in the order the page receives them */
	char (*part_name)[16];
	size_t nparts, cap;
};

/* Empty output; false when out of memory. */
bool vw_html_out_init(struct vw_html_out *o);
void vw_html_out_release(struct vw_html_out *o);
/* Appends a part named name (at most 15 characters); NULL when out of
 * memory. */
struct vw_hbuf *vw_html_part(struct vw_html_out *o, const char *name);

/* ---- the allocations as the page orders them ------------------------------ */

/* Times are relative to the trace start t0. An allocation is live at t when
 * start <= t < end; end = VW_HTML_NEVER when never freed. */
#define VW_HTML_NEVER UINT64_MAX

struct vw_html_alloc {
	uint64_t start, end, bytes;
	uint32_t site;
	uint32_t src; /* index in the loaded trace's lifetimes */
};

/* ---- html-lod.c: the level-of-detail pyramid ------------------------------ */

/* Allocations starting in one window of the page (see html-lod.c) that the
 * page still draws one by one without the pyramid. */
#define VW_HTML_RAW_MAX 50000
/* The first buffer carries the allocations of at least the long duration
 * (html-lod.c chooses it, at most this many when a level allows) and the
 * levels whose bins are at least that wide; the page draws those levels
 * before it has read anything else. */
#define VW_HTML_LONG_MAX 131072
/* Allocations (page order) per part of the allocation columns. */
#define VW_HTML_CHUNK 65536
/* Bins of the coarsest level; each level doubles them. */
#define VW_HTML_LOD_BINS 1024
/* A window of the page spans at most this many bins of a level. */
#define VW_HTML_LOD_WINDOW 4096

/* Writes the pyramid's sections for allocations a (in start order) over a
 * span of `span` ns, its level list into meta["lod"] and the long duration
 * into meta["long_w"] (0: no levels): the levels of bins at least that wide
 * go to b, the finer ones to fine. 0 or -ENOMEM. */
int vw_html_lod(const struct vw_html_alloc *a, size_t n, uint64_t span, struct vw_hbuf *b,
                struct vw_hbuf *fine, json_t *meta);

/* ---- html-segments.c ---------------------------------------------------- */

/* The cache is checkpointed every this many allocations (page order). */
#define VW_HTML_CHECKPOINT 1024

/* Writes the recorded allocator's reserved, cache and outside figures (see
 * html-segments.c) of a loaded trace whose allocations in page order are a.
 * 0 or -ENOMEM. */
int vw_html_segments(const struct vw_trace *t, const struct vw_html_alloc *a, size_t na,
                     struct vw_hbuf *b, struct vw_hbuf *detail, json_t *meta);
/* Writes a step series as two sections: times as deltas (relative to the
 * trace start already), values as zigzag deltas. */
void vw_html_series(struct vw_hbuf *b, const char *tname, const char *vname,
                    const struct vw_point *p, size_t n);

/* ---- html-data.c: everything else the page shows --------------------------- */

/* Loads the device of r and writes the page's data into out (the first
 * buffer and the parts) and meta. */
int vw_html_data(struct mt_reader *r, const struct mt_render_options *o, struct vw_html_out *out,
                 json_t *meta, char *err, size_t errlen);

/* ---- html-assets.c (generated): the page's sources ------------------------- */

struct vw_html_asset {
	const char *name; /* file name under viewer/html/ */
	const char *text;
};
extern const struct vw_html_asset vw_html_assets[];
extern const size_t vw_html_nassets;

#endif
