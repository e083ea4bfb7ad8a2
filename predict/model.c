/* model.c — building a predictor. The inputs, sorted by size, are aligned
 * pairwise with their neighbour, and each request of the largest input (the
 * reference) is followed down that chain to the smaller inputs. Its size is
 * fitted on the points of the inputs nearest the reference as long as one
 * constant, line or parabola passes through all of them exactly; a point
 * that breaks the fit is inconsistent. An input most of whose points are
 * inconsistent runs another code path than the larger ones (below a size
 * threshold PyTorch and its libraries choose other kernels and buffers): it
 * is left out, with every smaller one, while two inputs or more remain.
 * Then the remaining inputs are refused when requests missing from a
 * neighbour hold more than 5% of an input's peak (another code path, a
 * data-dependent branch), or when inconsistent sizes hold more than 2% of
 * the reference's peak (sizes that follow the data, not N). Requests of the
 * reference seen in no other input take the fit most requests of their
 * size have. docs/PREDICT.md tells why. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predict-private.h"

#define MAX_DIFFERENCES 4096       /* requests in one input and not its neighbour */
#define MIN_CONSISTENT 0.9         /* of an input's points, else another code path */
#define MIN_POINTS_JUDGED 16       /* points needed to judge an input */
#define MAX_UNMATCHED_PEAK 0.05    /* requests missing from a neighbour, of a peak */
#define MAX_INCONSISTENT_PEAK 0.02 /* inconsistent sizes, of the reference's peak */

struct build {
	struct mt_predictor *p;
	size_t *order;    /* inputs by size, ascending */
	uint32_t **down;  /* down[t][j]: the request of order[t] matched to j of order[t + 1] */
	uint32_t **up;    /* up[t][i]: the request of order[t + 1] matched to i of order[t] */
	uint32_t **chain; /* chain[t][r]: the request of order[t] for reference request r */
	bool *linked;     /* linked[t]: order[t] and order[t + 1] aligned */
	size_t lowest;    /* the smallest input used */
	uint64_t *points, *consistent; /* per position in order */
	uint8_t *fitted;               /* per reference request: points its fit passes through */
	uint8_t *reached;              /* per reference request: inputs its chain reaches */
};

static const struct pr_input *input_at(const struct build *b, size_t t)
{
	return &b->p->in[b->order[t]];
}

static const char *describe(const struct pr_input *pi, size_t r, char *buf, size_t len)
{
	if (r >= pi->nreq)
		return "the end of its stream";
	return pr_input_describe(pi, r, buf, len);
}

static int diverge(const struct pr_input *a, size_t ia, const struct pr_input *b, size_t ib,
                   const char *why, char *err, size_t errlen)
{
	char da[512], db[512];
	return mt_fail(err, errlen, -EDOM,
	               "cannot predict: the inputs diverge (%s): %s (N=%llu) at %s, %s (N=%llu) "
	               "at %s",
	               why, a->name, (unsigned long long)a->info.size,
	               describe(a, ia, da, sizeof(da)), b->name, (unsigned long long)b->info.size,
	               describe(b, ib, db, sizeof(db)));
}

/* ---- pairwise alignment ---------------------------------------------------------- */

static int link_pair(struct build *b, size_t t, char *err, size_t errlen)
{
	const struct mt_predictor *p = b->p;
	const struct pr_input *lo = input_at(b, t), *hi = input_at(b, t + 1);
	bool below = t > 0 && b->linked[t - 1], above = t + 2 < p->n && b->linked[t + 1];
	b->up[t] = malloc((lo->nreq ? lo->nreq : 1) * sizeof(uint32_t));
	b->down[t] = malloc((hi->nreq ? hi->nreq : 1) * sizeof(uint32_t));
	if (!b->up[t] || !b->down[t])
		return mt_fail(err, errlen, -ENOMEM, "out of memory");
	int rc = pr_link(lo, hi, below ? input_at(b, t - 1) : NULL, below ? b->down[t - 1] : NULL,
	                 above ? input_at(b, t + 2) : NULL, above ? b->up[t + 1] : NULL,
	                 MAX_DIFFERENCES, b->up[t], b->down[t]);
	if (rc == -EDOM)
		return diverge(hi, 0, lo, 0, "more than 4096 requests differ", err, errlen);
	if (rc < 0)
		return mt_fail(err, errlen, rc, "aligning %s and %s: out of memory", lo->name,
		               hi->name);
	b->linked[t] = true;
	return 0;
}

/* Aligns every pair of neighbours: those with one token sequence first,
 * then those next to an aligned pair (whose sizes predict theirs), the
 * pair nearest the reference first. */
static int align_pairs(struct build *b, char *err, size_t errlen)
{
	size_t n = b->p->n, left = n - 1;
	int rc;
	for (size_t t = 0; t + 1 < n; t++)
		if (input_at(b, t)->nreq == input_at(b, t + 1)->nreq &&
		    !memcmp(input_at(b, t)->key, input_at(b, t + 1)->key,
		            input_at(b, t)->nreq * sizeof(uint64_t))) {
			if ((rc = link_pair(b, t, err, errlen)) < 0)
				return rc;
			left--;
		}
	while (left) {
		size_t pick = SIZE_MAX;
		for (size_t t = n - 1; t-- > 0 && pick == SIZE_MAX;)
			if (!b->linked[t] &&
			    ((t > 0 && b->linked[t - 1]) || (t + 2 < n && b->linked[t + 1])))
				pick = t;
		for (size_t t = n - 1; t-- > 0 && pick == SIZE_MAX;)
			if (!b->linked[t])
				pick = t;
		if ((rc = link_pair(b, pick, err, errlen)) < 0)
			return rc;
		left--;
	}
	return 0;
}

/* ---- chains and fits ------------------------------------------------------------- */

static void follow_chains(struct build *b)
{
	size_t n = b->p->n, nref = input_at(b, n - 1)->nreq;
	for (size_t r = 0; r < nref; r++) {
		uint32_t j = (uint32_t)r;
		b->chain[n - 1][r] = j;
		for (size_t t = n - 1; t-- > 0;)
			b->chain[t][r] = j = j == PR_NONE ? PR_NONE : b->down[t][j];
	}
}

/* Fits every reference request on the inputs from the reference down to
 * b->lowest, nearest first, as far as an exact fit holds. */
static void fit_chains(struct build *b)
{
	struct mt_predictor *p = b->p;
	size_t n = p->n, nref = input_at(b, n - 1)->nreq;
	uint64_t x[n], y[n];
	memset(b->points, 0, n * sizeof(uint64_t));
	memset(b->consistent, 0, n * sizeof(uint64_t));
	for (size_t r = 0; r < nref; r++) {
		size_t k = 0;
		for (size_t t = n; t-- > b->lowest && b->chain[t][r] != PR_NONE;) {
			x[k] = input_at(b, t)->info.size;
			y[k++] = input_at(b, t)->bytes[b->chain[t][r]];
		}
		size_t m = k;
		double residual;
		pr_fit_points(x, y, m, &p->fit[r], &residual);
		while (m > 2 && p->fit[r].kind == PR_FIT_APPROXIMATE)
			pr_fit_points(x, y, --m, &p->fit[r], &residual);
		b->reached[r] = (uint8_t)k;
		b->fitted[r] = (uint8_t)m;
		for (size_t i = 1; i < k; i++) {
			b->points[n - 1 - i]++;
			b->consistent[n - 1 - i] += i < m;
		}
	}
}

/* The largest position below the reference whose input diverges from the
 * one above it (most of its points inconsistent), or SIZE_MAX. */
static size_t diverging(const struct build *b)
{
	for (size_t t = b->p->n - 1; t-- > b->lowest;)
		if (b->points[t] >= MIN_POINTS_JUDGED &&
		    (double)b->consistent[t] < MIN_CONSISTENT * (double)b->points[t])
			return t;
	return SIZE_MAX;
}

/* The first reference request whose point in order[t] breaks its fit. */
static size_t first_inconsistent(const struct build *b, size_t t)
{
	size_t n = b->p->n, nref = input_at(b, n - 1)->nreq;
	for (size_t r = 0; r < nref; r++)
		if (b->reached[r] > n - 1 - t && b->fitted[r] <= n - 1 - t)
			return r;
	return 0;
}

/* Leaves out inputs that run another code path than the larger ones;
 * refuses when fewer than two inputs then remain. */
static int leave_out_diverging(struct build *b, char *err, size_t errlen)
{
	struct mt_predictor *p = b->p;
	for (;;) {
		fit_chains(b);
		size_t t = diverging(b);
		if (t == SIZE_MAX)
			return 0;
		const struct pr_input *ref = input_at(b, p->n - 1);
		size_t r = first_inconsistent(b, t);
		if (p->n - 1 - t < 2) {
			char why[160];
			snprintf(why, sizeof(why),
			         "%.0f%% of the sizes at N=%llu fit no size function with the "
			         "larger "
			         "inputs: another code path",
			         100.0 - 100.0 * (double)b->consistent[t] / (double)b->points[t],
			         (unsigned long long)input_at(b, t)->info.size);
			return diverge(ref, r, input_at(b, t), b->chain[t][r], why, err, errlen);
		}
		for (size_t i = b->lowest; i <= t; i++)
			p->in[b->order[i]].info.left_out = true;
		b->lowest = t + 1;
	}
}

/* ---- checks ---------------------------------------------------------------------- */

static size_t count_none(const uint32_t *m, size_t n)
{
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		u += m[i] == PR_NONE;
	return u;
}

/* A size threshold changes the code path once: below it the smaller inputs
 * agree, above it the larger ones. An input whose neighbours agree with
 * each other far better than with it took a path of its own: control flow
 * that follows the data. */
static int check_monotone(const struct build *b, char *err, size_t errlen)
{
	for (size_t t = b->lowest + 1; t + 1 < b->p->n; t++) {
		const struct pr_input *lo = input_at(b, t - 1), *mid = input_at(b, t),
		                      *hi = input_at(b, t + 1);
		size_t around = count_none(b->up[t - 1], lo->nreq) +
		                count_none(b->down[t - 1], mid->nreq) +
		                count_none(b->up[t], mid->nreq) + count_none(b->down[t], hi->nreq);
		if (around < 8)
			continue;
		uint32_t *ma = malloc((lo->nreq ? lo->nreq : 1) * sizeof(uint32_t)),
		         *mb = malloc((hi->nreq ? hi->nreq : 1) * sizeof(uint32_t));
		int rc = ma && mb ? pr_link(lo, hi, NULL, NULL, NULL, NULL, MAX_DIFFERENCES, ma, mb)
		                  : -ENOMEM;
		size_t direct = rc == 0 ? count_none(ma, lo->nreq) + count_none(mb, hi->nreq) : 0;
		free(ma);
		free(mb);
		if (rc == -ENOMEM)
			return mt_fail(err, errlen, rc, "out of memory");
		if (rc < 0 || 4 * direct >= around)
			continue;
		size_t i = 0;
		while (i < mid->nreq && b->up[t][i] != PR_NONE && b->down[t - 1][i] != PR_NONE)
			i++;
		size_t facing = 0;
		for (size_t k = i; k-- > 0;)
			if (b->up[t][k] != PR_NONE) {
				facing = b->up[t][k] + 1;
				break;
			}
		char why[200];
		snprintf(why, sizeof(why),
		         "N=%llu and N=%llu agree and N=%llu does not: control flow that follows "
		         "the data",
		         (unsigned long long)lo->info.size, (unsigned long long)hi->info.size,
		         (unsigned long long)mid->info.size);
		return diverge(mid, i, hi, facing, why, err, errlen);
	}
	return 0;
}

/* Requests of an input with no match in a used neighbour, live at its peak. */
static int check_unmatched(const struct build *b, char *err, size_t errlen)
{
	const struct mt_predictor *p = b->p;
	for (size_t t = b->lowest; t + 1 < p->n; t++) {
		for (int side = 0; side < 2; side++) {
			const struct pr_input *in = input_at(b, t + (size_t)side),
			                      *other = input_at(b, t + 1 - (size_t)side);
			const uint32_t *m = side ? b->down[t] : b->up[t];
			bool *marked = calloc(in->nreq ? in->nreq : 1, sizeof(bool));
			uint64_t ts, at_peak;
			size_t first = PR_NONE;
			if (!marked)
				return mt_fail(err, errlen, -ENOMEM, "out of memory");
			for (size_t i = 0; i < in->nreq; i++) {
				marked[i] = m[i] == PR_NONE;
				if (marked[i] && first == PR_NONE)
					first = i;
			}
			uint64_t peak = pr_peak_live(in, in->bytes, marked, &ts, &at_peak);
			free(marked);
			if ((double)at_peak <= MAX_UNMATCHED_PEAK * (double)peak)
				continue;
			size_t facing = 0;
			for (size_t k = first; k-- > 0;)
				if (m[k] != PR_NONE) {
					facing = m[k] + 1;
					break;
				}
			char why[160];
			snprintf(why, sizeof(why),
			         "requests missing at N=%llu hold %.1f%% of the peak at N=%llu",
			         (unsigned long long)other->info.size,
			         100.0 * (double)at_peak / (double)peak,
			         (unsigned long long)in->info.size);
			return diverge(in, first, other, facing, why, err, errlen);
		}
	}
	return 0;
}

/* Reference requests whose size some used input breaks, live at the
 * reference's peak. */
static int check_inconsistent(struct build *b, char *err, size_t errlen)
{
	struct mt_predictor *p = b->p;
	size_t n = p->n;
	const struct pr_input *ref = input_at(b, n - 1);
	bool *marked = calloc(ref->nreq ? ref->nreq : 1, sizeof(bool));
	size_t worst = PR_NONE;
	uint64_t ts, at_peak;
	if (!marked)
		return mt_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t r = 0; r < ref->nreq; r++) {
		marked[r] = b->fitted[r] < b->reached[r];
		if (marked[r] && (worst == PR_NONE || ref->bytes[r] > ref->bytes[worst]))
			worst = r;
	}
	uint64_t peak = pr_peak_live(ref, ref->bytes, marked, &ts, &at_peak);
	free(marked);
	p->summary.fit.inconsistent_peak_share = peak ? (double)at_peak / (double)peak : 0;
	if (p->summary.fit.inconsistent_peak_share <= MAX_INCONSISTENT_PEAK)
		return 0;
	char d[512];
	size_t used = (size_t)snprintf(err, errlen,
	                               "cannot predict: sizes do not follow N (%.1f%% of the peak "
	                               "fits no size function of N; the largest: %s in %s:",
	                               100.0 * p->summary.fit.inconsistent_peak_share,
	                               pr_input_describe(ref, worst, d, sizeof(d)), ref->name);
	for (size_t t = n; t-- > b->lowest && used < errlen;) {
		char s[32];
		uint32_t j = b->chain[t][worst];
		used += (size_t)snprintf(
		        err + used, errlen - used, "%s %s at N=%llu", t == n - 1 ? "" : ",",
		        j == PR_NONE ? "none" : mt_size_format(input_at(b, t)->bytes[j], s, 32),
		        (unsigned long long)input_at(b, t)->info.size);
	}
	if (used < errlen)
		snprintf(err + used, errlen - used, ")");
	return -EDOM;
}

/* ---- requests of the reference alone ------------------------------------------------ */

static int by_bytes(const void *x, const void *y, void *bytes)
{
	const uint64_t *v = bytes;
	uint64_t a = v[*(const uint32_t *)x], b = v[*(const uint32_t *)y];
	return (a > b) - (a < b);
}

static int by_fit(const void *x, const void *y, void *fits)
{
	const struct pr_fit *f = fits, *a = &f[*(const uint32_t *)x], *b = &f[*(const uint32_t *)y];
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->c2 != b->c2)
		return a->c2 < b->c2 ? -1 : 1;
	if (a->c1 != b->c1)
		return a->c1 < b->c1 ? -1 : 1;
	return (a->c0 > b->c0) - (a->c0 < b->c0);
}

/* The most frequent fit among idx[0..n) (sorted here by fit), or PR_NONE. */
static uint32_t most_frequent_fit(uint32_t *idx, size_t n, const struct pr_fit *fit)
{
	uint32_t best = PR_NONE;
	size_t best_run = 0;
	qsort_r(idx, n, sizeof(uint32_t), by_fit, (void *)fit);
	for (size_t s = 0, e; s < n; s = e) {
		for (e = s; e < n && !by_fit(&idx[s], &idx[e], (void *)fit); e++)
			;
		if (e - s > best_run) {
			best_run = e - s;
			best = idx[s];
		}
	}
	return best;
}

/* A reference request fitted on one point (seen in no other input) takes
 * the fit that most requests of its recorded size have: tensors of one
 * size are mostly one shape, which scales one way. */
static int infer_alone(struct build *b, char *err, size_t errlen)
{
	struct mt_predictor *p = b->p;
	const struct pr_input *ref = input_at(b, p->n - 1);
	uint32_t *idx = malloc((ref->nreq ? ref->nreq : 1) * sizeof(uint32_t)),
	         *fitted = malloc((ref->nreq ? ref->nreq : 1) * sizeof(uint32_t));
	if (!idx || !fitted) {
		free(idx);
		free(fitted);
		return mt_fail(err, errlen, -ENOMEM, "out of memory");
	}
	for (size_t r = 0; r < ref->nreq; r++)
		idx[r] = (uint32_t)r;
	qsort_r(idx, ref->nreq, sizeof(uint32_t), by_bytes, ref->bytes);
	for (size_t s = 0, e; s < ref->nreq; s = e) {
		size_t alone = 0, nfitted = 0;
		for (e = s; e < ref->nreq && ref->bytes[idx[e]] == ref->bytes[idx[s]]; e++) {
			if (b->fitted[idx[e]] < 2)
				alone++;
			else
				fitted[nfitted++] = idx[e];
		}
		uint32_t best =
		        alone && nfitted ? most_frequent_fit(fitted, nfitted, p->fit) : PR_NONE;
		for (size_t i = s; best != PR_NONE && i < e; i++)
			if (b->fitted[idx[i]] < 2) {
				p->fit[idx[i]] = p->fit[best];
				p->summary.fit.inferred++;
			}
	}
	free(idx);
	free(fitted);
	return 0;
}

static void count_fits(struct build *b)
{
	struct mt_predictor *p = b->p;
	struct mt_predict_fit_stats *st = &p->summary.fit;
	size_t n = p->n, used = n - b->lowest;
	const struct pr_input *ref = input_at(b, n - 1);
	uint64_t full = 0, all = 0;
	for (size_t r = 0; r < ref->nreq; r++) {
		st->constant += p->fit[r].kind == PR_FIT_CONSTANT;
		st->affine += p->fit[r].kind == PR_FIT_AFFINE;
		st->quadratic += p->fit[r].kind == PR_FIT_QUADRATIC;
		st->partial += b->reached[r] < used;
		st->inconsistent += b->fitted[r] < b->reached[r];
		full += b->reached[r] == used;
	}
	for (size_t t = 0; t < n; t++) {
		struct pr_input *in = &p->in[b->order[t]];
		in->info.aligned = t >= b->lowest ? full : 0;
		all += in->nreq;
	}
	p->summary.aligned_fraction = all ? (double)(full * used) / (double)all : 0;
}

/* ---- the build ------------------------------------------------------------------ */

static int check_inputs(const struct mt_predict_input *in, size_t n, char *err, size_t errlen)
{
	if (n < 2)
		return mt_fail(err, errlen, -EINVAL, "at least two inputs are needed");
	if (n > 255)
		return mt_fail(err, errlen, -EINVAL, "at most 255 inputs");
	for (size_t i = 0; i < n; i++) {
		if (!in[i].reader || !in[i].size)
			return mt_fail(err, errlen, -EINVAL, "%s: the size must be at least 1",
			               in[i].name ? in[i].name : "input");
		for (size_t j = 0; j < i; j++)
			if (in[j].size == in[i].size)
				return mt_fail(err, errlen, -EINVAL,
				               "%s and %s: two inputs at N=%llu; sizes must differ",
				               in[j].name, in[i].name,
				               (unsigned long long)in[i].size);
	}
	return 0;
}

static int by_size(const void *x, const void *y, void *inputs)
{
	const struct pr_input *in = inputs;
	uint64_t a = in[*(const size_t *)x].info.size, b = in[*(const size_t *)y].info.size;
	return (a > b) - (a < b);
}

static int model(struct build *b, char *err, size_t errlen)
{
	struct mt_predictor *p = b->p;
	size_t n = p->n, nref;
	b->order = malloc(n * sizeof(size_t));
	b->down = calloc(n, sizeof(uint32_t *));
	b->up = calloc(n, sizeof(uint32_t *));
	b->chain = calloc(n, sizeof(uint32_t *));
	b->points = malloc(n * sizeof(uint64_t));
	b->consistent = malloc(n * sizeof(uint64_t));
	b->linked = calloc(n, sizeof(bool));
	if (!b->order || !b->down || !b->up || !b->chain || !b->points || !b->consistent ||
	    !b->linked)
		return mt_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		b->order[i] = i;
	qsort_r(b->order, n, sizeof(size_t), by_size, p->in);
	p->ref = b->order[n - 1];
	nref = p->in[p->ref].nreq;
	for (size_t t = 0; t < n; t++)
		if (!(b->chain[t] = malloc((nref ? nref : 1) * sizeof(uint32_t))))
			return mt_fail(err, errlen, -ENOMEM, "out of memory");
	if (!(p->fit = malloc((nref ? nref : 1) * sizeof(*p->fit))) ||
	    !(p->bytes = malloc((nref ? nref : 1) * sizeof(*p->bytes))) ||
	    !(b->fitted = malloc(nref ? nref : 1)) || !(b->reached = malloc(nref ? nref : 1)))
		return mt_fail(err, errlen, -ENOMEM, "out of memory");
	int rc = align_pairs(b, err, errlen);
	if (rc < 0)
		return rc;
	follow_chains(b);
	if ((rc = leave_out_diverging(b, err, errlen)) < 0 ||
	    (rc = check_monotone(b, err, errlen)) < 0 ||
	    (rc = check_unmatched(b, err, errlen)) < 0 ||
	    (rc = check_inconsistent(b, err, errlen)) < 0)
		return rc;
	count_fits(b);
	return infer_alone(b, err, errlen);
}

static void build_release(struct build *b)
{
	for (size_t t = 0; t < b->p->n; t++) {
		if (b->down)
			free(b->down[t]);
		if (b->up)
			free(b->up[t]);
		if (b->chain)
			free(b->chain[t]);
	}
	free(b->order);
	free(b->down);
	free(b->up);
	free(b->chain);
	free(b->points);
	free(b->consistent);
	free(b->linked);
	free(b->fitted);
	free(b->reached);
}

int mt_predictor_build(struct mt_predictor **out, const struct mt_predict_input *inputs, size_t n,
                       char *err, size_t errlen)
{
	int rc = check_inputs(inputs, n, err, errlen);
	if (rc < 0)
		return rc;
	struct mt_predictor *p = calloc(1, sizeof(*p));
	struct build b = { .p = p };
	if (!p || !(p->in = calloc(n, sizeof(*p->in)))) {
		free(p);
		return mt_fail(err, errlen, -ENOMEM, "out of memory");
	}
	for (; rc == 0 && p->n < n; p->n++) {
		struct pr_input *pi = &p->in[p->n];
		if ((rc = pr_input_load(pi, &inputs[p->n], err, errlen)) == 0)
			pi->info.peak_live = pr_peak_live(pi, pi->bytes, NULL, &pi->peak_ts, NULL);
	}
	if (rc == 0 && (rc = model(&b, err, errlen)) == 0) {
		p->summary.inputs = n;
		p->summary.reference = p->ref;
		p->summary.policy = p->in[p->ref].vmm ? "expandable" : "caching";
		rc = pr_capacity(p, err, errlen);
	}
	if (p->n == n)
		build_release(&b);
	for (size_t i = 0; i < p->n; i++)
		p->in[i].reader = NULL;
	if (rc < 0) {
		mt_predictor_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void mt_predictor_free(struct mt_predictor *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		pr_input_release(&p->in[i]);
	free(p->in);
	free(p->fit);
	free(p->bytes);
	free(p->scratch);
	free(p);
}

void mt_predictor_summary(const struct mt_predictor *p, struct mt_predict_summary *s)
{
	*s = p->summary;
}

const struct mt_predict_input_info *mt_predictor_input(const struct mt_predictor *p, size_t i)
{
	return i < p->n ? &p->in[i].info : NULL;
}
