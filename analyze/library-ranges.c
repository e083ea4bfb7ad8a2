/* library-ranges.c — NVTX range names: how people read them, and which
 * ranges a library opened for itself (CUB and Thrust in CCCL, cuBLAS,
 * cuDNN and their kin) rather than the program: reports and pictures leave
 * those out of phases unless asked.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "analyze-private.h"

bool an_range_is_library(const char *name, const char *domain)
{
	static const char *const domains[] = { "CCCL",    "cuBLAS", "cuBLASLt", "cuDNN",
		                               "cuFFT",   "cuRAND", "cuSOLVER", "cuSPARSE",
		                               "CUTLASS", "thrust", "cub" };
	static const char *const prefixes[] = { "cub::",     "thrust::", "cuda::",
		                                "cutlass::", "cublas",   "cudnn" };
	size_t i;

	for (i = 0; domain && i < sizeof(domains) / sizeof(domains[0]); i++)
		if (!strcasecmp(domain, domains[i]))
			return true;
	for (i = 0; name && i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncasecmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

char *mt_range_label(struct mt_reader *r, uint32_t name, uint32_t domain, char *buf, size_t len)
{
	const char *n = name ? mt_reader_string(r, name) : NULL;
	const char *d = domain ? mt_reader_string(r, domain) : NULL;

	if (n && !*n)
		n = NULL;
	if (d && !*d)
		d = NULL;
	snprintf(buf, len, "%s%s%s%s", n ? n : "(unnamed)", d ? " [" : "", d ? d : "",
	         d ? "]" : "");
	return buf;
}
