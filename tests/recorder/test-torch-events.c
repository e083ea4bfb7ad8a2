/* test-torch-events.c — PyTorch allocator events through the recorder's
 * torch path (recorder/inject-torch.c and its ring), without CUDA: the
 * pieces of the injection library it calls (the sink's queue, CUPTI's clock
 * and stream ids, call sites) are stubs here that record what they are
 * given.
 *
 * Checks that the calling thread only queues (nothing reaches the sink
 * before a drain), what a drain emits and in which order (frees paired with
 * their reuse delay, pool totals, OOM), stream ids per device and thread, a
 * full ring drained by its producer, the frees still pending at close, and
 * a child forked while another thread was inside a drain: it must neither
 * hang on the torch lock nor write the parent's events; and the readings of
 * device memory asked for after an OOM and after a segment that raises the
 * reserved peak; and with PyTorch's clock given, events stamped with its
 * ticks and mapped onto the recorder's clock at the drain.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inject-private.h"
#include "memtrace-recorder.h"
#include "tap.h"

enum {
	ALLOC = 0,
	FREE_REQUESTED = 1,
	FREE_COMPLETED = 2,
	SEGMENT_ALLOC = 3,
	SEGMENT_FREE = 4,
	OOM = 7,
};

#define STACKS_SITE 99 /* what the rec_stacks_site stub answers */

void memtrace_torch_event(int action, int device, uint64_t address, uint64_t bytes, uint64_t stream,
                          uint32_t site, uint64_t ticks);
void memtrace_torch_clock(uint64_t (*ticks_now)(void));

/* ---- the stubs ---- */

struct rec_state rec_state;

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mt_event *sunk; /* what rec_sink_push was given, in order */
static size_t sunk_len, sunk_cap;
static atomic_uint_fast64_t now_ns;
static atomic_int stream_lookups;
static __thread int current_device; /* the "current context" of a thread */
static atomic_int block_push;       /* 1: the next rec_sink_push waits for 0 again */
static atomic_int blocked;          /* a push is waiting */

void rec_warn(const char *fmt, ...)
{
	atomic_store(&rec_state.enabled, false);
}

uint64_t rec_now(void)
{
	return atomic_fetch_add(&now_ns, 10) + 10;
}

uint32_t rec_stacks_site(void)
{
	return STACKS_SITE;
}

/* 1000 + the handle, or for the default stream 2000 + the current device */
uint32_t rec_device_stream_id(uint64_t stream)
{
	atomic_fetch_add(&stream_lookups, 1);
	return stream ? (uint32_t)(1000 + stream) : (uint32_t)(2000 + current_device);
}

void rec_sink_push(const struct mt_event *ev)
{
	int one = 1;

	if (atomic_compare_exchange_strong(&block_push, &one, 2)) {
		atomic_store(&blocked, 1);
		while (atomic_load(&block_push) == 2)
			sched_yield();
	}
	pthread_mutex_lock(&sink_lock);
	if (sunk_len == sunk_cap) {
		sunk_cap = sunk_cap ? 2 * sunk_cap : 1024;
		sunk = realloc(sunk, sunk_cap * sizeof(*sunk));
		if (!sunk)
			abort();
	}
	sunk[sunk_len++] = *ev;
	pthread_mutex_unlock(&sink_lock);
}

/* The readings asked for: 'p' peak or 'f' failure, device, and the clock
 * then (the ts of the event just queued). */
static struct {
	char what;
	unsigned device;
	uint64_t at;
} readings[16];
static int n_readings;

static void asked(char what, unsigned device)
{
	if (n_readings < 16)
		readings[n_readings++] =
		        (typeof(readings[0])){ what, device, atomic_load(&now_ns) };
}

void rec_sample_peak(unsigned ordinal)
{
	asked('p', ordinal);
}

void rec_sample_failure(unsigned ordinal)
{
	asked('f', ordinal);
}

static size_t sunk_count(void)
{
	size_t n;

	pthread_mutex_lock(&sink_lock);
	n = sunk_len;
	pthread_mutex_unlock(&sink_lock);
	return n;
}

/* ---- the cases ---- */

static bool is_request(const struct mt_event *ev, unsigned kind, uint64_t ts, uint64_t address,
                       uint64_t bytes, uint64_t stream)
{
	return ev->kind == kind && ev->ts == ts && ev->alloc.address == address &&
	       ev->alloc.bytes == bytes && ev->alloc.stream == stream &&
	       ev->alloc.layer == MT_LAYER_REQUEST && ev->alloc.mem_kind == MT_MEM_DEVICE &&
	       ev->alloc.api == MT_API_TORCH;
}

static bool is_pool(const struct mt_event *ev, uint64_t ts, unsigned op, uint64_t reserved,
                    uint64_t used)
{
	return ev->kind == MT_EVENT_POOL && ev->ts == ts && ev->pool.pool == MT_TORCH_POOL &&
	       ev->pool.op == op && ev->pool.reserved_bytes == reserved &&
	       ev->pool.used_bytes == used;
}

/* One of each, on one device: what comes out, in order. */
static void test_sequence(void)
{
	size_t base = sunk_count();
	const struct mt_event *e;

	atomic_store(&now_ns, 0);
	memtrace_torch_event(SEGMENT_ALLOC, 0, 0x100000, 2 * MiB, 7, 0, 0); /* ts 10 */
	memtrace_torch_event(ALLOC, 0, 0x100000, 512, 7, 5, 0);             /* 20 */
	memtrace_torch_event(ALLOC, 0, 0x100200, 1024, 7, 0, 0);            /* 30 */
	memtrace_torch_event(FREE_REQUESTED, 0, 0x100000, 512, 7, 0, 0);    /* 40 */
	memtrace_torch_event(ALLOC, 0, 0x100600, 256, 0, 6, 0);             /* 50 */
	memtrace_torch_event(FREE_COMPLETED, 0, 0x100000, 0, 7, 0, 0);      /* 60 */
	memtrace_torch_event(SEGMENT_FREE, 0, 0x100000, 2 * MiB, 7, 0, 0);  /* 70 */
	memtrace_torch_event(OOM, 0, 12345, 1 * GiB, 7, 0, 0);              /* 80 */
	/* the calling thread only queued them */
	CHECK(sunk_count() == base);
	rec_torch_drain();
	CHECK(sunk_count() == base + 7);
	if (sunk_count() != base + 7)
		return;
	e = &sunk[base];
	CHECK(e[0].device == 0);
	CHECK(is_pool(&e[0], 10, MT_POOL_GROW, 2 * MiB, 0));
	CHECK(is_request(&e[1], MT_EVENT_ALLOC, 20, 0x100000, 512, 1007));
	CHECK(e[1].alloc.site == 5);
	CHECK(is_request(&e[2], MT_EVENT_ALLOC, 30, 0x100200, 1024, 1007));
	CHECK(e[2].alloc.site == STACKS_SITE);
	CHECK(is_request(&e[3], MT_EVENT_ALLOC, 50, 0x100600, 256, 2000));
	CHECK(e[3].alloc.site == 6);
	/* the free at its request, delayed until its completion */
	CHECK(is_request(&e[4], MT_EVENT_FREE, 40, 0x100000, 512, 1007));
	CHECK(e[4].alloc.reuse_delay == 20);
	CHECK(is_pool(&e[5], 70, MT_POOL_TRIM, 0, 1024 + 256));
	CHECK(e[6].kind == MT_EVENT_ALLOC_FAILED && e[6].ts == 80);
	CHECK(e[6].failed.bytes == 1 * GiB && e[6].failed.free_bytes == 12345);
	CHECK(e[6].failed.stream == 1007 && e[6].failed.error == 2);
	CHECK(e[6].failed.site == STACKS_SITE && e[6].failed.api == MT_API_TORCH);
	CHECK(e[6].failed.layer == MT_LAYER_REQUEST);
	/* freed again, so the next cases start from zero on device 0 */
	memtrace_torch_event(FREE_REQUESTED, 0, 0x100200, 1024, 7, 0, 0);
	memtrace_torch_event(FREE_COMPLETED, 0, 0x100200, 0, 7, 0, 0);
	memtrace_torch_event(FREE_REQUESTED, 0, 0x100600, 256, 0, 0, 0);
	memtrace_torch_event(FREE_COMPLETED, 0, 0x100600, 0, 0, 0, 0);
	rec_torch_drain();
}

static void *alloc_on_stream_7(void *arg)
{
	memtrace_torch_event(ALLOC, 0, 0x200000, 64, 7, 1, 0);
	return NULL;
}

/* CUPTI is asked once per (device, stream); the default stream's id is the
 * current device's, so it is kept per device. */
static void test_streams(void)
{
	int before = atomic_load(&stream_lookups);
	size_t base = sunk_count();
	pthread_t t;

	for (int i = 0; i < 100; i++)
		memtrace_torch_event(ALLOC, 0, 0x300000 + 0x100 * (uint64_t)i, 64, 7, 1, 0);
	pthread_create(&t, NULL, alloc_on_stream_7, NULL);
	pthread_join(t, NULL);
	current_device = 1;
	memtrace_torch_event(ALLOC, 1, 0x400000, 64, 0, 1, 0);
	current_device = 0;
	memtrace_torch_event(ALLOC, 0, 0x400100, 64, 0, 1, 0);
	memtrace_torch_event(ALLOC, 1, 0x400200, 64, 0, 1, 0);
	memtrace_torch_event(ALLOC, 0, 0x400300, 64, 7, 1, 0);
	rec_torch_drain();
	/* (0, 7) and (0, 0) were known from test_sequence; (1, 0) is new */
	CHECK(atomic_load(&stream_lookups) == before + 1);
	CHECK(sunk_count() == base + 105);
	if (sunk_count() != base + 105)
		return;
	for (size_t i = 0; i < 101; i++)
		CHECK(sunk[base + i].alloc.stream == 1007);
	/* device 1's ring is drained after device 0's */
	CHECK(sunk[base + 101].alloc.address == 0x400100 && sunk[base + 101].alloc.stream == 2000);
	CHECK(sunk[base + 102].alloc.address == 0x400300 && sunk[base + 102].alloc.stream == 1007);
	CHECK(sunk[base + 103].alloc.address == 0x400000 && sunk[base + 103].alloc.stream == 2001);
	CHECK(sunk[base + 104].alloc.address == 0x400200 && sunk[base + 104].alloc.stream == 2001);
}

/* More events than a ring holds, none drained by the flushing thread: the
 * producer drains its ring itself and nothing is lost or reordered. */
static void test_full_ring(void)
{
	const uint64_t n = 3 * 65536 + 100;
	size_t base = sunk_count();
	size_t mid, wrong = 0;

	for (uint64_t i = 0; i < n; i++)
		memtrace_torch_event(ALLOC, 2, 0x1000 * (i + 1), 16, 7, 1, 0);
	mid = sunk_count() - base;
	CHECK(mid > 0 && mid < n);
	memtrace_torch_event(SEGMENT_ALLOC, 2, 0, 2 * MiB, 7, 0, 0);
	rec_torch_drain();
	CHECK(sunk_count() == base + n + 1);
	if (sunk_count() != base + n + 1)
		return;
	for (uint64_t i = 0; i < n; i++)
		if (sunk[base + i].alloc.address != 0x1000 * (i + 1))
			wrong++;
	CHECK(wrong == 0);
	/* the totals went through every record */
	CHECK(sunk[base + n].kind == MT_EVENT_POOL && sunk[base + n].pool.used_bytes == 16 * n);
}

/* At close, frees requested and never completed are emitted after the
 * queued events, with no reuse delay. */
static void test_close(void)
{
	size_t base = sunk_count();

	atomic_store(&now_ns, 1000);
	memtrace_torch_event(FREE_REQUESTED, 3, 0xabc000, 4096, 7, 0, 0); /* ts 1010 */
	memtrace_torch_event(ALLOC, 3, 0xdef000, 128, 7, 1, 0);           /* 1020 */
	rec_torch_close();
	CHECK(sunk_count() == base + 2);
	if (sunk_count() != base + 2)
		return;
	CHECK(is_request(&sunk[base], MT_EVENT_ALLOC, 1020, 0xdef000, 128, 1007));
	CHECK(is_request(&sunk[base + 1], MT_EVENT_FREE, 1010, 0xabc000, 4096, 1007));
	CHECK(sunk[base + 1].alloc.reuse_delay == 0);
}

static void *drain_thread(void *arg)
{
	rec_torch_drain();
	return NULL;
}

/* A child forked while another thread holds the torch lock (inside a
 * drain) and records are still queued. */
static void test_fork(void)
{
	size_t base = sunk_count();
	pthread_t t;
	pid_t child;
	int status = -1;

	for (uint64_t i = 1; i <= 3; i++)
		memtrace_torch_event(ALLOC, 4, 0xa0 + i, 8, 7, 1, 0);
	atomic_store(&blocked, 0);
	atomic_store(&block_push, 1);
	pthread_create(&t, NULL, drain_thread, NULL);
	while (!atomic_load(&blocked))
		sched_yield();
	child = fork();
	if (child == 0) {
		size_t child_base = sunk_count();
		alarm(20); /* a hang on the torch lock fails the case */
		rec_torch_after_fork_child();
		memtrace_torch_event(ALLOC, 4, 0xc1, 8, 7, 1, 0);
		rec_torch_drain();
		CHECK(sunk_count() == child_base + 1);
		CHECK(sunk_len > 0 && sunk[sunk_len - 1].alloc.address == 0xc1);
		_exit(check_failed() ? 1 : 0);
	}
	CHECK(child > 0);
	atomic_store(&block_push, 0);
	pthread_join(t, NULL);
	if (child > 0)
		CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0);
	rec_torch_drain();
	CHECK(sunk_count() == base + 3);
	for (size_t i = 0; i < 3 && base + i < sunk_count(); i++)
		CHECK(sunk[base + i].alloc.address == 0xa1 + i);
}

/* A reading after each segment that raises the reserved peak (not after
 * one below it) and after each OOM, once the event is queued. */
static void test_readings(void)
{
	static const struct {
		int action;
		uint64_t bytes;
	} seq[] = {
		{ SEGMENT_ALLOC, 4 * MiB }, /* 4: peak */
		{ SEGMENT_ALLOC, 2 * MiB }, /* 6: peak */
		{ SEGMENT_FREE, 4 * MiB },  /* 2 */
		{ SEGMENT_ALLOC, 3 * MiB }, /* 5: below */
		{ SEGMENT_ALLOC, 2 * MiB }, /* 7: peak */
		{ OOM, 1 * GiB },
	};
	static const char want[] = "pppf";
	uint64_t ts[6];

	n_readings = 0;
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		memtrace_torch_event(seq[i].action, 5, 0x900000, seq[i].bytes, 7, 0, 0);
		ts[i] = atomic_load(&now_ns);
	}
	rec_torch_drain();
	CHECKF(n_readings == 4, "%d readings", n_readings);
	for (int i = 0; i < n_readings && i < 4; i++)
		CHECKF(readings[i].what == want[i] && readings[i].device == 5, "reading %d: %c %u",
		       i, readings[i].what, readings[i].device);
	if (n_readings == 4)
		CHECK(readings[0].at == ts[0] && readings[1].at == ts[1] &&
		      readings[2].at == ts[4] && readings[3].at == ts[5]);
}

static void test_disabled(void)
{
	size_t base = sunk_count();

	atomic_store(&rec_state.enabled, false);
	memtrace_torch_event(ALLOC, 0, 0x500000, 64, 7, 1, 0);
	atomic_store(&rec_state.enabled, true);
	memtrace_torch_event(ALLOC, -1, 0x500000, 64, 7, 1, 0);
	memtrace_torch_event(ALLOC, REC_MAX_DEVICES, 0x500000, 64, 7, 1, 0);
	rec_torch_drain();
	CHECK(sunk_count() == base);
}

/* PyTorch's clock as the fake has it: 3 ticks a nanosecond of the rec_now
 * stub's clock, from 1000 (read without moving that clock). */
static uint64_t fake_ticks(void)
{
	return 3 * atomic_load(&now_ns) + 1000;
}

/* With PyTorch's clock given, the calling thread reads no clock of its own,
 * and a drain maps the ticks each event carries onto rec_now's nanoseconds
 * (to within the anchors' 5 ns: ticks are read between two rec_now calls
 * 10 ns apart and pinned to their middle). Last: the clock stays given. */
static void test_clock(void)
{
	size_t base = sunk_count();
	uint64_t before, at[3];
	const struct mt_event *e;

	memtrace_torch_clock(fake_ticks);
	atomic_fetch_add(&now_ns, 1000000);
	before = atomic_load(&now_ns);
	at[0] = before - 900000;
	at[1] = before - 400000;
	at[2] = before - 123;
	memtrace_torch_event(ALLOC, 6, 0x700000, 64, 7, 1, 3 * at[0] + 1000);
	memtrace_torch_event(FREE_REQUESTED, 6, 0x700000, 64, 7, 0, 3 * at[1] + 1000);
	memtrace_torch_event(FREE_COMPLETED, 6, 0x700000, 0, 7, 0, 3 * at[2] + 1000);
	CHECK(atomic_load(&now_ns) == before);
	rec_torch_drain();
	CHECK(sunk_count() == base + 2);
	if (sunk_count() != base + 2)
		return;
	e = &sunk[base];
	CHECK(e[0].kind == MT_EVENT_ALLOC && e[0].ts + 10 >= at[0] && e[0].ts <= at[0] + 10);
	CHECK(e[1].kind == MT_EVENT_FREE && e[1].ts + 10 >= at[1] && e[1].ts <= at[1] + 10);
	CHECK(e[1].alloc.reuse_delay + 10 >= at[2] - at[1] &&
	      e[1].alloc.reuse_delay <= at[2] - at[1] + 10);
	/* given again, the first clock stays */
	memtrace_torch_clock(NULL);
	memtrace_torch_event(ALLOC, 6, 0x700000, 64, 7, 1, 3 * (before + 50) + 1000);
	rec_torch_drain();
	CHECK(sunk_count() == base + 3 && sunk[base + 2].ts + 10 >= before + 50 &&
	      sunk[base + 2].ts <= before + 60);
}

int main(void)
{
	atomic_store(&rec_state.enabled, true);
	/* in this order: each case starts where the one before left off */
	TEST(test_sequence);
	TEST(test_streams);
	TEST(test_full_ring);
	TEST(test_close);
	TEST(test_fork);
	TEST(test_readings);
	TEST(test_disabled);
	TEST(test_clock);
	free(sunk);
	return check_done();
}
