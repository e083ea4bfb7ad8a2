/* summary.c — what `memtrace record` says after a run, read back from the
 * trace with the format's reader: the trace-wide capture label, settled
 * once every recording process has ended (while they run, each root
 * process keeps meta "capture" at its own label), and the summary with the
 * processes recorded as segments only. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memtrace-common.h"
#include "memtrace-recorder.h"

/* Whether the process made any allocation the trace holds. */
static bool allocated(struct mt_reader *r, uint32_t process)
{
	struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { .kinds = MT_KIND_BIT(MT_EVENT_ALLOC), .process = process };

	return mt_reader_kind_stats(r, &q, stats) < 0 || stats[MT_EVENT_ALLOC].events > 0;
}

/* The processes whose label says their requests are not in the trace and
 * that allocated something (a process that loaded PyTorch and allocated
 * nothing, such as torchrun's agent, missed no request). */
static int segments_only(struct mt_reader *r, struct mt_record_summary *s)
{
	size_t n = mt_reader_process_count(r);

	for (size_t i = 0; i < n; i++) {
		const struct mt_process *p = mt_reader_process(r, i);
		struct mt_record_process *out;

		if (!p->capture || strncmp(p->capture, "segments only", 13) || !allocated(r, p->id))
			continue;
		out = realloc(s->segments_only, (s->n_segments_only + 1) * sizeof(*out));
		if (!out)
			return -ENOMEM;
		s->segments_only = out;
		out += s->n_segments_only++;
		out->pid = p->pid;
		snprintf(out->command_line, sizeof(out->command_line), "%s",
		         p->command_line ? p->command_line : "");
		snprintf(out->capture, sizeof(out->capture), "%s", p->capture);
	}
	return 0;
}

int mt_record_summarize(const char *path, struct mt_record_summary *s, char *err, size_t errlen)
{
	struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { 0 };
	struct mt_reader *r;
	struct stat st;
	const char *v;
	uint64_t peak_ts = 0;
	char side[4096];
	int rc;

	memset(s, 0, sizeof(*s));
	r = mt_reader_new();
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = mt_reader_open(r, path);
	if (rc == 0)
		rc = mt_reader_kind_stats(r, &q, stats);
	if (rc == 0)
		rc = mt_reader_request_layer(r, &s->peak_layer);
	if (rc == 0)
		rc = mt_reader_peak_live(r, &q, s->peak_layer, &s->peak_live, &peak_ts);
	if (rc < 0) {
		snprintf(err, errlen, "%s", mt_reader_message(r));
		mt_reader_free(r);
		return rc;
	}
	for (unsigned k = 0; k <= MT_EVENT_KIND_MAX; k++)
		s->events[k] = stats[k].events;
	v = mt_reader_meta(r, "dropped_records");
	s->dropped = v ? strtoull(v, NULL, 10) : 0;
	v = mt_reader_meta(r, "capture");
	snprintf(s->capture, sizeof(s->capture), "%s", v ? v : "");
	s->processes = mt_reader_process_count(r);
	rc = segments_only(r, s);
	mt_reader_free(r);
	if (rc < 0) {
		mt_record_summary_release(s);
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	if (stat(path, &st) == 0)
		s->file_bytes = (uint64_t)st.st_size;
	snprintf(side, sizeof(side), "%s-wal", path);
	if (stat(side, &st) == 0)
		s->file_bytes += (uint64_t)st.st_size;
	return 0;
}

void mt_record_summary_release(struct mt_record_summary *s)
{
	free(s->segments_only);
	s->segments_only = NULL;
	s->n_segments_only = 0;
}

#define MIXED "mixed (see the processes' capture)"

/* The label the processes that allocated something share (all of them
 * when none did), MIXED, or "" when none has one. */
static int shared_label(const char *path, char *label, size_t len, char *err, size_t errlen)
{
	struct mt_reader *r = mt_reader_new();
	bool any = false;
	int rc;

	label[0] = 0;
	if (!r)
		return mt_fail(err, errlen, -ENOMEM, "out of memory");
	rc = mt_reader_open(r, path);
	if (rc < 0) {
		mt_fail(err, errlen, rc, "%s", mt_reader_message(r));
		mt_reader_free(r);
		return rc;
	}
	for (size_t i = 0; i < mt_reader_process_count(r); i++)
		any = any || allocated(r, mt_reader_process(r, i)->id);
	for (size_t i = 0; i < mt_reader_process_count(r); i++) {
		const struct mt_process *p = mt_reader_process(r, i);
		const char *c = p->capture;
		if (!c || !*c || (any && !allocated(r, p->id)))
			continue;
		if (!label[0]) {
			snprintf(label, len, "%s", c);
		} else if (strcmp(label, c)) {
			snprintf(label, len, "%s", MIXED);
			break;
		}
	}
	mt_reader_free(r);
	return 0;
}

int mt_record_settle_capture(const char *path, char *err, size_t errlen)
{
	char label[1024];
	struct mt_writer *w;
	int rc = shared_label(path, label, sizeof(label), err, errlen);

	if (rc < 0 || !label[0])
		return rc;
	w = mt_writer_new();
	if (!w)
		return mt_fail(err, errlen, -ENOMEM, "out of memory");
	rc = mt_writer_open(w, path, 0);
	if (rc == 0)
		rc = mt_writer_set_meta(w, "capture", label);
	if (rc < 0)
		mt_fail(err, errlen, rc, "%s", mt_writer_message(w));
	mt_writer_free(w);
	return rc;
}
