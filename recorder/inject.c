/* inject.c — entry point of libmemtrace-inject.so.
 *
 * CUDA calls InitializeInjection() from cuInit when CUDA_INJECTION64_PATH
 * names this library (documented with CUPTI's "injection" sample). We open
 * the trace, subscribe the allocation callbacks, enable the activity kinds
 * and start the flushing thread (inject-flush.c). Every failure is reported
 * once and the program runs on unrecorded; InitializeInjection always
 * returns 1 so that CUDA never fails because of us.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "inject-private.h"

static unsigned env_unsigned(const char *name, unsigned fallback)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return fallback;
	n = strtoul(v, &end, 10);
	return *end ? fallback : (unsigned)n;
}

int InitializeInjection(void);
int InitializeInjectionNvtx2(const void *get_export_table);

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void *get_export_table)
{
	CUptiResult (*enable)(CUpti_ActivityKind) = cuptiActivityEnable;
	int (*init)(const void *);
	Dl_info info;
	void *cupti;

	if (!dladdr(*(void **)&enable, &info) || !info.dli_fname)
		return 0;
	cupti = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	if (!cupti)
		return 0;
	*(void **)&init = dlsym(cupti, "InitializeInjectionNvtx2");
	return init ? init(get_export_table) : 0;
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	struct rec_state *in = &rec_state;
	const char *kernels = getenv("MEMTRACE_KERNELS");
	const char *stacks = getenv("MEMTRACE_STACKS");
	char capture[256];
	int rc;

	if (mt_record_kernels_parse(kernels, &in->kernels) < 0)
		in->kernels = MT_RECORD_KERNELS_LAUNCH;
	in->stacks = !stacks                     ? REC_STACKS_NONE
	             : !strcmp(stacks, "python") ? REC_STACKS_PYTHON
	             : !strcmp(stacks, "native") ? REC_STACKS_NATIVE
	                                         : REC_STACKS_NONE;
	in->sample_ms = env_unsigned("MEMTRACE_SAMPLE_MS", 50);
	in->moment_readings = env_unsigned("MEMTRACE_MOMENT_READINGS", 1) != 0;
	rec_clock_init();
	atomic_store(&in->enabled, true);
	rec_capture_open(capture, sizeof(capture));
	if (rec_sink_open(capture) < 0)
		return 1;
	rc = rec_callbacks_start();
	if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		rec_warn("another CUPTI subscriber (a profiler?) is already active "
		         "(CUPTI error %d)",
		         rc);
		return 1;
	} else if (rc) {
		const char *s = NULL;
		cuptiGetResultString(rc, &s);
		rec_warn("CUPTI refused the callbacks: %s", s ? s : "unknown error");
		return 1;
	}
	if (rec_activity_start(in->kernels) < 0)
		return 1;
	rec_flush_start();
	return 1;
}
