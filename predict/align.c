/* align.c — the alignment of two request sequences: the longest common
 * subsequence under a match predicate (same call site, memory kind, stream
 * and NVTX range, and sizes that could be one tensor at the two sizes N),
 * by Myers' O((n + m) d) difference algorithm, which stays exact for any
 * predicate: following a diagonal of matches is always optimal. Cheap when
 * the runs differ by a few requests, bounded by max_d otherwise. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "predict-private.h"

/* The furthest x reached on diagonal k after d differences: trace[d] holds
 * the d + 1 diagonals -d, -d + 2, ..., d. */
static int32_t *row(int32_t *trace, size_t d)
{
	return trace + d * (d + 1) / 2;
}

static int32_t at(const int32_t *r, long d, long k)
{
	return r[(k + d) / 2];
}

int pr_align(size_t na, size_t nb, pr_match_fn match, void *ctx, size_t max_d, uint32_t *match_a,
             uint32_t *match_b)
{
	for (size_t i = 0; i < na; i++)
		match_a[i] = PR_NONE;
	for (size_t j = 0; j < nb; j++)
		match_b[j] = PR_NONE;
	if (na >= INT32_MAX || nb >= INT32_MAX)
		return -E2BIG;
	size_t cap = 64;
	int32_t *trace = malloc(cap * (cap + 1) / 2 * sizeof(int32_t));
	long N = (long)na, M = (long)nb, D = -1;
	if (!trace)
		return -ENOMEM;
	for (long d = 0; d <= (long)max_d && D < 0; d++) {
		if ((size_t)d >= cap) {
			size_t c = cap * 2;
			int32_t *t = realloc(trace, c * (c + 1) / 2 * sizeof(int32_t));
			if (!t) {
				free(trace);
				return -ENOMEM;
			}
			trace = t;
			cap = c;
		}
		int32_t *cur = row(trace, (size_t)d), *prev = d ? row(trace, (size_t)d - 1) : NULL;
		for (long k = -d; k <= d; k += 2) {
			long x;
			if (d == 0)
				x = 0;
			else if (k == -d ||
			         (k != d && at(prev, d - 1, k - 1) < at(prev, d - 1, k + 1)))
				x = at(prev, d - 1, k + 1); /* down: a request of b alone */
			else
				x = at(prev, d - 1, k - 1) + 1; /* right: a request of a alone */
			long y = x - k;
			while (x < N && y < M && match(ctx, (size_t)x, (size_t)y))
				x++, y++;
			cur[(k + d) / 2] = (int32_t)x;
			if (x >= N && y >= M)
				D = d;
		}
	}
	if (D < 0) {
		free(trace);
		return -EDOM;
	}
	/* back from (N, M): each step's snake is a run of matches */
	long x = N, y = M;
	for (long d = D; d >= 0; d--) {
		long k = x - y, px = 0, py = 0, sx = 0, sy = 0;
		if (d > 0) {
			const int32_t *prev = row(trace, (size_t)d - 1);
			bool down = k == -d ||
			            (k != d && at(prev, d - 1, k - 1) < at(prev, d - 1, k + 1));
			long pk = down ? k + 1 : k - 1;
			px = at(prev, d - 1, pk);
			py = px - pk;
			sx = down ? px : px + 1;
			sy = down ? py + 1 : py;
		}
		for (; x > sx && y > sy; x--, y--) {
			match_a[x - 1] = (uint32_t)(y - 1);
			match_b[y - 1] = (uint32_t)(x - 1);
		}
		x = px;
		y = py;
	}
	free(trace);
	return 0;
}
