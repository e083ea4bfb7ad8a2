/* synth.c — synthetic traces for tests and benchmarks (memtrace synth).
 *
 * Models what a requests capture of a PyTorch program looks like, without a
 * GPU. Three patterns:
 *  - train: a transformer training loop (mixed precision, Adam). Weights
 *    (fp32) are allocated once and never freed; each step copies a batch
 *    in on a copy stream, runs forward layer by layer (autocast weight
 *    casts, activations saved for backward, workspace temporaries), a
 *    tied-embedding loss head, backward in reverse (gradients of inputs and
 *    weights, saved activations freed in reverse order), then the
 *    optimizer (Adam states created at the first step, gradient-norm
 *    temporaries, zero_grad(set_to_none) frees the gradients). One kernel
 *    per op with a duration from its FLOPs or bytes on an H100-class GPU,
 *    NVTX ranges step > forward/backward/optimizer, a device-memory sample
 *    per step, and the driver-layer segments of a caching allocator. Like
 *    a real loop, every step asks for the same sequence of sizes (an op's
 *    temporaries are drawn once); what varies is timing: host call times
 *    and kernel durations (+-3%).
 *  - random: sizes log-uniform in 512 B..256 MiB, random lifetimes around a
 *    few hundred live allocations.
 *  - small: overlapping swarms of small (< 1 MiB) allocations freed in
 *    random order, plus a slowly churning set of 64 long-lived small ones.
 * Addresses come from a model of PyTorch's CUDACachingAllocator: block
 * sizes rounded (512 B; above 1 MiB to quarter powers of two), freed
 * blocks reused LIFO per (stream, size), new blocks carved from 2 MiB
 * (small pool) or 20 MiB segments, blocks of 10 MiB and more in their own
 * 2 MiB-rounded segment. Segments are never released.
 * Everything is drawn from xoshiro256** seeded with the seed, so a seed
 * gives the same trace byte for byte. The number of alloc/free events (both
 * layers) lands within a few events of the number asked for: once the next
 * allocation would not leave room to free every live temporary, no more
 * allocations are made and what is live is freed (weights, optimizer
 * states and segments stay, as in a real run).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-common.h"
#include "memtrace-synth.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)

#define SYNTH_START_NS 1700000000000000000ull
#define SYNTH_DEVICE_TOTAL (80 * GiB)
#define SYNTH_CONTEXT_BYTES (517 * MiB) /* CUDA context, cuBLAS and friends */
#define COMPUTE_STREAM 7
#define COPY_STREAM 13

/* Log-uniform in [lo, hi]. */
static uint64_t rng_log_uniform(struct mt_rng *r, uint64_t lo, uint64_t hi)
{
	double v = exp(log((double)lo) + mt_rng_unit(r) * (log((double)hi) - log((double)lo)));
	return v < (double)lo ? lo : v > (double)hi ? hi : (uint64_t)v;
}

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

/* ---- addresses: a caching allocator's blocks and segments ---- */

struct free_list {
	uint64_t key; /* 0 = empty slot */
	uint64_t *addr;
	size_t n, cap;
};

struct open_segment {
	uint64_t base, size, used;
};

struct addr_model {
	struct free_list *table;
	size_t table_size; /* power of two */
	size_t table_used;
	struct open_segment open[2]; /* small pool, large pool */
	uint64_t next_va;
	uint64_t reserved;
};

/* The block a request of this many bytes occupies. */
static uint64_t block_size(uint64_t bytes)
{
	uint64_t p = 1;

	if (bytes <= MiB)
		return round_up(bytes ? bytes : 1, 512);
	while (p < bytes)
		p <<= 1;
	return round_up(bytes, p / 8);
}

static uint64_t hash_key(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	return key ^ (key >> 33);
}

static int table_grow(struct addr_model *am)
{
	size_t size = am->table_size ? am->table_size * 2 : 256, i;
	struct free_list *t = calloc(size, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; i < am->table_size; i++) {
		struct free_list *old = &am->table[i];
		size_t j = hash_key(old->key) & (size - 1);
		if (!old->key)
			continue;
		while (t[j].key)
			j = (j + 1) & (size - 1);
		t[j] = *old;
	}
	free(am->table);
	am->table = t;
	am->table_size = size;
	return 0;
}

/* The free list of blocks of `block` bytes on `stream`, created if new;
 * NULL when out of memory. */
static struct free_list *free_list_of(struct addr_model *am, uint64_t block, uint64_t stream)
{
	uint64_t key = block | (stream & 0xff) << 56;
	size_t j;

	if ((am->table_used + 1) * 2 > am->table_size && table_grow(am) < 0)
		return NULL;
	j = hash_key(key) & (am->table_size - 1);
	while (am->table[j].key && am->table[j].key != key)
		j = (j + 1) & (am->table_size - 1);
	if (!am->table[j].key) {
		am->table[j].key = key;
		am->table_used++;
	}
	return &am->table[j];
}

static void addr_model_fini(struct addr_model *am)
{
	for (size_t i = 0; i < am->table_size; i++)
		free(am->table[i].addr);
	free(am->table);
}

/* ---- the generator ---- */

struct synth {
	struct mt_writer *w;
	struct mt_rng rng;
	uint64_t seed;
	struct addr_model am;
	uint32_t process, device;
	uint64_t t;              /* clock, ns */
	uint64_t correlation;    /* next kernel correlation id */
	uint64_t target;         /* alloc/free events asked for */
	uint64_t emitted;        /* alloc/free events written */
	uint64_t live_transient; /* live allocations that will be freed */
	uint64_t appended;       /* events of every kind appended */
	bool segments;           /* write the driver-layer segments */
	bool stop;               /* no more allocations */
	int rc;                  /* first error */
};

/* A request: address 0 = not allocated (freeing it does nothing). */
struct block {
	uint64_t addr, bytes, stream;
};

/* Events between commits of everything buffered: a synth stopped midway
 * (Ctrl-C) leaves a trace whose every kind is complete up to the last
 * commit, which readers then use (FORMAT.md "Incomplete traces"). */
#define COMMIT_EVERY (1u << 20)

static void emit(struct synth *s, struct mt_event *ev)
{
	int rc;

	if (s->rc)
		return;
	ev->process = s->process;
	ev->device = s->device;
	rc = mt_writer_append(s->w, ev);
	if (rc == 0 && ++s->appended % COMMIT_EVERY == 0)
		rc = mt_writer_flush(s->w);
	if (rc < 0)
		s->rc = rc;
}

static void emit_alloc_event(struct synth *s, unsigned kind, unsigned layer, uint64_t addr,
                             uint64_t bytes, uint64_t stream)
{
	struct mt_event ev = { .kind = (uint8_t)kind };

	s->t += 200 + mt_rng_below(&s->rng, 1000); /* host time of the call */
	ev.ts = s->t;
	ev.alloc.address = addr;
	ev.alloc.bytes = bytes;
	ev.alloc.stream = stream;
	ev.alloc.layer = (uint8_t)layer;
	ev.alloc.mem_kind = MT_MEM_DEVICE;
	ev.alloc.api = MT_API_SYNTH;
	emit(s, &ev);
	s->emitted++;
}

/* Whether an allocation still fits in the budget, counting its free when
 * it is a temporary and a possible new segment. Once one does not, none
 * does any more. */
static bool room(struct synth *s, bool transient)
{
	uint64_t need = 1 + (transient ? 1 : 0) + (s->segments ? 1 : 0);

	if (s->stop || s->rc || s->emitted + s->live_transient + need > s->target)
		s->stop = true;
	return !s->stop;
}

/* The address of a new block: a cached one of the same size and stream, or
 * carved from a segment (a new one when the open one is full). */
static uint64_t place(struct synth *s, uint64_t block, uint64_t stream)
{
	struct addr_model *am = &s->am;
	struct free_list *fl = free_list_of(am, block, stream);
	struct open_segment *seg, own;
	uint64_t addr;

	if (!fl) {
		s->rc = -ENOMEM;
		return 0;
	}
	if (fl->n)
		return fl->addr[--fl->n];
	seg = &am->open[block <= MiB ? 0 : 1];
	if (block >= 10 * MiB) {
		own = (struct open_segment){ 0, round_up(block, 2 * MiB), 0 };
		seg = &own;
	} else if (seg->size - seg->used < block) {
		seg->size = block <= MiB ? 2 * MiB : 20 * MiB;
		seg->used = 0;
		seg->base = 0;
	}
	if (!seg->base) {
		seg->base = am->next_va;
		am->next_va += round_up(seg->size, 2 * MiB) + 2 * MiB;
		am->reserved += seg->size;
		if (s->segments)
			emit_alloc_event(s, MT_EVENT_ALLOC, MT_LAYER_DRIVER, seg->base, seg->size,
			                 stream);
	}
	addr = seg->base + seg->used;
	seg->used += block;
	return addr;
}

/* Allocates a request of `bytes` on `stream`; a transient one counts
 * toward the frees still owed. Leaves b->addr 0 once the budget is spent. */
static void alloc_block(struct synth *s, struct block *b, uint64_t bytes, uint64_t stream,
                        bool transient)
{
	b->addr = 0;
	b->bytes = bytes;
	b->stream = stream;
	if (!room(s, transient))
		return;
	b->addr = place(s, block_size(bytes), stream);
	if (!b->addr)
		return;
	emit_alloc_event(s, MT_EVENT_ALLOC, MT_LAYER_REQUEST, b->addr, bytes, stream);
	if (transient)
		s->live_transient++;
}

/* Frees a transient request (nothing if it was never allocated) and caches
 * its block for reuse. */
static void free_block(struct synth *s, struct block *b)
{
	struct free_list *fl;

	if (!b->addr || s->rc)
		return;
	emit_alloc_event(s, MT_EVENT_FREE, MT_LAYER_REQUEST, b->addr, b->bytes, b->stream);
	s->live_transient--;
	fl = free_list_of(&s->am, block_size(b->bytes), b->stream);
	if (!fl || (fl->n == fl->cap &&
	            !(fl->addr = reallocarray(fl->addr, fl->cap = fl->cap ? fl->cap * 2 : 8,
	                                      sizeof(*fl->addr))))) {
		s->rc = -ENOMEM;
		return;
	}
	fl->addr[fl->n++] = b->addr;
	b->addr = 0;
}

static void emit_sample(struct synth *s)
{
	struct mt_event ev = { .kind = MT_EVENT_SAMPLE, .ts = ++s->t };

	ev.sample.used_bytes = SYNTH_CONTEXT_BYTES + s->am.reserved;
	ev.sample.process_bytes = ev.sample.used_bytes;
	emit(s, &ev);
}

static void add_rows(struct synth *s, const char *command)
{
	struct mt_process p = {
		.pid = 4000 + (int64_t)mt_rng_below(&s->rng, 60000),
		.start_ns = SYNTH_START_NS,
		.command_line = command,
		.hostname = "synth",
	};
	struct mt_device d = {
		.ordinal = 0,
		.total_bytes = SYNTH_DEVICE_TOTAL,
		.name = "synthetic GPU",
		.uuid = "GPU-5e7e71c0-0000-4000-8000-000000000000",
		.driver_version = "",
		.cuda_version = "",
	};
	int rc = mt_writer_set_meta(s->w, "capture", "synth");

	if (!rc)
		rc = mt_writer_add_process(s->w, &p, &s->process);
	if (!rc)
		rc = mt_writer_add_device(s->w, &d, &s->device);
	if (rc)
		s->rc = rc;
}

/* ---- pattern train ---- */

enum kernel_id {
	K_GEMM,
	K_CAST,
	K_LAYER_NORM,
	K_LAYER_NORM_BWD,
	K_FLASH_FWD,
	K_FLASH_BWD,
	K_ADD,
	K_GELU,
	K_GELU_BWD,
	K_EMBEDDING,
	K_EMBEDDING_BWD,
	K_XENT,
	K_XENT_BWD,
	K_NORM,
	K_ADAM,
	K_COUNT
};

static const char *const kernel_names[K_COUNT] = {
	[K_GEMM] = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
	           "execute_segment_k_off_kernel__5x_cublas",
	[K_CAST] =
	        "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda"
	        "(at::TensorIteratorBase&)::{lambda()#3}, float, c10::BFloat16>",
	[K_LAYER_NORM] = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel"
	                 "<c10::BFloat16, float>",
	[K_LAYER_NORM_BWD] = "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel"
	                     "_vectorized<c10::BFloat16, float>",
	[K_FLASH_FWD] =
	        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, "
	        "4, false, false, cutlass::bfloat16_t>, false, true, false>",
	[K_FLASH_BWD] = "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"
	                "<Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, 2, false, false, "
	                "cutlass::bfloat16_t>, false, true, false>",
	[K_ADD] = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add"
	          "<c10::BFloat16>, std::array<char*, 3ul> >",
	[K_GELU] =
	        "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl"
	        "(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}, "
	        "std::array<char*, 2ul> >",
	[K_GELU_BWD] = "void at::native::vectorized_elementwise_kernel<4, at::native::"
	               "GeluBackwardCUDAKernelImpl, std::array<char*, 3ul> >",
	[K_EMBEDDING] =
	        "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, "
	        "long, unsigned int, 2, 2, -2, true>",
	[K_EMBEDDING_BWD] = "void at::native::(anonymous namespace)::embedding_backward_feature_"
	                    "kernel<float, float, long>",
	[K_XENT] = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, "
	           "float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>",
	[K_XENT_BWD] = "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, "
	               "c10::BFloat16, float, float, at::native::(anonymous namespace)::"
	               "LogSoftMaxBackwardEpilogue>",
	[K_NORM] =
	        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
	        "(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::"
	        "LpNormFunctor<float, 2, float>, float*, int>",
	[K_ADAM] =
	        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
	        "(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::"
	        "(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, "
	        "false>, double*, double, double, double, double, double, bool, float*, float*>",
};

/* Weights of one transformer layer, in elements of the hidden size H:
 * rows x cols (fp32). */
enum {
	W_LN1_W,
	W_LN1_B,
	W_QKV_W,
	W_QKV_B,
	W_PROJ_W,
	W_PROJ_B,
	W_LN2_W,
	W_LN2_B,
	W_FC1_W,
	W_FC1_B,
	W_FC2_W,
	W_FC2_B,
	W_PER_LAYER
};
static const uint8_t weight_rows[W_PER_LAYER] = { 1, 1, 3, 1, 1, 1, 1, 1, 4, 1, 1, 1 };
static const uint8_t weight_cols[W_PER_LAYER] = { 1, 1, 1, 3, 1, 1, 1, 1, 1, 4, 4, 1 };
static const bool weight_is_matrix[W_PER_LAYER] = {
	[W_QKV_W] = true, [W_PROJ_W] = true, [W_FC1_W] = true, [W_FC2_W] = true
};

/* Forward ops of one layer. out: output width in units of H (bf16, one row
 * per token); weight: the matrix it multiplies (autocast casts it to bf16
 * first) or -1; saved: kept for backward (else freed after the next op). */
struct op_desc {
	uint8_t kernel, bwd_kernel;
	uint8_t out;
	int8_t weight;
	bool saved;
	bool stats; /* also saves per-token fp32 statistics (norm, softmax lse) */
};

static const struct op_desc layer_ops[] = {
	{ K_LAYER_NORM, K_LAYER_NORM_BWD, 1, -1, true, true },
	{ K_GEMM, K_GEMM, 3, W_QKV_W, true, false },
	{ K_FLASH_FWD, K_FLASH_BWD, 1, -1, true, true },
	{ K_GEMM, K_GEMM, 1, W_PROJ_W, false, false },
	{ K_ADD, K_ADD, 1, -1, true, false },
	{ K_LAYER_NORM, K_LAYER_NORM_BWD, 1, -1, true, true },
	{ K_GEMM, K_GEMM, 4, W_FC1_W, true, false },
	{ K_GELU, K_GELU_BWD, 4, -1, true, false },
	{ K_GEMM, K_GEMM, 1, W_FC2_W, false, false },
	{ K_ADD, K_ADD, 1, -1, true, false },
};
#define OPS_PER_LAYER (sizeof(layer_ops) / sizeof(layer_ops[0]))

struct layer_state {
	struct block act[OPS_PER_LAYER];
	struct block stats[OPS_PER_LAYER];
};

struct train {
	struct synth *s;
	uint32_t names[K_COUNT];
	uint64_t hidden, layers, tokens, vocab;
	size_t n_weights; /* layers * W_PER_LAYER + embedding + final norm (2) */
	uint64_t *weight_bytes;
	struct block *weights, *grads, *adam;
	struct layer_state *ls;
	struct block input, labels, x0;
	bool adam_ready;
};

/* Launches one kernel on the compute stream: duration from FLOPs (GEMMs at
 * ~400 TFLOP/s) or bytes moved (~2.5 TB/s), 3 us minimum, +-3% jitter. */
static void launch(struct train *tr, unsigned kernel, double flops, double bytes)
{
	struct synth *s = tr->s;
	struct mt_event ev = { .kind = MT_EVENT_KERNEL };
	double ns = flops > 0 ? flops / 400e3 : bytes / 2.5e3;
	uint64_t threads = (uint64_t)(bytes / 8) + 1;

	if (s->stop)
		return;
	ns = (ns + 3000.0) * (0.97 + 0.06 * mt_rng_unit(&s->rng));
	ev.ts = s->t + 1000 + mt_rng_below(&s->rng, 3000);
	ev.kernel.end = ev.ts + (uint64_t)ns;
	ev.kernel.stream = COMPUTE_STREAM;
	ev.kernel.correlation = ++s->correlation;
	ev.kernel.name = tr->names[kernel];
	if (kernel == K_GEMM) {
		ev.kernel.grid[0] = (uint32_t)(tr->hidden / 128);
		ev.kernel.grid[1] = (uint32_t)(tr->tokens / 128);
		ev.kernel.block[0] = 384;
		ev.kernel.shared_bytes = 232448;
	} else {
		ev.kernel.grid[0] = (uint32_t)(threads / 512 < 65535 ? threads / 512 + 1 : 65535);
		ev.kernel.block[0] = kernel == K_FLASH_FWD || kernel == K_FLASH_BWD ? 128 : 512;
		ev.kernel.shared_bytes = kernel == K_FLASH_FWD || kernel == K_FLASH_BWD ? 49152 : 0;
	}
	ev.kernel.grid[1] = ev.kernel.grid[1] ? ev.kernel.grid[1] : 1;
	ev.kernel.grid[2] = 1;
	ev.kernel.block[1] = 1;
	ev.kernel.block[2] = 1;
	emit(s, &ev);
	s->t = ev.kernel.end;
}

/* Workspace-like temporaries around an op: up to two, sizes from a small
 * menu of cuBLAS/reduction workspace sizes or anything from 512 B to 8 MiB.
 * A training step runs the same program every time, so what an op takes
 * is drawn once per op (`site`) and repeats every step. */
static void temporaries(struct train *tr, struct block tmp[2], uint64_t site)
{
	static const uint64_t menu[] = { 512, 4 * KiB, 32 * KiB, 1 * MiB, 4 * MiB, 32 * MiB };
	struct synth *s = tr->s;
	struct mt_rng op;
	unsigned n;

	mt_rng_seed(&op, s->seed ^ (site * 0x9e3779b97f4a7c15ull));
	n = (unsigned)mt_rng_below(&op, 3);
	tmp[0].addr = tmp[1].addr = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t bytes = mt_rng_unit(&op) < 0.6
		                         ? menu[mt_rng_below(&op, sizeof(menu) / sizeof(menu[0]))]
		                         : round_up(rng_log_uniform(&op, 512, 8 * MiB), 512);
		alloc_block(s, &tmp[i], bytes, COMPUTE_STREAM, true);
	}
}

static void free_temporaries(struct synth *s, struct block tmp[2])
{
	free_block(s, &tmp[1]);
	free_block(s, &tmp[0]);
}

/* Index of weight k of a layer (index 0 is the embedding). */
static size_t layer_weight(size_t layer, unsigned k)
{
	return 1 + layer * W_PER_LAYER + k;
}

static uint64_t act_bytes(const struct train *tr, unsigned width)
{
	return tr->tokens * tr->hidden * width * 2;
}

static void forward_layer(struct train *tr, size_t layer)
{
	struct synth *s = tr->s;
	struct layer_state *ls = &tr->ls[layer];
	const uint64_t *wb = &tr->weight_bytes[layer_weight(layer, 0)];

	for (size_t i = 0; i < OPS_PER_LAYER; i++) {
		const struct op_desc *op = &layer_ops[i];
		struct block cast = { 0 }, tmp[2];
		double flops = 0;

		if (op->weight >= 0) {
			alloc_block(s, &cast, wb[op->weight] / 2, COMPUTE_STREAM, true);
			launch(tr, K_CAST, 0, (double)wb[op->weight] * 1.5);
			flops = 2.0 * (double)tr->tokens * (double)wb[op->weight] / 4;
		}
		temporaries(tr, tmp, (layer * OPS_PER_LAYER + i) * 2);
		alloc_block(s, &ls->act[i], act_bytes(tr, op->out), COMPUTE_STREAM, true);
		if (op->stats)
			alloc_block(s, &ls->stats[i], round_up(tr->tokens * 4 * 2, 512),
			            COMPUTE_STREAM, true);
		if (op->kernel == K_FLASH_FWD)
			flops = 4.0 * (double)tr->tokens * 1024 * (double)tr->hidden;
		launch(tr, op->kernel, flops, 2.0 * (double)ls->act[i].bytes);
		free_temporaries(s, tmp);
		free_block(s, &cast);
		if (i > 0 && !layer_ops[i - 1].saved)
			free_block(s, &ls->act[i - 1]);
	}
}

/* Gradient of a weight: allocated when first produced in a step, freed by
 * zero_grad. */
static void weight_grad(struct train *tr, size_t wi)
{
	if (!tr->grads[wi].addr)
		alloc_block(tr->s, &tr->grads[wi], tr->weight_bytes[wi], COMPUTE_STREAM, true);
}

static void backward_layer(struct train *tr, size_t layer, struct block *grad_out)
{
	struct synth *s = tr->s;
	struct layer_state *ls = &tr->ls[layer];
	const struct block *input = layer ? &tr->ls[layer - 1].act[OPS_PER_LAYER - 1] : &tr->x0;

	for (size_t i = OPS_PER_LAYER; i-- > 0;) {
		const struct op_desc *op = &layer_ops[i];
		const struct block *in = i ? &ls->act[i - 1] : input;
		struct block grad_in, tmp[2];
		double flops = 0;

		temporaries(tr, tmp, (layer * OPS_PER_LAYER + i) * 2 + 1);
		alloc_block(s, &grad_in, in->bytes, COMPUTE_STREAM, true);
		if (op->weight >= 0) {
			size_t wi = layer_weight(layer, (unsigned)op->weight);
			flops = 2.0 * (double)tr->tokens * (double)tr->weight_bytes[wi] / 4;
			launch(tr, K_GEMM, flops, 0); /* grad of the input */
			weight_grad(tr, wi);
			weight_grad(tr, wi + 1);      /* its bias */
			launch(tr, K_GEMM, flops, 0); /* grad of the weight */
		} else {
			if (op->kernel == K_LAYER_NORM) {
				size_t wi = layer_weight(layer, i ? W_LN2_W : W_LN1_W);
				weight_grad(tr, wi);
				weight_grad(tr, wi + 1);
			}
			if (op->bwd_kernel == K_FLASH_BWD)
				flops = 10.0 * (double)tr->tokens * 1024 * (double)tr->hidden;
			launch(tr, op->bwd_kernel, flops, 3.0 * (double)in->bytes);
		}
		free_temporaries(s, tmp);
		free_block(s, grad_out);
		free_block(s, &ls->stats[i]);
		free_block(s, &ls->act[i]);
		*grad_out = grad_in;
	}
}

/* Allocates the weights, in module order: embedding, layers, final norm. */
static void init_weights(struct train *tr)
{
	size_t n = 0;

	tr->weight_bytes[n++] = tr->vocab * tr->hidden * 4;
	for (uint64_t l = 0; l < tr->layers; l++)
		for (unsigned k = 0; k < W_PER_LAYER; k++)
			tr->weight_bytes[n++] = (uint64_t)weight_rows[k] * weight_cols[k] *
			                        (weight_is_matrix[k] ? tr->hidden : 1) *
			                        tr->hidden * 4;
	tr->weight_bytes[n++] = tr->hidden * 4;
	tr->weight_bytes[n++] = tr->hidden * 4;
	for (size_t i = 0; i < tr->n_weights; i++)
		alloc_block(tr->s, &tr->weights[i], tr->weight_bytes[i], COMPUTE_STREAM, false);
}

static void emit_range(struct train *tr, uint32_t name, uint64_t start, uint64_t end,
                       uint32_t depth)
{
	struct mt_event ev = { .kind = MT_EVENT_RANGE, .ts = start };

	ev.range.end = end;
	ev.range.name = name;
	ev.range.thread = 1;
	ev.range.depth = depth;
	emit(tr->s, &ev);
}

static void optimizer_step(struct train *tr)
{
	struct synth *s = tr->s;
	struct block norms, total;
	size_t i, per_kernel = 48;

	/* clip_grad_norm_: per-tensor norms, then their total */
	alloc_block(s, &norms, round_up(tr->n_weights * 4, 512), COMPUTE_STREAM, true);
	launch(tr, K_NORM, 0, (double)tr->weight_bytes[0] * (double)tr->n_weights);
	alloc_block(s, &total, 512, COMPUTE_STREAM, true);
	launch(tr, K_NORM, 0, (double)tr->n_weights * 4);
	free_block(s, &norms);
	if (!tr->adam_ready) {
		for (i = 0; i < tr->n_weights; i++) {
			alloc_block(s, &tr->adam[2 * i], tr->weight_bytes[i], COMPUTE_STREAM,
			            false);
			alloc_block(s, &tr->adam[2 * i + 1], tr->weight_bytes[i], COMPUTE_STREAM,
			            false);
		}
		tr->adam_ready = true;
	}
	for (i = 0; i < tr->n_weights; i += per_kernel) {
		double bytes = 0;
		for (size_t j = i; j < i + per_kernel && j < tr->n_weights; j++)
			bytes += 4.0 * (double)tr->weight_bytes[j];
		launch(tr, K_ADAM, 0, bytes);
	}
	free_block(s, &total);
	for (i = 0; i < tr->n_weights; i++) /* zero_grad(set_to_none=True) */
		free_block(s, &tr->grads[i]);
}

static void train_step(struct train *tr, uint32_t range_names[4])
{
	struct synth *s = tr->s;
	struct block logits, grad_logits, loss, grad;
	struct mt_event copy = { .kind = MT_EVENT_MEMCPY };
	uint64_t t_step, t_fwd, t_bwd, t_opt;

	emit_sample(s);
	t_step = s->t + 1;
	/* the batch arrives on the copy stream */
	alloc_block(s, &tr->input, tr->tokens * 8, COPY_STREAM, true);
	alloc_block(s, &tr->labels, tr->tokens * 8, COPY_STREAM, true);
	if (!s->stop) {
		copy.ts = s->t + 2000;
		copy.copy.end = copy.ts + 1500 + tr->tokens * 16 / 25; /* ~25 GB/s */
		copy.copy.bytes = tr->tokens * 16;
		copy.copy.stream = COPY_STREAM;
		copy.copy.copy_kind = MT_COPY_HTOD;
		emit(s, &copy);
		s->t = copy.copy.end;
	}

	t_fwd = s->t + 1;
	alloc_block(s, &tr->x0, act_bytes(tr, 1), COMPUTE_STREAM, true);
	launch(tr, K_EMBEDDING, 0, (double)tr->x0.bytes * 2);
	for (size_t l = 0; l < tr->layers; l++)
		forward_layer(tr, l);
	alloc_block(s, &logits, tr->tokens * tr->vocab * 2, COMPUTE_STREAM, true);
	launch(tr, K_GEMM, 2.0 * (double)tr->tokens * (double)tr->weight_bytes[0] / 4, 0);
	alloc_block(s, &loss, 512, COMPUTE_STREAM, true);
	launch(tr, K_XENT, 0, (double)logits.bytes);

	t_bwd = s->t + 1;
	alloc_block(s, &grad_logits, logits.bytes, COMPUTE_STREAM, true);
	launch(tr, K_XENT_BWD, 0, 2.0 * (double)logits.bytes);
	free_block(s, &loss);
	free_block(s, &logits);
	alloc_block(s, &grad, act_bytes(tr, 1), COMPUTE_STREAM, true);
	weight_grad(tr, 0);
	launch(tr, K_GEMM, 4.0 * (double)tr->tokens * (double)tr->weight_bytes[0] / 4, 0);
	free_block(s, &grad_logits);
	for (size_t l = tr->layers; l-- > 0;)
		backward_layer(tr, l, &grad);
	launch(tr, K_EMBEDDING_BWD, 0, (double)tr->weight_bytes[0]);
	free_block(s, &grad);
	free_block(s, &tr->x0);
	free_block(s, &tr->labels);
	free_block(s, &tr->input);

	t_opt = s->t + 1;
	optimizer_step(tr);
	s->t += 1000;
	if (t_opt < s->t && !s->rc) {
		emit_range(tr, range_names[0], t_step, s->t, 0);
		emit_range(tr, range_names[1], t_fwd, t_bwd - 1, 1);
		emit_range(tr, range_names[2], t_bwd, t_opt - 1, 1);
		emit_range(tr, range_names[3], t_opt, s->t - 1, 1);
	}
}

static void synth_train(struct synth *s)
{
	static const uint64_t hiddens[] = { 768, 1024, 1536, 2048 };
	static const uint64_t tokens[] = { 2048, 4096, 8192 };
	static const char *const range_text[4] = { "step", "forward", "backward", "optimizer" };
	struct train tr = { .s = s };
	uint32_t range_names[4];

	tr.hidden = hiddens[mt_rng_below(&s->rng, 4)];
	tr.layers = 6 + mt_rng_below(&s->rng, 19);
	tr.tokens = tokens[mt_rng_below(&s->rng, 3)];
	tr.vocab = mt_rng_below(&s->rng, 2) ? 50304 : 32000;
	tr.n_weights = tr.layers * W_PER_LAYER + 3;
	tr.weight_bytes = calloc(tr.n_weights, sizeof(*tr.weight_bytes));
	tr.weights = calloc(tr.n_weights, sizeof(*tr.weights));
	tr.grads = calloc(tr.n_weights, sizeof(*tr.grads));
	tr.adam = calloc(2 * tr.n_weights, sizeof(*tr.adam));
	tr.ls = calloc(tr.layers, sizeof(*tr.ls));
	if (!tr.weight_bytes || !tr.weights || !tr.grads || !tr.adam || !tr.ls) {
		s->rc = -ENOMEM;
		goto out;
	}
	for (unsigned k = 0; k < K_COUNT && !s->rc; k++)
		s->rc = mt_writer_intern(s->w, kernel_names[k], &tr.names[k]);
	for (unsigned k = 0; k < 4 && !s->rc; k++)
		s->rc = mt_writer_intern(s->w, range_text[k], &range_names[k]);

	init_weights(&tr);
	while (!s->stop && !s->rc)
		train_step(&tr, range_names);
	emit_sample(s);
out:
	free(tr.weight_bytes);
	free(tr.weights);
	free(tr.grads);
	free(tr.adam);
	free(tr.ls);
}

/* ---- patterns random and small ---- */

struct live_set {
	struct block *b;
	size_t n, cap;
};

static struct block *live_push(struct synth *s, struct live_set *ls)
{
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? ls->cap * 2 : 64;
		struct block *b = reallocarray(ls->b, cap, sizeof(*b));
		if (!b) {
			s->rc = -ENOMEM;
			return NULL;
		}
		ls->b = b;
		ls->cap = cap;
	}
	return &ls->b[ls->n++];
}

/* Frees a random member of the set. */
static void live_free_random(struct synth *s, struct live_set *ls)
{
	size_t i = mt_rng_below(&s->rng, ls->n);

	free_block(s, &ls->b[i]);
	ls->b[i] = ls->b[--ls->n];
}

static uint64_t pick_stream(struct synth *s)
{
	return mt_rng_unit(&s->rng) < 0.1 ? COPY_STREAM : COMPUTE_STREAM;
}

static void allocate_into(struct synth *s, struct live_set *ls, uint64_t bytes)
{
	struct block *b = live_push(s, ls);

	if (!b)
		return;
	alloc_block(s, b, bytes, pick_stream(s), true);
	if (!b->addr)
		ls->n--;
}

static void synth_random(struct synth *s)
{
	const size_t target_live = 256;
	struct live_set live = { 0 };
	uint64_t n = 0;

	while (!s->stop && !s->rc) {
		bool grow = live.n < target_live ? mt_rng_unit(&s->rng) < 0.55
		                                 : mt_rng_unit(&s->rng) < 0.45;
		if (!live.n || grow)
			allocate_into(s, &live,
			              round_up(rng_log_uniform(&s->rng, 512, 256 * MiB), 512));
		else
			live_free_random(s, &live);
		s->t += mt_rng_below(&s->rng, 50000);
		if (++n % 4096 == 0)
			emit_sample(s);
	}
	while (live.n && !s->rc)
		live_free_random(s, &live);
	emit_sample(s);
	free(live.b);
}

/* A swarm allocates `left` small blocks, then frees them in random order. */
struct swarm {
	struct live_set live;
	uint64_t left;
};

static void swarm_start(struct synth *s, struct swarm *sw)
{
	sw->left = rng_log_uniform(&s->rng, 16, 1024);
}

/* Half of small requests are tensor-like (multiples of 512 B), half any
 * size from 4 B. */
static uint64_t small_size(struct synth *s)
{
	uint64_t b = rng_log_uniform(&s->rng, 4, MiB - 1);
	return mt_rng_below(&s->rng, 2) ? b : round_up(b, 512) - (b > MiB - 512 ? 512 : 0);
}

static void synth_small(struct synth *s)
{
	struct swarm swarms[4] = { 0 };
	struct live_set lasting = { 0 };
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < 4; i++)
		swarm_start(s, &swarms[i]);
	while (!s->stop && !s->rc) {
		struct swarm *sw = &swarms[mt_rng_below(&s->rng, 4)];
		if (mt_rng_unit(&s->rng) < 0.01) {
			if (lasting.n < 64)
				allocate_into(s, &lasting, small_size(s));
			else
				live_free_random(s, &lasting);
		} else if (sw->left) {
			sw->left--;
			allocate_into(s, &sw->live, small_size(s));
		} else if (sw->live.n)
			live_free_random(s, &sw->live);
		else
			swarm_start(s, sw);
		s->t += mt_rng_below(&s->rng, 5000);
		if (++n % 4096 == 0)
			emit_sample(s);
	}
	for (i = 0; i < 4; i++) {
		while (swarms[i].live.n && !s->rc)
			live_free_random(s, &swarms[i].live);
		free(swarms[i].live.b);
	}
	while (lasting.n && !s->rc)
		live_free_random(s, &lasting);
	emit_sample(s);
	free(lasting.b);
}

int mt_synth_write(struct mt_writer *w, unsigned pattern, uint64_t events, uint64_t seed)
{
	static const char *const commands[] = { "synthetic training loop", "synthetic random",
		                                "synthetic small" };
	struct synth s = { .w = w, .seed = seed, .target = events, .t = SYNTH_START_NS };

	if (!w || pattern > MT_SYNTH_SMALL || events > MT_SYNTH_MAX_EVENTS)
		return -EINVAL;
	mt_rng_seed(&s.rng, seed);
	s.am.next_va = 0x7f0000000000ull + mt_rng_below(&s.rng, 256) * 64 * GiB;
	s.segments = pattern == MT_SYNTH_TRAIN;
	add_rows(&s, commands[pattern]);
	if (!s.rc) {
		if (pattern == MT_SYNTH_TRAIN)
			synth_train(&s);
		else if (pattern == MT_SYNTH_RANDOM)
			synth_random(&s);
		else
			synth_small(&s);
	}
	addr_model_fini(&s.am);
	return s.rc;
}
