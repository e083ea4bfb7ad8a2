/* top.c — the largest allocations among those that pass a test (live at a
 * moment, never freed), each with its innermost range.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "analyze-private.h"

size_t an_largest(const struct mt_report *rep,
                  bool (*keep)(const struct mt_lifetime *l, const void *data), const void *data,
                  struct mt_report_alloc *out, size_t n)
{
	const struct mt_analysis *d = &rep->data;
	size_t i, k = 0, j;

	if (!n)
		return 0;
	for (i = 0; i < d->nlive; i++) {
		const struct mt_lifetime *l = &d->live[i];

		if (!keep(l, data) || (k == n && l->bytes <= out[k - 1].l->bytes))
			continue;
		/* insert after the equal ones: earlier allocations first */
		j = k < n ? k++ : n - 1;
		for (; j > 0 && out[j - 1].l->bytes < l->bytes; j--)
			out[j] = out[j - 1];
		out[j] = (struct mt_report_alloc){ l, rep->range_of ? rep->range_of[i] : NULL };
	}
	return k;
}

int an_largest_new(const struct mt_report *rep,
                   bool (*keep)(const struct mt_lifetime *l, const void *data), const void *data,
                   size_t n, struct mt_report_alloc **out, size_t *found)
{
	*out = calloc(n + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	*found = an_largest(rep, keep, data, *out, n);
	return 0;
}
