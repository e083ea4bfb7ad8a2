/* settle.c — the trace-wide capture label (meta "capture") once a recording
 * has ended: the label every process shares, else "mixed". While processes
 * run, each root process keeps meta "capture" at its own label; only after
 * all of them, with every label final, can one be said for the trace.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "memtrace-common.h"
#include "memtrace-recorder.h"

#define MIXED "mixed (see the processes' capture)"

/* The label the processes share, MIXED, or "" when none has one. */
static int shared_label(const char *path, char *label, size_t len, char *err, size_t errlen)
{
	struct mt_reader *r = mt_reader_new();
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
	for (size_t i = 0; i < mt_reader_process_count(r); i++) {
		const char *c = mt_reader_process(r, i)->capture;
		if (!c || !*c)
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
