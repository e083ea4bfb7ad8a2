/* fuzz-nsight.c — the Nsight Systems export reader on any file: the input
 * is written to a temporary file that SQLite opens read-only. Corpus:
 * tests/fuzz/corpus/nsight. */
#include "config.h"

#include <stdio.h>
#include <unistd.h>

#include "fuzz-import.h"

extern const struct mt_interop_format io_format_nsight;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/fuzz-nsight-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		abort();
	if (write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	fuzz_import(&io_format_nsight, path, data, size);
	unlink(path);
	return 0;
}
