/* view-html.c — the interactive view: one self-contained HTML file (no
 * network), the page's sources from viewer/html/ embedded at build time,
 * its data (html-data.c) as a JSON description and a zlib-compressed,
 * base64-coded buffer the page inflates with the browser's
 * DecompressionStream. The page draws with canvas and plain JavaScript.
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

/* A buffer as a string literal the page inflates: "MT.NAME = '...';" */
static int put_data(FILE *f, const char *name, const struct vw_hbuf *b)
{
	size_t compressed;
	int rc;

	fprintf(f, "<script>MT_%s = \"", name);
	if ((rc = vw_hbuf_write_base64(b, f, &compressed)) < 0)
		return rc;
	fputs("\";</script>\n", f);
	return 0;
}

static int write_page(FILE *f, const char *title, const char *meta, const struct vw_hbuf *b,
                      const struct vw_hbuf *detail)
{
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
	/* in script literals: the parser reads them far faster than text */
	fputs("<script>var MT_DATA, MT_DETAIL;</script>\n", f);
	if ((rc = put_data(f, "DATA", b)) < 0 || (rc = put_data(f, "DETAIL", detail)) < 0)
		return rc;
	fputs("<script>\n\"use strict\";\n", f);
	if ((rc = put_assets(f, ".js")) < 0)
		return rc;
	fputs("</script>\n</body>\n</html>\n", f);
	return ferror(f) ? -EIO : 0;
}

static int write_view(struct mt_reader *r, const struct mt_render_options *o, const char *path,
                      char *err, size_t errlen)
{
	json_t *meta = json_object();
	struct vw_hbuf b = { 0 }, d = { 0 };
	char *text = NULL;
	FILE *f = NULL;
	int rc;

	if (!meta || !vw_hbuf_init(&b) || !vw_hbuf_init(&d)) {
		json_decref(meta);
		vw_hbuf_release(&b);
		vw_hbuf_release(&d);
		return vw_fail(err, errlen, -ENOMEM, "out of memory");
	}
	rc = vw_html_data(r, o, &b, &d, meta, err, errlen);
	if (rc == 0 &&
	    (vw_hbuf_finish(&b) < 0 || vw_hbuf_finish(&d) < 0 ||
	     json_object_set(meta, "sections", b.sections) < 0 ||
	     json_object_set(meta, "detail_sections", d.sections) < 0 ||
	     json_object_set_new(meta, "raw_bytes", json_integer((json_int_t)(b.n + d.n))) < 0 ||
	     !(text = json_dumps(meta, JSON_COMPACT | JSON_ESCAPE_SLASH))))
		rc = vw_fail(err, errlen, -ENOMEM, "out of memory");
	if (rc == 0 && !(f = fopen(path, "w")))
		rc = vw_fail(err, errlen, -EIO, "cannot write %s: %s", path, strerror(errno));
	if (rc == 0) {
		rc = write_page(f, o->trace_name ? o->trace_name : "trace", text, &b, &d);
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
	vw_hbuf_release(&b);
	vw_hbuf_release(&d);
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
