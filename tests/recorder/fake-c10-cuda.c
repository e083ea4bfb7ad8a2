/* fake-c10-cuda.c — a library named libc10_cuda.so and nothing more: loading
 * it tells the recorder's capture label (recorder/inject-capture.c) that
 * PyTorch's CUDA allocator is in the process (tests/recorder/
 * test-capture.c). */
int fake_c10_cuda(void);

int fake_c10_cuda(void)
{
	return 1;
}
