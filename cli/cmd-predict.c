/* cmd-predict.c — `memtrace predict`: from traces of one program at small
 * values of a size parameter N, the peak live and reserved memory at other
 * N, whether each fits the card, the largest N that fits, and beside them
 * what a naive extrapolation of the recorded peaks would say. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "cli-util.h"
#include "commands.h"
#include "memtrace-common.h"
#include "memtrace-predict.h"

#define CMD "predict"
#define MAX_POLICIES 16
#define MAX_INPUTS 64
#define MAX_TARGETS 256
#define MAX_FIT_LIMIT (1ull << 31)

static void usage(FILE *f)
{
	fputs("usage: memtrace predict TRACE@N TRACE@N [TRACE@N...] --to N[,N...]\n"
	      "                        [--policy SPEC[,SPEC...]] [--capacity SIZE] [--max-fit]\n"
	      "                        [--json]\n"
	      "\n"
	      "Predicts the memory of a run not yet made from traces of the same program\n"
	      "at small values of one size parameter N (batch size, sequence length,\n"
	      "tokens): each TRACE@N is a trace (recorded or imported) of a run at N.\n"
	      "The request streams are aligned request by request (call site, stream,\n"
	      "NVTX range, order), each request's size is fitted in N (constant, affine,\n"
	      "or quadratic with three inputs or more), and the stream at each target N\n"
	      "is synthesized in the recorded order and lifetimes and replayed through\n"
	      "the allocator policies (simulated; no GPU needed). A small input whose\n"
	      "stream runs another code path than the larger ones is left out; inputs\n"
	      "whose control flow or sizes follow the data rather than N are refused\n"
	      "with the first place they diverge. Record with --stacks python (call\n"
	      "sites make the alignment sure); give 3 inputs to detect quadratic terms.\n"
	      "docs/PREDICT.md describes the method.\n"
	      "\n"
	      "  --to N,...         sizes to predict\n"
	      "  --policy SPEC,...  allocator policies (default: the one the runs used:\n"
	      "                     caching, or expandable with expandable segments); 'all'\n"
	      "                     or NAME[:key=value,...] as for memtrace replay\n"
	      "  --capacity SIZE    memory the allocator may take (default: the largest\n"
	      "                     input's device total less its CUDA context and\n"
	      "                     libraries and the memory outside the process)\n"
	      "  --max-fit          also the largest N whose predicted run has no OOM\n"
	      "  --json             {inputs, aligned_fraction, predictions, capacity_bytes,\n"
	      "                     max_fit}\n"
	      "\n"
	      "The 'naive' columns extrapolate the inputs' own peaks (live, and reserved\n"
	      "when replayed through the policy) along a straight line in N.\n",
	      f);
}

struct args {
	struct mt_predict_input in[MAX_INPUTS];
	size_t nin;
	uint64_t to[MAX_TARGETS];
	size_t nto;
	char policies[MAX_POLICIES][CLI_POLICY_SPEC];
	size_t npolicies;
	uint64_t capacity; /* 0: the default */
	bool max_fit, json;
};

static int parse_size_arg(const char *what, const char *text, uint64_t *n)
{
	int rc = cli_parse_u64(CMD, what, text, n);
	if (rc == CLI_EXIT_OK && (*n < 1 || *n > MAX_FIT_LIMIT))
		return cli_usage_error(CMD, "%s: '%s' is not a size from 1 to %llu", what, text,
		                       MAX_FIT_LIMIT);
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int parse_targets(const char *text, struct args *a)
{
	char buf[4096];
	int rc;
	snprintf(buf, sizeof(buf), "%s", text);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (a->nto == MAX_TARGETS)
			return cli_usage_error(CMD, "--to: more than %d sizes", MAX_TARGETS);
		if ((rc = parse_size_arg("--to", tok, &a->to[a->nto])) != CLI_EXIT_OK)
			return rc;
		a->nto++;
	}
	if (!a->nto)
		return cli_usage_error(CMD, "--to: no size given");
	qsort(a->to, a->nto, sizeof(uint64_t), cmp_u64);
	size_t k = 0;
	for (size_t i = 0; i < a->nto; i++)
		if (!k || a->to[k - 1] != a->to[i])
			a->to[k++] = a->to[i];
	a->nto = k;
	return CLI_EXIT_OK;
}

/* TRACE@N: the last '@' splits the path from the size. */
static int parse_input(char *arg, struct mt_predict_input *in)
{
	char *at = strrchr(arg, '@');
	if (!at || at == arg)
		return cli_usage_error(CMD, "'%s' is not TRACE@N (the size N of that run)", arg);
	*at = '\0';
	in->name = arg;
	return parse_size_arg(arg, at + 1, &in->size);
}

static int parse_args(int argc, char **argv, struct args *a, const char **policy_arg)
{
	static const struct option longopts[] = {
		{ "to", required_argument, NULL, 't' },
		{ "policy", required_argument, NULL, 'p' },
		{ "capacity", required_argument, NULL, 'c' },
		{ "max-fit", no_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if ((rc = parse_targets(optarg, a)) != CLI_EXIT_OK)
				return rc;
			break;
		case 'p':
			*policy_arg = optarg;
			break;
		case 'c':
			if ((rc = cli_parse_size(CMD, "--capacity", optarg, &a->capacity)) !=
			    CLI_EXIT_OK)
				return rc;
			if (!a->capacity)
				return cli_usage_error(CMD, "--capacity: must be > 0");
			break;
		case 'm':
			a->max_fit = true;
			break;
		case 'j':
			a->json = true;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option(CMD, c, argv);
		}
	}
	for (int i = optind; i < argc; i++) {
		if (a->nin == MAX_INPUTS)
			return cli_usage_error(CMD, "more than %d traces", MAX_INPUTS);
		if ((rc = parse_input(argv[i], &a->in[a->nin++])) != CLI_EXIT_OK)
			return rc;
	}
	if (a->nin < 2)
		return cli_usage_error(CMD, "give at least two traces, each as TRACE@N");
	if (!a->nto && !a->max_fit)
		return cli_usage_error(CMD, "nothing to predict: give --to N[,N...] or --max-fit");
	return CLI_EXIT_OK;
}

/* Predictions at every target, and the naive extrapolation. */
struct table {
	uint64_t *live;               /* per target */
	struct mt_replay_result *res; /* per target x policy */
	uint64_t *input_reserved;     /* per policy x input */
	uint64_t *input_sizes, *input_live;
	uint64_t max_fit[MAX_POLICIES];
};

static int compute(struct mt_predictor *p, const struct args *a, uint64_t capacity, struct table *t)
{
	const char *specs[MAX_POLICIES];
	char err[1024];
	struct cli_progress prog;
	size_t np = a->npolicies, done = 0;
	int rc = 0;
	for (size_t i = 0; i < np; i++)
		specs[i] = a->policies[i];
	t->live = calloc(a->nto + 1, sizeof(uint64_t));
	t->res = calloc(a->nto * np + 1, sizeof(*t->res));
	t->input_reserved = calloc(np * a->nin, sizeof(uint64_t));
	t->input_sizes = calloc(a->nin, sizeof(uint64_t));
	t->input_live = calloc(a->nin, sizeof(uint64_t));
	if (!t->live || !t->res || !t->input_reserved || !t->input_sizes || !t->input_live) {
		cli_error(CMD, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < a->nin; i++) {
		t->input_sizes[i] = mt_predictor_input(p, i)->size;
		t->input_live[i] = mt_predictor_input(p, i)->peak_live;
	}
	cli_progress_start(&prog, "predict", a->nto + np * (1 + a->max_fit));
	for (size_t i = 0; rc == 0 && i < np; i++, done++) {
		rc = mt_predictor_input_reserved(p, specs[i], t->input_reserved + i * a->nin, err,
		                                 sizeof(err));
		cli_progress_update(&prog, done);
	}
	for (size_t k = 0; rc == 0 && k < a->nto; k++, done++) {
		rc = mt_predict_at(p, a->to[k], specs, np, capacity, &t->live[k], t->res + k * np,
		                   err, sizeof(err));
		cli_progress_update(&prog, done);
	}
	for (size_t i = 0; rc == 0 && a->max_fit && i < np; i++, done++) {
		rc = mt_predict_max_fit(p, specs[i], capacity, MAX_FIT_LIMIT, &t->max_fit[i], err,
		                        sizeof(err));
		cli_progress_update(&prog, done);
	}
	cli_progress_done(&prog);
	if (rc < 0)
		cli_error(CMD, "%s", err);
	return rc;
}

static void table_release(struct table *t, size_t nres)
{
	for (size_t i = 0; t->res && i < nres; i++)
		mt_replay_result_release(&t->res[i]);
	free(t->live);
	free(t->res);
	free(t->input_reserved);
	free(t->input_sizes);
	free(t->input_live);
}

static int print_json(const struct mt_predictor *p, const struct args *a, uint64_t capacity,
                      const struct table *t)
{
	struct mt_predict_summary s;
	mt_predictor_summary(p, &s);
	json_t *root = json_object(), *inputs = json_array(), *preds = json_array();
	for (size_t i = 0; i < a->nin; i++)
		json_array_append_new(inputs, json_pack("{s:s,s:I}", "trace", a->in[i].name, "size",
		                                        (json_int_t)a->in[i].size));
	for (size_t k = 0; k < a->nto; k++) {
		json_t *pol = json_object();
		for (size_t i = 0; i < a->npolicies; i++) {
			const struct mt_replay_result *r = &t->res[k * a->npolicies + i];
			json_object_set_new(pol, a->policies[i],
			                    json_pack("{s:I,s:I}", "peak_reserved_bytes",
			                              (json_int_t)r->peak_reserved, "oom_count",
			                              (json_int_t)r->oom_count));
		}
		json_array_append_new(preds, json_pack("{s:I,s:I,s:o}", "size",
		                                       (json_int_t)a->to[k], "peak_live_bytes",
		                                       (json_int_t)t->live[k], "policies", pol));
	}
	json_object_set_new(root, "inputs", inputs);
	json_object_set_new(root, "aligned_fraction", json_real(s.aligned_fraction));
	json_object_set_new(root, "predictions", preds);
	json_object_set_new(root, "capacity_bytes", json_integer((json_int_t)capacity));
	if (a->max_fit) {
		json_t *mf = json_object();
		for (size_t i = 0; i < a->npolicies; i++)
			json_object_set_new(mf, a->policies[i],
			                    json_integer((json_int_t)t->max_fit[i]));
		json_object_set_new(root, "max_fit", mf);
	}
	return cli_print_json(root);
}

static void print_summary(const struct mt_predictor *p, const struct args *a, uint64_t capacity)
{
	struct mt_predict_summary s;
	char x[32], y[32], z[32], w[32], v[32];
	uint64_t all = 0;
	mt_predictor_summary(p, &s);
	for (size_t i = 0; i < a->nin; i++)
		all += mt_predictor_input(p, i)->requests;
	printf("inputs: %zu traces, %.1f%% of their %llu requests aligned across those used\n",
	       a->nin, 100.0 * s.aligned_fraction, (unsigned long long)all);
	printf("  %-36s %8s %10s %10s %11s\n", "trace", "N", "requests", "aligned", "peak live");
	for (size_t i = 0; i < a->nin; i++) {
		const struct mt_predict_input_info *in = mt_predictor_input(p, i);
		printf("  %-36s %8llu %10llu %10llu %11s%s\n", in->name,
		       (unsigned long long)in->size, (unsigned long long)in->requests,
		       (unsigned long long)in->aligned, mt_size_format(in->peak_live, x, 32),
		       i == s.reference ? "  (reference: order and lifetimes)"
		       : in->left_out   ? "  (left out: another code path than the larger inputs)"
		                        : "");
	}
	printf("fit: %llu constant, %llu affine, %llu quadratic",
	       (unsigned long long)s.fit.constant, (unsigned long long)s.fit.affine,
	       (unsigned long long)s.fit.quadratic);
	if (s.fit.partial)
		printf("; %llu not in every input used", (unsigned long long)s.fit.partial);
	if (s.fit.inferred)
		printf(", %llu of them in the reference alone (fitted as most of their size)",
		       (unsigned long long)s.fit.inferred);
	if (s.fit.inconsistent)
		printf("; %llu broken by an input (%.2f%% of the peak), fitted on the others",
		       (unsigned long long)s.fit.inconsistent,
		       100.0 * s.fit.inconsistent_peak_share);
	printf("\n");
	if (a->capacity)
		printf("capacity: %s (--capacity)\n", mt_size_format(capacity, x, 32));
	else if (s.capacity_sampled) {
		char libs[96] = "";
		if (s.library_bytes)
			snprintf(libs, sizeof(libs),
			         ", %s that libraries allocated beside the allocator",
			         mt_size_format(s.library_bytes, v, 32));
		printf("capacity: %s (device %s less %s CUDA context and libraries%s and %s "
		       "outside "
		       "the process)\n",
		       mt_size_format(capacity, x, 32), mt_size_format(s.device_total, y, 32),
		       mt_size_format(s.context_bytes, z, 32), libs,
		       mt_size_format(s.outside_bytes, w, 32));
	} else
		printf("capacity: %s (the device's total: no sample of the memory in use)\n",
		       mt_size_format(capacity, x, 32));
}

/* Width of a policy's column: its spec, and room for a size. */
static int col_width(const char *spec)
{
	size_t n = strlen(spec);
	return (int)(n > 12 ? n : 12);
}

static void print_table(const struct args *a, uint64_t capacity, const struct table *t)
{
	char x[32];
	size_t np = a->npolicies;
	printf("\n%10s %11s", "N", "peak live");
	for (size_t i = 0; i < np; i++)
		printf("  %*s %4s", col_width(a->policies[i]), a->policies[i], "fits");
	printf("  | naive: %9s", "peak live");
	for (size_t i = 0; i < np; i++)
		printf("  %*s", col_width(a->policies[i]), a->policies[i]);
	printf("\n");
	for (size_t k = 0; k < a->nto; k++) {
		printf("%10llu %11s", (unsigned long long)a->to[k],
		       mt_size_format(t->live[k], x, 32));
		for (size_t i = 0; i < np; i++) {
			const struct mt_replay_result *r = &t->res[k * np + i];
			printf("  %*s %4s", col_width(a->policies[i]),
			       mt_size_format(r->peak_reserved, x, 32),
			       r->oom_count ? "no" : "yes");
		}
		uint64_t naive = mt_predict_naive(t->input_sizes, t->input_live, a->nin, a->to[k]);
		printf("  | %16s", mt_size_format(naive, x, 32));
		for (size_t i = 0; i < np; i++) {
			naive = mt_predict_naive(t->input_sizes, t->input_reserved + i * a->nin,
			                         a->nin, a->to[k]);
			printf("  %*s", col_width(a->policies[i]), mt_size_format(naive, x, 32));
		}
		printf("\n");
	}
	for (size_t i = 0; a->max_fit && i < np; i++) {
		if (t->max_fit[i] >= MAX_FIT_LIMIT)
			printf("max fit (%s): every N up to %llu fits in %s\n", a->policies[i],
			       MAX_FIT_LIMIT, mt_size_format(capacity, x, 32));
		else if (t->max_fit[i])
			printf("max fit (%s): N = %llu in %s\n", a->policies[i],
			       (unsigned long long)t->max_fit[i], mt_size_format(capacity, x, 32));
		else
			printf("max fit (%s): none, N = 1 does not fit in %s\n", a->policies[i],
			       mt_size_format(capacity, x, 32));
	}
}

int cli_cmd_predict(int argc, char **argv)
{
	static struct args a;
	const char *policy_arg = NULL;
	struct mt_predictor *p = NULL;
	struct table t = { 0 };
	char err[2048];
	int rc;
	memset(&a, 0, sizeof(a));
	/* each synthesis fills and frees arrays of the trace's size: keep freed
	 * memory for the next rather than map fresh pages (which cost more than
	 * filling them; bench/predict) */
	mallopt(M_MMAP_THRESHOLD, 1 << 30);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	if ((rc = parse_args(argc, argv, &a, &policy_arg)) != CLI_EXIT_OK)
		return rc < 0 ? CLI_EXIT_OK : rc;
	if (policy_arg && (rc = cli_policy_specs(CMD, policy_arg, a.policies, MAX_POLICIES,
	                                         &a.npolicies)) != CLI_EXIT_OK)
		return rc;
	for (size_t i = 0; i < a.nin; i++)
		if ((rc = cli_open_trace(CMD, a.in[i].name, &a.in[i].reader)) != CLI_EXIT_OK)
			goto out;
	if (mt_predictor_build(&p, a.in, a.nin, err, sizeof(err)) < 0) {
		cli_error(CMD, "%s", err);
		rc = CLI_EXIT_FAILURE;
		goto out;
	}
	struct mt_predict_summary s;
	mt_predictor_summary(p, &s);
	if (!a.npolicies)
		snprintf(a.policies[a.npolicies++], CLI_POLICY_SPEC, "%s", s.policy);
	uint64_t capacity = a.capacity ? a.capacity : s.capacity;
	if (!capacity) {
		cli_error(CMD, "the device's capacity is unknown: give --capacity");
		rc = CLI_EXIT_FAILURE;
		goto out;
	}
	if (compute(p, &a, capacity, &t) < 0) {
		rc = CLI_EXIT_FAILURE;
		goto out;
	}
	if (a.json) {
		rc = print_json(p, &a, capacity, &t);
	} else {
		print_summary(p, &a, capacity);
		print_table(&a, capacity, &t);
		rc = CLI_EXIT_OK;
	}
out:
	table_release(&t, a.nto * a.npolicies);
	mt_predictor_free(p);
	for (size_t i = 0; i < a.nin; i++)
		mt_reader_free(a.in[i].reader);
	return rc;
}
