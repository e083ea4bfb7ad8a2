/* model.c — building a predictor: load the inputs, align every input's
 * request sequence to the largest input's (the reference), refuse inputs
 * that took different paths, fit each reference request's size over the
 * inputs that have it, refuse sizes that follow no polynomial in N, and
 * take the default capacity from the reference's anatomy. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-common.h"
#include "memtrace-analyze.h"
#include "predict-private.h"

/* Tolerance of the alignment (docs/PREDICT.md): isolated requests present
 * in some inputs only (workspaces) are skipped; a longer run is another
 * code path. */
#define MAX_GAP 8
#define WINDOW 8
#define MAX_UNMATCHED_SHARE 0.01  /* of an input's requests */
#define MIN_UNMATCHED_ALLOWED 16  /* requests: small streams may differ by this many */
#define MAX_UNMATCHED_PEAK 0.05   /* one unmatched request, of its input's peak */
#define MAX_APPROXIMATE_PEAK 0.02 /* sizes fitting no polynomial, of the reference's peak */

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
	return pr_fail(err, errlen, -EDOM,
	               "cannot predict: the inputs diverge (%s): %s (N=%llu) at %s, %s (N=%llu) "
	               "at %s",
	               why, a->name, (unsigned long long)a->info.size,
	               describe(a, ia, da, sizeof(da)), b->name, (unsigned long long)b->info.size,
	               describe(b, ib, db, sizeof(db)));
}

/* The position in the other sequence facing request i of this one: just
 * after the other's match of the last matched request before i. */
static size_t facing(const uint32_t *match, size_t i)
{
	for (size_t k = i; k-- > 0;)
		if (match[k] != PR_NONE)
			return match[k] + 1;
	return 0;
}

static size_t first_unmatched(const uint32_t *match, size_t n)
{
	size_t i = 0;
	while (i < n && match[i] != PR_NONE)
		i++;
	return i;
}

static size_t count_unmatched(const uint32_t *match, size_t n)
{
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		u += match[i] == PR_NONE;
	return u;
}

static bool too_many(size_t unmatched, size_t n)
{
	return unmatched > MIN_UNMATCHED_ALLOWED &&
	       (double)unmatched > MAX_UNMATCHED_SHARE * (double)n;
}

/* Checks the alignment of b to the reference a (see the header's rules). */
static int check_alignment(const struct pr_input *a, const uint32_t *ma, const struct pr_input *b,
                           const uint32_t *mb, char *err, size_t errlen)
{
	const struct pr_input *in[2] = { a, b };
	const uint32_t *m[2] = { ma, mb };
	size_t u[2] = { count_unmatched(ma, a->nreq), count_unmatched(mb, b->nreq) };
	if (too_many(u[0], a->nreq) || too_many(u[1], b->nreq)) {
		char why[128];
		int s = u[1] > u[0];
		size_t i = first_unmatched(m[s], in[s]->nreq);
		snprintf(why, sizeof(why), "%zu and %zu requests unmatched, more than 1%%", u[0],
		         u[1]);
		return diverge(in[s], i, in[1 - s], facing(m[s], i), why, err, errlen);
	}
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < in[s]->nreq; i++) {
			uint64_t peak = in[s]->info.peak_live;
			if (m[s][i] != PR_NONE ||
			    (double)in[s]->bytes[i] <= MAX_UNMATCHED_PEAK * peak)
				continue;
			char why[160], size[32];
			snprintf(why, sizeof(why),
			         "an unmatched request of %s, more than 5%% of the peak",
			         mt_size_format(in[s]->bytes[i], size, sizeof(size)));
			return diverge(in[s], i, in[1 - s], facing(m[s], i), why, err, errlen);
		}
	return 0;
}

static int align_all(struct mt_predictor *p, uint32_t **match, char *err, size_t errlen)
{
	const struct pr_input *a = &p->in[p->ref];
	for (size_t k = 0; k < p->n; k++) {
		if (k == p->ref)
			continue;
		const struct pr_input *b = &p->in[k];
		uint32_t *mb = malloc((b->nreq ? b->nreq : 1) * sizeof(uint32_t));
		size_t sa, sb;
		if (!(match[k] = malloc(a->nreq * sizeof(uint32_t))) || !mb) {
			free(mb);
			return pr_fail(err, errlen, -ENOMEM, "out of memory");
		}
		int rc = pr_align(a->key, a->nreq, b->key, b->nreq, MAX_GAP, WINDOW, match[k], mb,
		                  &sa, &sb);
		if (rc < 0)
			rc = diverge(a, sa, b, sb, "no realignment within 8 requests", err, errlen);
		else
			rc = check_alignment(a, match[k], b, mb, err, errlen);
		free(mb);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Fits every reference request over the inputs that have it. */
static int fit_all(struct mt_predictor *p, uint32_t *const *match, char *err, size_t errlen)
{
	const struct pr_input *ref = &p->in[p->ref];
	struct mt_predict_fit_stats *st = &p->summary.fit;
	uint64_t x[p->n], y[p->n], full = 0;
	if (!(p->fit = malloc((ref->nreq ? ref->nreq : 1) * sizeof(*p->fit))) ||
	    !(p->bytes = malloc((ref->nreq ? ref->nreq : 1) * sizeof(*p->bytes))))
		return pr_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t r = 0; r < ref->nreq; r++) {
		size_t k = 0;
		for (size_t i = 0; i < p->n; i++) {
			uint32_t j = i == p->ref ? (uint32_t)r : match[i][r];
			if (j == PR_NONE)
				continue;
			x[k] = p->in[i].info.size;
			y[k++] = p->in[i].bytes[j];
		}
		double residual;
		pr_fit_points(x, y, k, &p->fit[r], &residual);
		if (k == p->n)
			full++;
		else
			st->partial++;
		switch (p->fit[r].kind) {
		case PR_FIT_CONSTANT:
			st->constant++;
			break;
		case PR_FIT_AFFINE:
			st->affine++;
			break;
		case PR_FIT_QUADRATIC:
			st->quadratic++;
			break;
		default:
			st->approximate++;
			if (residual > st->worst_residual)
				st->worst_residual = residual;
		}
	}
	uint64_t all = 0;
	for (size_t i = 0; i < p->n; i++) {
		p->in[i].info.aligned = full;
		all += p->in[i].nreq;
	}
	p->summary.aligned_fraction = all ? (double)(full * p->n) / (double)all : 0;
	return 0;
}

/* The bytes of approximately fitted requests live at the reference's peak,
 * as a share of that peak; refuses above MAX_APPROXIMATE_PEAK, naming the
 * largest such request. */
static int check_approximate(struct mt_predictor *p, uint32_t *const *match, char *err,
                             size_t errlen)
{
	const struct pr_input *ref = &p->in[p->ref];
	bool *approximate = calloc(ref->nreq ? ref->nreq : 1, sizeof(bool));
	uint64_t ts, at_peak;
	size_t worst = PR_NONE;
	if (!approximate)
		return pr_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t r = 0; r < ref->nreq; r++) {
		approximate[r] = p->fit[r].kind == PR_FIT_APPROXIMATE;
		if (approximate[r] && (worst == PR_NONE || ref->bytes[r] > ref->bytes[worst]))
			worst = r;
	}
	uint64_t peak = pr_peak_live(ref, ref->bytes, approximate, &ts, &at_peak);
	free(approximate);
	p->summary.fit.approximate_peak_share = peak ? (double)at_peak / (double)peak : 0;
	if (p->summary.fit.approximate_peak_share <= MAX_APPROXIMATE_PEAK)
		return 0;
	char d[512];
	size_t used = (size_t)snprintf(err, errlen,
	                               "cannot predict: sizes do not follow N (%.1f%% of the peak "
	                               "fits no polynomial in N; the largest: %s in %s:",
	                               100.0 * p->summary.fit.approximate_peak_share,
	                               pr_input_describe(ref, worst, d, sizeof(d)), ref->name);
	for (size_t i = 0; i < p->n && used < errlen; i++) {
		char s[32];
		uint32_t j = i == p->ref ? (uint32_t)worst : match[i][worst];
		used += (size_t)snprintf(err + used, errlen - used, "%s %s at N=%llu", i ? "," : "",
		                         j == PR_NONE ? "none"
		                                      : mt_size_format(p->in[i].bytes[j], s, 32),
		                         (unsigned long long)p->in[i].info.size);
	}
	if (used < errlen)
		snprintf(err + used, errlen - used, ")");
	return -EDOM;
}

/* The default capacity: the reference's device total less the CUDA
 * context and libraries and what is outside the process, from its anatomy
 * at the peak of live bytes (which needs the driver-layer memory and the
 * samples, not the requests). */
static int capacity_of(struct mt_predictor *p, char *err, size_t errlen)
{
	const struct pr_input *ref = &p->in[p->ref];
	struct mt_predict_summary *s = &p->summary;
	struct mt_kind_stats st[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { .device = ref->device };
	struct mt_lifetime *drv = NULL, *live = NULL;
	struct mt_sample *samples = NULL;
	struct mt_anatomy a;
	size_t ndrv = 0, nlive = 0, nsamples = 0;
	s->device_total = mt_reader_device_by_id(ref->reader, ref->device)->total_bytes;
	int rc = mt_reader_kind_stats(ref->reader, &q, st);
	if (rc == 0 && st[MT_EVENT_SAMPLE].events &&
	    (rc = mt_reader_lifetimes(ref->reader, &q, MT_LAYER_DRIVER, &drv, &ndrv)) == 0 &&
	    (rc = mt_samples_load(ref->reader, ref->device, &samples, &nsamples)) == 0) {
		/* the driver memory is the segments, when recorded, else the live
		 * requests themselves (which the allocator's memory is then taken to be) */
		bool segments = ref->layer == MT_LAYER_REQUEST && ndrv;
		if (ref->layer == MT_LAYER_REQUEST && !ndrv)
			rc = mt_reader_lifetimes(ref->reader, &q, MT_LAYER_REQUEST, &live, &nlive);
		else if (!segments) {
			live = drv, nlive = ndrv;
			drv = NULL, ndrv = 0;
		}
		if (rc == 0)
			rc = mt_anatomy_compute(&a, live, nlive, ref->layer, drv, ndrv, samples,
			                        nsamples, ref->peak_ts, err, errlen);
	}
	free(drv);
	free(live);
	free(samples);
	if (rc < 0)
		return pr_fail(err, errlen, rc, "%s: the anatomy: %s", ref->name,
		               rc == -ENOMEM ? "out of memory" : mt_reader_message(ref->reader));
	s->capacity_sampled = st[MT_EVENT_SAMPLE].events && a.available;
	if (s->capacity_sampled) {
		s->context_bytes =
		        a.part[MT_PART_CONTEXT] > 0 ? (uint64_t)a.part[MT_PART_CONTEXT] : 0;
		s->outside_bytes = a.part[MT_PART_OTHER_PROCESSES] > 0
		                           ? (uint64_t)a.part[MT_PART_OTHER_PROCESSES]
		                           : 0;
	}
	uint64_t taken = s->context_bytes + s->outside_bytes;
	s->capacity = s->device_total > taken ? s->device_total - taken : 0;
	return 0;
}

static int check_inputs(const struct mt_predict_input *in, size_t n, char *err, size_t errlen)
{
	if (n < 2)
		return pr_fail(err, errlen, -EINVAL, "at least two inputs are needed");
	for (size_t i = 0; i < n; i++) {
		if (!in[i].reader || !in[i].size)
			return pr_fail(err, errlen, -EINVAL, "%s: the size must be at least 1",
			               in[i].name ? in[i].name : "input");
		for (size_t j = 0; j < i; j++)
			if (in[j].size == in[i].size)
				return pr_fail(err, errlen, -EINVAL,
				               "%s and %s: two inputs at N=%llu; sizes must differ",
				               in[j].name, in[i].name,
				               (unsigned long long)in[i].size);
	}
	return 0;
}

int mt_predictor_build(struct mt_predictor **out, const struct mt_predict_input *inputs, size_t n,
                       char *err, size_t errlen)
{
	int rc = check_inputs(inputs, n, err, errlen);
	if (rc < 0)
		return rc;
	struct mt_predictor *p = calloc(1, sizeof(*p));
	uint32_t **match = calloc(n, sizeof(*match));
	if (!p || !match || !(p->in = calloc(n, sizeof(*p->in)))) {
		rc = pr_fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (; p->n < n; p->n++) {
		struct pr_input *pi = &p->in[p->n];
		if ((rc = pr_input_load(pi, &inputs[p->n], err, errlen)) < 0) {
			p->n++;
			goto out;
		}
		pi->info.peak_live = pr_peak_live(pi, pi->bytes, NULL, &pi->peak_ts, NULL);
		if (pi->info.size > p->in[p->ref].info.size)
			p->ref = p->n;
	}
	p->summary.inputs = n;
	p->summary.reference = p->ref;
	p->summary.policy = p->in[p->ref].vmm ? "expandable" : "caching";
	if ((rc = align_all(p, match, err, errlen)) < 0 ||
	    (rc = fit_all(p, match, err, errlen)) < 0 ||
	    (rc = check_approximate(p, match, err, errlen)) < 0 ||
	    (rc = capacity_of(p, err, errlen)) < 0)
		goto out;
out:
	for (size_t i = 0; match && i < n; i++)
		free(match[i]);
	free(match);
	for (size_t i = 0; p && i < p->n; i++)
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
