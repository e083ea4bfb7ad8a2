/* inject-sink.c — where recorded events go: the trace this process writes
 * (opened with its process row and the run's meta), the writer behind one
 * mutex, the interned strings, and a queue that cheap producers append to
 * from any thread. It drives nothing: the flushing thread (inject-flush.c)
 * decides when the queue and the producers' buffers are committed. Only
 * the process that opened the writer writes through it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inject-private.h"

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
	if (value && rec_state.writer && mt_writer_set_meta(rec_state.writer, key, value) < 0)
		rec_warn("cannot write the trace: %s", mt_writer_message(rec_state.writer));
}

static void add_meta_locked(const char *key, uint64_t delta)
{
	if (rec_state.writer && mt_writer_add_meta_count(rec_state.writer, key, delta) < 0)
		rec_warn("cannot write the trace: %s", mt_writer_message(rec_state.writer));
}

int rec_sink_open(const char *capture)
{
	struct rec_state *in = &rec_state;
	struct mt_process proc = { 0 };
	char path[PATH_MAX], host[256] = "", start[32];
	const char *parent = getenv("MEMTRACE_PARENT_ROW");
	const char *parent_pid = getenv("MEMTRACE_PARENT_PID");
	char *cmdline;
	int rc;

	in->pid = getpid();
	if ((rc = output_path(path, sizeof(path))) < 0) {
		rec_warn("the output path is too long");
		return rc;
	}
	keep_earlier_trace(path);
	in->writer = mt_writer_new();
	if (!in->writer) {
		rec_warn("out of memory");
		return -ENOMEM;
	}
	rc = mt_writer_open(in->writer, path, MT_WRITER_CREATE);
	if (rc < 0) {
		rec_warn("cannot open %s: %s", path, mt_writer_message(in->writer));
		mt_writer_free(in->writer);
		in->writer = NULL;
		return rc;
	}
	gethostname(host, sizeof(host) - 1);
	cmdline = read_cmdline();
	proc.pid = in->pid;
	proc.start_ns = rec_now();
	proc.command_line = cmdline ? cmdline : "";
	proc.hostname = host;
	proc.capture = capture;
	/* The parent row is only ours to name if the parent process really
	 * is our parent (not an unrelated program that inherited the env). */
	if (parent && parent_pid && atol(parent_pid) == (long)getppid())
		proc.parent = (uint32_t)strtoul(parent, NULL, 10);
	pthread_mutex_lock(&in->writer_lock);
	rc = mt_writer_add_process(in->writer, &proc, &in->process_row);
	if (rc < 0)
		rec_warn("cannot write %s: %s", path, mt_writer_message(in->writer));
	in->root = !proc.parent;
	if (rc == 0 && !proc.parent) {
		snprintf(start, sizeof(start), "%llu", (unsigned long long)wall_ns());
		set_meta_locked("memtrace_version", MT_VERSION);
		set_meta_locked("command_line", proc.command_line);
		set_meta_locked("host", host);
		set_meta_locked("start_ns", start);
		set_meta_locked("capture", capture);
		set_meta_locked("capture_env", getenv("MEMTRACE_CAPTURE_ENV"));
		set_meta_locked("stacks", getenv("MEMTRACE_STACKS"));
		set_meta_locked("kernels", mt_record_kernels_name(rec_state.kernels));
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

void rec_sink_set_capture(const char *capture)
{
	struct rec_state *in = &rec_state;

	if (!rec_mine())
		return;
	pthread_mutex_lock(&in->writer_lock);
	if (mt_writer_set_process_capture(in->writer, in->process_row, capture) < 0)
		rec_warn("cannot write the trace: %s", mt_writer_message(in->writer));
	if (in->root)
		set_meta_locked("capture", capture);
	pthread_mutex_unlock(&in->writer_lock);
}

uint32_t rec_sink_intern_locked(const char *s)
{
	uint32_t id = 0;

	if (!rec_mine() || !s)
		return 0;
	if (mt_writer_intern(rec_state.writer, s, &id) < 0) {
		rec_warn("cannot write the trace: %s", mt_writer_message(rec_state.writer));
		return 0;
	}
	return id;
}

void rec_sink_append_locked(struct mt_event *ev)
{
	struct rec_state *in = &rec_state;
	unsigned ordinal = ev->device;

	if (!rec_mine())
		return;
	if (ordinal >= REC_MAX_DEVICES)
		return;
	if (!in->device_rows[ordinal])
		in->device_rows[ordinal] = rec_device_row_locked(ordinal);
	ev->device = in->device_rows[ordinal];
	ev->process = in->process_row;
	if (mt_writer_append(in->writer, ev) < 0)
		rec_warn("cannot write the trace: %s", mt_writer_message(in->writer));
}

void rec_sink_push(const struct mt_event *ev)
{
	struct rec_state *in = &rec_state;

	if (!atomic_load_explicit(&in->enabled, memory_order_relaxed))
		return;
	pthread_mutex_lock(&in->queue_lock);
	if (in->queue_len == in->queue_cap) {
		size_t cap = in->queue_cap ? in->queue_cap * 2 : 4096;
		struct mt_event *q = realloc(in->queue, cap * sizeof(*q));
		if (!q) {
			pthread_mutex_unlock(&in->queue_lock);
			rec_warn("out of memory");
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
	struct rec_state *in = &rec_state;
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
		rec_sink_append_locked(&q[i]);
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

void rec_sink_commit_locked(void)
{
	drain_queue_locked();
	if (rec_mine() && mt_writer_flush(rec_state.writer) < 0)
		rec_warn("cannot write the trace: %s", mt_writer_message(rec_state.writer));
}

void rec_sink_close_locked(void)
{
	struct rec_state *in = &rec_state;

	/* One count for the trace: each process adds its own. */
	add_meta_locked("dropped_records", in->dropped);
	if (in->untimed)
		add_meta_locked("untimed_records", in->untimed);
	/* Closing the last connection folds the WAL into the trace file.
	 * Late events (static destructors after exit handlers) go nowhere. */
	atomic_store(&in->enabled, false);
	mt_writer_free(in->writer);
	in->writer = NULL;
}
