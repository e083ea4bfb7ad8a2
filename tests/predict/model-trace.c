/* model-trace.c — writes the synthetic model traces of model-trace.h. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "memtrace-format.h"
#include "model-trace.h"

#define MiB (1ull << 20)
#define STREAM 7
#define BRANCH_REQUESTS 12

enum site {
	SITE_WEIGHT,
	SITE_ACT,
	SITE_TMP,
	SITE_SCORES,
	SITE_DATA,
	SITE_WORKSPACE,
	SITE_GRAD_ACT,
	SITE_GRAD_SCORES,
	SITE_GRAD_WEIGHT,
	SITE_ADAM,
	SITE_OPT_TMP,
	SITE_BRANCH, /* BRANCH_REQUESTS sites from here */
	SITE_COUNT = SITE_BRANCH + BRANCH_REQUESTS,
};

struct gen {
	struct mt_writer *w;
	const struct model_params *mp;
	uint64_t n;
	uint32_t proc, dev;
	uint32_t site[SITE_COUNT];
	uint32_t range_name[3];
	uint64_t t, next_address, live;
};

void model_params_default(struct model_params *mp)
{
	*mp = (struct model_params){
		.layers = 12,
		.steps = 3,
		.weight = 8 * MiB,
		.act = 2 * MiB,
		.device_total = 80ull << 30,
		.segment = 2ull << 30,
		.context = 512 * MiB,
		.outside = 500 * MiB,
	};
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static int put(struct gen *g, unsigned kind, uint64_t address, uint64_t bytes, uint32_t site,
               unsigned layer)
{
	struct mt_event e;
	memset(&e, 0, sizeof(e));
	e.kind = (uint8_t)kind;
	e.ts = g->t += 1000;
	e.process = g->proc;
	e.device = g->dev;
	e.alloc.address = address;
	e.alloc.bytes = bytes;
	e.alloc.stream = STREAM;
	e.alloc.site = site;
	e.alloc.layer = (uint8_t)layer;
	e.alloc.api = MT_API_SYNTH;
	return mt_writer_append(g->w, &e);
}

static int alloc(struct gen *g, enum site site, uint64_t bytes, uint64_t *address)
{
	*address = g->next_address;
	g->next_address += 512;
	g->live += bytes;
	return put(g, MT_EVENT_ALLOC, *address, bytes, g->site[site], MT_LAYER_REQUEST);
}

static int release(struct gen *g, uint64_t address, uint64_t bytes)
{
	g->live -= bytes;
	return put(g, MT_EVENT_FREE, address, bytes, 0, MT_LAYER_REQUEST);
}

static int range(struct gen *g, unsigned name, uint64_t start)
{
	struct mt_event e;
	memset(&e, 0, sizeof(e));
	e.kind = MT_EVENT_RANGE;
	e.ts = start;
	e.process = g->proc;
	e.device = g->dev;
	e.range.end = g->t + 1;
	e.range.name = g->range_name[name];
	return mt_writer_append(g->w, &e);
}

static int sample(struct gen *g)
{
	const struct model_params *mp = g->mp;
	struct mt_event e;
	memset(&e, 0, sizeof(e));
	e.kind = MT_EVENT_SAMPLE;
	e.ts = g->t += 1000;
	e.process = g->proc;
	e.device = g->dev;
	e.sample.process_bytes = mp->context + (mp->segment ? mp->segment : g->live);
	e.sample.used_bytes = mp->outside + e.sample.process_bytes;
	return mt_writer_append(g->w, &e);
}

/* Step s: forward, backward and optimizer (the first step also allocates
 * the weight gradients and Adam states, kept to the end). */
static int step(struct gen *g, unsigned s, uint64_t *weight_grads, uint64_t *adam)
{
	const struct model_params *mp = g->mp;
	unsigned L = mp->layers;
	uint64_t n = g->n, act[L], scores[L], data = 0, data_bytes = 0, tmp,
	         branch[BRANCH_REQUESTS];
	uint64_t act_bytes = mp->act * n, quad_bytes = mp->quad * n * n, start = g->t + 1;
	uint64_t tmp_bytes = n < mp->other_path_below ? act_bytes / 2 + 4096 : act_bytes / 2;
	uint64_t grad_bytes = n < mp->other_path_below ? act_bytes + 8192 : act_bytes;
	int rc = 0;
	for (unsigned l = 0; rc == 0 && l < L; l++) {
		if (mp->workspace_at == n && l == 0 && s == 0)
			rc = alloc(g, SITE_WORKSPACE, 4 * MiB + 512,
			           &tmp); /* kept, as cuBLAS keeps it */
		if (rc == 0)
			rc = alloc(g, SITE_ACT, act_bytes, &act[l]);
		if (rc == 0 && (rc = alloc(g, SITE_TMP, tmp_bytes, &tmp)) == 0)
			rc = release(g, tmp, tmp_bytes);
		if (rc == 0 && quad_bytes)
			rc = alloc(g, SITE_SCORES, quad_bytes, &scores[l]);
		if (rc == 0 && mp->data_size && l == 0) {
			/* e.g. the tokens a data-dependent mask selects: 30-100% of N's */
			data_bytes = act_bytes * (30 + mix(n * 131 + s) % 71) / 100;
			rc = alloc(g, SITE_DATA, data_bytes, &data);
		}
		if (rc == 0 && mp->branch_at == n && l == L / 2)
			for (unsigned k = 0; rc == 0 && k < BRANCH_REQUESTS; k++)
				rc = alloc(g, SITE_BRANCH + k, act_bytes / 4, &branch[k]);
	}
	if (rc == 0 && (rc = range(g, 0, start)) == 0)
		rc = sample(g);
	start = g->t + 1;
	for (unsigned l = L; rc == 0 && l-- > 0;) {
		uint64_t grad, grad_scores;
		if ((rc = alloc(g, SITE_GRAD_ACT, grad_bytes, &grad)) == 0 && quad_bytes &&
		    (rc = alloc(g, SITE_GRAD_SCORES, quad_bytes, &grad_scores)) == 0)
			rc = release(g, grad_scores, quad_bytes);
		if (rc == 0 && quad_bytes)
			rc = release(g, scores[l], quad_bytes);
		if (rc == 0)
			rc = release(g, act[l], act_bytes);
		if (rc == 0 && l == 0 && data)
			rc = release(g, data, data_bytes);
		if (mp->branch_at == n && l == L / 2) /* the branch's activations */
			for (unsigned k = 0; rc == 0 && k < BRANCH_REQUESTS; k++)
				rc = release(g, branch[k], act_bytes / 4);
		if (rc == 0 && s == 0)
			rc = alloc(g, SITE_GRAD_WEIGHT, mp->weight, &weight_grads[l]);
		if (rc == 0)
			rc = release(g, grad, grad_bytes);
	}
	if (rc == 0)
		rc = range(g, 1, start);
	start = g->t + 1;
	for (unsigned l = 0; rc == 0 && s == 0 && l < L; l++)
		if ((rc = alloc(g, SITE_ADAM, mp->weight, &adam[2 * l])) == 0)
			rc = alloc(g, SITE_ADAM, mp->weight, &adam[2 * l + 1]);
	for (unsigned l = 0; rc == 0 && l < L; l++)
		if ((rc = alloc(g, SITE_OPT_TMP, mp->weight, &tmp)) == 0)
			rc = release(g, tmp, mp->weight);
	if (rc == 0 && (rc = range(g, 2, start)) == 0)
		rc = sample(g);
	return rc;
}

static int intern_all(struct gen *g)
{
	static const char *const lines[SITE_BRANCH] = {
		"12:Model.__init__",  "31:Block.forward",  "32:Block.forward",
		"33:Block.attention", "35:Block.select",   "40:matmul_workspace",
		"51:Block.backward",  "52:Block.backward", "53:Block.backward",
		"61:Adam.step",       "62:Adam.step",
	};
	static const char *const ranges[3] = { "forward", "backward", "optimizer" };
	char s[160];
	int rc = 0;
	for (unsigned i = 0; rc == 0 && i < SITE_COUNT; i++) {
		if (i < SITE_BRANCH)
			snprintf(s, sizeof(s), "/work/model.py:%s\n/work/train.py:90:main",
			         lines[i]);
		else
			snprintf(s, sizeof(s),
			         "/work/model.py:%u:Block.refine\n/work/train.py:90:main",
			         70 + i - SITE_BRANCH);
		rc = mt_writer_intern(g->w, s, &g->site[i]);
	}
	for (unsigned i = 0; rc == 0 && i < 3; i++)
		rc = mt_writer_intern(g->w, ranges[i], &g->range_name[i]);
	return rc;
}

int model_trace_write(const char *path, const struct model_params *mp, uint64_t n)
{
	struct gen g = { .mp = mp, .n = n, .t = 1000000, .next_address = 0x7f0000000000ull };
	struct mt_process proc = { .pid = 4242,
		                   .command_line = "python3 train.py",
		                   .hostname = "model" };
	struct mt_device dev = { .ordinal = 0,
		                 .total_bytes = mp->device_total,
		                 .name = "Model GPU",
		                 .uuid = "GPU-model",
		                 .driver_version = "",
		                 .cuda_version = "" };
	char side[4096];
	uint64_t weights[mp->layers], grads[mp->layers], adam[2 * mp->layers];
	int rc;
	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
	if (!(g.w = mt_writer_new()))
		return -ENOMEM;
	if ((rc = mt_writer_open(g.w, path, MT_WRITER_CREATE)) == 0 &&
	    (rc = mt_writer_set_meta(g.w, "capture", "synth")) == 0 &&
	    (rc = mt_writer_set_meta(g.w, "stacks", "python")) == 0 &&
	    (rc = mt_writer_add_process(g.w, &proc, &g.proc)) == 0 &&
	    (rc = mt_writer_add_device(g.w, &dev, &g.dev)) == 0)
		rc = intern_all(&g);
	if (rc == 0 && mp->segment)
		/* the allocator's segment: the requests' addresses lie in it */
		rc = put(&g, MT_EVENT_ALLOC, 0x7f0000000000ull, mp->segment, 0, MT_LAYER_DRIVER);
	for (unsigned l = 0; rc == 0 && l < mp->layers; l++)
		rc = alloc(&g, SITE_WEIGHT, mp->weight, &weights[l]);
	if (rc == 0)
		rc = sample(&g);
	for (unsigned s = 0; rc == 0 && s < mp->steps; s++)
		rc = step(&g, s, grads, adam);
	if (rc == 0)
		rc = mt_writer_flush(g.w);
	mt_writer_free(g.w);
	return rc;
}
