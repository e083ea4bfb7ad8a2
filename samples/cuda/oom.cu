// oom.cu — a deliberate out-of-memory.
// Allocates 1 MiB, then asks cudaMalloc for twice the device's total memory
// (fails with cudaErrorMemoryAllocation), then cuMemAlloc for the same
// (fails with CUDA_ERROR_OUT_OF_MEMORY), frees the 1 MiB and exits 0.
// Expected: 1 alloc, 1 free, 2 alloc_failed (runtime, then driver API) with
// the requested size and the free memory at that moment.
#include "sample.h"

int main(void)
{
	size_t free_b, total;
	void *p, *q = NULL;
	CUdeviceptr d = 0;

	CHECK(cudaMalloc(&p, 1 << 20));
	CHECK(cudaMemGetInfo(&free_b, &total));
	if (cudaMalloc(&q, 2 * total) == cudaSuccess) {
		fprintf(stderr, "oom: allocating %zu bytes succeeded\n", 2 * total);
		return 1;
	}
	cudaGetLastError();
	if (cuMemAlloc(&d, 2 * total) == CUDA_SUCCESS) {
		fprintf(stderr, "oom: cuMemAlloc of %zu bytes succeeded\n", 2 * total);
		return 1;
	}
	CHECK(cudaFree(p));
	printf("oom: requested %zu bytes twice; free was %zu\n", 2 * total, free_b);
	return 0;
}
