/* render.c — mt_render: option checks, the output surface and the view. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "html-private.h"
#include "viewer-private.h"

static const char *const view_names[] = {
	[MT_VIEW_TIMELINE] = "timeline",
	[MT_VIEW_SEGMENTS] = "segments",
	[MT_VIEW_POLICIES] = "policies",
	[MT_VIEW_ANATOMY] = "anatomy",
};

#define NVIEWS (sizeof(view_names) / sizeof(view_names[0]))

int mt_view_from_name(const char *name, enum mt_view *view)
{
	size_t i;

	for (i = 0; name && i < NVIEWS; i++)
		if (!strcmp(name, view_names[i])) {
			*view = (enum mt_view)i;
			return 0;
		}
	return -EINVAL;
}

const char *mt_view_name(enum mt_view view)
{
	return (size_t)view < NVIEWS ? view_names[view] : NULL;
}

int mt_image_format_from_path(const char *path, enum mt_image_format *format)
{
	const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');

	if (!dot || (slash && dot < slash) || dot == path || dot[-1] == '/')
		return -EINVAL;
	if (!strcasecmp(dot, ".png"))
		*format = MT_IMAGE_PNG;
	else if (!strcasecmp(dot, ".svg"))
		*format = MT_IMAGE_SVG;
	else if (!strcasecmp(dot, ".pdf"))
		*format = MT_IMAGE_PDF;
	else if (!strcasecmp(dot, ".html"))
		*format = MT_IMAGE_HTML;
	else
		return -EINVAL;
	return 0;
}

int vw_window(const struct vw_trace *t, const struct mt_render_options *o, double width,
              struct vw_columns *cols, char *err, size_t errlen)
{
	uint64_t end = t->t1 + 1;

	cols->from = t->t0 + o->from;
	cols->to = o->to ? t->t0 + o->to : end;
	if (cols->from >= cols->to || cols->from >= end)
		return vw_fail(err, errlen, -EINVAL, "the window --from/--to holds nothing");
	cols->n = width >= 1 ? (size_t)width : 1;
	/* at least a nanosecond a column */
	if (cols->to - cols->from < cols->n)
		cols->to = cols->from + cols->n;
	return 0;
}

int mt_render(struct mt_reader *r, const struct mt_render_options *opt, const char *out_path,
              char *err, size_t errlen)
{
	static int (*const views[])(struct vw_canvas *, struct mt_reader *,
	                            const struct mt_render_options *, char *, size_t) = {
		[MT_VIEW_TIMELINE] = vw_view_timeline,
		[MT_VIEW_SEGMENTS] = vw_view_segments,
		[MT_VIEW_POLICIES] = vw_view_policies,
		[MT_VIEW_ANATOMY] = vw_view_anatomy,
	};
	struct mt_render_options o = *opt;
	struct vw_canvas c;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if ((size_t)o.view >= NVIEWS)
		return vw_fail(err, errlen, -EINVAL, "unknown view");
	if (!o.width)
		o.width = MT_RENDER_DEFAULT_WIDTH;
	if (!o.height)
		o.height = MT_RENDER_DEFAULT_HEIGHT;
	if (o.width < MT_RENDER_MIN_SIDE || o.height < MT_RENDER_MIN_SIDE ||
	    o.width > MT_RENDER_MAX_SIDE || o.height > MT_RENDER_MAX_SIDE)
		return vw_fail(err, errlen, -EINVAL, "size %ux%u is outside %ux%u..%ux%u", o.width,
		               o.height, MT_RENDER_MIN_SIDE, MT_RENDER_MIN_SIDE, MT_RENDER_MAX_SIDE,
		               MT_RENDER_MAX_SIDE);
	if (o.to && o.to <= o.from)
		return vw_fail(err, errlen, -EINVAL, "--to must be after --from");
	if (o.format == MT_IMAGE_HTML && o.compare)
		return vw_fail(err, errlen, -EINVAL,
		               "--compare draws a picture (.png, .svg or .pdf)");
	if (o.format == MT_IMAGE_HTML)
		return vw_html_render(r, &o, out_path, err, errlen);
	rc = vw_canvas_open(&c, o.format, out_path, o.width, o.height, err, errlen);
	if (rc < 0)
		return rc;
	rc = o.compare ? vw_view_compare(&c, r, &o, err, errlen)
	               : views[o.view](&c, r, &o, err, errlen);
	if (rc < 0) {
		vw_canvas_discard(&c);
		/* SVG and PDF surfaces wrote as they went */
		if (o.format != MT_IMAGE_PNG)
			remove(out_path);
		return rc;
	}
	return vw_canvas_close(&c, out_path, err, errlen);
}
