/* fuzz-rmm.c — the RMM log reader on any input. Corpus:
 * tests/fuzz/corpus/rmm. */
#include "config.h"

#include "fuzz-import.h"

extern const struct mt_interop_format io_format_rmm;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_import(&io_format_rmm, "fuzz.csv", data, size);
	return 0;
}
