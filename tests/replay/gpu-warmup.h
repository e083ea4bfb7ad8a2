/* gpu-warmup.h — the first use of streams, pools and VMM in a process makes
 * the driver set aside device memory of its own (2 MiB on an H100 with
 * driver 580) that stays with the context until the process ends. A check
 * that replays leave the GPU as found measures free memory after one such
 * warm-up, and reports the warm-up's own cost separately. */
#ifndef MEMTRACE_TESTS_GPU_WARMUP_H
#define MEMTRACE_TESTS_GPU_WARMUP_H

#include "memtrace-replay.h"

/* Every backend operation once, everything released. Returns 0 or a
 * negative errno. */
static inline int gpu_warmup(void)
{
	struct mt_backend *b = NULL;
	char err[256];
	uint64_t a, va, h, p1, p2;
	int rc = mt_backend_create(&b, MT_BACKEND_CUDA, 0, 0, err, sizeof(err));
	if (rc < 0)
		return rc;
	uint64_t g = mt_backend_granularity(b);
	if (!(rc = mt_backend_alloc(b, g, &a)))
		rc = mt_backend_free(b, a);
	if (!rc && !(rc = mt_backend_va_reserve(b, g, &va)) &&
	    !(rc = mt_backend_mem_create(b, g, &h)) && !(rc = mt_backend_map(b, va, g, h)))
		rc = mt_backend_unmap(b, va, g);
	if (!rc && !(rc = mt_backend_pool_alloc(b, g, 1, &p1)) &&
	    !(rc = mt_backend_pool_alloc(b, g, 2, &p2)) && !(rc = mt_backend_pool_free(b, p1, 1)) &&
	    !(rc = mt_backend_pool_free(b, p2, 2)))
		rc = mt_backend_pool_trim(b, 0);
	mt_backend_destroy(b);
	return rc;
}

#endif
