// crash.cu — dies mid-run.
// Allocates 1 MiB argv[1] times (default 100), synchronously, then dies:
// argv[2] = "abort" (default) calls abort(), "segv" writes through NULL,
// "hang" sleeps forever and "busy" launches short kernels forever, so that
// some kernel is always running when the recorder flushes (both for SIGKILL
// tests, after printing "ready").
// Expected: every allocation made at least 250 ms before the death is in
// the trace.
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "sample.h"

// Spins for about `cycles` GPU clock cycles.
__global__ void spin(long long cycles)
{
	long long start = clock64();

	while (clock64() - start < cycles)
		;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	const char *how = argc > 2 ? argv[2] : "abort";
	void *p;

	for (int i = 0; i < n; i++)
		CHECK(cudaMalloc(&p, 1 << 20));
	CHECK(cudaDeviceSynchronize());
	if (!strcmp(how, "hang") || !strcmp(how, "busy")) {
		printf("ready\n");
		fflush(stdout);
		for (;;) {
			if (!strcmp(how, "hang"))
				pause();
			spin<<<1, 1>>>(100000); // about 50 us
			CHECK(cudaGetLastError());
		}
	}
	usleep(300 * 1000); /* past one flush interval */
	if (!strcmp(how, "segv"))
		*(volatile int *)(uintptr_t)argc = 0;
	abort();
}
