/* render.c — the registry of views (the list in viewer/meson.build, as
 * view-list.h) and mt_render: option checks, the output surface and the
 * view. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "view-list.h"
#include "viewer-private.h"

#define DECLARE(name) extern const struct vw_view vw_view_##name;
VW_VIEWS(DECLARE)
#undef DECLARE

static const struct vw_view *const views[] = {
#define ENTRY(name) &vw_view_##name,
	VW_VIEWS(ENTRY)
#undef ENTRY
};

#define NVIEWS (sizeof(views) / sizeof(views[0]))

/* What --compare draws, in place of the view asked for. */
static const struct vw_view compare_view = {
	.info = { .name = "compare", .formats = VW_CAIRO_FORMATS },
	.draw = vw_compare_runs,
};

size_t mt_view_count(void)
{
	return NVIEWS;
}

const struct mt_view_info *mt_view_at(size_t i)
{
	return i < NVIEWS ? &views[i]->info : NULL;
}

static const struct vw_view *view_named(const char *name)
{
	size_t i;

	for (i = 0; name && i < NVIEWS; i++)
		if (!strcmp(name, views[i]->info.name))
			return views[i];
	return NULL;
}

const struct mt_view_info *mt_view_find(const char *name)
{
	const struct vw_view *v = view_named(name);

	return v ? &v->info : NULL;
}

/* The view asked for, or the first that writes the format. */
static const struct vw_view *view_for(const struct mt_render_options *o)
{
	size_t i;

	if (o->view)
		return view_named(o->view);
	for (i = 0; i < NVIEWS; i++)
		if (views[i]->info.formats & 1u << o->format)
			return views[i];
	return NULL;
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
	struct mt_render_options o = *opt;
	const struct vw_view *view = view_for(&o);
	struct vw_canvas c;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (o.compare) {
		if (!(VW_CAIRO_FORMATS & 1u << o.format))
			return vw_fail(err, errlen, -EINVAL,
			               "--compare draws a picture (.png, .svg or .pdf)");
		view = &compare_view;
	}
	if (!view && o.view)
		return vw_fail(err, errlen, -EINVAL, "unknown view '%s'", o.view);
	if (!view)
		return vw_fail(err, errlen, -EINVAL, "no view writes %s", out_path);
	if (!(view->info.formats & 1u << o.format))
		return vw_fail(err, errlen, -EINVAL, "the %s view cannot write %s", view->info.name,
		               out_path);
	if (!o.width)
		o.width = MT_RENDER_DEFAULT_WIDTH;
	if (!o.height)
		o.height = MT_RENDER_DEFAULT_HEIGHT;
	if (!o.plan_budget)
		o.plan_budget = MT_RENDER_PLAN_BUDGET;
	if (o.width < MT_RENDER_MIN_SIDE || o.height < MT_RENDER_MIN_SIDE ||
	    o.width > MT_RENDER_MAX_SIDE || o.height > MT_RENDER_MAX_SIDE)
		return vw_fail(err, errlen, -EINVAL, "size %ux%u is outside %ux%u..%ux%u", o.width,
		               o.height, MT_RENDER_MIN_SIDE, MT_RENDER_MIN_SIDE, MT_RENDER_MAX_SIDE,
		               MT_RENDER_MAX_SIDE);
	if (o.to && o.to <= o.from)
		return vw_fail(err, errlen, -EINVAL, "--to must be after --from");
	if (view->write)
		return view->write(r, &o, out_path, err, errlen);
	rc = vw_canvas_open(&c, o.format, out_path, o.width, o.height, err, errlen);
	if (rc < 0)
		return rc;
	rc = view->draw(&c, r, &o, err, errlen);
	if (rc < 0) {
		vw_canvas_discard(&c);
		/* SVG and PDF surfaces wrote as they went */
		if (o.format != MT_IMAGE_PNG)
			remove(out_path);
		return rc;
	}
	return vw_canvas_close(&c, out_path, err, errlen);
}
