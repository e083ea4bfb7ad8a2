/* inject-flush.c — the recorder's lifecycle: the thread that samples device
 * memory every MEMTRACE_SAMPLE_MS, takes PyTorch's events out of their
 * rings every ~5 ms and flushes every ~200 ms, the flush
 * itself (CUPTI's buffers, the PyTorch events, the sink's queue, in that
 * order, then one commit), the last flush at exit, on SIGINT/SIGTERM and
 * (best effort) on a crash, and the fork hook that keeps a child forked
 * without exec from writing through its parent's handle. The top of the
 * injection library below its entry point: it drives every producer.
 */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#include "inject-private.h"

#define FLUSH_NS (200ull * 1000 * 1000)

static const int handled_signals[] = { SIGINT, SIGTERM, SIGSEGV, SIGABRT, SIGBUS, SIGFPE };
#define N_SIGNALS (sizeof(handled_signals) / sizeof(handled_signals[0]))
static struct sigaction previous_actions[N_SIGNALS];

/* Everything the producers hold, into the trace; writer_lock held. */
static void commit_locked(void)
{
	rec_state.dropped += rec_activity_drain_locked();
	rec_launches_drain_locked();
	rec_torch_drain();
	rec_sink_commit_locked();
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
static void flush(bool forced)
{
	if (!rec_mine())
		return;
	cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
	pthread_mutex_lock(&rec_state.writer_lock);
	commit_locked();
	pthread_mutex_unlock(&rec_state.writer_lock);
}

/* The last flush, at exit: joins the thread, closes what is still open
 * and closes the trace. */
static void close_trace(void)
{
	struct rec_state *in = &rec_state;

	if (!rec_mine())
		return;
	atomic_store(&in->stopping, true);
	if (in->thread_started) {
		pthread_join(in->thread, NULL);
		in->thread_started = false;
	}
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	rec_torch_close();
	rec_capture_update();
	pthread_mutex_lock(&in->writer_lock);
	rec_activity_close_ranges_locked();
	commit_locked();
	rec_sink_close_locked();
	pthread_mutex_unlock(&in->writer_lock);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static atomic_int flush_request; /* 1 = asked by a signal handler, 2 = done */

static void *flush_thread(void *arg)
{
	struct rec_state *in = &rec_state;
	uint64_t last_flush = mono_ns(), last_sample = 0;
	uint64_t sample_ns = (uint64_t)in->sample_ms * 1000000ull;
	sigset_t all;

	(void)arg;
	pthread_setname_np(pthread_self(), "memtrace"); /* as top and py-spy show it */
	/* Signals are the program's business, not this thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!atomic_load(&in->stopping) && rec_mine()) {
		struct timespec d = { 0, 5 * 1000000L };
		uint64_t now;

		nanosleep(&d, NULL);
		now = mono_ns();
		if (sample_ns && now - last_sample >= sample_ns) {
			rec_sample_devices();
			last_sample = now;
		}
		rec_sample_pending();
		/* PyTorch's events between flushes too: the rings stay short,
		 * their records are read while still in cache, and a burst of
		 * events (token-by-token generation) does not fill a ring and
		 * make the allocating thread drain it under its lock. */
		rec_torch_drain();
		if (atomic_load(&flush_request) == 1 || now - last_flush >= FLUSH_NS) {
			int asked = atomic_load(&flush_request) == 1;
			rec_capture_update();
			flush(asked || rec_callbacks_memory_changed());
			last_flush = now;
			if (asked)
				atomic_store(&flush_request, 2);
		}
	}
	return NULL;
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
	if (rec_mine() && rec_state.thread_started) {
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
	atomic_store(&rec_state.enabled, false);
	rec_state.thread_started = false;
	rec_activity_after_fork_child();
	rec_torch_after_fork_child();
	rec_launches_after_fork_child();
	rec_capture_after_fork_child();
}

int rec_flush_start(void)
{
	struct rec_state *in = &rec_state;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_SIGNALS; i++)
		sigaction(handled_signals[i], &sa, &previous_actions[i]);
	pthread_atfork(NULL, NULL, after_fork_child);
	atexit(close_trace);
	if (pthread_create(&in->thread, NULL, flush_thread, NULL) == 0)
		in->thread_started = true;
	return 0;
}
