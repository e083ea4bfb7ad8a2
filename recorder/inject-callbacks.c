/* inject-callbacks.c — CUPTI callbacks on the allocation APIs.
 *
 * Models: CUPTI's callback API (cupti_callbacks.h) on the runtime and
 * driver domains. Three jobs: (1) a failed allocation becomes an
 * alloc_failed event with the requested size, the API, the error and the
 * free device memory queried right after the failing call returned (outside
 * the failing call, on the same thread; cuMemGetInfo is not subscribed, so
 * nothing re-enters us), followed by a reading of the device memory in use
 * (rec_sample_failure); (2) each correlation id is mapped to the API that
 * made it, so MEMORY2 records say cudaMalloc or cuMemAlloc; (3) VMM mappings
 * (cuMemMap/cuMemUnmap) become alloc/free events, since CUPTI's memory
 * records see only the physical handle; (4) with --stacks, the call site of
 * each allocation call is taken at its entry and kept by correlation id for
 * the MEMORY2 record that arrives later; (5) any allocation or free call
 * notes that memory changed hands, which makes the next periodic flush a
 * forced one (rec_callbacks_memory_changed); (6) with --kernels launch,
 * the driver's launch calls go to inject-launches.c. A driver call made inside a
 * runtime call is attributed to the runtime call (API and site) and its
 * failure recorded once.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cupti.h>

#include "inject-private.h"

#define CORRELATION_SLOTS 65536

/* corr << 8 | api, and corr << 32 | site, indexed by corr % CORRELATION_SLOTS. */
static _Atomic uint64_t correlation_api[CORRELATION_SLOTS];
static _Atomic uint64_t correlation_site[CORRELATION_SLOTS];

static __thread unsigned runtime_api;  /* API of the runtime call in progress, 0 = none */
static __thread uint32_t runtime_site; /* its call site */
static __thread int querying;          /* inside our own cuMemGetInfo */

static atomic_bool memory_changed;

bool rec_callbacks_memory_changed(void)
{
	return atomic_exchange_explicit(&memory_changed, false, memory_order_relaxed);
}

static CUpti_SubscriberHandle subscriber;

struct api_entry {
	CUpti_CallbackDomain domain;
	CUpti_CallbackId cbid;
	unsigned api;
};

static const struct api_entry apis[] = {
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
	  MT_API_CUDA_MALLOC },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
	  MT_API_CUDA_MALLOC },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
	  MT_API_CUDA_MALLOC_ASYNC },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
	  MT_API_CUDA_MALLOC_ASYNC },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
	  MT_API_CUDA_MALLOC_ASYNC },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
	  MT_API_CUDA_MALLOC_ASYNC },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
	  MT_API_CUDA_MALLOC_MANAGED },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
	  MT_API_CUDA_HOST_ALLOC },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
	  MT_API_CUDA_HOST_ALLOC },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, MT_API_CU_MEM_ALLOC },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
	  MT_API_CU_MEM_ALLOC },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
	  MT_API_CU_MEM_ALLOC_ASYNC },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
	  MT_API_CU_MEM_ALLOC_ASYNC },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
	  MT_API_CU_MEM_ALLOC_ASYNC },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
	  MT_API_CU_MEM_ALLOC_ASYNC },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
	  MT_API_CU_MEM_ALLOC_MANAGED },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2,
	  MT_API_CU_MEM_HOST_ALLOC },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, MT_API_CU_MEM_CREATE },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemMap, MT_API_CU_MEM_CREATE },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, MT_API_CU_MEM_CREATE },
	/* frees: api 0, subscribed only for job (5) */
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, 0 },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, 0 },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, 0 },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020, 0 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, 0 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, 0 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, 0 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, 0 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemRelease, 0 },
};

static unsigned api_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++)
		if (apis[i].domain == domain && apis[i].cbid == cbid)
			return apis[i].api;
	return 0;
}

unsigned rec_callbacks_api_for(uint32_t correlation)
{
	uint64_t v = atomic_load_explicit(&correlation_api[correlation % CORRELATION_SLOTS],
	                                  memory_order_relaxed);
	return (v >> 8) == correlation ? (unsigned)(v & 0xff) : 0;
}

uint32_t rec_callbacks_site_for(uint32_t correlation)
{
	uint64_t v = atomic_load_explicit(&correlation_site[correlation % CORRELATION_SLOTS],
	                                  memory_order_relaxed);
	return (v >> 32) == correlation ? (uint32_t)v : 0;
}

static void remember(uint32_t correlation, unsigned api, uint32_t site)
{
	atomic_store_explicit(&correlation_api[correlation % CORRELATION_SLOTS],
	                      (uint64_t)correlation << 8 | api, memory_order_relaxed);
	atomic_store_explicit(&correlation_site[correlation % CORRELATION_SLOTS],
	                      (uint64_t)correlation << 32 | site, memory_order_relaxed);
}

static uint32_t device_of(CUcontext ctx)
{
	uint32_t dev = 0;

	if (ctx)
		cuptiGetDeviceId(ctx, &dev);
	return dev;
}

/* Requested size and stream of an allocation call from its parameters. */
static void request_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *params,
                       uint64_t *bytes, uint64_t *stream)
{
	*bytes = 0;
	*stream = 0;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		switch (cbid) {
		case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
			*bytes = ((const cudaMalloc_v3020_params *)params)->size;
			break;
		case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
			const cudaMallocPitch_v3020_params *p = params;
			*bytes = (uint64_t)p->width * p->height;
			break;
		}
		case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
		case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
			const cudaMallocAsync_v11020_params *p = params;
			*bytes = p->size;
			*stream = rec_device_stream_id((uint64_t)(uintptr_t)p->hStream);
			break;
		}
		case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
		case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020: {
			const cudaMallocFromPoolAsync_v11020_params *p = params;
			*bytes = p->size;
			*stream = rec_device_stream_id((uint64_t)(uintptr_t)p->stream);
			break;
		}
		case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000:
			*bytes = ((const cudaMallocManaged_v6000_params *)params)->size;
			break;
		case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020:
			*bytes = ((const cudaMallocHost_v3020_params *)params)->size;
			break;
		case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020:
			*bytes = ((const cudaHostAlloc_v3020_params *)params)->size;
			break;
		}
		return;
	}
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
		*bytes = ((const cuMemAlloc_v2_params *)params)->bytesize;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
		const cuMemAllocPitch_v2_params *p = params;
		*bytes = (uint64_t)p->WidthInBytes * p->Height;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
		const cuMemAllocAsync_params *p = params;
		*bytes = p->bytesize;
		*stream = rec_device_stream_id((uint64_t)(uintptr_t)p->hStream);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
		const cuMemAllocFromPoolAsync_params *p = params;
		*bytes = p->bytesize;
		*stream = rec_device_stream_id((uint64_t)(uintptr_t)p->hStream);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
		*bytes = ((const cuMemAllocManaged_params *)params)->bytesize;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2:
		*bytes = ((const cuMemHostAlloc_params *)params)->bytesize;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
		*bytes = ((const cuMemCreate_params *)params)->size;
		break;
	}
}

static void failed(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *cb,
                   unsigned api, uint32_t error, uint32_t site)
{
	struct mt_event ev = { 0 };

	ev.kind = MT_EVENT_ALLOC_FAILED;
	ev.ts = rec_now();
	ev.device = device_of(cb->context);
	request_of(domain, cbid, cb->functionParams, &ev.failed.bytes, &ev.failed.stream);
	ev.failed.error = error;
	ev.failed.layer = MT_LAYER_DRIVER;
	ev.failed.api = (uint8_t)api;
	ev.failed.site = site;
	querying = 1;
	ev.failed.free_bytes = rec_device_free_bytes();
	querying = 0;
	rec_sink_push(&ev);
	rec_sample_failure(ev.device);
}

static void vmm(CUpti_CallbackId cbid, const CUpti_CallbackData *cb, uint32_t site)
{
	struct mt_event ev = { 0 };

	ev.ts = rec_now();
	ev.device = device_of(cb->context);
	ev.alloc.layer = MT_LAYER_DRIVER;
	ev.alloc.mem_kind = MT_MEM_VMM;
	ev.alloc.api = MT_API_CU_MEM_CREATE;
	ev.alloc.correlation = cb->correlationId;
	ev.alloc.site = site;
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemMap) {
		const cuMemMap_params *p = cb->functionParams;
		ev.kind = MT_EVENT_ALLOC;
		ev.alloc.address = p->ptr;
		ev.alloc.bytes = p->size;
	} else {
		const cuMemUnmap_params *p = cb->functionParams;
		ev.kind = MT_EVENT_FREE;
		ev.alloc.address = p->ptr;
		ev.alloc.bytes = p->size;
	}
	rec_sink_push(&ev);
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
	const CUpti_CallbackData *cb = data;
	uint32_t site;
	unsigned api;

	(void)userdata;
	if (querying || !atomic_load_explicit(&rec_state.enabled, memory_order_relaxed))
		return;
	if (rec_state.kernels == MT_RECORD_KERNELS_LAUNCH && domain == CUPTI_CB_DOMAIN_DRIVER_API &&
	    rec_launches_is_launch(cbid)) {
		rec_launches_on_callback(cbid, cb);
		return;
	}
	if (cb->callbackSite == CUPTI_API_EXIT)
		atomic_store_explicit(&memory_changed, true, memory_order_relaxed);
	api = api_of(domain, cbid);
	if (!api)
		return;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		if (cb->callbackSite == CUPTI_API_ENTER) {
			runtime_api = api;
			runtime_site = rec_stacks_site();
			remember(cb->correlationId, api, runtime_site);
			return;
		}
		site = runtime_site;
		runtime_api = 0;
		runtime_site = 0;
		if (cb->functionReturnValue && *(const int *)cb->functionReturnValue != 0)
			failed(domain, cbid, cb, api,
			       (uint32_t) * (const int *)cb->functionReturnValue, site);
		return;
	}
	/* driver API; its site is taken at entry, or comes from the runtime
	 * call it runs in */
	if (cb->callbackSite == CUPTI_API_ENTER) {
		site = runtime_api ? runtime_site : rec_stacks_site();
		remember(cb->correlationId, runtime_api ? runtime_api : api, site);
		if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemUnmap)
			vmm(cbid, cb, 0);
		return;
	}
	site = rec_callbacks_site_for(cb->correlationId);
	if (cb->functionReturnValue && *(const int *)cb->functionReturnValue != 0) {
		if (!runtime_api && cbid != CUPTI_DRIVER_TRACE_CBID_cuMemMap &&
		    cbid != CUPTI_DRIVER_TRACE_CBID_cuMemUnmap)
			failed(domain, cbid, cb, api,
			       (uint32_t) * (const int *)cb->functionReturnValue, site);
		return;
	}
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemMap)
		vmm(cbid, cb, site);
}

int rec_callbacks_start(void)
{
	CUptiResult rc = cuptiSubscribe(&subscriber, on_callback, NULL);

	for (size_t i = 0; rc == CUPTI_SUCCESS && i < sizeof(apis) / sizeof(apis[0]); i++)
		rc = cuptiEnableCallback(1, subscriber, apis[i].domain, apis[i].cbid);
	if (rec_state.kernels == MT_RECORD_KERNELS_LAUNCH) {
		const uint32_t *ids;
		size_t n = rec_launches_ids(&ids);
		for (size_t i = 0; rc == CUPTI_SUCCESS && i < n; i++)
			rc = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, ids[i]);
	}
	return (int)rc;
}
