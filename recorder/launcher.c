/* launcher.c — finding the injection library and CUPTI, building the
 * environment that makes a program record itself, and running it with its
 * signals forwarded. See memtrace-recorder.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "memtrace-common.h"
#include "memtrace-recorder.h"

extern char **environ;

struct mt_record_run {
	char *const *argv;
	char **env; /* NULL-terminated, owned strings */
	size_t env_len, env_cap;
	char output[PATH_MAX];
	time_t started; /* when mt_record_exec started the program */
	char **written; /* mt_record_written's answer */
	size_t n_written;
};

/* Formats a message into err and returns rc: the common helper. */
#define fail mt_fail

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Absolute folder of the running binary. */
static int self_dir(const char *self, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	char *slash;

	if (n > 0) {
		path[n] = 0;
	} else if (!self || !realpath(self, path)) {
		return -ENOENT;
	}
	slash = strrchr(path, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	if (strlen(path) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, path);
	return 0;
}

int mt_record_find_inject(const char *self, char *buf, size_t len, char *err, size_t errlen)
{
	static const char *const rel[] = {
		"../recorder/libmemtrace-inject.so",
		"libmemtrace-inject.so",
		"../lib/memtrace/libmemtrace-inject.so",
		"../lib64/memtrace/libmemtrace-inject.so",
		"../lib/x86_64-linux-gnu/memtrace/libmemtrace-inject.so",
		"../lib/aarch64-linux-gnu/memtrace/libmemtrace-inject.so",
	};
	const char *env = getenv("MEMTRACE_INJECT_PATH");
	char dir[PATH_MAX], cand[PATH_MAX * 2], res[PATH_MAX];

	if (env && *env) {
		if (!is_file(env) || !realpath(env, buf))
			return fail(err, errlen, -ENOENT, "MEMTRACE_INJECT_PATH=%s is not a file",
			            env);
		return 0;
	}
	if (self_dir(self, dir, sizeof(dir)) == 0) {
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(cand, sizeof(cand), "%s/%s", dir, rel[i]);
			if (is_file(cand) && realpath(cand, res) && strlen(res) < len) {
				strcpy(buf, res);
				return 0;
			}
		}
	}
	return fail(err, errlen, -ENOENT,
	            "cannot find libmemtrace-inject.so beside the memtrace binary; "
	            "set MEMTRACE_INJECT_PATH to it");
}

static int cupti_in(const char *dir, char *buf, size_t len)
{
	static const char *const names[] = { "libcupti.so", "libcupti.so.13", "libcupti.so.12" };
	char cand[PATH_MAX * 2];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", dir, names[i]) >= sizeof(cand))
			return -ENAMETOOLONG;
		if (is_file(cand) && strlen(cand) < len) {
			strcpy(buf, cand);
			return 0;
		}
	}
	return -ENOENT;
}

static int cupti_under(const char *root, char *buf, size_t len)
{
	static const char *const subs[] = { "extras/CUPTI/lib64", "lib64", "lib",
		                            "targets/x86_64-linux/lib" };
	char dir[PATH_MAX * 2];

	if (!root || !*root)
		return -ENOENT;
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", root, subs[i]) >= sizeof(dir))
			return -ENAMETOOLONG;
		if (cupti_in(dir, buf, len) == 0)
			return 0;
	}
	return -ENOENT;
}

int mt_record_find_cupti(char *buf, size_t len, char *err, size_t errlen)
{
	const char *env = getenv("MEMTRACE_CUPTI_PATH");
	const char *roots[] = { getenv("CUDA_HOME"), getenv("CUDA_PATH"), MT_CUDA_ROOT,
		                "/usr/local/cuda" };
	const char *ld = getenv("LD_LIBRARY_PATH");

	if (env && *env) {
		if (is_file(env) && strlen(env) < len) {
			strcpy(buf, env);
			return 0;
		}
		if (cupti_in(env, buf, len) == 0 || cupti_under(env, buf, len) == 0)
			return 0;
		return fail(err, errlen, -ENOENT, "MEMTRACE_CUPTI_PATH=%s holds no libcupti.so",
		            env);
	}
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (cupti_under(roots[i], buf, len) == 0)
			return 0;
	if (cupti_in("/usr/lib/x86_64-linux-gnu", buf, len) == 0 ||
	    cupti_in("/usr/lib64", buf, len) == 0)
		return 0;
	if (ld && *ld) {
		char *copy = strdup(ld), *save = NULL;
		for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d;
		     d = strtok_r(NULL, ":", &save)) {
			if (cupti_in(d, buf, len) == 0) {
				free(copy);
				return 0;
			}
		}
		free(copy);
	}
	return fail(err, errlen, -ENOENT,
	            "cannot find CUPTI (libcupti.so); set MEMTRACE_CUPTI_PATH to the folder that "
	            "holds it (or add it to LD_LIBRARY_PATH)");
}

static int env_set(struct mt_record_run *run, const char *name, const char *value)
{
	size_t nlen = strlen(name);
	char *entry;

	if (asprintf(&entry, "%s=%s", name, value) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < run->env_len; i++) {
		if (!strncmp(run->env[i], name, nlen) && run->env[i][nlen] == '=') {
			free(run->env[i]);
			run->env[i] = entry;
			return 0;
		}
	}
	if (run->env_len + 2 > run->env_cap) {
		size_t cap = run->env_cap ? run->env_cap * 2 : 64;
		char **e = realloc(run->env, cap * sizeof(*e));
		if (!e) {
			free(entry);
			return -ENOMEM;
		}
		run->env = e;
		run->env_cap = cap;
	}
	run->env[run->env_len++] = entry;
	run->env[run->env_len] = NULL;
	return 0;
}

static const char *env_get(const struct mt_record_run *run, const char *name)
{
	size_t nlen = strlen(name);

	for (size_t i = 0; i < run->env_len; i++)
		if (!strncmp(run->env[i], name, nlen) && run->env[i][nlen] == '=')
			return run->env[i] + nlen + 1;
	return NULL;
}

/* Sets name to "first:old" (prepend) or "old:first" (append). */
static int env_path_add(struct mt_record_run *run, const char *name, const char *dir, bool prepend)
{
	const char *old = env_get(run, name);
	char *v;
	int rc;

	if (!old || !*old)
		return env_set(run, name, dir);
	if (asprintf(&v, "%s:%s", prepend ? dir : old, prepend ? old : dir) < 0)
		return -ENOMEM;
	rc = env_set(run, name, v);
	free(v);
	return rc;
}

static int keep_old(const char *path, char *err, size_t errlen)
{
	char kept[PATH_MAX + 16];
	int rc = mt_trace_keep_previous(path, kept, sizeof(kept), err, errlen);

	return rc < 0 ? rc : 0;
}

static int absolute(const char *path, char *buf, size_t len)
{
	char cwd[PATH_MAX];

	if (path[0] == '/') {
		if (strlen(path) >= len)
			return -ENAMETOOLONG;
		strcpy(buf, path);
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	if ((size_t)snprintf(buf, len, "%s/%s", cwd, path) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static void dirname_of(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (n >= len)
		n = len - 1;
	memcpy(buf, path, n);
	buf[n] = 0;
}

/* MEMTRACE_STACKS for the option. */
static const char *stacks_name(unsigned stacks)
{
	switch (stacks) {
	case MT_RECORD_STACKS_PYTHON:
		return "python";
	case MT_RECORD_STACKS_NATIVE:
		return "native";
	default:
		return "none";
	}
}

static int build_env(struct mt_record_run *run, const struct mt_record_options *opts,
                     const char *inject, const char *cupti, char *err, size_t errlen)
{
	char dir[PATH_MAX], cupti_dir[PATH_MAX], bridge[PATH_MAX * 2], num[32];
	const char *capture;
	bool python = false;
	int rc = 0;

	for (char **e = environ; e && *e && rc == 0; e++) {
		char *eq = strchr(*e, '=');
		char name[256];
		size_t n = eq ? (size_t)(eq - *e) : 0;
		if (!eq || n >= sizeof(name))
			continue;
		memcpy(name, *e, n);
		name[n] = 0;
		/* A recording inside a recording starts afresh. */
		if (!strcmp(name, "MEMTRACE_PARENT_ROW") || !strcmp(name, "MEMTRACE_PARENT_PID"))
			continue;
		rc = env_set(run, name, eq + 1);
	}
	dirname_of(inject, dir, sizeof(dir));
	dirname_of(cupti, cupti_dir, sizeof(cupti_dir));
	snprintf(num, sizeof(num), "%u", opts->sample_ms);
	if (rc == 0)
		rc = env_set(run, "CUDA_INJECTION64_PATH", inject);
	if (rc == 0)
		rc = env_set(run, "NVTX_INJECTION64_PATH", inject); /* hands NVTX to CUPTI */
	if (rc == 0)
		rc = env_path_add(run, "LD_LIBRARY_PATH", cupti_dir, false);
	if (rc == 0)
		rc = env_set(run, "MEMTRACE_OUTPUT", run->output);
	if (rc == 0)
		rc = env_set(run, "MEMTRACE_KERNELS", mt_record_kernels_name(opts->kernels));
	if (rc == 0)
		rc = env_set(run, "MEMTRACE_SAMPLE_MS", num);
	if (opts->capture == MT_CAPTURE_AS_IS) {
		capture = "as-is";
	} else {
		/* Every Python process the program starts, however it starts
		 * it, runs sitecustomize.py from this folder: it attaches the
		 * PyTorch bridge (or switches to a driver-level allocator)
		 * where torch is imported and tells that process's recorder
		 * which. A program's own PYTHONPATH stays behind it. */
		python = true;
		capture = "requests";
		snprintf(bridge, sizeof(bridge), "%s/python", dir);
		if (rc == 0)
			rc = env_path_add(run, "PYTHONPATH", bridge, true);
		snprintf(bridge, sizeof(bridge), "%s/torch-bridge.cpp", dir);
		if (rc == 0)
			rc = env_set(run, "MEMTRACE_TORCH_BRIDGE", bridge);
	}
	if (rc == 0)
		rc = env_set(run, "MEMTRACE_CAPTURE", capture);
	if (rc == 0)
		rc = env_set(run, "MEMTRACE_STACKS", stacks_name(opts->stacks));
	if (rc == 0) {
		char *note;
		if (asprintf(&note,
		             "CUDA_INJECTION64_PATH=%s NVTX_INJECTION64_PATH=%s "
		             "LD_LIBRARY_PATH+=%s%s%s%s",
		             inject, inject, cupti_dir, python ? " PYTHONPATH+=" : "",
		             python ? dir : "", python ? "/python" : "") < 0)
			rc = -ENOMEM;
		else
			rc = env_set(run, "MEMTRACE_CAPTURE_ENV", note);
		if (rc != -ENOMEM)
			free(note);
	}
	if (rc < 0)
		return fail(err, errlen, rc, "out of memory");
	return 0;
}

int mt_record_prepare(const struct mt_record_options *opts, char *const *argv,
                      struct mt_record_run **out, char *err, size_t errlen)
{
	struct mt_record_run *run;
	char inject[PATH_MAX], cupti[PATH_MAX];
	int rc;

	*out = NULL;
	if (!argv || !argv[0])
		return fail(err, errlen, -EINVAL, "no program to record");
	run = calloc(1, sizeof(*run));
	if (!run)
		return fail(err, errlen, -ENOMEM, "out of memory");
	run->argv = argv;
	rc = absolute(opts->output ? opts->output : "memtrace.db", run->output,
	              sizeof(run->output));
	if (rc < 0) {
		fail(err, errlen, rc, "output path too long");
		goto out;
	}
	if ((rc = mt_record_find_inject(opts->self, inject, sizeof(inject), err, errlen)) < 0)
		goto out;
	if ((rc = mt_record_find_cupti(cupti, sizeof(cupti), err, errlen)) < 0)
		goto out;
	if (!strstr(run->output, "%p") && (rc = keep_old(run->output, err, errlen)) < 0)
		goto out;
	if ((rc = build_env(run, opts, inject, cupti, err, errlen)) < 0)
		goto out;
	*out = run;
	return 0;
out:
	mt_record_run_free(run);
	return rc;
}

const char *mt_record_output(const struct mt_record_run *run)
{
	return run->output;
}

static volatile sig_atomic_t child_pid;

static void forward(int sig, siginfo_t *info, void *uctx)
{
	(void)uctx;
	/* A terminal's ^C already reached the whole process group; forward
	 * only what was sent to us alone (kill, a job scheduler). */
	if (info && info->si_code == SI_KERNEL)
		return;
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

int mt_record_exec(struct mt_record_run *run, int *status, char *err, size_t errlen)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa, old[4];
	int pipefd[2], child_errno = 0, wstatus = 0;
	pid_t pid;
	ssize_t n;

	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return fail(err, errlen, -errno, "cannot start %s: %s", run->argv[0],
		            strerror(errno));
	run->started = time(NULL);
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return fail(err, errlen, -e, "cannot start %s: %s", run->argv[0], strerror(e));
	}
	if (pid == 0) {
		close(pipefd[0]);
		execvpe(run->argv[0], run->argv, run->env);
		child_errno = errno;
		if (write(pipefd[1], &child_errno, sizeof(child_errno)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	child_pid = pid;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < 4; i++)
		sigaction(sigs[i], &sa, &old[i]);
	n = read(pipefd[0], &child_errno, sizeof(child_errno));
	close(pipefd[0]);
	while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
		;
	for (size_t i = 0; i < 4; i++)
		sigaction(sigs[i], &old[i], NULL);
	child_pid = 0;
	if (n == (ssize_t)sizeof(child_errno))
		return fail(err, errlen, -child_errno, "cannot run %s: %s", run->argv[0],
		            strerror(child_errno));
	if (WIFSIGNALED(wstatus))
		*status = 128 + WTERMSIG(wstatus);
	else
		*status = WEXITSTATUS(wstatus);
	return 0;
}

/* Whether NAME is PATTERN with digits in place of each '%p'. */
static bool matches_pid_pattern(const char *pattern, const char *name)
{
	while (*pattern) {
		if (pattern[0] == '%' && pattern[1] == 'p') {
			if (*name < '0' || *name > '9')
				return false;
			while (*name >= '0' && *name <= '9')
				name++;
			pattern += 2;
		} else if (*pattern++ != *name++) {
			return false;
		}
	}
	return !*name;
}

static void forget_written(struct mt_record_run *run)
{
	for (size_t i = 0; i < run->n_written; i++)
		free(run->written[i]);
	free(run->written);
	run->written = NULL;
	run->n_written = 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds PATH to the run's written traces; false when out of memory. */
static bool add_written(struct mt_record_run *run, const char *path)
{
	char **w = realloc(run->written, (run->n_written + 1) * sizeof(*w));

	if (!w)
		return false;
	run->written = w;
	w[run->n_written] = strdup(path);
	if (!w[run->n_written])
		return false;
	run->n_written++;
	return true;
}

size_t mt_record_written(struct mt_record_run *run, const char *const **paths)
{
	char dir[PATH_MAX], path[PATH_MAX * 2];
	const char *base = strrchr(run->output, '/') + 1; /* output is absolute */
	struct dirent *e;
	struct stat st;
	DIR *d;

	forget_written(run);
	*paths = NULL;
	if (!strstr(run->output, "%p")) {
		if (stat(run->output, &st) == 0 && add_written(run, run->output))
			*paths = (const char *const *)run->written;
		return run->n_written;
	}
	dirname_of(run->output, dir, sizeof(dir));
	d = strstr(dir, "%p") ? NULL : opendir(dir[0] ? dir : "/");
	while (d && (e = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		/* a second's slack: file times may be coarser than time() */
		if (matches_pid_pattern(base, e->d_name) && stat(path, &st) == 0 &&
		    S_ISREG(st.st_mode) && st.st_mtime + 1 >= run->started &&
		    !add_written(run, path))
			break;
	}
	if (d)
		closedir(d);
	if (run->n_written)
		qsort(run->written, run->n_written, sizeof(*run->written), by_name);
	*paths = (const char *const *)run->written;
	return run->n_written;
}

void mt_record_run_free(struct mt_record_run *run)
{
	if (!run)
		return;
	forget_written(run);
	for (size_t i = 0; i < run->env_len; i++)
		free(run->env[i]);
	free(run->env);
	free(run);
}
