// threads.cu — allocations from several host threads at once.
// Thread t (0..3) does argv[1] (default 50) cudaMalloc/cudaFree pairs of
// (t + 1) * 4096 + t bytes. Expected: 4 * n allocs and frees, each size
// appearing exactly n times, every free paired with its alloc.
#include <pthread.h>

#include "sample.h"

static int n = 50;

static void *worker(void *arg)
{
	size_t t = (size_t)arg;
	void *p;

	for (int i = 0; i < n; i++) {
		CHECK(cudaMalloc(&p, (t + 1) * 4096 + t));
		CHECK(cudaFree(p));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[4];

	if (argc > 1)
		n = atoi(argv[1]);
	CHECK(cudaFree(0));
	for (size_t t = 0; t < 4; t++)
		pthread_create(&th[t], NULL, worker, (void *)t);
	for (int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	printf("threads: 4 x %d\n", n);
	return 0;
}
