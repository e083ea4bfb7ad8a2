/* test-predict.c — memtrace predict: the size fit, the alignment, and whole
 * predictions on synthetic model traces (model-trace.h) whose truth at any
 * N is the trace written at that N. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memtrace-predict.h"
#include "model-trace.h"
#include "predict-private.h"
#include "tap.h"

#define MiB (1ull << 20)

static char dir[] = "/tmp/memtrace-predict-XXXXXX";

/* ---- fit --------------------------------------------------------------------- */

static void fit3(const uint64_t y[3], struct pr_fit *f, double *residual)
{
	static const uint64_t x[3] = { 1, 2, 4 };
	pr_fit_points(x, y, 3, f, residual);
}

static void test_fit_kinds(void)
{
	struct pr_fit f;
	double res;
	fit3((uint64_t[]){ 4096, 4096, 4096 }, &f, &res);
	CHECK(f.kind == PR_FIT_CONSTANT && pr_fit_eval(&f, 1000) == 4096);
	/* activations by batch: 3 MiB per sample plus a 1 KiB header */
	fit3((uint64_t[]){ 3 * MiB + 1024, 6 * MiB + 1024, 12 * MiB + 1024 }, &f, &res);
	CHECK(f.kind == PR_FIT_AFFINE);
	CHECKF(pr_fit_eval(&f, 120) == 360 * MiB + 1024, "%llu",
	       (unsigned long long)pr_fit_eval(&f, 120));
	/* attention scores by sequence: 8 x 12 heads x (32 N)^2 x 2 bytes */
	uint64_t c = 8ull * 12 * 32 * 32 * 2;
	fit3((uint64_t[]){ c, 4 * c, 16 * c }, &f, &res);
	CHECK(f.kind == PR_FIT_QUADRATIC);
	CHECK(pr_fit_eval(&f, 150) == 150ull * 150 * c);
	/* (N + 2)^2 x 1000: a square term that holds most of the size */
	fit3((uint64_t[]){ 9000, 16000, 36000 }, &f, &res);
	CHECK(f.kind == PR_FIT_QUADRATIC && pr_fit_eval(&f, 30) == 32ull * 32 * 1000);
	/* two points are always a line: the square term cannot be seen */
	pr_fit_points((uint64_t[]){ 1, 4 }, (uint64_t[]){ c, 16 * c }, 2, &f, &res);
	CHECK(f.kind == PR_FIT_AFFINE && pr_fit_eval(&f, 8) != 64 * c);
}

static void test_fit_refuses_false_quadratics(void)
{
	struct pr_fit f;
	double res;
	/* rounded to 512 B: the parabola through them has a fractional square term */
	fit3((uint64_t[]){ 1024, 1536, 3072 }, &f, &res);
	CHECK(f.kind == PR_FIT_APPROXIMATE && res > 0 && res < 0.2);
	/* an integer parabola whose square term is a rounding artefact (1/16 rule) */
	fit3((uint64_t[]){ 100 * MiB + 6, 200 * MiB + 12, 400 * MiB + 36 }, &f, &res);
	CHECKF(f.kind == PR_FIT_APPROXIMATE, "kind %d", f.kind);
	/* a shrinking size: never a parabola opening downwards */
	fit3((uint64_t[]){ 5000, 7000, 8000 }, &f, &res);
	CHECK(f.kind == PR_FIT_APPROXIMATE);
	/* four points: a parabola through three that misses the fourth */
	pr_fit_points((uint64_t[]){ 1, 2, 4, 8 }, (uint64_t[]){ 1000, 4000, 16000, 64001 }, 4, &f,
	              &res);
	CHECK(f.kind == PR_FIT_APPROXIMATE);
	pr_fit_points((uint64_t[]){ 1, 2, 4, 8 }, (uint64_t[]){ 1000, 4000, 16000, 64000 }, 4, &f,
	              &res);
	CHECK(f.kind == PR_FIT_QUADRATIC);
}

static void test_fit_eval_floor(void)
{
	struct pr_fit f = { 100, -50, 0, PR_FIT_AFFINE };
	CHECK(pr_fit_eval(&f, 1) == 50);
	CHECK(pr_fit_eval(&f, 2) == 0);
	CHECK(pr_fit_eval(&f, 3) == 0);
}

/* ---- alignment ------------------------------------------------------------------ */

struct tokens {
	const uint64_t *a, *b;
};

static bool same(void *ctx, size_t i, size_t j)
{
	const struct tokens *t = ctx;
	return t->a[i] == t->b[j];
}

static size_t unmatched(const uint32_t *m, size_t n)
{
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		u += m[i] == PR_NONE;
	return u;
}

static void test_align(void)
{
	/* a repeating layer pattern, as a model's layers make */
	uint64_t a[60], b[61], c[59];
	uint32_t ma[72], mb[72];
	for (size_t i = 0; i < 60; i++)
		a[i] = 10 + i % 5;
	/* b: a with an extra token (a workspace) after position 23 */
	memcpy(b, a, 24 * sizeof(uint64_t));
	b[24] = 99;
	memcpy(b + 25, a + 24, 36 * sizeof(uint64_t));
	struct tokens t = { a, b };
	REQUIRE(pr_align(60, 61, same, &t, 100, ma, mb) == 0);
	CHECK(mb[24] == PR_NONE && ma[23] == 23 && ma[24] == 25 && ma[59] == 60);
	CHECK(unmatched(ma, 60) == 0 && unmatched(mb, 61) == 1);
	/* c: a without position 40 */
	memcpy(c, a, 40 * sizeof(uint64_t));
	memcpy(c + 40, a + 41, 19 * sizeof(uint64_t));
	t.b = c;
	REQUIRE(pr_align(60, 59, same, &t, 100, ma, mb) == 0);
	CHECK(unmatched(ma, 60) == 1 && ma[59] == 58);
	/* a trailing extra token; then a long branch of new tokens in the middle */
	t.b = a;
	REQUIRE(pr_align(60, 59, same, &t, 100, ma, mb) == 0);
	CHECK(ma[59] == PR_NONE && ma[58] == 58);
	uint64_t d[72];
	memcpy(d, a, 30 * sizeof(uint64_t));
	for (size_t k = 0; k < 12; k++)
		d[30 + k] = 200 + k;
	memcpy(d + 42, a + 30, 30 * sizeof(uint64_t));
	t.b = d;
	REQUIRE(pr_align(60, 72, same, &t, 100, ma, mb) == 0);
	CHECK(unmatched(ma, 60) == 0 && unmatched(mb, 72) == 12 && ma[30] == 42);
}

static void test_align_bounded(void)
{
	uint64_t a[60], b[60];
	uint32_t ma[60], mb[60];
	for (size_t i = 0; i < 60; i++) {
		a[i] = i;
		b[i] = 500 + i;
	}
	struct tokens t = { a, b };
	/* nothing in common: 120 differences, more than allowed */
	CHECK(pr_align(60, 60, same, &t, 100, ma, mb) == -EDOM);
	REQUIRE(pr_align(60, 60, same, &t, 120, ma, mb) == 0);
	CHECK(unmatched(ma, 60) == 60);
}

/* ---- whole predictions --------------------------------------------------------------- */

static char *path_for(const char *name, uint64_t n)
{
	static char buf[8][256];
	static int next;
	char *p = buf[next++ % 8];
	snprintf(p, 256, "%s/%s-n%llu.db", dir, name, (unsigned long long)n);
	return p;
}

/* Writes the model at each size and builds a predictor from them. */
static int build(const char *name, const struct model_params *mp, const uint64_t *sizes, size_t k,
                 struct mt_predictor **p, char *err, size_t errlen)
{
	struct mt_predict_input in[8];
	int rc = 0;
	for (size_t i = 0; i < k; i++) {
		in[i] = (struct mt_predict_input){ mt_reader_new(), path_for(name, sizes[i]),
			                           sizes[i], 0 };
		REQUIRE(model_trace_write(in[i].name, mp, sizes[i]) == 0);
		REQUIRE(mt_reader_open(in[i].reader, in[i].name) == 0);
	}
	rc = mt_predictor_build(p, in, k, err, errlen);
	for (size_t i = 0; i < k; i++)
		mt_reader_free(in[i].reader);
	return rc;
}

/* The truth: the model written at n, its peak live and caching's peak
 * reserved at capacity (0: unlimited) and OOMs. */
static void truth(const char *name, const struct model_params *mp, uint64_t n, uint64_t capacity,
                  uint64_t *live, struct mt_replay_result *res)
{
	char err[256], *path = path_for(name, n);
	struct mt_reader *r = mt_reader_new();
	struct mt_request_stream *s = NULL;
	REQUIRE(model_trace_write(path, mp, n) == 0);
	REQUIRE(mt_reader_open(r, path) == 0);
	REQUIRE(mt_request_stream_load(&s, r, 0, err, sizeof(err)) == 0);
	*live = mt_request_stream_peak_live(s);
	struct mt_replay_options opt = { .policy = "caching", .capacity = capacity };
	REQUIRE(mt_replay_run(s, &opt, res, err, sizeof(err)) == 0);
	mt_request_stream_free(s);
	mt_reader_free(r);
}

/* Predicted peak live and caching reserved at n equal the truth's. */
static void check_exact(struct mt_predictor *p, const char *name, const struct model_params *mp,
                        uint64_t n)
{
	const char *caching = "caching";
	struct mt_replay_result pred, real;
	uint64_t plive, rlive;
	char err[256];
	REQUIRE(mt_predict_at(p, n, &caching, 1, 0, &plive, &pred, err, sizeof(err)) == 0);
	truth(name, mp, n, 0, &rlive, &real);
	CHECKF(plive == rlive, "N=%llu: peak live %llu, truth %llu", (unsigned long long)n,
	       (unsigned long long)plive, (unsigned long long)rlive);
	CHECKF(pred.peak_reserved == real.peak_reserved, "N=%llu: reserved %llu, truth %llu",
	       (unsigned long long)n, (unsigned long long)pred.peak_reserved,
	       (unsigned long long)real.peak_reserved);
	mt_replay_result_release(&pred);
	mt_replay_result_release(&real);
}

static void test_affine_model(void)
{
	struct model_params mp;
	struct mt_predictor *p = NULL;
	struct mt_predict_summary s;
	char err[1024];
	model_params_default(&mp);
	REQUIRE(build("affine", &mp, (uint64_t[]){ 1, 2, 4 }, 3, &p, err, sizeof(err)) == 0);
	mt_predictor_summary(p, &s);
	CHECK(s.reference == 2 && s.aligned_fraction == 1.0);
	CHECK(s.fit.inconsistent == 0 && s.fit.quadratic == 0 && s.fit.partial == 0);
	CHECK(s.fit.affine == 3ull * 12 * 3 && s.fit.constant > 0);
	CHECK(!strcmp(s.policy, "caching"));
	for (uint64_t n = 1; n <= 120; n = n < 8 ? n + 3 : n * 2 - 1)
		check_exact(p, "affine", &mp, n);
	mt_predictor_free(p);
}

static void test_quadratic_model(void)
{
	struct model_params mp;
	struct mt_predictor *p = NULL, *p2 = NULL;
	struct mt_predict_summary s;
	char err[1024];
	model_params_default(&mp);
	mp.quad = 256 * 1024; /* per N^2: at N = 120, 3.5 GiB a layer */
	REQUIRE(build("quad", &mp, (uint64_t[]){ 1, 2, 4 }, 3, &p, err, sizeof(err)) == 0);
	mt_predictor_summary(p, &s);
	CHECKF(s.fit.quadratic == 2ull * 12 * 3, "%llu quadratic",
	       (unsigned long long)s.fit.quadratic);
	check_exact(p, "quad", &mp, 30);
	check_exact(p, "quad", &mp, 120);
	/* from two inputs the square term is invisible: the prediction falls short */
	REQUIRE(build("quad", &mp, (uint64_t[]){ 2, 4 }, 2, &p2, err, sizeof(err)) == 0);
	const char *caching = "caching";
	struct mt_replay_result r;
	uint64_t live2, live3;
	REQUIRE(mt_predict_at(p2, 120, &caching, 1, 0, &live2, &r, err, sizeof(err)) == 0);
	mt_replay_result_release(&r);
	REQUIRE(mt_predict_at(p, 120, &caching, 1, 0, &live3, &r, err, sizeof(err)) == 0);
	mt_replay_result_release(&r);
	CHECKF(live2 < live3 / 2, "two inputs %llu, three %llu", (unsigned long long)live2,
	       (unsigned long long)live3);
	mt_predictor_free(p);
	mt_predictor_free(p2);
}

static void test_workspace_tolerated(void)
{
	struct model_params mp;
	struct mt_predictor *p = NULL;
	struct mt_predict_summary s;
	char err[1024];
	model_params_default(&mp);
	mp.workspace_at = 2;
	REQUIRE(build("ws", &mp, (uint64_t[]){ 1, 2, 4 }, 3, &p, err, sizeof(err)) == 0);
	mt_predictor_summary(p, &s);
	const struct mt_predict_input_info *two = mt_predictor_input(p, 1);
	CHECK(two->requests == mt_predictor_input(p, 0)->requests + 1);
	CHECK(two->aligned == two->requests - 1);
	CHECK(s.aligned_fraction < 1.0 && s.aligned_fraction > 0.99);
	check_exact(p, "ws", &mp, 16);
	mt_predictor_free(p);
	/* taken at the largest input: a request of the reference fitted on one point */
	mp.workspace_at = 4;
	REQUIRE(build("ws4", &mp, (uint64_t[]){ 1, 2, 4 }, 3, &p, err, sizeof(err)) == 0);
	mt_predictor_summary(p, &s);
	CHECK(s.fit.partial == 1);
	mt_predictor_free(p);
}

static void test_other_path_left_out(void)
{
	struct model_params mp;
	struct mt_predictor *p = NULL;
	struct mt_predict_summary s;
	char err[1024];
	model_params_default(&mp);
	mp.other_path_below = 2;
	REQUIRE(build("path", &mp, (uint64_t[]){ 1, 2, 4 }, 3, &p, err, sizeof(err)) == 0);
	mt_predictor_summary(p, &s);
	CHECK(mt_predictor_input(p, 0)->left_out && !mt_predictor_input(p, 1)->left_out);
	CHECK(mt_predictor_input(p, 0)->aligned == 0 && s.fit.inconsistent == 0);
	check_exact(p, "path", &mp, 2);
	check_exact(p, "path", &mp, 24);
	mt_predictor_free(p);
	/* from two inputs the smaller cannot be judged: nothing is left out */
	REQUIRE(build("path", &mp, (uint64_t[]){ 1, 4 }, 2, &p, err, sizeof(err)) == 0);
	CHECK(!mt_predictor_input(p, 0)->left_out);
	mt_predictor_free(p);
}

static void test_branch_refused(void)
{
	struct model_params mp;
	struct mt_predictor *p = NULL;
	char err[2048];
	model_params_default(&mp);
	mp.branch_at = 2;
	int rc = build("branch", &mp, (uint64_t[]){ 1, 2, 4 }, 3, &p, err, sizeof(err));
	CHECK(rc == -EDOM && !p);
	CHECKF(strstr(err, "diverge") && strstr(err, "N=1 and N=4 agree and N=2 does not") &&
	               strstr(err, "branch-n2.db (N=2) at request") &&
	               strstr(err, "Block.refine") && strstr(err, "range 'forward'"),
	       "%s", err);
}

static void test_data_size_refused(void)
{
	struct model_params mp;
	struct mt_predictor *p = NULL;
	char err[2048];
	model_params_default(&mp);
	mp.data_size = true;
	mp.layers = 4;
	int rc = build("data", &mp, (uint64_t[]){ 1, 2, 4 }, 3, &p, err, sizeof(err));
	CHECK(rc == -EDOM && !p);
	CHECKF(strstr(err, "sizes do not follow N") && strstr(err, "Block.select"), "%s", err);
}

static void test_capacity_and_max_fit(void)
{
	struct model_params mp;
	struct mt_predictor *p = NULL;
	struct mt_predict_summary s;
	char err[1024];
	model_params_default(&mp);
	mp.quad = 64 * 1024;
	REQUIRE(build("fit", &mp, (uint64_t[]){ 1, 2, 4 }, 3, &p, err, sizeof(err)) == 0);
	mt_predictor_summary(p, &s);
	CHECK(s.capacity_sampled && s.device_total == mp.device_total);
	CHECK(s.context_bytes == mp.context && s.outside_bytes == mp.outside);
	CHECK(s.capacity == mp.device_total - mp.context - mp.outside);
	mt_predictor_free(p);
	/* no segments recorded: the live requests stand for the allocator's memory */
	mp.segment = 0;
	REQUIRE(build("fit", &mp, (uint64_t[]){ 1, 2, 4 }, 3, &p, err, sizeof(err)) == 0);
	mt_predictor_summary(p, &s);
	CHECK(s.context_bytes == mp.context && s.outside_bytes == mp.outside);
	uint64_t capacity = 8ull << 30, n, live;
	REQUIRE(mt_predict_max_fit(p, "caching", capacity, 1u << 20, &n, err, sizeof(err)) == 0);
	CHECKF(n > 4 && n < 1000, "max fit %llu", (unsigned long long)n);
	struct mt_replay_result r;
	truth("fit", &mp, n, capacity, &live, &r);
	CHECKF(r.oom_count == 0, "the truth at the max fit %llu has OOMs", (unsigned long long)n);
	mt_replay_result_release(&r);
	truth("fit", &mp, n + 1, capacity, &live, &r);
	CHECKF(r.oom_count > 0, "the truth at %llu fits too", (unsigned long long)n + 1);
	mt_replay_result_release(&r);
	/* nothing fits in 64 MiB, everything in 1 TiB (up to the limit) */
	REQUIRE(mt_predict_max_fit(p, "caching", 64 * MiB, 1000, &n, err, sizeof(err)) == 0);
	CHECK(n == 0);
	REQUIRE(mt_predict_max_fit(p, "caching", 1ull << 40, 50, &n, err, sizeof(err)) == 0);
	CHECK(n == 50);
	mt_predictor_free(p);
}

static void test_naive(void)
{
	uint64_t sizes[3] = { 1, 2, 4 }, peaks[3] = { 110, 120, 140 };
	CHECK(mt_predict_naive(sizes, peaks, 3, 8) == 180);
	CHECK(mt_predict_naive(sizes, peaks, 1, 8) == 110);
	uint64_t down[2] = { 100, 50 };
	CHECK(mt_predict_naive(sizes, down, 2, 10) == 0);
}

static void test_bad_inputs(void)
{
	struct mt_predictor *p = NULL;
	char err[256];
	struct mt_reader *r = mt_reader_new();
	struct mt_predict_input in[2] = { { r, "a", 2, 0 }, { r, "b", 2, 0 } };
	CHECK(mt_predictor_build(&p, in, 1, err, sizeof(err)) == -EINVAL);
	CHECK(mt_predictor_build(&p, in, 2, err, sizeof(err)) == -EINVAL && strstr(err, "differ"));
	in[1].size = 0;
	CHECK(mt_predictor_build(&p, in, 2, err, sizeof(err)) == -EINVAL);
	CHECK(!p);
	mt_reader_free(r);
}

int main(void)
{
	REQUIRE(mkdtemp(dir));
	TEST(test_fit_kinds);
	TEST(test_fit_refuses_false_quadratics);
	TEST(test_fit_eval_floor);
	TEST(test_align);
	TEST(test_align_bounded);
	TEST(test_affine_model);
	TEST(test_quadratic_model);
	TEST(test_workspace_tolerated);
	TEST(test_other_path_left_out);
	TEST(test_branch_refused);
	TEST(test_data_size_refused);
	TEST(test_capacity_and_max_fit);
	TEST(test_naive);
	TEST(test_bad_inputs);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return check_done();
}
