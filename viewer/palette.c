/* palette.c — the viewer's colours, one meaning per colour in every view.
 *
 * Colour-blind safe schemes: Okabe & Ito, "Color Universal Design" (2008)
 * for lines, markers and the anatomy parts; Paul Tol's "light" scheme
 * (https://personal.sron.nl/~pault/, 2021) for allocation bands and live
 * blocks, which carry dark lines and text on top of them.
 */
#include "config.h"

#include <string.h>

#include "viewer-private.h"

#define RGB(hex)                                                                                   \
	{                                                                                          \
		((hex) >> 16 & 0xff) / 255.0, ((hex) >> 8 & 0xff) / 255.0, ((hex)&0xff) / 255.0    \
	}

/* Okabe–Ito */
#define OI_BLACK 0x000000
#define OI_ORANGE 0xE69F00
#define OI_SKY_BLUE 0x56B4E9
#define OI_GREEN 0x009E73
#define OI_YELLOW 0xF0E442
#define OI_BLUE 0x0072B2
#define OI_VERMILLION 0xD55E00
#define OI_PURPLE 0xCC79A7

static const struct vw_rgb roles[] = {
	[VW_ROLE_TEXT] = RGB(0x1A1A1A),
	[VW_ROLE_MUTED_TEXT] = RGB(0x595959),
	[VW_ROLE_AXIS] = RGB(0x4D4D4D),
	[VW_ROLE_GRID] = RGB(0xE3E3E3),
	[VW_ROLE_BACKGROUND] = RGB(0xFFFFFF),
	[VW_ROLE_MERGED] = RGB(0xBBBBBB),
	[VW_ROLE_FREE] = RGB(0xE3E8EE), /* tinted: never an antialiased grey */
	[VW_ROLE_RESERVED] = RGB(OI_BLACK),
	[VW_ROLE_DEVICE_USED] = RGB(OI_VERMILLION),
	[VW_ROLE_LOWER_BOUND] = RGB(OI_BLACK),
	[VW_ROLE_PEAK] = RGB(OI_BLACK),
	[VW_ROLE_OOM] = RGB(OI_VERMILLION),
	[VW_ROLE_KERNEL] = RGB(0x3B3B3B),
	[VW_ROLE_CONTEXT] = RGB(OI_BLUE),
	[VW_ROLE_CACHE] = RGB(OI_SKY_BLUE),
	[VW_ROLE_FRAGMENTATION] = RGB(OI_VERMILLION),
	[VW_ROLE_DEVICE_FREE] = RGB(0xF4F4F4),
	[VW_ROLE_OTHER_PROCESSES] = RGB(0x6E6E6E),
	[VW_ROLE_UNEXPLAINED] = RGB(0xD9D9D9),
};

/* Tol "light", without its pale grey (the merged band is grey). */
static const struct vw_rgb bands[VW_BAND_COLORS] = {
	RGB(0x77AADD), RGB(0xEE8866), RGB(0x44BB99), RGB(0xEEDD88),
	RGB(0x99DDFF), RGB(0xFFAABB), RGB(0xBBCC33), RGB(0xAAAA00),
};

/* A policy's colour, by its place in mt_policy_list: Okabe–Ito, then Paul
 * Tol's "muted": eleven distinct colours before any repeats; yellow late, it
 * is faint as a line. Grey is for a name the list does not hold. */
static const struct vw_rgb series[] = {
	RGB(OI_BLUE),     RGB(OI_ORANGE),     RGB(OI_GREEN),  RGB(OI_PURPLE),
	RGB(OI_SKY_BLUE), RGB(OI_VERMILLION), RGB(0x332288),  RGB(0x882255),
	RGB(0x44AA99),    RGB(0x999933),      RGB(OI_YELLOW),
};
#define UNKNOWN_POLICY RGB(0x7F7F7F)

/* Phases avoid the anatomy's own colours (blue, sky blue, vermillion). */
static const struct vw_rgb phases[] = {
	RGB(OI_ORANGE), RGB(OI_GREEN), RGB(OI_PURPLE), RGB(OI_YELLOW),
	RGB(0x999933),  RGB(0x882255), RGB(0x44AA99),  RGB(0xAA4499),
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct vw_rgb vw_role_color(enum vw_role role)
{
	return roles[(size_t)role < COUNT(roles) ? role : VW_ROLE_TEXT];
}

struct vw_rgb vw_band_color(size_t i)
{
	return bands[i % COUNT(bands)];
}

struct vw_rgb vw_policy_color(const char *spec)
{
	static const struct vw_rgb unknown = UNKNOWN_POLICY;
	const struct mt_policy_ops *const *all = mt_policy_list();
	size_t len = strcspn(spec, ":"), i;

	for (i = 0; all[i]; i++)
		if (strlen(all[i]->name) == len && !strncmp(all[i]->name, spec, len))
			return series[i % COUNT(series)];
	return unknown;
}

struct vw_rgb vw_phase_color(size_t i)
{
	return phases[i % COUNT(phases)];
}

void vw_set_rgb(cairo_t *cr, struct vw_rgb c)
{
	cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

static uint32_t channel(double v)
{
	return (uint32_t)(v * 255.0 + 0.5);
}

uint32_t vw_rgb_pixel(struct vw_rgb c)
{
	return 0xff000000u | channel(c.r) << 16 | channel(c.g) << 8 | channel(c.b);
}

struct vw_rgb vw_text_on(struct vw_rgb bg)
{
	double luminance = 0.2126 * bg.r + 0.7152 * bg.g + 0.0722 * bg.b;

	return luminance < 0.45 ? roles[VW_ROLE_BACKGROUND] : roles[VW_ROLE_TEXT];
}
