/* test-processes.c — what several processes do to one trace: a writer
 * killed with SIGKILL mid-write leaves an incomplete trace the reader opens
 * (with its -wal file, and again after the -shm file is gone) and reads up
 * to the end every kind covers, about every chunk the child reported
 * committed; four processes writing one trace at once leave
 * all their events, one device row for a shared uuid and string ids they
 * all agree on, and a meta count to which each adds its own share. A
 * killed writer's trace kept as FILE.1 (mt_trace_keep_previous) keeps its
 * -wal and every committed event. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test-events.h"

#define CHUNK 100

static struct mt_event nth_event(uint64_t i, uint32_t process, uint32_t device)
{
	struct mt_event ev = { .kind = i % 2 ? MT_EVENT_FREE : MT_EVENT_ALLOC,
		               .ts = 1000 + i / 2 * 10,
		               .process = process,
		               .device = device };
	ev.alloc.address = 0x7f0000000000ull + (i / 2) * 512;
	ev.alloc.bytes = 512;
	ev.alloc.correlation = i;
	return ev;
}

/* The child: writes events forever, reporting committed counts. */
static void killed_child(const char *path, int fd)
{
	struct mt_writer *w = mt_writer_new();
	uint32_t p, d;
	struct mt_process proc = { .pid = getpid(), .command_line = "child" };
	struct mt_device dev = { .uuid = "GPU-k" };
	if (mt_writer_open(w, path, MT_WRITER_CREATE) < 0 ||
	    mt_writer_add_process(w, &proc, &p) < 0 || mt_writer_add_device(w, &dev, &d) < 0)
		_exit(2);
	mt_writer_set_chunk_events(w, CHUNK);
	uint64_t reported = 0;
	for (uint64_t i = 0;; i++) {
		struct mt_event ev = nth_event(i, p, d);
		if (mt_writer_append(w, &ev) < 0)
			_exit(3);
		uint64_t written = mt_writer_events_written(w);
		if (written != reported) {
			reported = written;
			if (write(fd, &reported, sizeof(reported)) != sizeof(reported))
				_exit(4);
		}
	}
}

/* Reads a killed writer's trace: it is incomplete, and what the reader
 * gives is exactly the events before the end it reports (event i is at
 * 1000 + i / 2 * 10), allocs and frees alike. Returns their number. */
static uint64_t read_all_events(const char *path)
{
	struct mt_reader *r = mt_reader_new();
	uint64_t until, n = 0;
	int rc = mt_reader_open(r, path);
	CHECKF(rc == 0, "%s", mt_reader_message(r));
	REQUIRE(rc == 0);
	REQUIRE(mt_reader_process_count(r) == 1);
	CHECK(mt_reader_incomplete(r, &until) == 1 && until > 1000);
	uint32_t p = mt_reader_process(r, 0)->id, d = mt_reader_device(r, 0)->id;
	struct mt_iter *it;
	REQUIRE(mt_reader_iter(r, NULL, &it) == 0);
	struct mt_event ev;
	while ((rc = mt_iter_next(it, &ev)) == 1) {
		struct mt_event want = nth_event(n, p, d);
		want.seq = n;
		CHECKF(events_equal(&want, &ev), "event %" PRIu64 " differs", n);
		if (check_failed())
			break;
		n++;
	}
	CHECK(rc == 0 || check_failed());
	/* every event before the end is there: 2 per 10 ns from 1000 */
	CHECKF(n == 2 * ((until - 1001) / 10 + 1), "%" PRIu64 " events before %" PRIu64, n, until);
	mt_iter_free(it);
	mt_reader_free(r);
	return n;
}

static void test_sigkill(void)
{
	char path[256], wal[300];
	temp_trace(path, sizeof(path), "killed");
	remove_trace(path);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	int fds[2];
	REQUIRE(pipe(fds) == 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		killed_child(path, fds[1]);
	}
	close(fds[1]);
	uint64_t count = 0, reports = 0;
	while (reports < 20 && read(fds[0], &count, sizeof(count)) == sizeof(count))
		reports++;
	REQUIRE(reports == 20);
	kill(pid, SIGKILL);
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* Reports that were still in the pipe. */
	while (read(fds[0], &count, sizeof(count)) == sizeof(count))
		;
	close(fds[0]);
	CHECK(count >= 20 * CHUNK && count % CHUNK == 0);

	struct stat st;
	CHECK(stat(wal, &st) == 0 && st.st_size > 0);

	/* Kept as FILE.1 (a new recording to the same name), the -wal goes
	 * with it: nothing the killed writer committed is lost. */
	char old[300], old_wal[320], old_shm[320], kept[320], err[512];
	snprintf(old, sizeof(old), "%s.1", path);
	snprintf(old_wal, sizeof(old_wal), "%s-wal", old);
	snprintf(old_shm, sizeof(old_shm), "%s-shm", old);
	remove_trace(old);
	CHECKF(mt_trace_keep_previous(path, kept, sizeof(kept), err, sizeof(err)) == 1, "%s", err);
	CHECK(strcmp(kept, old) == 0);
	CHECK(access(path, F_OK) != 0 && access(wal, F_OK) != 0);
	CHECK(stat(old_wal, &st) == 0 && st.st_size > 0);
	/* nothing there: nothing to do */
	CHECK(mt_trace_keep_previous(path, kept, sizeof(kept), err, sizeof(err)) == 0);
	CHECK(kept[0] == '\0');

	/* The allocs and frees of every reported chunk are there, but for the
	 * chunk of one kind the other had not committed yet (and the chunk
	 * being committed when the signal came). */
	uint64_t n = read_all_events(old);
	CHECKF(n + CHUNK >= count && n <= count + CHUNK,
	       "%" PRIu64 " events, %" PRIu64 " reported committed", n, count);

	/* Without the -shm file the reader rebuilds what it needs. */
	CHECK(unlink(old_shm) == 0);
	CHECK(read_all_events(old) == n);
	remove_trace(old);
}

#define WRITERS 4
#define PER_WRITER 5000

struct report {
	uint32_t process, device, common, own;
};

/* Says why a writer child failed and exits with status. */
static void child_fail(struct mt_writer *w, int k, int status)
{
	fprintf(stderr, "child %d: %s\n", k, mt_writer_message(w));
	mt_writer_free(w);
	_exit(status);
}

static void concurrent_child(const char *path, int go, int out, int k)
{
	char c;
	if (read(go, &c, 1) != 1)
		_exit(2);
	struct mt_writer *w = mt_writer_new();
	struct report rep;
	char own[32];
	snprintf(own, sizeof(own), "child-%d", k);
	struct mt_process proc = { .pid = getpid() };
	struct mt_device dev = { .uuid = "GPU-shared", .name = "H100" };
	if (mt_writer_open(w, path, MT_WRITER_CREATE) < 0 ||
	    mt_writer_add_process(w, &proc, &rep.process) < 0 ||
	    mt_writer_add_device(w, &dev, &rep.device) < 0 ||
	    mt_writer_intern(w, "common", &rep.common) < 0 ||
	    mt_writer_intern(w, own, &rep.own) < 0 ||
	    mt_writer_add_meta_count(w, "dropped_records", 0) < 0)
		child_fail(w, k, 3);
	mt_writer_set_chunk_events(w, 250);
	for (uint64_t i = 0; i < PER_WRITER; i++) {
		struct mt_event ev = nth_event(i, rep.process, rep.device);
		ev.alloc.site = rep.own;
		if (mt_writer_append(w, &ev) < 0)
			child_fail(w, k, 4);
	}
	/* each writer's own count adds up: 1 + 2 + 3 + 4 */
	if (mt_writer_add_meta_count(w, "dropped_records", (uint64_t)k + 1) < 0)
		child_fail(w, k, 6);
	if (mt_writer_flush(w) < 0 || write(out, &rep, sizeof(rep)) != sizeof(rep))
		child_fail(w, k, 5);
	mt_writer_free(w);
	_exit(0);
}

static void test_concurrent_writers(void)
{
	char path[256];
	temp_trace(path, sizeof(path), "shared");
	remove_trace(path);
	int go[2], out[2];
	REQUIRE(pipe(go) == 0 && pipe(out) == 0);
	pid_t pids[WRITERS];
	for (int k = 0; k < WRITERS; k++) {
		pids[k] = fork();
		REQUIRE(pids[k] >= 0);
		if (pids[k] == 0) {
			close(go[1]);
			close(out[0]);
			concurrent_child(path, go[0], out[1], k);
		}
	}
	close(go[0]);
	close(out[1]);
	REQUIRE(write(go[1], "GOGO", WRITERS) == WRITERS); /* all start at once */
	close(go[1]);
	for (int k = 0; k < WRITERS; k++) {
		int status;
		REQUIRE(waitpid(pids[k], &status, 0) == pids[k]);
		CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d: status %d", k,
		       status);
	}
	struct report rep[WRITERS];
	REQUIRE(read(out[0], rep, sizeof(rep)) == sizeof(rep));
	close(out[0]);

	struct mt_reader *r = mt_reader_new();
	REQUIRE(mt_reader_open(r, path) == 0);
	CHECK(mt_reader_process_count(r) == WRITERS);
	CHECK(mt_reader_device_count(r) == 1);
	CHECK(mt_reader_meta(r, "dropped_records") &&
	      strcmp(mt_reader_meta(r, "dropped_records"), "10") == 0);
	for (int k = 0; k < WRITERS; k++) {
		CHECK(rep[k].device == rep[0].device && rep[k].common == rep[0].common);
		CHECK(strcmp(mt_reader_string(r, rep[k].common), "common") == 0);
		CHECK(strncmp(mt_reader_string(r, rep[k].own), "child-", 6) == 0);
		for (int j = 0; j < k; j++)
			CHECK(rep[j].own != rep[k].own && rep[j].process != rep[k].process);
	}
	struct mt_iter *it;
	REQUIRE(mt_reader_iter(r, NULL, &it) == 0);
	struct mt_event ev, prev = { 0 };
	uint64_t per[WRITERS] = { 0 }, n = 0;
	int rc;
	while ((rc = mt_iter_next(it, &ev)) == 1) {
		int k = 0;
		while (k < WRITERS && rep[k].process != ev.process)
			k++;
		REQUIRE(k < WRITERS);
		struct mt_event want = nth_event(per[k], rep[k].process, rep[k].device);
		want.seq = per[k]++;
		want.alloc.site = rep[k].own;
		CHECKF(events_equal(&want, &ev), "writer %d: event %" PRIu64 " differs", k,
		       per[k] - 1);
		if (n++ > 0)
			CHECK(prev.ts < ev.ts ||
			      (prev.ts == ev.ts &&
			       (prev.process < ev.process ||
			        (prev.process == ev.process && prev.seq < ev.seq))));
		prev = ev;
		if (check_failed())
			break;
	}
	CHECK(rc == 0);
	for (int k = 0; k < WRITERS; k++)
		CHECK(per[k] == PER_WRITER);
	mt_iter_free(it);
	mt_reader_free(r);
	remove_trace(path);
}

int main(void)
{
	TEST(test_sigkill);
	TEST(test_concurrent_writers);
	return check_done();
}
