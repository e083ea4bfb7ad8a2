/* test-synth.c — unit test of mt_synth_write: writes each pattern through
 * the writer and checks, through the reader, the structure the patterns
 * promise:
 *  - the number of alloc/free events is within 1% of what was asked;
 *  - no two live requests overlap in address (a caching allocator's
 *    placement), nothing is freed that was not allocated;
 *  - train: every request lies inside a driver-layer segment allocated
 *    before it; the requests never freed are the weights and their two
 *    Adam states (3 x (12 per layer + 3)); each step range holds forward,
 *    backward and optimizer in that order; kernels on the compute stream
 *    do not overlap; device samples cover the segments reserved.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memtrace-format.h"
#include "memtrace-synth.h"
#include "tap.h"

/* Live address ranges [start, end), kept sorted by start. */
struct ranges {
	uint64_t (*r)[2];
	size_t n, cap;
};

/* Index of the first range starting after addr. */
static size_t ranges_upper(const struct ranges *rs, uint64_t addr)
{
	size_t lo = 0, hi = rs->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (rs->r[mid][0] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Inserts [start, end); false if it overlaps a live range. */
static bool ranges_insert(struct ranges *rs, uint64_t start, uint64_t end)
{
	size_t i = ranges_upper(rs, start);

	if ((i > 0 && rs->r[i - 1][1] > start) || (i < rs->n && rs->r[i][0] < end))
		return false;
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 256;
		rs->r = realloc(rs->r, rs->cap * sizeof(*rs->r));
		REQUIRE(rs->r);
	}
	memmove(&rs->r[i + 1], &rs->r[i], (rs->n - i) * sizeof(*rs->r));
	rs->r[i][0] = start;
	rs->r[i][1] = end;
	rs->n++;
	return true;
}

/* Removes the range starting at start; false if there is none. */
static bool ranges_remove(struct ranges *rs, uint64_t start)
{
	size_t i = ranges_upper(rs, start);

	if (i == 0 || rs->r[i - 1][0] != start)
		return false;
	memmove(&rs->r[i - 1], &rs->r[i], (rs->n - i) * sizeof(*rs->r));
	rs->n--;
	return true;
}

/* Whether [start, end) lies inside one range. */
static bool ranges_cover(const struct ranges *rs, uint64_t start, uint64_t end)
{
	size_t i = ranges_upper(rs, start);
	return i > 0 && rs->r[i - 1][1] >= end;
}

struct walk {
	uint64_t overlaps, bad_frees, outside_segments, sample_below, kernel_overlaps;
	uint64_t never_freed, steps, bad_steps, segment_bytes;
};

static void check_events(struct mt_reader *r, bool train, struct walk *wk)
{
	struct ranges live = { 0 }, segments = { 0 };
	struct mt_query q = { 0 };
	struct mt_iter *it;
	struct mt_event ev;
	uint64_t last_kernel_end = 0, step_end = 0, phase_start = 0;
	const char *expect[] = { "forward", "backward", "optimizer" };
	unsigned phase = 3;
	int rc;

	rc = mt_reader_iter(r, &q, &it);
	while (rc >= 0 && (rc = mt_iter_next(it, &ev)) > 0) {
		switch (ev.kind) {
		case MT_EVENT_ALLOC:
			if (ev.alloc.layer == MT_LAYER_DRIVER) {
				wk->segment_bytes += ev.alloc.bytes;
				ranges_insert(&segments, ev.alloc.address,
				              ev.alloc.address + ev.alloc.bytes);
				break;
			}
			if (!ranges_insert(&live, ev.alloc.address,
			                   ev.alloc.address + ev.alloc.bytes))
				wk->overlaps++;
			if (train && !ranges_cover(&segments, ev.alloc.address,
			                           ev.alloc.address + ev.alloc.bytes))
				wk->outside_segments++;
			break;
		case MT_EVENT_FREE:
			if (ev.alloc.layer == MT_LAYER_REQUEST &&
			    !ranges_remove(&live, ev.alloc.address))
				wk->bad_frees++;
			break;
		case MT_EVENT_SAMPLE:
			if (ev.sample.used_bytes < wk->segment_bytes)
				wk->sample_below++;
			break;
		case MT_EVENT_KERNEL:
			if (ev.ts < last_kernel_end || ev.kernel.end < ev.ts)
				wk->kernel_overlaps++;
			last_kernel_end = ev.kernel.end;
			break;
		case MT_EVENT_RANGE: {
			const char *name = mt_reader_string(r, ev.range.name);
			if (ev.range.depth == 0) {
				if (phase != 3 || !name || strcmp(name, "step"))
					wk->bad_steps++;
				wk->steps++;
				phase = 0;
				phase_start = ev.ts;
				step_end = ev.range.end;
			} else if (phase >= 3 || !name || strcmp(name, expect[phase]) ||
			           ev.ts < phase_start || ev.range.end > step_end) {
				wk->bad_steps++;
			} else {
				phase++;
				phase_start = ev.range.end;
			}
			break;
		}
		}
	}
	CHECKF(rc == 0, "ordered walk ends cleanly (%d: %s)", rc, mt_reader_message(r));
	mt_iter_free(it);
	wk->never_freed = live.n;
	free(live.r);
	free(segments.r);
}

static void check_pattern(unsigned pattern, uint64_t events, uint64_t seed)
{
	static const char *const names[] = { "train", "random", "small" };
	char path[] = "/tmp/test-synth.XXXXXX", extra[64];
	struct mt_writer *w = mt_writer_new();
	struct mt_reader *r = mt_reader_new();
	struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { 0 };
	struct walk wk = { 0 };
	const char *p = names[pattern];
	bool train = pattern == MT_SYNTH_TRAIN;
	uint64_t n;
	int fd = mkstemp(path), rc;

	REQUIRE(fd >= 0 && w && r);
	close(fd);
	unlink(path);
	rc = mt_writer_open(w, path, MT_WRITER_CREATE);
	if (!rc)
		rc = mt_synth_write(w, pattern, events, seed);
	if (!rc)
		rc = mt_writer_flush(w);
	CHECKF(rc == 0, "%s seed %" PRIu64 ": written (%s)", p, seed, mt_writer_message(w));
	mt_writer_free(w);
	rc = mt_reader_open(r, path);
	if (!rc)
		rc = mt_reader_kind_stats(r, &q, stats);
	CHECKF(rc == 0, "%s: read back (%s)", p, mt_reader_message(r));
	if (rc)
		goto out;
	n = stats[MT_EVENT_ALLOC].events + stats[MT_EVENT_FREE].events;
	CHECKF(n * 100 >= events * 99 && n * 100 <= events * 101,
	       "%s: %" PRIu64 " alloc/free events for %" PRIu64 " asked", p, n, events);
	CHECKF(!strcmp(mt_reader_meta(r, "capture") ? mt_reader_meta(r, "capture") : "", "synth"),
	       "%s: capture is synth", p);
	CHECKF(mt_reader_device_count(r) == 1 && mt_reader_process_count(r) == 1 &&
	               mt_reader_device(r, 0)->total_bytes == 80ull << 30,
	       "%s: one process, one 80 GiB device", p);

	check_events(r, train, &wk);
	CHECKF(wk.overlaps == 0, "%s: %" PRIu64 " live requests overlap another", p, wk.overlaps);
	CHECKF(wk.bad_frees == 0, "%s: %" PRIu64 " frees of nothing live", p, wk.bad_frees);
	if (train) {
		CHECKF(wk.outside_segments == 0,
		       "train: %" PRIu64 " requests outside every segment", wk.outside_segments);
		CHECKF(wk.segment_bytes > 0 && wk.sample_below == 0,
		       "train: %" PRIu64 " samples below the reserved segments", wk.sample_below);
		CHECKF(wk.never_freed % 3 == 0 && wk.never_freed / 3 > 3 &&
		               (wk.never_freed / 3 - 3) % 12 == 0,
		       "train: %" PRIu64 " never-freed requests = weights and Adam states",
		       wk.never_freed);
		CHECKF(wk.steps > 0 && wk.bad_steps == 0,
		       "train: %" PRIu64 " steps, %" PRIu64
		       " out of forward/backward/optimizer order",
		       wk.steps, wk.bad_steps);
		CHECKF(stats[MT_EVENT_KERNEL].events > 0 && wk.kernel_overlaps == 0,
		       "train: %" PRIu64 " kernels, %" PRIu64 " overlapping",
		       stats[MT_EVENT_KERNEL].events, wk.kernel_overlaps);
	} else {
		CHECKF(wk.never_freed == 0, "%s: %" PRIu64 " requests left live at the end", p,
		       wk.never_freed);
		CHECKF(stats[MT_EVENT_KERNEL].events == 0 && stats[MT_EVENT_RANGE].events == 0,
		       "%s: no kernels or ranges", p);
	}
out:
	mt_reader_free(r);
	unlink(path);
	snprintf(extra, sizeof(extra), "%s-wal", path);
	unlink(extra);
	snprintf(extra, sizeof(extra), "%s-shm", path);
	unlink(extra);
}

static void test_train(void)
{
	for (uint64_t seed = 1; seed <= 2; seed++)
		check_pattern(MT_SYNTH_TRAIN, 30000, seed);
}

static void test_random(void)
{
	for (uint64_t seed = 1; seed <= 2; seed++)
		check_pattern(MT_SYNTH_RANDOM, 20000, seed);
}

static void test_small(void)
{
	for (uint64_t seed = 1; seed <= 2; seed++)
		check_pattern(MT_SYNTH_SMALL, 20000, seed);
}

int main(void)
{
	TEST(test_train);
	TEST(test_random);
	TEST(test_small);
	return check_done();
}
