/* run.c — predictions: the synthesized stream at N replayed through
 * policies (sim backend), the largest N that fits a capacity, and the naive
 * extrapolation of the recorded peaks shown beside them. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "predict-private.h"

static int replay(const struct mt_request_stream *s, const char *policy, uint64_t capacity,
                  struct mt_replay_result *res, char *err, size_t errlen)
{
	struct mt_replay_options opt = { .policy = policy,
		                         .backend = MT_BACKEND_SIM,
		                         .capacity = capacity };
	int rc = mt_replay_run(s, &opt, res, err, errlen);
	if (rc < 0)
		mt_replay_result_release(res);
	return rc;
}

int mt_predict_at(struct mt_predictor *p, uint64_t size, const char *const *policies,
                  size_t npolicies, uint64_t capacity, uint64_t *peak_live,
                  struct mt_replay_result *results, char *err, size_t errlen)
{
	struct mt_request_stream *s = NULL;
	uint64_t ts;
	int rc = mt_predict_stream(p, size, &s, err, errlen);
	if (rc < 0)
		return rc;
	*peak_live = pr_peak_live(&p->in[p->ref], p->bytes, NULL, &ts, NULL);
	size_t done = 0;
	for (; rc == 0 && done < npolicies; done++)
		rc = replay(s, policies[done], capacity, &results[done], err, errlen);
	if (rc < 0)
		while (--done)
			mt_replay_result_release(&results[done - 1]);
	mt_request_stream_free(s);
	return rc;
}

/* Whether the predicted run at size has no OOM. */
static int fits(struct mt_predictor *p, const char *policy, uint64_t capacity, uint64_t size,
                bool *ok, char *err, size_t errlen)
{
	struct mt_request_stream *s = NULL;
	struct mt_replay_result res;
	int rc = mt_predict_stream(p, size, &s, err, errlen);
	if (rc < 0)
		return rc;
	*ok = mt_request_stream_peak_live(s) <= capacity;
	if (*ok && (rc = replay(s, policy, capacity, &res, err, errlen)) == 0) {
		*ok = res.oom_count == 0;
		mt_replay_result_release(&res);
	}
	mt_request_stream_free(s);
	return rc;
}

/* The predicted peak of live bytes at size (no replay: one walk). */
static uint64_t live_at(struct mt_predictor *p, uint64_t size)
{
	const struct pr_input *ref = &p->in[p->ref];
	uint64_t ts;
	for (size_t r = 0; r < ref->nreq; r++)
		p->bytes[r] = pr_fit_eval(&p->fit[r], size);
	return pr_peak_live(ref, p->bytes, NULL, &ts, NULL);
}

int mt_predict_max_fit(struct mt_predictor *p, const char *policy, uint64_t capacity,
                       uint64_t limit, uint64_t *size, char *err, size_t errlen)
{
	enum { MAX_SCAN = 64 };
	if (!capacity || !limit)
		return mt_fail(err, errlen, -EINVAL, "the capacity and the limit must be > 0");
	/* the live bytes alone grow with N: the smallest N they do not fit in
	 * bounds every N that fits (hi = limit + 1: none up to the limit) */
	uint64_t lo = 0, hi = p->in[p->ref].info.size;
	while (hi <= limit && live_at(p, hi) <= capacity) {
		lo = hi;
		hi = hi > limit / 2 ? limit + 1 : hi * 2;
	}
	while (hi <= limit && hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (live_at(p, mid) <= capacity)
			lo = mid;
		else
			hi = mid;
	}
	/* below it the allocator's cache can fail any N, not only the largest:
	 * the largest that fits, scanning down, then bisecting further down */
	bool ok = false;
	uint64_t n = hi - 1;
	int rc;
	for (unsigned k = 0; n > 0 && k < MAX_SCAN; k++, n--) {
		if ((rc = fits(p, policy, capacity, n, &ok, err, errlen)) < 0)
			return rc;
		if (ok) {
			*size = n;
			return 0;
		}
	}
	for (lo = 0, hi = n + 1; hi - lo > 1;) {
		uint64_t mid = lo + (hi - lo) / 2;
		if ((rc = fits(p, policy, capacity, mid, &ok, err, errlen)) < 0)
			return rc;
		if (ok)
			lo = mid;
		else
			hi = mid;
	}
	*size = lo;
	return 0;
}

uint64_t mt_predict_naive(const uint64_t *sizes, const uint64_t *values, size_t n, uint64_t at)
{
	struct pr_fit line = { 0, 0, 0, PR_FIT_APPROXIMATE };
	pr_least_squares(sizes, values, n, &line.c0, &line.c1);
	return pr_fit_eval(&line, at);
}

int mt_predictor_input_reserved(struct mt_predictor *p, const char *policy, uint64_t *reserved,
                                char *err, size_t errlen)
{
	for (size_t i = 0; i < p->n; i++) {
		struct pr_input *pi = &p->in[i];
		struct mt_replay_result res;
		int rc = 0;
		if (!pi->recorded && ((rc = pr_scratch(p, pi->nev, err, errlen)) < 0 ||
		                      (rc = pr_stream_build(pi, pi->bytes, p->scratch,
		                                            &pi->recorded, err, errlen)) < 0))
			return rc;
		rc = replay(pi->recorded, policy, 0, &res, err, errlen);
		if (rc < 0)
			return rc;
		reserved[i] = res.peak_reserved;
		mt_replay_result_release(&res);
	}
	return 0;
}
