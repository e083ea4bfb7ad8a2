/* fit.c — one request's size as a function of N. A tensor's size is its
 * element size times the product of its dimensions; with dimensions affine
 * in N it is affine in N (activations, by batch) or quadratic (attention
 * scores, by sequence), with integer coefficients. So a fit is accepted
 * only when it passes exactly through every point, in exact integer
 * arithmetic, and a quadratic only with integer coefficients and a square
 * term that matters (three points always lie on some parabola: these rules
 * keep rounded or data-dependent sizes from passing as quadratic). What
 * fits nothing exactly gets the least-squares line and is counted. */
#include "config.h"

#include <math.h>

#include "predict-private.h"

typedef __int128 i128;

/* The indices of the smallest, a middle and the largest size. */
static void pick3(const uint64_t *x, size_t k, size_t *lo, size_t *mid, size_t *hi)
{
	*lo = *hi = 0;
	for (size_t i = 1; i < k; i++) {
		if (x[i] < x[*lo])
			*lo = i;
		if (x[i] > x[*hi])
			*hi = i;
	}
	/* the middle: the point closest to the geometric mean of the ends */
	double g = sqrt((double)x[*lo] * (double)x[*hi]), best = INFINITY;
	*mid = *lo;
	for (size_t i = 0; i < k; i++) {
		if (i == *lo || i == *hi)
			continue;
		double d = fabs((double)x[i] - g);
		if (d < best) {
			best = d;
			*mid = i;
		}
	}
}

static bool affine_exact(const uint64_t *x, const uint64_t *y, size_t k, size_t lo, size_t hi)
{
	i128 dx = (i128)x[hi] - (i128)x[lo], dy = (i128)y[hi] - (i128)y[lo];
	for (size_t i = 0; i < k; i++)
		if (((i128)y[i] - (i128)y[lo]) * dx != dy * ((i128)x[i] - (i128)x[lo]))
			return false;
	return true;
}

/* The parabola with integer coefficients through (x, y) at lo, mid, hi,
 * if any; then whether it passes through every point. */
static bool quadratic_exact(const uint64_t *x, const uint64_t *y, size_t k, size_t lo, size_t mid,
                            size_t hi, i128 c[3])
{
	i128 x0 = x[lo], x1 = x[mid], x2 = x[hi], y0 = y[lo], y1 = y[mid], y2 = y[hi];
	i128 num = (y2 - y1) * (x1 - x0) - (y1 - y0) * (x2 - x1);
	i128 den = (x1 - x0) * (x2 - x1) * (x2 - x0);
	if (num % den)
		return false;
	c[2] = num / den;
	i128 rest = y1 - y0 - c[2] * (x1 * x1 - x0 * x0);
	if (rest % (x1 - x0))
		return false;
	c[1] = rest / (x1 - x0);
	c[0] = y0 - c[1] * x0 - c[2] * x0 * x0;
	for (size_t i = 0; i < k; i++) {
		i128 xi = x[i];
		if (c[0] + c[1] * xi + c[2] * xi * xi != (i128)y[i])
			return false;
	}
	return true;
}

void pr_fit_points(const uint64_t *x, const uint64_t *y, size_t k, struct pr_fit *fit,
                   double *residual)
{
	size_t lo, mid, hi;
	bool constant = true;
	*residual = 0;
	*fit = (struct pr_fit){ (double)y[0], 0, 0, PR_FIT_CONSTANT };
	for (size_t i = 1; i < k; i++)
		constant &= y[i] == y[0];
	if (constant)
		return;
	pick3(x, k, &lo, &mid, &hi);
	if (affine_exact(x, y, k, lo, hi)) {
		double slope = ((double)y[hi] - (double)y[lo]) / ((double)x[hi] - (double)x[lo]);
		*fit = (struct pr_fit){ (double)y[lo] - slope * (double)x[lo], slope, 0,
			                PR_FIT_AFFINE };
		return;
	}
	i128 c[3];
	if (k >= 3 && quadratic_exact(x, y, k, lo, mid, hi, c) && c[2] > 0 &&
	    c[2] * (i128)x[hi] * (i128)x[hi] * 16 >= (i128)y[hi]) {
		*fit = (struct pr_fit){ (double)c[0], (double)c[1], (double)c[2],
			                PR_FIT_QUADRATIC };
		return;
	}
	/* least squares */
	double intercept, slope;
	pr_least_squares(x, y, k, &intercept, &slope);
	*fit = (struct pr_fit){ intercept, slope, 0, PR_FIT_APPROXIMATE };
	for (size_t i = 0; i < k; i++) {
		double err = fabs((double)pr_fit_eval(fit, x[i]) - (double)y[i]) /
		             (y[i] ? (double)y[i] : 1.0);
		if (err > *residual)
			*residual = err;
	}
}

void pr_least_squares(const uint64_t *x, const uint64_t *y, size_t k, double *intercept,
                      double *slope)
{
	long double sx = 0, sy = 0, sxx = 0, sxy = 0;
	for (size_t i = 0; i < k; i++) {
		sx += x[i];
		sy += y[i];
		sxx += (long double)x[i] * x[i];
		sxy += (long double)x[i] * y[i];
	}
	long double den = k * sxx - sx * sx;
	long double b = den != 0 ? (k * sxy - sx * sy) / den : 0;
	*slope = (double)b;
	*intercept = k ? (double)((sy - b * sx) / k) : 0;
}

uint64_t pr_fit_eval(const struct pr_fit *fit, uint64_t n)
{
	long double v =
	        (long double)fit->c0 + (long double)fit->c1 * n + (long double)fit->c2 * n * n;
	if (v < 0.5L)
		return 0;
	if (v >= 0x1p63L)
		return UINT64_MAX / 2;
	return (uint64_t)llroundl(v);
}
