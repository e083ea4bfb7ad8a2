// async.cu — cudaMallocAsync/cudaFreeAsync on three streams.
// Stream s (0..2) allocates (s+1) MiB + s*512 bytes, `per` times per round
// (argv[1], default 4), then frees them on the same stream. Two rounds.
// Expected: 2*3*per allocs and frees in the async-pool kind, each on its
// stream, sizes exactly as above.
#include "sample.h"

int main(int argc, char **argv)
{
	int per = argc > 1 ? atoi(argv[1]) : 4;
	cudaStream_t s[3];
	void *p[3][64];

	if (per > 64)
		per = 64;
	for (int i = 0; i < 3; i++)
		CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3; i++)
			for (int k = 0; k < per; k++)
				CHECK(cudaMallocAsync(&p[i][k], ((size_t)(i + 1) << 20) + (size_t)i * 512,
						      s[i]));
		for (int i = 0; i < 3; i++)
			for (int k = 0; k < per; k++)
				CHECK(cudaFreeAsync(p[i][k], s[i]));
		CHECK(cudaDeviceSynchronize());
	}
	for (int i = 0; i < 3; i++)
		CHECK(cudaStreamDestroy(s[i]));
	printf("async: 3 streams x %d x 2 rounds\n", per);
	return 0;
}
