#include "config.h"

/* event-names.c — stable names of the event model's enums (docs/FORMAT.md uses
 * the same names; the CLI prints and parses them). */

#include <string.h>

#include "memtrace-format.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const kind_names[MT_EVENT_KIND_MAX + 1] = {
	[MT_EVENT_ALLOC] = "alloc",
	[MT_EVENT_FREE] = "free",
	[MT_EVENT_ALLOC_FAILED] = "alloc_failed",
	[MT_EVENT_KERNEL] = "kernel",
	[MT_EVENT_MEMCPY] = "memcpy",
	[MT_EVENT_MEMSET] = "memset",
	[MT_EVENT_RANGE] = "range",
	[MT_EVENT_SAMPLE] = "sample",
	[MT_EVENT_POOL] = "pool",
};

static const char *const layer_names[] = {
	[MT_LAYER_DRIVER] = "driver",
	[MT_LAYER_REQUEST] = "request",
};

static const char *const mem_kind_names[] = {
	[MT_MEM_DEVICE] = "device",   [MT_MEM_ASYNC_POOL] = "async_pool",   [MT_MEM_VMM] = "vmm",
	[MT_MEM_MANAGED] = "managed", [MT_MEM_PINNED_HOST] = "pinned_host",
};

static const char *const api_names[MT_API_MAX + 1] = {
	[MT_API_UNKNOWN] = "unknown",
	[MT_API_CUDA_MALLOC] = "cudaMalloc",
	[MT_API_CUDA_MALLOC_ASYNC] = "cudaMallocAsync",
	[MT_API_CUDA_MALLOC_MANAGED] = "cudaMallocManaged",
	[MT_API_CUDA_HOST_ALLOC] = "cudaHostAlloc",
	[MT_API_CU_MEM_ALLOC] = "cuMemAlloc",
	[MT_API_CU_MEM_ALLOC_ASYNC] = "cuMemAllocAsync",
	[MT_API_CU_MEM_CREATE] = "cuMemCreate",
	[MT_API_CU_MEM_ALLOC_MANAGED] = "cuMemAllocManaged",
	[MT_API_CU_MEM_HOST_ALLOC] = "cuMemHostAlloc",
	[MT_API_TORCH] = "torch",
	[MT_API_JAX] = "jax",
	[MT_API_SYNTH] = "synth",
	[MT_API_IMPORT] = "import",
};

/* names[value], or fallback when value is out of range or unnamed. */
static const char *lookup(const char *const *names, size_t n, unsigned value, const char *fallback)
{
	if (value >= n || !names[value])
		return fallback;
	return names[value];
}

const char *mt_event_kind_name(unsigned kind)
{
	return lookup(kind_names, COUNT(kind_names), kind, NULL);
}

unsigned mt_event_kind_from_name(const char *name)
{
	if (!name)
		return 0;
	for (unsigned k = 1; k <= MT_EVENT_KIND_MAX; k++)
		if (strcmp(kind_names[k], name) == 0)
			return k;
	return 0;
}

const char *mt_layer_name(unsigned layer)
{
	return lookup(layer_names, COUNT(layer_names), layer, "unknown");
}

const char *mt_mem_kind_name(unsigned mem_kind)
{
	return lookup(mem_kind_names, COUNT(mem_kind_names), mem_kind, "unknown");
}

const char *mt_api_name(unsigned api)
{
	return lookup(api_names, COUNT(api_names), api, "unknown");
}
