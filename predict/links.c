/* links.c — the alignment of neighbouring inputs (by size). Two inputs with
 * the same token sequence are matched request by request. Otherwise the
 * sizes decide where tokens repeat (a backward pass has one call site for
 * everything): when a neighbouring pair is matched already, each request's
 * size at the other input's N is predicted from that pair (unchanged, in
 * proportion to N, to N^2, else on the line through the two) and requests
 * whose sizes are exactly the predicted ones are matched first; the
 * requests between those anchors are then matched by token and by sizes
 * that could be one tensor at both N. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "predict-private.h"

typedef __int128 i128;

/* What the matching of one pair looks at: a at the smaller N. */
struct link {
	const struct pr_input *a, *b;
	double ratio2; /* (N_b / N_a)^2 */
	/* the size predicted at the other input's N, 0 = none: of a's requests
	 * at N_b, of b's at N_a */
	const uint64_t *a_at_b, *b_at_a;
	size_t off_a, off_b; /* where the matched sub-sequences start */
};

static bool loose(void *ctx, size_t i, size_t j)
{
	const struct link *l = ctx;
	i += l->off_a;
	j += l->off_b;
	if (l->a->key[i] != l->b->key[j])
		return false;
	double x = (double)l->a->bytes[i], y = (double)l->b->bytes[j];
	if (x <= 4096 && y <= 4096)
		return true;
	return y <= x * l->ratio2 * 1.05 + 4096 && x <= y * l->ratio2 * 1.05 + 4096;
}

static bool strict(void *ctx, size_t i, size_t j)
{
	const struct link *l = ctx;
	if (l->a->key[i] != l->b->key[j])
		return false;
	return (l->a_at_b && l->a_at_b[i] == l->b->bytes[j]) ||
	       (l->b_at_a && l->b_at_a[j] == l->a->bytes[i]);
}

/* The size at nc of a tensor of sa bytes at na and sb at nb, if sizes are
 * exact: unchanged, proportional to N, to N^2, else on their line; 0 when
 * that is not a whole number of bytes above 0. */
static uint64_t extrapolate(uint64_t na, uint64_t sa, uint64_t nb, uint64_t sb, uint64_t nc)
{
	i128 A = na, B = nb, C = nc, x = sa, y = sb, v;
	if (x == y)
		return sb;
	if (y * A == x * B)
		v = (y * C) % B ? 0 : y * C / B;
	else if (y * A * A == x * B * B)
		v = (y * C * C) % (B * B) ? 0 : y * C * C / (B * B);
	else
		v = ((y - x) * (C - B)) % (B - A) ? 0 : y + (y - x) * (C - B) / (B - A);
	return v > 0 && v < ((i128)1 << 62) ? (uint64_t)v : 0;
}

/* Predictions of input `at`'s sizes at `target` from its matched
 * neighbour `via` (match: via's request for each of at's, or PR_NONE). */
static uint64_t *predict_sizes(const struct pr_input *at, const struct pr_input *via,
                               const uint32_t *match, uint64_t target)
{
	uint64_t *out = calloc(at->nreq ? at->nreq : 1, sizeof(uint64_t));
	for (size_t i = 0; out && i < at->nreq; i++)
		if (match[i] != PR_NONE)
			out[i] = extrapolate(via->info.size, via->bytes[match[i]], at->info.size,
			                     at->bytes[i], target);
	return out;
}

static bool same_tokens(const struct pr_input *a, const struct pr_input *b)
{
	return a->nreq == b->nreq && !memcmp(a->key, b->key, a->nreq * sizeof(uint64_t));
}

/* Matches the requests between anchors (consecutive strict matches) with
 * the loose predicate. */
static int fill_gaps(struct link *l, uint32_t *ma, uint32_t *mb, size_t max_d)
{
	size_t na = l->a->nreq, nb = l->b->nreq, i = 0, j = 0;
	uint32_t *sa = malloc((na ? na : 1) * sizeof(uint32_t)),
	         *sb = malloc((nb ? nb : 1) * sizeof(uint32_t));
	int rc = sa && sb ? 0 : -ENOMEM;
	while (rc == 0 && (i < na || j < nb)) {
		size_t ei = i, ej = j; /* the next anchor, or the ends */
		while (ei < na && ma[ei] == PR_NONE)
			ei++;
		ej = ei < na ? ma[ei] : nb;
		if (ei > i && ej > j) {
			l->off_a = i;
			l->off_b = j;
			rc = pr_align(ei - i, ej - j, loose, l, max_d, sa, sb);
			for (size_t k = 0; rc == 0 && k < ei - i; k++)
				if (sa[k] != PR_NONE) {
					ma[i + k] = (uint32_t)(j + sa[k]);
					mb[j + sa[k]] = (uint32_t)(i + k);
				}
		}
		i = ei + 1;
		j = ej + 1;
	}
	free(sa);
	free(sb);
	return rc;
}

int pr_link(const struct pr_input *a, const struct pr_input *b, const struct pr_input *below,
            const uint32_t *a_to_below, const struct pr_input *above, const uint32_t *b_to_above,
            size_t max_d, uint32_t *ma, uint32_t *mb)
{
	double r = (double)b->info.size / (double)a->info.size;
	struct link l = { a, b, r * r, NULL, NULL, 0, 0 };
	if (same_tokens(a, b)) {
		for (size_t i = 0; i < a->nreq; i++)
			ma[i] = mb[i] = (uint32_t)i;
		return 0;
	}
	uint64_t *a_at_b = below ? predict_sizes(a, below, a_to_below, b->info.size) : NULL;
	uint64_t *b_at_a = above ? predict_sizes(b, above, b_to_above, a->info.size) : NULL;
	int rc = (below && !a_at_b) || (above && !b_at_a) ? -ENOMEM : 0;
	l.a_at_b = a_at_b;
	l.b_at_a = b_at_a;
	if (rc == 0 && (a_at_b || b_at_a))
		rc = pr_align(a->nreq, b->nreq, strict, &l, max_d, ma, mb);
	if (rc == -EDOM || (rc == 0 && !a_at_b && !b_at_a)) { /* no anchors */
		rc = 0;
		for (size_t i = 0; i < a->nreq; i++)
			ma[i] = PR_NONE;
		for (size_t j = 0; j < b->nreq; j++)
			mb[j] = PR_NONE;
	}
	if (rc == 0)
		rc = fill_gaps(&l, ma, mb, max_d);
	free(a_at_b);
	free(b_at_a);
	return rc;
}
