/* sites.c — call-site strings: the call stack, one frame per line,
 * innermost first; which frame names an allocation for people, and how its
 * path is shortened for them.
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

/* Where in f[0..len) the first of needles ends, or NULL. */
static const char *after_any(const char *f, size_t len, const char *const *needles, size_t n)
{
	size_t k, i;

	for (i = 0; i < len; i++)
		for (k = 0; k < n; k++) {
			size_t m = strlen(needles[k]);

			if (i + m <= len && !memcmp(f + i, needles[k], m))
				return f + i + m;
		}
	return NULL;
}

static const char *const packages[] = { "/site-packages/", "/dist-packages/" };
#define NPACKAGES (sizeof(packages) / sizeof(packages[0]))

/* Whether the frame lies inside PyTorch's own installed package (not any
 * path with a "torch" folder: environments live in /opt/torch/.venv). */
static bool in_torch(const char *f, size_t len)
{
	static const char *const needles[] = { "/site-packages/torch/", "/dist-packages/torch/" };

	return after_any(f, len, needles, 2) != NULL;
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

/* Length of the path of a Python frame "path:line:function" (path starts
 * with '/'), 0 for another frame. */
static size_t python_path(const char *f)
{
	const char *colon;

	if (f[0] != '/' || strchr(f, '\n'))
		return 0;
	colon = strchr(f, ':');
	return colon ? (size_t)(colon - f) : 0;
}

/* Whether a path lies in the standard library (".../lib/python3.12/"). */
static bool in_stdlib(const char *f, size_t len)
{
	static const char *const needles[] = { "/lib/python3" };

	return after_any(f, len, needles, 1) != NULL;
}

char *mt_site_program_dir(const char *const *stacks, size_t n, char *buf, size_t len)
{
	char frame[1024];
	size_t i, have = 0, k;

	if (!len)
		return buf;
	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		size_t d = mt_site_display_index(stacks[i]), plen, dir;

		if (d == (size_t)-1)
			continue;
		mt_site_frame(stacks[i], d, frame, sizeof(frame));
		plen = python_path(frame);
		if (!plen || after_any(frame, plen, packages, NPACKAGES) || in_stdlib(frame, plen))
			continue;
		for (dir = plen; dir > 0 && frame[dir - 1] != '/'; dir--)
			;
		if (!have) {
			have = dir < len ? dir : len - 1;
			memcpy(buf, frame, have);
			buf[have] = '\0';
			continue;
		}
		/* the common directory of buf and this one */
		for (k = 0; k < have && k < dir && buf[k] == frame[k]; k++)
			;
		while (k > 0 && buf[k - 1] != '/')
			k--;
		have = k;
		buf[have] = '\0';
	}
	if (have <= 1)
		buf[0] = '\0';
	return buf;
}

char *mt_site_shorten(const char *frame, const char *program_dir, char *buf, size_t len)
{
	size_t plen = python_path(frame), dlen = program_dir ? strlen(program_dir) : 0;
	const char *pkg = plen ? after_any(frame, plen, packages, NPACKAGES) : NULL;

	if (pkg)
		snprintf(buf, len, "%s", pkg);
	else if (plen && dlen && dlen < plen && !strncmp(frame, program_dir, dlen))
		snprintf(buf, len, "%s", frame + dlen);
	else
		snprintf(buf, len, "%s", frame);
	return buf;
}
