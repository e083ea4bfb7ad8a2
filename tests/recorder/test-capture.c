/* test-capture.c — a process's capture label (recorder/inject-capture.c),
 * without CUDA: the sink is a stub that keeps what it is told to write.
 *
 * Checks what each situation is labelled (as-is; a program without a
 * framework; PyTorch's allocator loaded, here a fake libc10_cuda.so,
 * without a hook, with the startup hook's mark of this process or of
 * another, under backend:cudaMallocAsync; a declaration of the startup
 * hook), that a change is written at once and a repeat is not, that the
 * environment counts as it was when CUDA started, that a declaration made
 * before the trace is opened is what it opens with, and that nothing is
 * written before it is open.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inject-private.h"
#include "tap.h"

void memtrace_set_capture(const char *capture);

static const char *fake_torch; /* path of the fake libc10_cuda.so */

/* ---- the stub: what the sink was told ---- */

static char sunk[16][512];
static int n_sunk;

void rec_sink_set_capture(const char *capture)
{
	if (n_sunk < 16)
		snprintf(sunk[n_sunk++], sizeof(sunk[0]), "%s", capture);
}

/* ---- the cases ---- */

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* The label after a change, and that it was written once. */
static const char *updated(void)
{
	int before = n_sunk;

	rec_capture_update();
	return n_sunk == before + 1 ? sunk[n_sunk - 1] : "(not written once)";
}

/* In a fresh child: a declaration before the trace exists is kept for it,
 * and nothing is written until then. */
static void test_declared_before_open(void)
{
	pid_t child = fork();
	int status = -1;

	REQUIRE(child >= 0);
	if (child == 0) {
		char buf[256];
		setenv("MEMTRACE_CAPTURE", "requests", 1);
		memtrace_set_capture("requests (XLA_PYTHON_CLIENT_ALLOCATOR=platform)");
		rec_capture_open(buf, sizeof(buf));
		_exit(n_sunk != 0                                                      ? 1
		      : strcmp(buf, "requests (XLA_PYTHON_CLIENT_ALLOCATOR=platform)") ? 2
		                                                                       : 0);
	}
	CHECK(waitpid(child, &status, 0) == child);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

/* The label a process starting now would be given. */
static const char *opened(void)
{
	static char buf[256];

	rec_capture_open(buf, sizeof(buf));
	return buf;
}

static void test_labels(void)
{
	char mark[32];
	const char *l;
	int before;

	unsetenv("MEMTRACE_CAPTURE");
	unsetenv("MEMTRACE_PYTHON_HOOK");
	unsetenv("PYTORCH_CUDA_ALLOC_CONF");
	unsetenv("PYTORCH_ALLOC_CONF");
	rec_capture_update();
	CHECK(n_sunk == 0); /* nothing open yet */
	/* no launcher, or --capture as-is */
	l = opened();
	CHECKF(!strcmp(l, "as-is"), "%s", l);
	setenv("MEMTRACE_CAPTURE", "requests", 1);
	l = opened();
	CHECKF(!strcmp(l, "requests (driver API)"), "%s", l);
	rec_capture_update();
	CHECK(n_sunk == 0); /* unchanged */

	/* PyTorch's allocator loaded after CUDA started: seen at the next
	 * update, and written */
	REQUIRE(dlopen(fake_torch, RTLD_NOW) != NULL);
	l = updated();
	CHECKF(starts(l, "segments only (PyTorch's allocator was not hooked: memtrace's Python "
	                 "startup hook did not run in this process"),
	       "%s", l);
	snprintf(mark, sizeof(mark), "%ld", (long)getpid());
	setenv("MEMTRACE_PYTHON_HOOK", mark, 1);
	l = opened();
	CHECKF(!strcmp(l, "segments only (PyTorch's allocator hook was not attached)"), "%s", l);
	/* another process's mark (inherited) says nothing about this one */
	snprintf(mark, sizeof(mark), "%ld", (long)getpid() + 1);
	setenv("MEMTRACE_PYTHON_HOOK", mark, 1);
	l = opened();
	CHECKF(starts(l, "segments only (PyTorch's allocator was not hooked"), "%s", l);
	setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True,backend:cudaMallocAsync", 1);
	l = opened();
	CHECKF(!strcmp(l, "requests (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)"), "%s", l);
	/* the environment is read when CUDA starts, not later */
	setenv("MEMTRACE_CAPTURE", "as-is", 1);
	before = n_sunk;
	rec_capture_update();
	CHECK(n_sunk == before);

	/* the startup hook's word wins, at once */
	memtrace_set_capture("requests (PyTorch allocator hook)");
	CHECKF(n_sunk == before + 1 &&
	               !strcmp(sunk[n_sunk - 1], "requests (PyTorch allocator hook)"),
	       "%s", n_sunk ? sunk[n_sunk - 1] : "");
	rec_capture_update();
	CHECK(n_sunk == before + 1);
	/* --capture as-is overrides everything */
	l = opened();
	CHECKF(!strcmp(l, "as-is"), "%s", l);
}

int main(int argc, char **argv)
{
	REQUIRE(argc == 2);
	fake_torch = argv[1];
	TEST(test_declared_before_open);
	TEST(test_labels);
	return check_done();
}
