/* canvas.c — output surfaces (PNG, SVG, PDF) and text with a fixed font. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cairo-pdf.h>
#include <cairo-svg.h>

#include "viewer-private.h"

#define FONT_FAMILY "DejaVu Sans"

/* Grey antialiasing and no hinting: the same glyph shapes at every size
 * and on every machine with the same font file. The two faces are made
 * once per picture (selecting a toy face on every call leaves fontconfig
 * patterns behind). */
static void set_font(struct vw_canvas *c)
{
	cairo_font_options_t *fo = cairo_font_options_create();

	cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
	cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
	cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
	cairo_set_font_options(c->cr, fo);
	cairo_font_options_destroy(fo);
	c->face[0] = cairo_toy_font_face_create(FONT_FAMILY, CAIRO_FONT_SLANT_NORMAL,
	                                        CAIRO_FONT_WEIGHT_NORMAL);
	c->face[1] = cairo_toy_font_face_create(FONT_FAMILY, CAIRO_FONT_SLANT_NORMAL,
	                                        CAIRO_FONT_WEIGHT_BOLD);
	cairo_set_font_face(c->cr, c->face[0]);
}

static void release_faces(struct vw_canvas *c)
{
	if (c->face[0])
		cairo_font_face_destroy(c->face[0]);
	if (c->face[1])
		cairo_font_face_destroy(c->face[1]);
	c->face[0] = c->face[1] = NULL;
}

int vw_canvas_open(struct vw_canvas *c, enum mt_image_format format, const char *path,
                   unsigned width, unsigned height, char *err, size_t errlen)
{
	cairo_status_t st;

	memset(c, 0, sizeof(*c));
	c->format = format;
	c->width = width;
	c->height = height;
	/* 14 px at 1600x900, by area so that wide pictures keep readable
	 * text; never below 9 */
	c->font = sqrt((double)width * (double)height) / 86.0;
	if (c->font < 9)
		c->font = 9;
	switch (format) {
	case MT_IMAGE_PNG:
		c->surface =
		        cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)width, (int)height);
		break;
	case MT_IMAGE_SVG:
		c->surface = cairo_svg_surface_create(path, width, height);
		break;
	case MT_IMAGE_PDF:
		c->surface = cairo_pdf_surface_create(path, width, height);
		if (cairo_surface_status(c->surface) == CAIRO_STATUS_SUCCESS)
			cairo_pdf_surface_set_metadata(c->surface, CAIRO_PDF_METADATA_CREATOR,
			                               "memtrace " MT_VERSION);
		break;
	default:
		return vw_fail(err, errlen, -EINVAL, "unknown image format");
	}
	st = cairo_surface_status(c->surface);
	if (st != CAIRO_STATUS_SUCCESS) {
		vw_canvas_discard(c);
		return vw_fail(err, errlen, st == CAIRO_STATUS_NO_MEMORY ? -ENOMEM : -EIO,
		               "cannot write %s: %s", path, cairo_status_to_string(st));
	}
	c->cr = cairo_create(c->surface);
	set_font(c);
	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_BACKGROUND));
	cairo_paint(c->cr);
	return 0;
}

int vw_canvas_close(struct vw_canvas *c, const char *path, char *err, size_t errlen)
{
	cairo_status_t st = cairo_status(c->cr);

	cairo_destroy(c->cr);
	c->cr = NULL;
	release_faces(c);
	if (st == CAIRO_STATUS_SUCCESS && c->format == MT_IMAGE_PNG)
		st = cairo_surface_write_to_png(c->surface, path);
	cairo_surface_finish(c->surface);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_surface_status(c->surface);
	cairo_surface_destroy(c->surface);
	c->surface = NULL;
	if (st != CAIRO_STATUS_SUCCESS)
		return vw_fail(err, errlen, st == CAIRO_STATUS_NO_MEMORY ? -ENOMEM : -EIO,
		               "cannot write %s: %s", path, cairo_status_to_string(st));
	return 0;
}

void vw_canvas_discard(struct vw_canvas *c)
{
	if (c->cr)
		cairo_destroy(c->cr);
	if (c->surface)
		cairo_surface_destroy(c->surface);
	release_faces(c);
	c->cr = NULL;
	c->surface = NULL;
}

static void use_font(const struct vw_canvas *c, double size, bool bold)
{
	cairo_set_font_face(c->cr, c->face[bold]);
	cairo_set_font_size(c->cr, c->font * size);
}

double vw_text_width(const struct vw_canvas *c, double size, bool bold, const char *text)
{
	cairo_text_extents_t te;

	use_font(c, size, bold);
	cairo_text_extents(c->cr, text, &te);
	return te.x_advance;
}

/* Offset from the anchor to the text origin. */
static void anchor(const struct vw_canvas *c, double w, enum vw_align align, enum vw_valign valign,
                   double *dx, double *dy)
{
	cairo_font_extents_t fe;

	cairo_font_extents(c->cr, &fe);
	*dx = align == VW_LEFT ? 0 : align == VW_CENTER ? -w / 2 : -w;
	switch (valign) {
	case VW_TOP:
		*dy = fe.ascent;
		break;
	case VW_MIDDLE:
		*dy = (fe.ascent - fe.descent) / 2;
		break;
	case VW_BOTTOM:
		*dy = -fe.descent;
		break;
	default:
		*dy = 0;
	}
}

double vw_text(const struct vw_canvas *c, double x, double y, double size, bool bold,
               enum vw_align align, enum vw_valign valign, const char *text)
{
	double w = vw_text_width(c, size, bold, text), dx, dy;

	anchor(c, w, align, valign, &dx, &dy);
	cairo_move_to(c->cr, x + dx, y + dy);
	cairo_show_text(c->cr, text);
	return w;
}

void vw_label(const struct vw_canvas *c, double x, double y, double size, enum vw_align align,
              enum vw_valign valign, const char *text, double bx0, double bx1)
{
	cairo_font_extents_t fe;
	double w = vw_text_width(c, size, false, text), dx, dy, pad = c->font * 0.25;
	double left;

	anchor(c, w, align, valign, &dx, &dy);
	cairo_font_extents(c->cr, &fe);
	left = x + dx;
	if (left + w + pad > bx1)
		left = bx1 - w - pad;
	if (left - pad < bx0)
		left = bx0 + pad;
	cairo_save(c->cr);
	cairo_set_source_rgba(c->cr, 1, 1, 1, 0.85);
	cairo_rectangle(c->cr, left - pad, y + dy - fe.ascent - pad / 2, w + 2 * pad,
	                fe.ascent + fe.descent + pad);
	cairo_fill(c->cr);
	cairo_restore(c->cr);
	cairo_move_to(c->cr, left, y + dy);
	cairo_show_text(c->cr, text);
}

double vw_title(const struct vw_canvas *c, const char *title, const char *subtitle)
{
	double m = c->font * 1.2, y = m;

	vw_set_rgb(c->cr, vw_role_color(VW_ROLE_TEXT));
	vw_text(c, m, y, 1.45, true, VW_LEFT, VW_TOP, title);
	y += c->font * 1.45 * 1.35;
	if (subtitle && *subtitle) {
		char fit[512];

		vw_fit_text(c, 1.0, subtitle, c->width - 2 * m, fit, sizeof(fit));
		vw_set_rgb(c->cr, vw_role_color(VW_ROLE_MUTED_TEXT));
		vw_text(c, m, y, 1.0, false, VW_LEFT, VW_TOP, fit);
		y += c->font * 1.4;
	}
	return y + c->font * 0.4;
}

void vw_fit_text(const struct vw_canvas *c, double size, const char *text, double width, char *out,
                 size_t outlen)
{
	size_t len = strlen(text), keep;

	/* half a pixel of slack: cairo measures the same text a hair apart
	 * from one call to the next */
	snprintf(out, outlen, "%s", text);
	if (vw_text_width(c, size, false, out) <= width + 0.5)
		return;
	/* drop characters from the middle until it fits */
	for (keep = len < outlen ? len : outlen - 1; keep > 2; keep--) {
		size_t head = keep / 2, tail = keep - head;

		/* stay on UTF-8 boundaries */
		while (head > 0 && (text[head] & 0xC0) == 0x80)
			head--;
		while (tail > 0 && (text[len - tail] & 0xC0) == 0x80)
			tail--;
		snprintf(out, outlen, "%.*s\u2026%s", (int)head, text, text + len - tail);
		if (vw_text_width(c, size, false, out) <= width + 0.5)
			return;
	}
	snprintf(out, outlen, "\u2026");
}
