/* registry.c — the table of formats (formats.def) and the lookups over
 * it: by name, by an output file's extension, by a file's first bytes.
 */
#include "config.h"

#include <string.h>

#include "interop-private.h"

#define IO_FORMAT(name) extern const struct mt_interop_format io_format_##name;
#include "formats.def"
#undef IO_FORMAT

static const struct mt_interop_format *const formats[] = {
#define IO_FORMAT(name) &io_format_##name,
#include "formats.def"
#undef IO_FORMAT
};

#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

size_t mt_interop_format_count(void)
{
	return NFORMATS;
}

const struct mt_interop_format *mt_interop_format_at(size_t i)
{
	return i < NFORMATS ? formats[i] : NULL;
}

const struct mt_interop_format *mt_interop_format_find(const char *name)
{
	for (size_t i = 0; name && i < NFORMATS; i++)
		if (!strcmp(formats[i]->name, name))
			return formats[i];
	return NULL;
}

/* The length of the longest of the space-separated extensions that ends
 * path, 0 if none does. */
static size_t extension_match(const char *path, const char *extensions)
{
	size_t plen = strlen(path), best = 0;

	for (const char *e = extensions; *e;) {
		size_t n = strcspn(e, " ");
		if (n && n < plen && !strncmp(path + plen - n, e, n) && n > best)
			best = n;
		e += n;
		e += strspn(e, " ");
	}
	return best;
}

const struct mt_interop_format *mt_interop_format_for_path(const char *path)
{
	const struct mt_interop_format *found = NULL;
	size_t best = 0;
	bool tie = false;

	for (size_t i = 0; path && i < NFORMATS; i++) {
		size_t n = formats[i]->export ? extension_match(path, formats[i]->extensions) : 0;
		if (n && n == best) {
			tie = true;
		} else if (n > best) {
			best = n;
			found = formats[i];
			tie = false;
		}
	}
	/* two formats claim the same extension: the caller names one */
	return tie ? NULL : found;
}

const struct mt_interop_format *mt_interop_format_detect(const void *data, size_t len)
{
	for (size_t i = 0; data && i < NFORMATS; i++)
		if (formats[i]->detect && formats[i]->detect(data, len))
			return formats[i];
	return NULL;
}

const char *mt_interop_format_name(const struct mt_interop_format *f)
{
	return f->name;
}

const char *mt_interop_format_description(const struct mt_interop_format *f)
{
	return f->description;
}

const char *mt_interop_format_extensions(const struct mt_interop_format *f)
{
	return f->extensions;
}

bool mt_interop_format_imports(const struct mt_interop_format *f)
{
	return f->import != NULL;
}

bool mt_interop_format_exports(const struct mt_interop_format *f)
{
	return f->export != NULL;
}
