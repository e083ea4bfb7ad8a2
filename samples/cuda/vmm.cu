// vmm.cu — virtual memory management: cuMemCreate + cuMemMap.
// Reserves 4 granules of address space, creates 4 physical chunks of one
// granule each (the device's minimum granularity, 2 MiB on current GPUs),
// maps them one by one, writes through the mapping, then unmaps and releases.
// Expected: 4 VMM allocs (cuMemMap) and 4 frees (cuMemUnmap), granule bytes.
#include "sample.h"

int main(void)
{
	CUmemAllocationProp prop = {};
	CUmemAccessDesc access = {};
	CUmemGenericAllocationHandle h[4];
	CUdeviceptr base;
	size_t gran = 0;
	CUdevice dev;

	CHECK(cudaFree(0)); /* primary context */
	CHECK_CU(cuCtxGetDevice(&dev));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	CHECK_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CHECK_CU(cuMemAddressReserve(&base, 4 * gran, 0, 0, 0));
	access.location = prop.location;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	for (int i = 0; i < 4; i++) {
		CHECK_CU(cuMemCreate(&h[i], gran, &prop, 0));
		CHECK_CU(cuMemMap(base + i * gran, gran, 0, h[i], 0));
		CHECK_CU(cuMemSetAccess(base + i * gran, gran, &access, 1));
	}
	sample_fill<<<64, 256>>>((char *)base, 4 * gran, 7);
	CHECK(cudaDeviceSynchronize());
	for (int i = 0; i < 4; i++) {
		CHECK_CU(cuMemUnmap(base + i * gran, gran));
		CHECK_CU(cuMemRelease(h[i]));
	}
	CHECK_CU(cuMemAddressFree(base, 4 * gran));
	printf("vmm: 4 x %zu bytes\n", gran);
	return 0;
}
