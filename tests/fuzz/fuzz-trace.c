/* fuzz-trace.c — fuzz target for the SQLite-level reader: the input is a
 * whole trace file. It is written to a file of its own (no -wal, no -shm)
 * and read the way the commands read it: open (schema and chunk index
 * checks), meta, processes, devices, per-kind statistics, every event in
 * order, lifetimes and peaks of both layers, the strings events name and
 * the saved replays. Any input must give an answer or an error with a
 * one-line message, never a crash, a read out of bounds or a message with
 * a line break. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../format/test-events.h"
#include "fuzz-target.h"

static const char *input_path(void)
{
	static char path[64];

	if (!path[0]) {
		const char *dir = getenv("TMPDIR");
		snprintf(path, sizeof(path), "%s/fuzz-trace.%ld.db", dir && *dir ? dir : "/tmp",
		         (long)getpid());
	}
	return path;
}

/* An error must leave one line; a success, no message. */
static void check_message(struct mt_reader *r, int rc)
{
	const char *m = mt_reader_message(r);

	if ((rc < 0 && (!*m || strchr(m, '\n'))) || (rc >= 0 && *m))
		abort();
}

static void read_events(struct mt_reader *r)
{
	struct mt_iter *it;
	struct mt_event ev;
	int rc = mt_reader_iter(r, NULL, &it);

	check_message(r, rc);
	while (rc == 0 && (rc = mt_iter_next(it, &ev)) == 1) {
		if (ev.kind < 1 || ev.kind > MT_EVENT_KIND_MAX)
			abort();
		if (ev.kind == MT_EVENT_KERNEL)
			mt_reader_string(r, ev.kernel.name);
		rc = 0;
	}
	if (rc < 0)
		check_message(r, rc);
	mt_iter_free(it);
}

static void read_layers(struct mt_reader *r)
{
	for (unsigned layer = 0; layer <= 1; layer++) {
		struct mt_query q = { 0 };
		struct mt_lifetime *l = NULL;
		uint64_t peak, at;
		size_t n;
		int rc = mt_reader_lifetimes(r, &q, layer, &l, &n);

		check_message(r, rc);
		free(l);
		rc = mt_reader_peak_live(r, &q, layer, &peak, &at);
		check_message(r, rc);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = input_path();
	struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
	const struct mt_replay_record *replays;
	struct mt_reader *r;
	size_t n;
	unsigned layer;
	FILE *f;
	int rc;

	remove_trace(path);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	r = mt_reader_new();
	rc = mt_reader_open(r, path);
	check_message(r, rc);
	if (rc == 0) {
		mt_reader_meta(r, "capture");
		for (size_t i = 0; i < mt_reader_process_count(r); i++)
			if (!mt_reader_process(r, i)->command_line)
				abort();
		for (size_t i = 0; i < mt_reader_device_count(r); i++)
			if (!mt_reader_device(r, i)->name)
				abort();
		check_message(r, mt_reader_kind_stats(r, NULL, stats));
		read_events(r);
		read_layers(r);
		check_message(r, mt_reader_request_layer(r, &layer));
		check_message(r, mt_reader_replays(r, &replays, &n));
	}
	mt_reader_free(r);
	remove_trace(path);
	return 0;
}
