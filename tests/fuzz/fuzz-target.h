/* fuzz-target.h — the libFuzzer entry point shared by the fuzzer build and
 * the regression driver that replays the corpus. */
#ifndef MEMTRACE_FUZZ_TARGET_H
#define MEMTRACE_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
