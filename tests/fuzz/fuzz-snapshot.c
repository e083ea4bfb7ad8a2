/* fuzz-snapshot.c — the PyTorch snapshot reader (the pickle machine and
 * the JSON form, then the mapping to events) on any input. Corpus:
 * tests/fuzz/corpus/snapshot. */
#include "config.h"

#include "fuzz-import.h"

extern const struct mt_interop_format io_format_snapshot;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_import(&io_format_snapshot, "fuzz.pickle", data, size);
	return 0;
}
