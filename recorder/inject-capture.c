/* inject-capture.c — what the trace holds of this process's own requests:
 * its capture label (processes.capture, docs/FORMAT.md).
 *
 * The label is decided inside the process, by the code that knows, never
 * inherited from a parent:
 * - `memtrace record --capture as-is` (MEMTRACE_CAPTURE=as-is, or no
 *   launcher at all): "as-is".
 * - A declaration of the Python startup hook (recorder/python/
 *   sitecustomize.py) through memtrace_set_capture: it says whether
 *   PyTorch's allocator hook is attached, refused, or replaced by a
 *   driver-level allocator, and does so in this process only.
 * - Else, when PyTorch's CUDA allocator (libc10_cuda.so) is loaded: its
 *   requests reach the driver one by one only under
 *   backend:cudaMallocAsync; otherwise the trace holds its segments only,
 *   and the label says so and why (the startup hook ran here and attached
 *   nothing yet, or it never ran: PYTHONPATH replaced, python -I, -E, -S).
 * - Else the process's driver calls are its requests: "requests (driver
 *   API)".
 * The environment is read once, when CUDA starts; the flushing thread looks
 * again at every flush (PyTorch may be loaded after CUDA started) and once
 * more at exit; a changed label is written at once, so a process killed at
 * any time leaves the last one.
 */
#include "config.h"

#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject-private.h"

/* Exported to recorder/python/sitecustomize.py. */
void memtrace_set_capture(const char *capture);

#define LABEL_BYTES 256

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char declared[LABEL_BYTES]; /* by the startup hook; "" = nothing said */
static char written[LABEL_BYTES];  /* the label the trace holds now */
static bool torch_seen;            /* libc10_cuda.so was loaded (never unloads) */

/* The environment as it was when CUDA started (rec_capture_open): read
 * once, on the thread that started it, since getenv on the flushing thread
 * would race with a program's setenv. */
static struct {
	bool requests;      /* MEMTRACE_CAPTURE=requests... (else as-is) */
	bool async_backend; /* PyTorch configured with backend:cudaMallocAsync */
	bool hook_ran;      /* MEMTRACE_PYTHON_HOOK names this process */
} env;

static int find_torch(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *name = info->dlpi_name;
	const char *base = name ? strrchr(name, '/') : NULL;

	(void)size;
	(void)arg;
	base = base ? base + 1 : name;
	return base && !strncmp(base, "libc10_cuda.so", 14);
}

/* Whether PyTorch's CUDA allocator is in the process; lock held. */
static bool torch_loaded(void)
{
	if (!torch_seen)
		torch_seen = dl_iterate_phdr(find_torch, NULL) != 0;
	return torch_seen;
}

static bool async_backend_env(void)
{
	static const char *const vars[] = { "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		if (v && strstr(v, "backend:cudaMallocAsync"))
			return true;
	}
	return false;
}

/* Whether the Python startup hook ran in this process image (it sets
 * MEMTRACE_PYTHON_HOOK to its pid; children inherit another pid's). */
static bool startup_hook_env(void)
{
	const char *v = getenv("MEMTRACE_PYTHON_HOOK");

	return v && atol(v) == (long)getpid();
}

/* The label as things stand; lock held. */
static void label(char *buf, size_t len)
{
	if (!env.requests)
		snprintf(buf, len, "as-is");
	else if (*declared)
		snprintf(buf, len, "%s", declared);
	else if (!torch_loaded())
		snprintf(buf, len, "requests (driver API)");
	else if (env.async_backend)
		snprintf(buf, len, "requests (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)");
	else if (env.hook_ran)
		snprintf(buf, len, "segments only (PyTorch's allocator hook was not attached)");
	else
		snprintf(buf, len,
		         "segments only (PyTorch's allocator was not hooked: memtrace's Python "
		         "startup hook did not run in this process; PYTHONPATH replaced, or "
		         "python -I, -E or -S?)");
}

void rec_capture_open(char *buf, size_t len)
{
	const char *mode = getenv("MEMTRACE_CAPTURE");

	pthread_mutex_lock(&lock);
	env.requests = mode && !strncmp(mode, "requests", 8);
	env.async_backend = async_backend_env();
	env.hook_ran = startup_hook_env();
	label(written, sizeof(written));
	snprintf(buf, len, "%s", written);
	pthread_mutex_unlock(&lock);
}

void rec_capture_update(void)
{
	char now[LABEL_BYTES];

	/* held while writing, so that labels reach the trace in the order
	 * they were decided */
	pthread_mutex_lock(&lock);
	label(now, sizeof(now));
	if (*written && strcmp(now, written)) {
		memcpy(written, now, sizeof(written));
		rec_sink_set_capture(now);
	}
	pthread_mutex_unlock(&lock);
}

void rec_capture_after_fork_child(void)
{
	/* another thread may have held it at the fork */
	pthread_mutex_init(&lock, NULL);
}

__attribute__((visibility("default"))) void memtrace_set_capture(const char *capture)
{
	if (!capture)
		return;
	pthread_mutex_lock(&lock);
	snprintf(declared, sizeof(declared), "%s", capture);
	pthread_mutex_unlock(&lock);
	rec_capture_update();
}
