/* align.c — the alignment of two request sequences (tokens: call site,
 * memory kind, stream, NVTX range). Runs of equal tokens match in order; at
 * a mismatch the smallest skip on either side after which the next few
 * tokens agree again resynchronises them, the skipped requests staying
 * unmatched (a workspace allocated in one run only). No such skip within
 * max_gap requests means the streams took different paths. Linear in the
 * length when the runs differ by isolated requests. */
#include "config.h"

#include <errno.h>

#include "predict-private.h"

/* Whether a[i..] and b[j..] agree on the next `window` tokens (or on all
 * that is left, both ending together). */
static bool agree(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, size_t i, size_t j,
                  size_t window)
{
	size_t k;
	for (k = 0; k < window && i + k < na && j + k < nb; k++)
		if (a[i + k] != b[j + k])
			return false;
	return k == window || (i + k == na && j + k == nb);
}

int pr_align(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, size_t max_gap,
             size_t window, uint32_t *match_a, uint32_t *match_b, size_t *stop_a, size_t *stop_b)
{
	size_t i = 0, j = 0;
	for (size_t k = 0; k < na; k++)
		match_a[k] = PR_NONE;
	for (size_t k = 0; k < nb; k++)
		match_b[k] = PR_NONE;
	while (i < na || j < nb) {
		if (i < na && j < nb && a[i] == b[j]) {
			match_a[i] = (uint32_t)j;
			match_b[j] = (uint32_t)i;
			i++;
			j++;
			continue;
		}
		/* the smallest total skip (di + dj), then the one skipping less of a */
		bool found = false;
		for (size_t total = 1; !found && total <= 2 * max_gap; total++) {
			for (size_t di = total > max_gap ? total - max_gap : 0;
			     di <= total && di <= max_gap; di++) {
				size_t dj = total - di;
				if (i + di > na || j + dj > nb)
					continue;
				if (agree(a, na, b, nb, i + di, j + dj, window)) {
					i += di;
					j += dj;
					found = true;
					break;
				}
			}
		}
		if (!found) {
			*stop_a = i;
			*stop_b = j;
			return -EDOM;
		}
	}
	return 0;
}
