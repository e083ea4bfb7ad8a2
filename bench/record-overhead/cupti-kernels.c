/* cupti-kernels.c — CUPTI's kernel records and nothing else: an injection
 * library (CUDA_INJECTION64_PATH) that switches on CUPTI's concurrent kernel
 * records, as CUPTI's own samples do, and frees every filled buffer unread
 * (each new buffer is a fresh malloc, which CUPTI zeroes). Run beside plain
 * and `memtrace record` in run.py's lockstep (a variant 'NAME=plain
 * CUDA_INJECTION64_PATH=.../libcupti-kernels.so'), it shows what kernel
 * records cost a program by themselves, whatever memtrace does with them. */
#include <stdint.h>
#include <stdlib.h>

#include <cupti.h>

#define BUFFER_BYTES (4u << 20)

int InitializeInjection(void);

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = malloc(BUFFER_BYTES);
	*size = *buffer ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                      size_t size, size_t valid)
{
	(void)ctx;
	(void)stream_id;
	(void)size;
	(void)valid;
	free(buffer);
}

/* Called by the CUDA driver at its initialisation; returns 1 (done) either
 * way, so that a refusal leaves the program running unrecorded. */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS)
		cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	return 1;
}
