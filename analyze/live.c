/* live.c — live bytes at a moment and the peak of live bytes over a set of
 * lifetimes (the state after every event of a moment counts).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze-private.h"

bool mt_lifetime_live_at(const struct mt_lifetime *l, uint64_t ts)
{
	bool born = l->flags & MT_LIFETIME_NO_ALLOC || l->start <= ts;

	return born && (l->end == MT_TIME_UNKNOWN || ts < l->end);
}

uint64_t mt_live_at(const struct mt_lifetime *l, size_t n, uint64_t ts)
{
	uint64_t live = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (mt_lifetime_live_at(&l[i], ts))
			live += l[i].bytes;
	return live;
}

int an_sort_timed(struct an_timed *v, size_t n)
{
	struct an_timed *tmp, *src = v, *dst;
	unsigned shift;

	if (n < 2)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	dst = tmp;
	for (shift = 0; shift < 64; shift += 8) {
		size_t count[256] = { 0 }, pos = 0, i, b;

		for (i = 0; i < n; i++)
			count[(src[i].t >> shift) & 0xff]++;
		if (count[(src[0].t >> shift) & 0xff] == n)
			continue;
		for (b = 0; b < 256; b++) {
			size_t c = count[b];

			count[b] = pos;
			pos += c;
		}
		for (i = 0; i < n; i++)
			dst[count[(src[i].t >> shift) & 0xff]++] = src[i];
		struct an_timed *swap = src;
		src = dst;
		dst = swap;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	return 0;
}

int mt_peak_moment(const struct mt_lifetime *l, size_t n, uint64_t *peak_bytes, uint64_t *at)
{
	struct an_timed *up = malloc((n ? n : 1) * sizeof(*up));
	struct an_timed *down = malloc((n ? n : 1) * sizeof(*down));
	uint64_t first = UINT64_MAX, best_at;
	size_t nu = 0, nd = 0, i = 0, j = 0;
	int64_t cur = 0, best = 0;
	int rc = -ENOMEM;

	if (!up || !down)
		goto out;
	for (i = 0; i < n; i++) {
		if (!(l[i].flags & MT_LIFETIME_NO_ALLOC) && l[i].start < first)
			first = l[i].start;
		if (l[i].end != MT_TIME_UNKNOWN && l[i].end < first)
			first = l[i].end;
	}
	if (first == UINT64_MAX)
		first = 0;
	for (i = 0; i < n; i++) {
		if (!l[i].bytes)
			continue;
		up[nu++] =
		        (struct an_timed){ l[i].flags & MT_LIFETIME_NO_ALLOC ? first : l[i].start,
			                   l[i].bytes };
		if (l[i].end != MT_TIME_UNKNOWN)
			down[nd++] = (struct an_timed){ l[i].end, l[i].bytes };
	}
	if (an_sort_timed(up, nu) < 0 || an_sort_timed(down, nd) < 0)
		goto out;
	best_at = first;
	i = j = 0;
	while (i < nu || j < nd) {
		uint64_t t = i < nu && (j == nd || up[i].t <= down[j].t) ? up[i].t : down[j].t;

		while (j < nd && down[j].t == t)
			cur -= (int64_t)down[j++].v;
		while (i < nu && up[i].t == t)
			cur += (int64_t)up[i++].v;
		if (cur > best) {
			best = cur;
			best_at = t;
		}
	}
	*peak_bytes = (uint64_t)best;
	*at = best_at;
	rc = 0;
out:
	free(up);
	free(down);
	return rc;
}
