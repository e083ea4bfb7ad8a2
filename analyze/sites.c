/* sites.c — call-site strings: the call stack, one frame per line,
 * innermost first; which frame names an allocation for people.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "analyze-private.h"

/* Start and length of frame i (non-empty lines), or NULL. */
static const char *frame_at(const char *stack, size_t i, size_t *len)
{
	const char *p = stack;
	size_t k = 0;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);

		if (l && k++ == i) {
			*len = l;
			return p;
		}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

size_t mt_site_frame_count(const char *stack)
{
	size_t n = 0, len;

	while (stack && frame_at(stack, n, &len))
		n++;
	return n;
}

char *mt_site_frame(const char *stack, size_t i, char *buf, size_t len)
{
	size_t l = 0;
	const char *f = stack ? frame_at(stack, i, &l) : NULL;

	if (!len)
		return buf;
	if (!f)
		l = 0;
	if (l >= len)
		l = len - 1;
	memcpy(buf, f ? f : "", l);
	buf[l] = '\0';
	return buf;
}

/* Whether the frame lies inside PyTorch's own installed package (not any
 * path with a "torch" folder: environments live in /opt/torch/.venv). */
static bool in_torch(const char *f, size_t len)
{
	static const char *const needles[] = { "/site-packages/torch/", "/dist-packages/torch/" };
	size_t k, i;

	for (k = 0; k < sizeof(needles) / sizeof(needles[0]); k++) {
		size_t n = strlen(needles[k]);
		for (i = 0; i + n <= len; i++)
			if (!memcmp(f + i, needles[k], n))
				return true;
	}
	return false;
}

size_t mt_site_display_index(const char *stack)
{
	const char *f;
	size_t i, len;

	if (!stack)
		return (size_t)-1;
	for (i = 0; (f = frame_at(stack, i, &len)); i++)
		if (!in_torch(f, len))
			return i;
	return i ? 0 : (size_t)-1;
}
