/* kernels-mode.c — the words of --kernels (enum mt_record_kernels), shared
 * by the launcher, which passes the word in MEMTRACE_KERNELS, and the
 * injection library, which reads it back.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "memtrace-recorder.h"

static const char *const words[] = {
	[MT_RECORD_KERNELS_GPU] = "gpu",
	[MT_RECORD_KERNELS_LAUNCH] = "launch",
	[MT_RECORD_KERNELS_NONE] = "none",
};

int mt_record_kernels_parse(const char *word, unsigned *mode)
{
	for (unsigned m = 0; word && m < sizeof(words) / sizeof(words[0]); m++) {
		if (!strcmp(word, words[m])) {
			*mode = m;
			return 0;
		}
	}
	return -EINVAL;
}

const char *mt_record_kernels_name(unsigned mode)
{
	return mode < sizeof(words) / sizeof(words[0]) ? words[mode] : words[0];
}
