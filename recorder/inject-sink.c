/* inject-sink.c — where recorded events go: the trace writer (one mutex),
 * a queue for cheap producers, and the thread that samples device memory
 * every MEMTRACE_SAMPLE_MS and flushes every ~200 ms, at exit, on
 * SIGINT/SIGTERM and (best effort) on a crash. A process forked from a
 * recorded one without exec never writes through its parent's handle.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "inject-private.h"

#define FLUSH_NS (200ull * 1000 * 1000)

static const int handled_signals[] = { SIGINT, SIGTERM, SIGSEGV, SIGABRT, SIGBUS, SIGFPE };
#define N_SIGNALS (sizeof(handled_signals) / sizeof(handled_signals[0]))
static struct sigaction previous_actions[N_SIGNALS];

static bool mine(void)
{
	return atomic_load(&mt_inject_state.enabled) && mt_inject_state.pid == getpid();
}

/* Expands '%p' in the output pattern to the pid. */
static int output_path(char *buf, size_t len)
{
	const char *pattern = getenv("MEMTRACE_OUTPUT");
	size_t o = 0;

	if (!pattern || !*pattern)
		pattern = "memtrace.db";
	for (const char *p = pattern; *p; p++) {
		int n;
		if (p[0] == '%' && p[1] == 'p') {
			n = snprintf(buf + o, len - o, "%ld", (long)getpid());
			p++;
		} else {
			n = snprintf(buf + o, len - o, "%c", *p);
		}
		if (n < 0 || (size_t)n >= len - o)
			return -ENAMETOOLONG;
		o += (size_t)n;
	}
	return 0;
}

/* With '%p' in the output, the launcher cannot keep an earlier trace of the
 * same name as FILE.N (it does not know the pid): a reused pid would append
 * this run to another run's trace. Each process does it for its own file. */
static void keep_earlier_trace(const char *path)
{
	const char *pattern = getenv("MEMTRACE_OUTPUT");
	char kept[PATH_MAX + 16];

	if (pattern && strstr(pattern, "%p"))
		mt_trace_keep_previous(path, kept, sizeof(kept), NULL, 0);
}

static char *read_cmdline(void)
{
	char buf[8192];
	ssize_t n;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return strdup("");
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		n = 0;
	buf[n] = 0;
	for (ssize_t i = 0; i + 1 < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	return strdup(buf);
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void set_meta_locked(const char *key, const char *value)
{
	if (value && mt_inject_state.writer &&
	    mt_writer_set_meta(mt_inject_state.writer, key, value) < 0)
		mt_inject_warn("cannot write the trace: %s",
		               mt_writer_message(mt_inject_state.writer));
}

static void add_meta_locked(const char *key, uint64_t delta)
{
	if (mt_inject_state.writer &&
	    mt_writer_add_meta_count(mt_inject_state.writer, key, delta) < 0)
		mt_inject_warn("cannot write the trace: %s",
		               mt_writer_message(mt_inject_state.writer));
}

void mt_sink_set_meta(const char *key, const char *value)
{
	if (!mine())
		return;
	pthread_mutex_lock(&mt_inject_state.writer_lock);
	set_meta_locked(key, value);
	pthread_mutex_unlock(&mt_inject_state.writer_lock);
}

int mt_sink_open(void)
{
	struct mt_inject *in = &mt_inject_state;
	struct mt_process proc = { 0 };
	char path[PATH_MAX], host[256] = "", start[32];
	const char *parent = getenv("MEMTRACE_PARENT_ROW");
	const char *parent_pid = getenv("MEMTRACE_PARENT_PID");
	char *cmdline;
	int rc;

	in->pid = getpid();
	if ((rc = output_path(path, sizeof(path))) < 0) {
		mt_inject_warn("the output path is too long");
		return rc;
	}
	keep_earlier_trace(path);
	in->writer = mt_writer_new();
	if (!in->writer) {
		mt_inject_warn("out of memory");
		return -ENOMEM;
	}
	rc = mt_writer_open(in->writer, path, MT_WRITER_CREATE);
	if (rc < 0) {
		mt_inject_warn("cannot open %s: %s", path, mt_writer_message(in->writer));
		mt_writer_free(in->writer);
		in->writer = NULL;
		return rc;
	}
	gethostname(host, sizeof(host) - 1);
	cmdline = read_cmdline();
	proc.pid = in->pid;
	proc.start_ns = mt_inject_now();
	proc.command_line = cmdline ? cmdline : "";
	proc.hostname = host;
	/* The parent row is only ours to name if the parent process really
	 * is our parent (not an unrelated program that inherited the env). */
	if (parent && parent_pid && atol(parent_pid) == (long)getppid())
		proc.parent = (uint32_t)strtoul(parent, NULL, 10);
	pthread_mutex_lock(&in->writer_lock);
	rc = mt_writer_add_process(in->writer, &proc, &in->process_row);
	if (rc < 0)
		mt_inject_warn("cannot write %s: %s", path, mt_writer_message(in->writer));
	in->root = !proc.parent;
	if (rc == 0 && !proc.parent) {
		const char *capture = getenv("MEMTRACE_CAPTURE");
		snprintf(start, sizeof(start), "%llu", (unsigned long long)wall_ns());
		set_meta_locked("memtrace_version", MT_VERSION);
		set_meta_locked("command_line", proc.command_line);
		set_meta_locked("host", host);
		set_meta_locked("start_ns", start);
		set_meta_locked("capture", capture && *capture ? capture : "as-is");
		set_meta_locked("capture_env", getenv("MEMTRACE_CAPTURE_ENV"));
		set_meta_locked("stacks", getenv("MEMTRACE_STACKS"));
		add_meta_locked("dropped_records", 0); /* there from the start */
	}
	pthread_mutex_unlock(&in->writer_lock);
	free(cmdline);
	if (rc < 0)
		return rc;
	/* Children name us as their parent. Set before the program starts
	 * threads of its own in most cases (cuInit is early). */
	snprintf(start, sizeof(start), "%u", in->process_row);
	setenv("MEMTRACE_PARENT_ROW", start, 1);
	snprintf(start, sizeof(start), "%ld", (long)in->pid);
	setenv("MEMTRACE_PARENT_PID", start, 1);
	return 0;
}

uint32_t mt_sink_intern_locked(const char *s)
{
	uint32_t id = 0;

	if (!mine() || !s)
		return 0;
	if (mt_writer_intern(mt_inject_state.writer, s, &id) < 0) {
		mt_inject_warn("cannot write the trace: %s",
		               mt_writer_message(mt_inject_state.writer));
		return 0;
	}
	return id;
}

void mt_sink_append_locked(struct mt_event *ev)
{
	struct mt_inject *in = &mt_inject_state;
	unsigned ordinal = ev->device;

	if (!mine())
		return;
	if (ordinal >= MT_INJECT_MAX_DEVICES)
		return;
	if (!in->device_rows[ordinal])
		in->device_rows[ordinal] = mt_device_row_locked(ordinal);
	ev->device = in->device_rows[ordinal];
	ev->process = in->process_row;
	if (mt_writer_append(in->writer, ev) < 0)
		mt_inject_warn("cannot write the trace: %s", mt_writer_message(in->writer));
}

void mt_sink_push(const struct mt_event *ev)
{
	struct mt_inject *in = &mt_inject_state;

	if (!atomic_load_explicit(&in->enabled, memory_order_relaxed))
		return;
	pthread_mutex_lock(&in->queue_lock);
	if (in->queue_len == in->queue_cap) {
		size_t cap = in->queue_cap ? in->queue_cap * 2 : 4096;
		struct mt_event *q = realloc(in->queue, cap * sizeof(*q));
		if (!q) {
			pthread_mutex_unlock(&in->queue_lock);
			mt_inject_warn("out of memory");
			return;
		}
		in->queue = q;
		in->queue_cap = cap;
	}
	in->queue[in->queue_len++] = *ev;
	pthread_mutex_unlock(&in->queue_lock);
}

/* Moves the queue into the writer; writer_lock held. The queue is swapped
 * out first so producers never wait for the writer. */
static void drain_queue_locked(void)
{
	struct mt_inject *in = &mt_inject_state;
	struct mt_event *q;
	size_t n, cap;

	pthread_mutex_lock(&in->queue_lock);
	q = in->queue;
	n = in->queue_len;
	cap = in->queue_cap;
	in->queue = NULL;
	in->queue_len = in->queue_cap = 0;
	pthread_mutex_unlock(&in->queue_lock);
	for (size_t i = 0; i < n; i++)
		mt_sink_append_locked(&q[i]);
	/* Give the array back for reuse if nobody made a new one meanwhile. */
	pthread_mutex_lock(&in->queue_lock);
	if (!in->queue && q) {
		in->queue = q;
		in->queue_cap = cap;
		q = NULL;
	}
	pthread_mutex_unlock(&in->queue_lock);
	free(q);
}

static void commit_locked(void)
{
	struct mt_inject *in = &mt_inject_state;

	in->dropped += mt_activity_drain_locked();
	mt_torch_drain();
	drain_queue_locked();
	if (mine() && mt_writer_flush(in->writer) < 0)
		mt_inject_warn("cannot write the trace: %s", mt_writer_message(in->writer));
}

/* A forced CUPTI flush hands over every buffer, with the records of kernels
 * and copies still running: those come back without times and are lost
 * (meta untimed_records; on a GPU-bound run, most of the launches queued at
 * each flush). An unforced one hands over only buffers whose records are
 * all complete, so a thread that always has work running keeps its buffer
 * until the buffer fills. The periodic flush is therefore forced only when
 * memory changed hands since the last one: allocation records then reach
 * the trace within the flush period, and kernels keep their times
 * otherwise. */
void mt_sink_flush(bool forced)
{
	if (!mine())
		return;
	cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
	pthread_mutex_lock(&mt_inject_state.writer_lock);
	commit_locked();
	pthread_mutex_unlock(&mt_inject_state.writer_lock);
}

void mt_sink_close(void)
{
	struct mt_inject *in = &mt_inject_state;

	if (!mine())
		return;
	atomic_store(&in->stopping, true);
	if (in->thread_started) {
		pthread_join(in->thread, NULL);
		in->thread_started = false;
	}
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	mt_torch_close();
	pthread_mutex_lock(&in->writer_lock);
	mt_activity_close_ranges_locked();
	commit_locked();
	/* One count for the trace: each process adds its own. */
	add_meta_locked("dropped_records", in->dropped);
	if (in->untimed)
		add_meta_locked("untimed_records", in->untimed);
	/* Closing the last connection folds the WAL into the trace file.
	 * Late events (static destructors after exit handlers) go nowhere. */
	atomic_store(&in->enabled, false);
	mt_writer_free(in->writer);
	in->writer = NULL;
	pthread_mutex_unlock(&in->writer_lock);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static atomic_int flush_request; /* 1 = asked by a signal handler, 2 = done */

static void *sink_thread(void *arg)
{
	struct mt_inject *in = &mt_inject_state;
	uint64_t last_flush = mono_ns(), last_sample = 0;
	uint64_t sample_ns = (uint64_t)in->sample_ms * 1000000ull;
	sigset_t all;

	(void)arg;
	pthread_setname_np(pthread_self(), "memtrace"); /* as top and py-spy show it */
	/* Signals are the program's business, not this thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!atomic_load(&in->stopping) && mine()) {
		struct timespec d = { 0, 5 * 1000000L };
		uint64_t now;

		nanosleep(&d, NULL);
		now = mono_ns();
		if (sample_ns && now - last_sample >= sample_ns) {
			mt_device_sample();
			last_sample = now;
		}
		if (atomic_load(&flush_request) == 1 || now - last_flush >= FLUSH_NS) {
			int asked = atomic_load(&flush_request) == 1;
			mt_sink_flush(asked || mt_callbacks_memory_changed());
			last_flush = now;
			if (asked)
				atomic_store(&flush_request, 2);
		}
	}
	return NULL;
}

static void at_exit(void)
{
	mt_sink_close();
}

/* Best effort on a signal: commit what the writer holds if nobody else is
 * writing, then let the previous disposition act. */
static void on_signal(int sig, siginfo_t *info, void *uctx)
{
	size_t i;

	for (i = 0; i < N_SIGNALS; i++)
		if (handled_signals[i] == sig)
			break;
	if (i == N_SIGNALS)
		return;
	if (previous_actions[i].sa_flags & SA_SIGINFO) {
		if (previous_actions[i].sa_sigaction) {
			previous_actions[i].sa_sigaction(sig, info, uctx);
			return;
		}
	} else if (previous_actions[i].sa_handler == SIG_IGN) {
		return;
	} else if (previous_actions[i].sa_handler != SIG_DFL) {
		previous_actions[i].sa_handler(sig);
		return;
	}
	/* Default disposition: terminate. Ask the flushing thread to save
	 * everything (CUPTI's buffers too) and give it half a second; nothing
	 * here takes a lock, so a crash inside the recorder cannot hang. */
	if (mine() && mt_inject_state.thread_started) {
		atomic_store(&flush_request, 1);
		for (int t = 0; t < 100 && atomic_load(&flush_request) != 2; t++) {
			struct timespec d = { 0, 5 * 1000000L };
			nanosleep(&d, NULL);
		}
	}
	sigaction(sig, &previous_actions[i], NULL);
	raise(sig);
}

static void after_fork_child(void)
{
	/* The child shares our database handle; it must not use it. A child
	 * that execs and initialises CUDA records itself anew. */
	atomic_store(&mt_inject_state.enabled, false);
	mt_inject_state.thread_started = false;
	mt_activity_after_fork_child();
	mt_torch_after_fork_child();
}

int mt_sink_start_thread(void)
{
	struct mt_inject *in = &mt_inject_state;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_SIGNALS; i++)
		sigaction(handled_signals[i], &sa, &previous_actions[i]);
	pthread_atfork(NULL, NULL, after_fork_child);
	atexit(at_exit);
	if (pthread_create(&in->thread, NULL, sink_thread, NULL) == 0)
		in->thread_started = true;
	return 0;
}
