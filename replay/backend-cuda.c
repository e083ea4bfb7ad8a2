/* backend-cuda.c — real device memory from the CUDA driver.
 *
 * Models nothing: it is the driver. libcuda.so.1 is loaded with dlopen, so
 * memtrace runs (and reports -ENODEV with a clear message) where no driver
 * or GPU exists; nothing links libcuda or libcudart. The few driver types
 * and enum values used are declared here from the CUDA driver API
 * reference (cuda.h, CUDA 12.2+ ABI: CUmemPoolProps.maxSize).
 *
 * Plain memory: cuMemAlloc/cuMemFree. VMM: cuMemAddressReserve, cuMemCreate
 * (pinned device memory), cuMemMap + cuMemSetAccess (read/write),
 * cuMemUnmap, cuMemRelease, cuMemAddressFree, granularity from
 * cuMemGetAllocationGranularity. Pool: one cuMemPoolCreate'd pool on the
 * device with release threshold = capacity and maxSize = capacity, served
 * with cuMemAllocFromPoolAsync/cuMemFreeAsync on one real stream per
 * recorded stream id (cuStreamCreate, non-blocking); its reserved bytes are
 * read from CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT after every call. The
 * primary context is retained for the backend's lifetime.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend-private.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUmemoryPool;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUhandle;

struct cu_location {
	int type; /* CU_MEM_LOCATION_TYPE_DEVICE = 1 */
	int id;
};

struct cu_alloc_prop {
	int type;         /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
	int handle_types; /* CU_MEM_HANDLE_TYPE_NONE = 0 */
	struct cu_location location;
	void *win32;
	unsigned char compression, rdma;
	unsigned short usage;
	unsigned char reserved[4];
};

struct cu_pool_props {
	int alloc_type;
	int handle_types;
	struct cu_location location;
	void *win32;
	size_t max_size;
	unsigned short usage;
	unsigned char reserved[54];
};

struct cu_access_desc {
	struct cu_location location;
	int flags; /* CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3 */
};

enum {
	CU_OUT_OF_MEMORY = 2,
	CU_LOCATION_DEVICE = 1,
	CU_ALLOCATION_PINNED = 1,
	CU_ACCESS_READWRITE = 3,
	CU_GRANULARITY_MINIMUM = 0,
	CU_POOL_RELEASE_THRESHOLD = 4,
	CU_POOL_RESERVED_MEM_CURRENT = 5,
	CU_STREAM_NON_BLOCKING = 1,
};

/* The driver entry points, resolved by name. */
#define CU_FUNCTIONS(X)                                                                            \
	X(cuInit, (unsigned))                                                                      \
	X(cuGetErrorString, (CUresult, const char **))                                             \
	X(cuDeviceGetCount, (int *))                                                               \
	X(cuDeviceGet, (CUdevice *, int))                                                          \
	X(cuDeviceTotalMem_v2, (size_t *, CUdevice))                                               \
	X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                                       \
	X(cuDevicePrimaryCtxRelease_v2, (CUdevice))                                                \
	X(cuCtxSetCurrent, (CUcontext))                                                            \
	X(cuCtxSynchronize, (void))                                                                \
	X(cuMemGetInfo_v2, (size_t *, size_t *))                                                   \
	X(cuMemAlloc_v2, (CUdeviceptr *, size_t))                                                  \
	X(cuMemFree_v2, (CUdeviceptr))                                                             \
	X(cuMemAddressReserve, (CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long))   \
	X(cuMemAddressFree, (CUdeviceptr, size_t))                                                 \
	X(cuMemCreate, (CUhandle *, size_t, const struct cu_alloc_prop *, unsigned long long))     \
	X(cuMemRelease, (CUhandle))                                                                \
	X(cuMemMap, (CUdeviceptr, size_t, size_t, CUhandle, unsigned long long))                   \
	X(cuMemSetAccess, (CUdeviceptr, size_t, const struct cu_access_desc *, size_t))            \
	X(cuMemUnmap, (CUdeviceptr, size_t))                                                       \
	X(cuMemGetAllocationGranularity, (size_t *, const struct cu_alloc_prop *, int))            \
	X(cuMemPoolCreate, (CUmemoryPool *, const struct cu_pool_props *))                         \
	X(cuMemPoolDestroy, (CUmemoryPool))                                                        \
	X(cuMemPoolSetAttribute, (CUmemoryPool, int, void *))                                      \
	X(cuMemPoolGetAttribute, (CUmemoryPool, int, void *))                                      \
	X(cuMemPoolTrimTo, (CUmemoryPool, size_t))                                                 \
	X(cuMemAllocFromPoolAsync, (CUdeviceptr *, size_t, CUmemoryPool, CUstream))                \
	X(cuMemFreeAsync, (CUdeviceptr, CUstream))                                                 \
	X(cuStreamCreate, (CUstream *, unsigned))                                                  \
	X(cuStreamDestroy_v2, (CUstream))

struct cuda {
	void *lib;
#define DECLARE(name, args) CUresult(*name) args;
	CU_FUNCTIONS(DECLARE)
#undef DECLARE
	CUdevice device;
	CUcontext context;
	struct cu_alloc_prop prop;
	CUmemoryPool pool;
	struct rp_addrmap streams;   /* recorded stream id + 1 -> CUstream */
	struct rp_addrmap pool_live; /* address -> stream id + 1 */
};

static int cu_fail(struct mt_backend *b, CUresult r, const char *call)
{
	struct cuda *c = b->priv;
	const char *what = NULL;
	if (c->cuGetErrorString)
		c->cuGetErrorString(r, &what);
	return rp_backend_fail(b, r == CU_OUT_OF_MEMORY ? -ENOMEM : -EIO, "%s failed: %s (%d)",
	                       call, what ? what : "unknown error", r);
}

#define CU_CALL(b, call, args)                                                                     \
	do {                                                                                       \
		CUresult r_ = ((struct cuda *)(b)->priv)->call args;                               \
		if (r_)                                                                            \
			return cu_fail(b, r_, #call);                                              \
	} while (0)

static int cuda_alloc(struct mt_backend *b, uint64_t bytes, uint64_t *address)
{
	CUdeviceptr p;
	CU_CALL(b, cuMemAlloc_v2, (&p, bytes));
	*address = p;
	return 0;
}

static int cuda_free(struct mt_backend *b, uint64_t address)
{
	CU_CALL(b, cuMemFree_v2, (address));
	return 0;
}

static int cuda_va_reserve(struct mt_backend *b, uint64_t bytes, uint64_t *va)
{
	CUdeviceptr p;
	CU_CALL(b, cuMemAddressReserve, (&p, bytes, 0, 0, 0));
	*va = p;
	return 0;
}

static int cuda_va_free(struct mt_backend *b, uint64_t va, uint64_t bytes)
{
	CU_CALL(b, cuMemAddressFree, (va, bytes));
	return 0;
}

static int cuda_mem_create(struct mt_backend *b, uint64_t bytes, uint64_t *handle)
{
	struct cuda *c = b->priv;
	CUhandle h;
	CU_CALL(b, cuMemCreate, (&h, bytes, &c->prop, 0));
	*handle = h;
	return 0;
}

static int cuda_mem_release(struct mt_backend *b, uint64_t handle)
{
	CU_CALL(b, cuMemRelease, (handle));
	return 0;
}

static int cuda_map(struct mt_backend *b, uint64_t va, uint64_t bytes, uint64_t handle)
{
	struct cuda *c = b->priv;
	struct cu_access_desc access = { c->prop.location, CU_ACCESS_READWRITE };
	CU_CALL(b, cuMemMap, (va, bytes, 0, handle, 0));
	CUresult r = c->cuMemSetAccess(va, bytes, &access, 1);
	if (r) {
		c->cuMemUnmap(va, bytes);
		return cu_fail(b, r, "cuMemSetAccess");
	}
	return 0;
}

static int cuda_unmap(struct mt_backend *b, uint64_t va, uint64_t bytes)
{
	CU_CALL(b, cuMemUnmap, (va, bytes));
	return 0;
}

/* The real stream standing for recorded stream id `stream`. */
static int get_stream(struct mt_backend *b, uint64_t stream, CUstream *out)
{
	struct cuda *c = b->priv;
	uint64_t v;
	if (rp_addrmap_get(&c->streams, stream + 1, &v)) {
		*out = (CUstream)(uintptr_t)v;
		return 0;
	}
	CU_CALL(b, cuStreamCreate, (out, CU_STREAM_NON_BLOCKING));
	if (rp_addrmap_put(&c->streams, stream + 1, (uint64_t)(uintptr_t)*out) < 0) {
		c->cuStreamDestroy_v2(*out);
		return rp_backend_fail(b, -ENOMEM, "out of host memory");
	}
	return 0;
}

static int read_pool_reserved(struct mt_backend *b)
{
	struct cuda *c = b->priv;
	uint64_t v = 0;
	CU_CALL(b, cuMemPoolGetAttribute, (c->pool, CU_POOL_RESERVED_MEM_CURRENT, &v));
	b->pool_reserved = v;
	return 0;
}

static int cuda_pool_free(struct mt_backend *b, uint64_t address, uint64_t stream);

static int cuda_pool_alloc(struct mt_backend *b, uint64_t bytes, uint64_t stream, uint64_t *address,
                           unsigned *grew)
{
	struct cuda *c = b->priv;
	CUstream s;
	CUdeviceptr p;
	uint64_t before = b->pool_reserved;
	int rc = get_stream(b, stream, &s);
	if (rc < 0)
		return rc;
	CU_CALL(b, cuMemAllocFromPoolAsync, (&p, bytes, c->pool, s));
	if (rp_addrmap_put(&c->pool_live, p, stream + 1) < 0) {
		c->cuMemFreeAsync(p, s);
		return rp_backend_fail(b, -ENOMEM, "out of host memory");
	}
	if ((rc = read_pool_reserved(b)) < 0)
		return rc;
	*grew = b->pool_reserved > before;
	if (b->pool_reserved + b->held > b->capacity) {
		/* maxSize bounds the pool; plain and VMM memory held besides it
		 * can still push the total over: undo and report OOM. */
		cuda_pool_free(b, p, stream);
		c->cuCtxSynchronize();
		c->cuMemPoolTrimTo(c->pool, b->capacity > b->held ? b->capacity - b->held : 0);
		read_pool_reserved(b);
		return rp_backend_fail(b, -ENOMEM, "pool growth exceeds the capacity");
	}
	*address = p;
	return 0;
}

static int cuda_pool_free(struct mt_backend *b, uint64_t address, uint64_t stream)
{
	struct cuda *c = b->priv;
	CUstream s;
	if (!rp_addrmap_remove(&c->pool_live, address, NULL))
		return rp_backend_fail(b, -EINVAL, "pool free of 0x%llx, which is not allocated",
		                       (unsigned long long)address);
	int rc = get_stream(b, stream, &s);
	if (rc < 0)
		return rc;
	CU_CALL(b, cuMemFreeAsync, (address, s));
	return read_pool_reserved(b);
}

static int cuda_pool_trim(struct mt_backend *b, uint64_t keep_bytes, unsigned *released)
{
	struct cuda *c = b->priv;
	uint64_t before = b->pool_reserved;
	CU_CALL(b, cuCtxSynchronize, ());
	CU_CALL(b, cuMemPoolTrimTo, (c->pool, keep_bytes));
	int rc = read_pool_reserved(b);
	*released = b->pool_reserved < before;
	return rc;
}

static void cuda_destroy(struct mt_backend *b)
{
	struct cuda *c = b->priv;
	const struct rp_addrmap_slot *s;
	size_t i;
	if (c->context) {
		for (i = 0; rp_addrmap_next(&c->pool_live, &i, &s);) {
			uint64_t v = 0;
			rp_addrmap_get(&c->streams, s->value, &v);
			c->cuMemFreeAsync(s->key, (CUstream)(uintptr_t)v);
		}
		c->cuCtxSynchronize();
		if (c->pool) {
			c->cuMemPoolTrimTo(c->pool, 0);
			c->cuMemPoolDestroy(c->pool);
		}
		for (i = 0; rp_addrmap_next(&c->streams, &i, &s);)
			c->cuStreamDestroy_v2((CUstream)(uintptr_t)s->value);
		c->cuDevicePrimaryCtxRelease_v2(c->device);
	}
	b->pool_reserved = 0;
	rp_addrmap_release(&c->streams);
	rp_addrmap_release(&c->pool_live);
	if (c->lib)
		dlclose(c->lib);
	free(c);
}

static int cuda_mem_info(struct mt_backend *b, uint64_t *free_bytes, uint64_t *total_bytes)
{
	size_t f = 0, t = 0;
	CU_CALL(b, cuMemGetInfo_v2, (&f, &t));
	*free_bytes = f;
	*total_bytes = t;
	return 0;
}

static const struct rp_backend_impl cuda_impl = {
	.kind = MT_BACKEND_CUDA,
	.name = "cuda",
	.alloc = cuda_alloc,
	.free = cuda_free,
	.va_reserve = cuda_va_reserve,
	.va_free = cuda_va_free,
	.mem_create = cuda_mem_create,
	.mem_release = cuda_mem_release,
	.map = cuda_map,
	.unmap = cuda_unmap,
	.pool_alloc = cuda_pool_alloc,
	.pool_free = cuda_pool_free,
	.pool_trim = cuda_pool_trim,
	.mem_info = cuda_mem_info,
	.destroy = cuda_destroy,
};

static int load(struct mt_backend *b, struct cuda *c)
{
	c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!c->lib)
		return rp_backend_fail(
		        b, -ENODEV, "no NVIDIA driver: cannot load libcuda.so.1 (%s)", dlerror());
#define RESOLVE(name, args)                                                                        \
	*(void **)&c->name = dlsym(c->lib, #name);                                                 \
	if (!c->name)                                                                              \
		return rp_backend_fail(b, -ENODEV, "libcuda.so.1 lacks %s (driver too old)", #name);
	CU_FUNCTIONS(RESOLVE)
#undef RESOLVE
	return 0;
}

static int open_device(struct mt_backend *b, struct cuda *c, unsigned ordinal)
{
	int count = 0;
	CUresult r = c->cuInit(0);
	if (!r)
		r = c->cuDeviceGetCount(&count);
	if (r || count == 0)
		return rp_backend_fail(b, -ENODEV, "no CUDA GPU available (cuInit: %d)", r);
	if (ordinal >= (unsigned)count)
		return rp_backend_fail(b, -ENODEV, "no CUDA device %u (%d present)", ordinal,
		                       count);
	CU_CALL(b, cuDeviceGet, (&c->device, (int)ordinal));
	CU_CALL(b, cuDevicePrimaryCtxRetain, (&c->context, c->device));
	CU_CALL(b, cuCtxSetCurrent, (c->context));
	return 0;
}

static int create_pool(struct mt_backend *b, struct cuda *c)
{
	struct cu_pool_props props;
	memset(&props, 0, sizeof(props));
	props.alloc_type = CU_ALLOCATION_PINNED;
	props.location = c->prop.location;
	props.max_size = b->capacity / b->granularity * b->granularity;
	CU_CALL(b, cuMemPoolCreate, (&c->pool, &props));
	uint64_t threshold = b->capacity;
	CU_CALL(b, cuMemPoolSetAttribute, (c->pool, CU_POOL_RELEASE_THRESHOLD, &threshold));
	return 0;
}

int rp_backend_cuda_init(struct mt_backend *b, unsigned ordinal)
{
	struct cuda *c = calloc(1, sizeof(*c));
	if (!c)
		return rp_backend_fail(b, -ENOMEM, "out of memory");
	b->impl = &cuda_impl;
	b->priv = c;
	int rc = load(b, c);
	if (rc == 0)
		rc = open_device(b, c, ordinal);
	if (rc < 0)
		goto fail;
	c->prop.type = CU_ALLOCATION_PINNED;
	c->prop.location = (struct cu_location){ CU_LOCATION_DEVICE, (int)ordinal };
	size_t gran = 0, total = 0;
	CUresult r = c->cuMemGetAllocationGranularity(&gran, &c->prop, CU_GRANULARITY_MINIMUM);
	if (!r)
		r = c->cuDeviceTotalMem_v2(&total, c->device);
	if (r) {
		rc = cu_fail(b, r, "device query");
		goto fail;
	}
	b->granularity = gran;
	if (!b->capacity || b->capacity > total)
		b->capacity = total;
	if ((rc = create_pool(b, c)) < 0)
		goto fail;
	return 0;
fail:
	cuda_destroy(b);
	b->priv = NULL;
	return rc;
}
