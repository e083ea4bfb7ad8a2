// managed.cu — managed and pinned host memory.
// Allocates 16 MiB managed, 1 MiB + 3 managed, 4 MiB pinned host
// (cudaMallocHost) and 2 MiB pinned (cudaHostAlloc), touches the managed
// memory from a kernel, frees all. Expected: 2 managed, 2 pinned allocs
// and frees of exactly these sizes.
#include "sample.h"

int main(void)
{
	void *m1, *m2, *h1, *h2;

	CHECK(cudaMallocManaged(&m1, 16 << 20, cudaMemAttachGlobal));
	CHECK(cudaMallocManaged(&m2, (1 << 20) + 3, cudaMemAttachGlobal));
	CHECK(cudaMallocHost(&h1, 4 << 20));
	CHECK(cudaHostAlloc(&h2, 2 << 20, cudaHostAllocDefault));
	sample_fill<<<64, 256>>>((char *)m1, 16 << 20, 3);
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaFreeHost(h2));
	CHECK(cudaFreeHost(h1));
	CHECK(cudaFree(m2));
	CHECK(cudaFree(m1));
	printf("managed: done\n");
	return 0;
}
