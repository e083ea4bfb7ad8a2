/* view-html.c — the interactive view: one self-contained HTML file (no
 * network), the page's sources from viewer/html/ embedded at build time,
 * its data (html-data.c) as a JSON description and base64-coded buffers:
 * the first one before the page's scripts, which read it at once, and the
 * parts after them, zlib-compressed, which the page inflates with the
 * browser's DecompressionStream as they arrive: the page draws and answers
 * while the browser still reads the rest of the file. The page draws with canvas and plain
 * JavaScript.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "html-private.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* Every asset whose name ends with suffix, in order. */
static int put_assets(FILE *f, const char *suffix)
{
	size_t i;

	for (i = 0; i < vw_html_nassets; i++)
		if (ends_with(vw_html_assets[i].name, suffix) &&
		    fputs(vw_html_assets[i].text, f) < 0)
			return -EIO;
	return 0;
}

/* A buffer as a string literal, in a script of its own that runs
 * `head "BASE64" tail` (the parser reads literals far faster than text). */
static int put_data(FILE *f, const char *head, const struct vw_hbuf *b, bool deflate,
                    const char *tail)
{
	int rc;

	fprintf(f, "<script>%s\"", head);
	if ((rc = vw_hbuf_write_base64(b, f, deflate)) < 0)
		return rc;
	fprintf(f, "\"%s</script>\n", tail);
	return 0;
}

static int write_page(FILE *f, const char *title, const char *meta, const struct vw_html_out *o)
{
	char head[64];
	size_t i;
	int rc;

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
	      "memtrace \xc2\xb7 ",
	      f);
	for (; *title; title++) /* the trace's name, escaped */
		if (*title == '<' || *title == '&')
			fputs(*title == '<' ? "&lt;" : "&amp;", f);
		else
			fputc(*title, f);
	fputs("</title>\n<style>\n", f);
	if ((rc = put_assets(f, ".css")) < 0)
		return rc;
	fputs("</style>\n</head>\n<body>\n", f);
	if ((rc = put_assets(f, ".html")) < 0)
		return rc;
	/* JSON_ESCAPE_SLASH keeps "</script>" out of the description */
	fprintf(f, "<script id=\"mt-meta\" type=\"application/json\">%s</script>\n", meta);
	/* not compressed: the page reads it at once, before the parser goes on */
	if ((rc = put_data(f, "var MT_DATA = ", &o->first, false, ";")) < 0)
		return rc;
	fputs("<script>\n\"use strict\";\n", f);
	if ((rc = put_assets(f, ".js")) < 0)
		return rc;
	fputs("</script>\n", f);
	for (i = 0; i < o->nparts; i++) {
		snprintf(head, sizeof(head), "MT.part(\"%s\", ", o->part_name[i]);
		if ((rc = put_data(f, head, o->part[i], true, ");")) < 0)
			return rc;
	}
	fputs("</body>\n</html>\n", f);
	return ferror(f) ? -EIO : 0;
}

/* meta.parts: [{name, sections}] in the order the page receives them. */
static int describe_parts(json_t *meta, const struct vw_html_out *o)
{
	json_t *parts = json_array();
	size_t i;

	if (!parts || json_object_set_new(meta, "parts", parts) < 0)
		return -ENOMEM;
	for (i = 0; i < o->nparts; i++)
		if (vw_hbuf_finish(o->part[i]) < 0 ||
		    json_array_append_new(parts, json_pack("{s:s, s:O}", "name", o->part_name[i],
		                                           "sections", o->part[i]->sections)) < 0)
			return -ENOMEM;
	return 0;
}

static int write_view(struct mt_reader *r, const struct mt_render_options *o, const char *path,
                      char *err, size_t errlen)
{
	json_t *meta = json_object();
	struct vw_html_out out;
	char *text = NULL;
	FILE *f = NULL;
	int rc;

	if (!vw_html_out_init(&out) || !meta) {
		json_decref(meta);
		vw_html_out_release(&out);
		return vw_fail(err, errlen, -ENOMEM, "out of memory");
	}
	rc = vw_html_data(r, o, &out, meta, err, errlen);
	if (rc == 0 && (vw_hbuf_finish(&out.first) < 0 || describe_parts(meta, &out) < 0 ||
	                json_object_set(meta, "sections", out.first.sections) < 0 ||
	                !(text = json_dumps(meta, JSON_COMPACT | JSON_ESCAPE_SLASH))))
		rc = vw_fail(err, errlen, -ENOMEM, "out of memory");
	if (rc == 0 && !(f = fopen(path, "w")))
		rc = vw_fail(err, errlen, -EIO, "cannot write %s: %s", path, strerror(errno));
	if (rc == 0) {
		rc = write_page(f, o->trace_name ? o->trace_name : "trace", text, &out);
		if (fclose(f) != 0 && rc == 0)
			rc = -EIO;
		if (rc < 0) {
			remove(path);
			rc = vw_fail(err, errlen, rc,
			             rc == -ENOMEM ? "out of memory" : "cannot write %s", path);
		}
	}
	free(text);
	json_decref(meta);
	vw_html_out_release(&out);
	return rc;
}

const struct vw_view vw_view_html = {
	.info = { .name = "html",
	          .summary = "one self-contained interactive page (.html): the timeline\n"
	                     "down to single allocations, hover details, anatomy and\n"
	                     "segment maps at the moment under the cursor",
	          .formats = 1u << MT_IMAGE_HTML,
	          .uses = MT_VIEW_USES_POLICIES },
	.write = write_view,
};
