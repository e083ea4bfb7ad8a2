/* test-fidelity.c — `caching` and `expandable` against PyTorch itself: the
 * recorded sample traces (samples/traces/NAME.db and the validation traces
 * of predict, samples/predict/traces/NAME.db: PyTorch's own request streams
 * captured on an H100) are replayed under sim and the peak reserved
 * compared with the figures PyTorch reported for the same run in the
 * sidecar (NAME.json): torch.cuda.max_memory_reserved() with the native
 * allocator, and with expandable_segments:True where the sidecar has it;
 * and `caching`'s peak of the bytes it handed out (rounded and split as
 * PyTorch does) against torch.cuda.max_memory_allocated(). The bars: exact
 * (caching reserved: the replay takes PyTorch's decisions, segment for
 * segment), 2% (expandable) and 0.1% (allocated). Skips when no sample
 * trace is there (a TAP skip). */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "policy-test.h"

/* under samples/ */
static const char *const traces[] = {
	"traces/gpt2-train",
	"traces/resnet50-train",
	"traces/bert-base-bf16-train",
	"predict/traces/gpt2-train-n1",
	"predict/traces/gpt2-train-n2",
	"predict/traces/gpt2-train-n4",
	"predict/traces/bert-ckpt-n1",
	"predict/traces/bert-ckpt-n2",
	"predict/traces/bert-ckpt-n4",
	"predict/traces/generate-n1",
	"predict/traces/generate-n2",
	"predict/traces/generate-n4",
	"predict/traces/branch-n1",
	"predict/traces/branch-n2",
	"predict/traces/branch-n4",
};

static const struct {
	const char *policy, *sidecar_key;
	bool rounded;  /* compare peak_allocated_rounded, else peak_reserved */
	bool optional; /* run only where the sidecar has the key */
	double tolerance;
} checks[] = {
	{ "caching", "torch_max_memory_reserved_native", false, false, 0.0 },
	{ "caching", "torch_max_memory_allocated", true, false, 0.001 },
	{ "expandable", "torch_max_memory_reserved_expandable", false, true, 0.02 },
};

static const char *root, *name; /* the trace of the running case */

/* Replays one trace through each checked policy. */
static void check_trace(void)
{
	char path[4096], err[256] = "";
	struct mt_reader *r = NULL;
	struct mt_request_stream *s = NULL;
	json_t *side;
	json_error_t jerr;

	snprintf(path, sizeof(path), "%s/samples/%s.json", root, name);
	side = json_load_file(path, 0, &jerr);
	CHECK(side != NULL);
	snprintf(path, sizeof(path), "%s/samples/%s.db", root, name);
	r = mt_reader_new();
	CHECK(r && mt_reader_open(r, path) == 0);
	CHECKF(r && !mt_reader_message(r)[0], "%s: %s", name, r ? mt_reader_message(r) : "");
	if (side && r && !mt_reader_message(r)[0]) {
		int rc = mt_request_stream_load(&s, r, 0, err, sizeof(err));

		CHECKF(rc == 0, "%s: %s", name, err);
		for (size_t i = 0; s && i < sizeof(checks) / sizeof(checks[0]); i++) {
			struct mt_replay_options opt = { .policy = checks[i].policy,
				                         .backend = MT_BACKEND_SIM };
			struct mt_replay_result res = { 0 };
			json_t *figure = json_object_get(side, checks[i].sidecar_key);
			double want = (double)json_integer_value(figure);
			uint64_t got;
			double diff;

			if (!figure && checks[i].optional)
				continue;
			CHECK(mt_replay_run(s, &opt, &res, err, sizeof(err)) == 0);
			got = checks[i].rounded ? res.peak_allocated_rounded : res.peak_reserved;
			diff = ((double)got - want) / want;
			printf("# %-22s %-10s peak %s %llu, PyTorch %.0f (%+.4f%%)\n", name,
			       checks[i].policy, checks[i].rounded ? "allocated" : "reserved",
			       (unsigned long long)got, want, 100.0 * diff);
			CHECK(want > 0 && diff <= checks[i].tolerance &&
			      diff >= -checks[i].tolerance);
			CHECK(res.oom_count == 0 && res.peak_reserved >= res.peak_allocated);
			mt_replay_result_release(&res);
		}
	}
	mt_request_stream_free(s);
	mt_reader_free(r);
	json_decref(side);
}

int main(void)
{
	char path[4096];
	int ran = 0;

	root = getenv("MT_SOURCE_ROOT") ? getenv("MT_SOURCE_ROOT") : ".";
	for (size_t i = 0; i < sizeof(traces) / sizeof(traces[0]); i++) {
		name = traces[i];
		snprintf(path, sizeof(path), "%s/samples/%s.json", root, name);
		if (access(path, R_OK) == 0) {
			check_run(name, check_trace);
			ran++;
		}
	}
	if (!ran) {
		printf("1..0 # SKIP no sample traces under %s/samples\n", root);
		return 0;
	}
	return check_done();
}
