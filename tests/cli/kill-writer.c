/* kill-writer — test helper: writes a trace through the writer API and
 * kills itself with SIGKILL in the middle, as a recorder killed by the OOM
 * killer would die.
 *
 * Usage: kill-writer TRACE ROUNDS EVENTS
 * Each round appends EVENTS allocations of 64 KiB, then frees the EVENTS
 * blocks of the round before, then flushes (each flush commits everything
 * appended so far). After ROUNDS rounds it appends EVENTS more allocations
 * without flushing and sends itself SIGKILL. A reader must then find
 * ROUNDS * EVENTS allocs, (ROUNDS - 1) * EVENTS frees and a peak of
 * 2 * EVENTS * 64 KiB live, and nothing of the last, unflushed allocations
 * (the chunk size is above all the events of the run, so only flushes
 * write). Exits 1 with a message if the writer fails before that. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "memtrace-format.h"

#define BLOCK (64u << 10)
#define BASE 0x7f0000000000ull

static int append(struct mt_writer *w, unsigned kind, uint64_t index, uint64_t *ts)
{
	struct mt_event ev = { .kind = (uint8_t)kind, .process = 1, .device = 1 };

	ev.ts = *ts += 1000;
	ev.process = 1;
	ev.alloc.address = BASE + index * BLOCK;
	ev.alloc.bytes = BLOCK;
	ev.alloc.layer = MT_LAYER_DRIVER;
	ev.alloc.api = MT_API_CUDA_MALLOC;
	return mt_writer_append(w, &ev);
}

static int run(struct mt_writer *w, const char *path, uint64_t rounds, uint64_t events)
{
	const struct mt_process p = {
		.pid = 4321, .start_ns = 1000, .command_line = "kill-writer", .hostname = "test"
	};
	const struct mt_device d = { .total_bytes = 1ull << 30,
		                     .name = "test GPU",
		                     .uuid = "GPU-test",
		                     .driver_version = "",
		                     .cuda_version = "" };
	uint32_t pid, did;
	uint64_t ts = 1000000;
	int rc;

	rc = mt_writer_open(w, path, MT_WRITER_CREATE);
	if (!rc)
		rc = mt_writer_set_meta(w, "command_line", "kill-writer");
	if (!rc)
		rc = mt_writer_set_meta(w, "capture", "as-is");
	if (!rc)
		rc = mt_writer_add_process(w, &p, &pid);
	if (!rc)
		rc = mt_writer_add_device(w, &d, &did);
	if (rc || pid != 1 || did != 1)
		return rc ? rc : -1;
	/* only explicit flushes write chunks */
	mt_writer_set_chunk_events(w, (rounds + 1) * events + 1);
	for (uint64_t r = 0; r <= rounds; r++) {
		for (uint64_t i = 0; i < events && !rc; i++)
			rc = append(w, MT_EVENT_ALLOC, r * events + i, &ts);
		if (r == rounds)
			break; /* these stay buffered */
		for (uint64_t i = 0; i < events && r > 0 && !rc; i++)
			rc = append(w, MT_EVENT_FREE, (r - 1) * events + i, &ts);
		if (!rc)
			rc = mt_writer_flush(w);
		if (rc)
			return rc;
	}
	raise(SIGKILL);
	return -1;
}

int main(int argc, char **argv)
{
	struct mt_writer *w;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: kill-writer TRACE ROUNDS EVENTS\n");
		return 2;
	}
	w = mt_writer_new();
	if (!w)
		return 1;
	rc = run(w, argv[1], strtoull(argv[2], NULL, 10), strtoull(argv[3], NULL, 10));
	fprintf(stderr, "kill-writer: %s (%d)\n", mt_writer_message(w), rc);
	mt_writer_free(w);
	return 1;
}
