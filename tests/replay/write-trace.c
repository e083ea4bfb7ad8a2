/* write-trace.c — writes the small hand-worked trace the replay CLI tests
 * use: on device 1, A 4 MiB at 10 ns, B 2 MiB at 20, A freed at 30,
 * C 4 MiB at 40, B freed at 50, C freed at 60 (lower bound 6 MiB); plus
 * driver-layer segments that replay must ignore (the request layer wins).
 * usage: write-trace PATH; write-trace --synth N PATH writes instead a
 * random stream of N allocations (synth-stream.h); write-trace --replays
 * PATH lists the saved replays (policy backend series_len peak_reserved
 * from the JSON) one a line. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace-format.h"
#include "synth-stream.h"

#define MiB (1ull << 20)

static int put(struct mt_writer *w, uint32_t proc, uint32_t dev, unsigned kind, uint64_t ts,
               uint64_t address, uint64_t bytes, unsigned layer)
{
	struct mt_event e;
	memset(&e, 0, sizeof(e));
	e.kind = (uint8_t)kind;
	e.ts = ts;
	e.process = proc;
	e.device = dev;
	e.alloc.address = address;
	e.alloc.bytes = bytes;
	e.alloc.layer = (uint8_t)layer;
	e.alloc.api = MT_API_SYNTH;
	return mt_writer_append(w, &e);
}

static int list_replays(const char *path)
{
	struct mt_reader *r = mt_reader_new();
	const struct mt_replay_record *rec;
	size_t n = 0;
	int rc = mt_reader_open(r, path);
	if (!rc)
		rc = mt_reader_replays(r, &rec, &n);
	for (size_t i = 0; !rc && i < n; i++) {
		const char *peak = strstr(rec[i].result_json, "\"peak_reserved\":");
		printf("%s %s %zu %s\n", rec[i].policy, rec[i].backend, rec[i].series_len,
		       peak ? peak : "-");
	}
	if (rc)
		fprintf(stderr, "write-trace: %s\n", mt_reader_message(r));
	mt_reader_free(r);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct mt_event *synth = NULL;
	size_t nsynth = 0;
	if (argc == 3 && !strcmp(argv[1], "--replays"))
		return list_replays(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "--synth")) {
		if (synth_stream(3, strtoull(argv[2], NULL, 10), 500, 64 * MiB, &synth, &nsynth) <
		    0)
			return 1;
		argv[1] = argv[3];
		argc = 2;
	}
	if (argc != 2)
		return 2;
	struct mt_writer *w = mt_writer_new();
	struct mt_process p = { .pid = 42, .command_line = "test", .hostname = "test" };
	struct mt_device d = { .ordinal = 0,
		               .total_bytes = 80ull << 30,
		               .name = "Test GPU",
		               .uuid = "GPU-test",
		               .driver_version = "0",
		               .cuda_version = "0" };
	uint32_t pid, did;
	int rc = mt_writer_open(w, argv[1], MT_WRITER_CREATE);
	if (!rc)
		rc = mt_writer_add_process(w, &p, &pid);
	if (!rc)
		rc = mt_writer_add_device(w, &d, &did);
	const struct {
		unsigned kind;
		uint64_t ts, address, bytes;
		unsigned layer;
	} ev[] = {
		{ MT_EVENT_ALLOC, 5, 0x7000000, 20 * MiB, MT_LAYER_DRIVER },
		{ MT_EVENT_ALLOC, 10, 0x7000000, 4 * MiB, MT_LAYER_REQUEST },
		{ MT_EVENT_ALLOC, 20, 0x7400000, 2 * MiB, MT_LAYER_REQUEST },
		{ MT_EVENT_FREE, 30, 0x7000000, 0, MT_LAYER_REQUEST },
		{ MT_EVENT_ALLOC, 40, 0x7000000, 4 * MiB, MT_LAYER_REQUEST },
		{ MT_EVENT_FREE, 50, 0x7400000, 0, MT_LAYER_REQUEST },
		{ MT_EVENT_FREE, 60, 0x7000000, 0, MT_LAYER_REQUEST },
	};
	for (size_t i = 0; !rc && !synth && i < sizeof(ev) / sizeof(ev[0]); i++)
		rc = put(w, pid, did, ev[i].kind, ev[i].ts, ev[i].address, ev[i].bytes,
		         ev[i].layer);
	for (size_t i = 0; !rc && i < nsynth; i++) {
		synth[i].process = pid;
		synth[i].device = did;
		rc = mt_writer_append(w, &synth[i]);
	}
	free(synth);
	if (!rc)
		rc = mt_writer_flush(w);
	if (rc)
		fprintf(stderr, "write-trace: %s\n", mt_writer_message(w));
	mt_writer_free(w);
	return rc ? 1 : 0;
}
