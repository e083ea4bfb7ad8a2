/* sample.h — shared by the CUDA samples: error checks that say where. */
#ifndef MEMTRACE_SAMPLE_H
#define MEMTRACE_SAMPLE_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>
#include <cuda_runtime.h>

#define CHECK(call)                                                                           \
	do {                                                                                  \
		cudaError_t e_ = (call);                                                      \
		if (e_ != cudaSuccess) {                                                      \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,         \
				cudaGetErrorString(e_));                                      \
			exit(1);                                                              \
		}                                                                             \
	} while (0)

#define CHECK_CU(call)                                                                        \
	do {                                                                                  \
		CUresult r_ = (call);                                                         \
		if (r_ != CUDA_SUCCESS) {                                                     \
			const char *s_ = "?";                                                 \
			cuGetErrorString(r_, &s_);                                            \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, s_);    \
			exit(1);                                                              \
		}                                                                             \
	} while (0)

__global__ void sample_fill(char *p, size_t n, char v)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = v;
}

#endif
