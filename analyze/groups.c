/* groups.c — the allocations live at a moment grouped by where they were
 * made: the frame that names them (their call site), or when they have
 * none the innermost NVTX range they were made in; or by that range alone.
 * A group counts its allocations and bytes and keeps its largest.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze-private.h"

/* One live allocation and its key (owned by the first item of its run
 * after sorting by source). */
struct item {
	size_t i;      /* lifetime index */
	uint32_t site; /* call-site string (0 when grouping by range) */
	const struct mt_range *range;
	char *key;
	bool is_site;
};

/* Items of the same source (site string, else range name and domain)
 * side by side. */
static int by_source(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	uint32_t xn = x->range ? x->range->name : 0, yn = y->range ? y->range->name : 0;
	uint32_t xd = x->range ? x->range->domain : 0, yd = y->range ? y->range->domain : 0;

	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	if (x->site)
		return 0;
	if (xn != yn)
		return xn < yn ? -1 : 1;
	return xd < yd ? -1 : xd > yd;
}

static int by_key(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : x->i < y->i ? -1 : x->i > y->i;
}

static int by_bytes(const void *a, const void *b)
{
	const struct mt_report_group *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* The key of item t: its site's display frame, else "in NAME [DOMAIN]". */
static char *key_of(struct mt_reader *r, const struct item *t, bool *is_site)
{
	const char *stack = t->site ? mt_reader_string(r, t->site) : NULL;
	size_t d = mt_site_display_index(stack);
	char buf[1024];

	*is_site = d != (size_t)-1;
	if (*is_site)
		return strdup(mt_site_frame(stack, d, buf, sizeof(buf)));
	if (!t->range)
		return strdup("");
	snprintf(buf, sizeof(buf), "in ");
	mt_range_label(r, t->range->name, t->range->domain, buf + 3, sizeof(buf) - 3);
	return strdup(buf);
}

int an_groups(struct mt_report *rep, bool by_site)
{
	const struct mt_analysis *d = &rep->data;
	struct item *v = malloc((d->nlive ? d->nlive : 1) * sizeof(*v));
	char **keys = NULL; /* one per source, owned here */
	size_t n = 0, i, g = 0, nkeys = 0, kcap = 0;
	int rc = -ENOMEM;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < d->nlive; i++)
		if (mt_lifetime_live_at(&d->live[i], rep->at))
			v[n++] = (struct item){ i, by_site ? d->live[i].site : 0, rep->range_of[i],
				                NULL, false };
	if (n)
		qsort(v, n, sizeof(*v), by_source);
	for (i = 0; i < n; i++) {
		if (i && !by_source(&v[i - 1], &v[i])) {
			v[i].key = v[i - 1].key;
			v[i].is_site = v[i - 1].is_site;
			continue;
		}
		if (mt_array_grow((void **)&keys, &kcap, nkeys, sizeof(*keys)) < 0 ||
		    !(v[i].key = keys[nkeys++] = key_of(d->r, &v[i], &v[i].is_site)))
			goto out;
	}
	/* the same key from different sources (stacks that differ further
	 * out) is one group */
	rep->groups = calloc(n ? n : 1, sizeof(*rep->groups));
	if (!rep->groups)
		goto out;
	if (n)
		qsort(v, n, sizeof(*v), by_key);
	for (i = 0; i < n; i++) {
		const struct mt_lifetime *l = &d->live[v[i].i];
		struct mt_report_group *grp;

		if (!i || strcmp(v[i - 1].key, v[i].key)) {
			grp = &rep->groups[g++];
			rep->ngroups = g;
			if (!(grp->key = strdup(v[i].key)))
				goto out;
			grp->is_site = v[i].is_site;
		}
		grp = &rep->groups[g - 1];
		grp->count++;
		grp->bytes += l->bytes;
		if (!grp->largest.l || l->bytes > grp->largest.l->bytes)
			grp->largest = (struct mt_report_alloc){ l, rep->range_of[v[i].i] };
	}
	if (g)
		qsort(rep->groups, g, sizeof(*rep->groups), by_bytes);
	rc = 0;
out:
	for (i = 0; i < nkeys; i++)
		free(keys[i]);
	free(keys);
	free(v);
	return rc;
}
