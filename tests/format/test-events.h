/* test-events.h — helpers shared by the format tests: random events of
 * every kind (from the common splitmix64), field-wise comparison, temporary
 * traces; the assertions are tests/tap.h's. */
#ifndef MEMTRACE_TEST_EVENTS_H
#define MEMTRACE_TEST_EVENTS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memtrace-common.h"
#include "memtrace-format.h"
#include "tap.h"

/* A value that is often small, sometimes huge, sometimes an extreme. */
static inline uint64_t rnd_value(uint64_t *s)
{
	switch (mt_splitmix64(s) % 6) {
	case 0:
		return 0;
	case 1:
		return UINT64_MAX - mt_splitmix64(s) % 3;
	case 2:
		return mt_splitmix64(s);
	default:
		return mt_splitmix64(s) % 5000;
	}
}

/* Fills the kind-specific fields of ev with random values in range. */
static inline void random_payload(struct mt_event *ev, uint64_t *s)
{
	switch (ev->kind) {
	case MT_EVENT_ALLOC:
	case MT_EVENT_FREE:
		ev->alloc.address = rnd_value(s);
		ev->alloc.bytes = rnd_value(s);
		ev->alloc.stream = mt_splitmix64(s) % 4 ? 7 : rnd_value(s);
		ev->alloc.correlation = rnd_value(s);
		ev->alloc.reuse_delay = mt_splitmix64(s) % 3 ? 0 : rnd_value(s);
		ev->alloc.site = (uint32_t)rnd_value(s);
		ev->alloc.layer = (uint8_t)(mt_splitmix64(s) % 2);
		ev->alloc.mem_kind = (uint8_t)mt_splitmix64(s);
		ev->alloc.api = (uint8_t)(mt_splitmix64(s) % 3 ? MT_API_TORCH : mt_splitmix64(s));
		break;
	case MT_EVENT_ALLOC_FAILED:
		ev->failed.bytes = rnd_value(s);
		ev->failed.free_bytes = rnd_value(s);
		ev->failed.stream = rnd_value(s);
		ev->failed.error = (uint32_t)rnd_value(s);
		ev->failed.site = (uint32_t)rnd_value(s);
		ev->failed.layer = (uint8_t)mt_splitmix64(s);
		ev->failed.api = (uint8_t)mt_splitmix64(s);
		break;
	case MT_EVENT_KERNEL:
		ev->kernel.end =
		        mt_splitmix64(s) % 5 ? ev->ts + mt_splitmix64(s) % 100000 : rnd_value(s);
		ev->kernel.stream = rnd_value(s);
		ev->kernel.correlation = rnd_value(s);
		ev->kernel.name = (uint32_t)rnd_value(s);
		for (int i = 0; i < 3; i++) {
			ev->kernel.grid[i] = (uint32_t)rnd_value(s);
			ev->kernel.block[i] = (uint32_t)rnd_value(s);
		}
		ev->kernel.shared_bytes = (uint32_t)rnd_value(s);
		break;
	case MT_EVENT_MEMCPY:
	case MT_EVENT_MEMSET:
		ev->copy.end = rnd_value(s);
		ev->copy.bytes = rnd_value(s);
		ev->copy.stream = rnd_value(s);
		ev->copy.copy_kind = (uint8_t)mt_splitmix64(s);
		break;
	case MT_EVENT_RANGE:
		ev->range.end =
		        mt_splitmix64(s) % 4 ? ev->ts + mt_splitmix64(s) % 1000 : MT_TIME_UNKNOWN;
		ev->range.name = (uint32_t)rnd_value(s);
		ev->range.domain = (uint32_t)rnd_value(s);
		ev->range.thread = (uint32_t)rnd_value(s);
		ev->range.depth = (uint32_t)rnd_value(s);
		break;
	case MT_EVENT_SAMPLE:
		ev->sample.used_bytes = rnd_value(s);
		ev->sample.process_bytes = rnd_value(s);
		break;
	case MT_EVENT_POOL:
		ev->pool.pool = rnd_value(s);
		ev->pool.reserved_bytes = rnd_value(s);
		ev->pool.used_bytes = rnd_value(s);
		ev->pool.op = (uint8_t)mt_splitmix64(s);
		break;
	}
}

/* Field-wise equality (padding may differ). */
static inline int events_equal(const struct mt_event *a, const struct mt_event *b)
{
	if (a->ts != b->ts || a->seq != b->seq || a->process != b->process ||
	    a->device != b->device || a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case MT_EVENT_ALLOC:
	case MT_EVENT_FREE:
		return a->alloc.address == b->alloc.address && a->alloc.bytes == b->alloc.bytes &&
		       a->alloc.stream == b->alloc.stream &&
		       a->alloc.correlation == b->alloc.correlation &&
		       a->alloc.reuse_delay == b->alloc.reuse_delay &&
		       a->alloc.site == b->alloc.site && a->alloc.layer == b->alloc.layer &&
		       a->alloc.mem_kind == b->alloc.mem_kind && a->alloc.api == b->alloc.api;
	case MT_EVENT_ALLOC_FAILED:
		return a->failed.bytes == b->failed.bytes &&
		       a->failed.free_bytes == b->failed.free_bytes &&
		       a->failed.stream == b->failed.stream && a->failed.error == b->failed.error &&
		       a->failed.site == b->failed.site && a->failed.layer == b->failed.layer &&
		       a->failed.api == b->failed.api;
	case MT_EVENT_KERNEL:
		return a->kernel.end == b->kernel.end && a->kernel.stream == b->kernel.stream &&
		       a->kernel.correlation == b->kernel.correlation &&
		       a->kernel.name == b->kernel.name &&
		       memcmp(a->kernel.grid, b->kernel.grid, sizeof(a->kernel.grid)) == 0 &&
		       memcmp(a->kernel.block, b->kernel.block, sizeof(a->kernel.block)) == 0 &&
		       a->kernel.shared_bytes == b->kernel.shared_bytes;
	case MT_EVENT_MEMCPY:
	case MT_EVENT_MEMSET:
		return a->copy.end == b->copy.end && a->copy.bytes == b->copy.bytes &&
		       a->copy.stream == b->copy.stream && a->copy.copy_kind == b->copy.copy_kind;
	case MT_EVENT_RANGE:
		return a->range.end == b->range.end && a->range.name == b->range.name &&
		       a->range.domain == b->range.domain && a->range.thread == b->range.thread &&
		       a->range.depth == b->range.depth;
	case MT_EVENT_SAMPLE:
		return a->sample.used_bytes == b->sample.used_bytes &&
		       a->sample.process_bytes == b->sample.process_bytes;
	case MT_EVENT_POOL:
		return a->pool.pool == b->pool.pool &&
		       a->pool.reserved_bytes == b->pool.reserved_bytes &&
		       a->pool.used_bytes == b->pool.used_bytes && a->pool.op == b->pool.op;
	}
	return 0;
}

/* Test files go under the build folder's cwd; returns "NAME.PID.db". */
static inline const char *temp_trace(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s.%ld.db", name, (long)getpid());
	return buf;
}

/* Removes a trace and its -wal and -shm files. */
static inline void remove_trace(const char *path)
{
	char buf[4096];
	unlink(path);
	snprintf(buf, sizeof(buf), "%s-wal", path);
	unlink(buf);
	snprintf(buf, sizeof(buf), "%s-shm", path);
	unlink(buf);
}

/* A copy of events[0, n) in the order the codec stores them: by (ts, seq),
 * stable for equal keys. malloc'd (room for n + 1); NULL when out of memory. */
struct keyed_event {
	struct mt_event ev;
	size_t index;
};

static inline int keyed_event_cmp(const void *a, const void *b)
{
	const struct keyed_event *x = a, *y = b;
	if (x->ev.ts != y->ev.ts)
		return x->ev.ts < y->ev.ts ? -1 : 1;
	if (x->ev.seq != y->ev.seq)
		return x->ev.seq < y->ev.seq ? -1 : 1;
	return x->index < y->index ? -1 : 1;
}

static inline struct mt_event *codec_order_copy(const struct mt_event *events, size_t n)
{
	struct keyed_event *k = malloc((n + 1) * sizeof(*k));
	struct mt_event *out = malloc((n + 1) * sizeof(*out));
	if (!k || !out) {
		free(k);
		free(out);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = (struct keyed_event){ .ev = events[i], .index = i };
	qsort(k, n, sizeof(*k), keyed_event_cmp);
	for (size_t i = 0; i < n; i++)
		out[i] = k[i].ev;
	free(k);
	return out;
}

#endif
