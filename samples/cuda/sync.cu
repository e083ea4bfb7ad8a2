// sync.cu — synchronous cudaMalloc/cudaFree with a known sequence.
// CUDA is started first (cudaFree(0)): NVTX ranges opened before CUDA starts
// are not seen by CUPTI, which the recorder loads at cuInit.
// Each round allocates the four sizes below in order, fills the first with a
// kernel, copies 1 MiB host->device, memsets the second, and frees them in
// reverse order inside an NVTX range "round". Rounds: argv[1] (default 3).
// Expected per round: 4 driver allocs and 4 frees of exactly these sizes,
// 1 kernel, 1 memcpy (HtoD, 1 MiB), 1 memset, 1 range.
#include <nvtx3/nvToolsExt.h>

#include "sample.h"

static const size_t sizes[4] = { 1 << 20, (3 << 20) + 17, 256, 64 << 20 };

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3;
	static char host[1 << 20];
	void *p[4];

	CHECK(cudaFree(0));
	for (int r = 0; r < rounds; r++) {
		nvtxRangePushA("round");
		for (int i = 0; i < 4; i++)
			CHECK(cudaMalloc(&p[i], sizes[i]));
		sample_fill<<<64, 256>>>((char *)p[0], sizes[0], 1);
		CHECK(cudaMemcpy(p[0], host, sizeof(host), cudaMemcpyHostToDevice));
		CHECK(cudaMemset(p[1], 0, sizes[1]));
		CHECK(cudaDeviceSynchronize());
		for (int i = 3; i >= 0; i--)
			CHECK(cudaFree(p[i]));
		nvtxRangePop();
	}
	printf("sync: %d rounds\n", rounds);
	return 0;
}
