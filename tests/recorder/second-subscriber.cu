// second-subscriber.cu — a program that holds the CUPTI subscriber slot
// itself (as a profiler would) before CUDA starts, then allocates and frees
// 1 MiB and prints "ok". Under `memtrace record` the recorder must find the
// slot taken (CUPTI error 39), say so once, and let the program finish.
#include <stdio.h>

#include <cuda_runtime.h>
#include <cupti.h>

static void CUPTIAPI on_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
				 const void *data)
{
}

int main(void)
{
	CUpti_SubscriberHandle sub;
	void *p;

	if (cuptiSubscribe(&sub, on_callback, NULL) != CUPTI_SUCCESS) {
		fprintf(stderr, "second-subscriber: cuptiSubscribe failed\n");
		return 1;
	}
	if (cudaMalloc(&p, 1 << 20) != cudaSuccess || cudaFree(p) != cudaSuccess) {
		fprintf(stderr, "second-subscriber: CUDA failed\n");
		return 1;
	}
	printf("ok\n");
	return 0;
}
