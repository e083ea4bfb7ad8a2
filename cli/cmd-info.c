/* memtrace info — what a trace holds: format and provenance, devices,
 * processes, events per kind with their compressed size, time span, peak
 * live bytes per device and the file's size per event. Reads the chunk
 * index and metadata; only the peak decodes the alloc/free chunks. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli-util.h"
#include "commands.h"
#include "memtrace-analyze.h"
#include "memtrace-common.h"

#define CMD "info"

struct device_peak {
	uint64_t bytes;
	uint64_t ts; /* MT_TIME_UNKNOWN when nothing was allocated */
};

struct info {
	const char *path;
	struct mt_reader *r;
	struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
	uint64_t events, blob_bytes, file_bytes;
	uint64_t first_ts, last_ts; /* MT_TIME_UNKNOWN when there are no events */
	unsigned layer;             /* the layer the peaks are of */
	struct device_peak *peaks;  /* one per device, in device order */
};

static void usage(void)
{
	fputs("Usage: memtrace info [TRACE] [--json]\n"
	      "\n"
	      "Summarises a trace (default memtrace.db): format and memtrace version,\n"
	      "command line, capture mode, devices, processes, events per kind with\n"
	      "their compressed size, time span, peak live bytes per device and when\n"
	      "(requests if the trace has them, else driver allocations), file size and\n"
	      "bytes per event.\n"
	      "\n"
	      "Options:\n"
	      "  --json      one JSON object instead of text\n"
	      "  -h, --help  this help\n",
	      stdout);
}

static int reader_failed(struct info *in)
{
	cli_error(CMD, "%s", mt_reader_message(in->r));
	return CLI_EXIT_FAILURE;
}

/* Size of the database plus its write-ahead log (a trace whose writer
 * died keeps committed chunks there until the next writer checkpoints). */
static uint64_t file_bytes(const char *path)
{
	char wal[4096];
	struct stat st;
	uint64_t total = 0;

	if (stat(path, &st) == 0)
		total += (uint64_t)st.st_size;
	if ((size_t)snprintf(wal, sizeof(wal), "%s-wal", path) < sizeof(wal) && stat(wal, &st) == 0)
		total += (uint64_t)st.st_size;
	return total;
}

static int gather(struct info *in)
{
	struct mt_query q = { 0 };
	size_t ndev = mt_reader_device_count(in->r);

	if (mt_reader_kind_stats(in->r, &q, in->stats) < 0)
		return reader_failed(in);
	in->first_ts = MT_TIME_UNKNOWN;
	in->last_ts = MT_TIME_UNKNOWN;
	for (unsigned k = 1; k <= MT_EVENT_KIND_MAX; k++) {
		const struct mt_kind_stats *s = &in->stats[k];
		in->events += s->events;
		in->blob_bytes += s->blob_bytes;
		if (!s->events)
			continue;
		if (in->first_ts == MT_TIME_UNKNOWN || s->first_ts < in->first_ts)
			in->first_ts = s->first_ts;
		if (in->last_ts == MT_TIME_UNKNOWN || s->last_ts > in->last_ts)
			in->last_ts = s->last_ts;
	}
	in->file_bytes = file_bytes(in->path);
	if (mt_reader_request_layer(in->r, &in->layer) < 0)
		return reader_failed(in);
	in->peaks = calloc(ndev ? ndev : 1, sizeof(*in->peaks));
	if (!in->peaks) {
		cli_error(CMD, "out of memory");
		return CLI_EXIT_FAILURE;
	}
	for (size_t i = 0; i < ndev; i++) {
		struct device_peak *p = &in->peaks[i];
		q.device = mt_reader_device(in->r, i)->id;
		if (mt_reader_peak_live(in->r, &q, in->layer, &p->bytes, &p->ts) < 0)
			return reader_failed(in);
		if (!p->bytes)
			p->ts = MT_TIME_UNKNOWN;
	}
	return CLI_EXIT_OK;
}

static const char *meta_or(struct info *in, const char *key, const char *fallback)
{
	const char *v = mt_reader_meta(in->r, key);
	return v && *v ? v : fallback;
}

/* ---- text ---- */

#define KEY "%-14s"

static void print_peak(struct info *in, const struct mt_device *d, const struct device_peak *p)
{
	char size[32], when[32], label[96];

	if (p->ts == MT_TIME_UNKNOWN) {
		printf(KEY "%s: nothing allocated\n", "peak live",
		       mt_analyze_device_label(d, label, sizeof(label)));
		return;
	}
	mt_size_format(p->bytes, size, sizeof(size));
	mt_duration_format(p->ts - in->first_ts, when, sizeof(when));
	printf(KEY "%s at +%s on %s (%s layer", "peak live", size, when,
	       mt_analyze_device_label(d, label, sizeof(label)), mt_layer_name(in->layer));
	if (d->total_bytes)
		printf(", %.1f%% of the device", 100.0 * (double)p->bytes / (double)d->total_bytes);
	printf(")\n");
}

static void print_per_event(uint64_t bytes, uint64_t events)
{
	if (events)
		printf("  %8.2f\n", (double)bytes / (double)events);
	else
		printf("  %8s\n", "-");
}

static void print_text(struct info *in)
{
	size_t ndev = mt_reader_device_count(in->r), nproc = mt_reader_process_count(in->r);
	char a[160], b[32], label[96];

	printf(KEY "%s\n", "trace", in->path);
	printf(KEY "%s (memtrace %s)\n", "format", meta_or(in, "format_version", "?"),
	       meta_or(in, "memtrace_version", "unknown"));
	printf(KEY "%s\n", "command line", meta_or(in, "command_line", "unknown"));
	printf(KEY "%s\n", "capture", meta_or(in, "capture", "unknown"));
	if (cli_incomplete_note(in->r, a, sizeof(a)))
		printf(KEY "%s\n", "state", a);
	if (mt_reader_meta(in->r, "history_from") && in->first_ts != MT_TIME_UNKNOWN)
		printf(KEY "partial history from +%s (what was live then is reconstructed)\n",
		       "history",
		       mt_duration_format(
		               strtoull(mt_reader_meta(in->r, "history_from"), NULL, 10) -
		                       in->first_ts,
		               a, sizeof(a)));
	if (mt_reader_meta(in->r, "allocator_settings"))
		printf(KEY "%s\n", "allocator", mt_reader_meta(in->r, "allocator_settings"));
	for (size_t i = 0; i < ndev; i++) {
		const struct mt_device *d = mt_reader_device(in->r, i);
		printf(KEY "%s: %s, %s\n", i ? "" : "devices",
		       mt_analyze_device_label(d, label, sizeof(label)),
		       *d->name ? d->name : "unnamed",
		       mt_size_format(d->total_bytes, a, sizeof(a)));
	}
	if (!ndev)
		printf(KEY "none\n", "devices");
	for (size_t i = 0; i < nproc; i++) {
		const struct mt_process *p = mt_reader_process(in->r, i);
		printf(KEY "pid %" PRId64 ": %s\n", i ? "" : "processes", p->pid,
		       p->command_line && *p->command_line ? p->command_line : "unknown");
	}
	if (!nproc)
		printf(KEY "none\n", "processes");
	if (in->first_ts != MT_TIME_UNKNOWN)
		printf(KEY "%s\n", "time span",
		       mt_duration_format(in->last_ts - in->first_ts, a, sizeof(a)));
	else
		printf(KEY "no events\n", "time span");
	for (size_t i = 0; i < ndev; i++)
		print_peak(in, mt_reader_device(in->r, i), &in->peaks[i]);
	printf(KEY "%s, %s compressed events\n", "file size",
	       mt_size_format(in->file_bytes, a, sizeof(a)),
	       mt_size_format(in->blob_bytes, b, sizeof(b)));

	printf("\n%-14s %12s %8s %10s  %8s\n", "events", "count", "chunks", "compressed",
	       "B/event");
	for (unsigned k = 1; k <= MT_EVENT_KIND_MAX; k++) {
		const struct mt_kind_stats *s = &in->stats[k];
		if (!s->events)
			continue;
		printf("  %-12s %12" PRIu64 " %8" PRIu64 " %10s", mt_event_kind_name(k), s->events,
		       s->chunks, mt_size_format(s->blob_bytes, a, sizeof(a)));
		print_per_event(s->blob_bytes, s->events);
	}
	printf("  %-12s %12" PRIu64 " %8s %10s", "total", in->events, "",
	       mt_size_format(in->blob_bytes, a, sizeof(a)));
	print_per_event(in->blob_bytes, in->events);
	printf("  %-12s %12s %8s %10s", "file", "", "",
	       mt_size_format(in->file_bytes, a, sizeof(a)));
	print_per_event(in->file_bytes, in->events);
}

/* ---- JSON ---- */

static json_t *json_u64(uint64_t v)
{
	return v > INT64_MAX ? json_null() : json_integer((json_int_t)v);
}

static json_t *json_ts(uint64_t ts)
{
	return ts == MT_TIME_UNKNOWN ? json_null() : json_u64(ts);
}

static json_t *json_str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *json_ratio(uint64_t bytes, uint64_t events)
{
	return events ? json_real((double)bytes / (double)events) : json_null();
}

static json_t *info_json(struct info *in)
{
	size_t ndev = mt_reader_device_count(in->r), nproc = mt_reader_process_count(in->r);
	const char *version = mt_reader_meta(in->r, "format_version");
	uint64_t until;
	bool incomplete = mt_reader_incomplete(in->r, &until) == 1;
	json_t *o = json_object(), *devices = json_array(), *processes = json_array(),
	       *events = json_object();

	json_object_set_new(o, "trace", json_string(in->path));
	json_object_set_new(o, "format_version",
	                    version ? json_integer(strtoll(version, NULL, 10)) : json_null());
	json_object_set_new(o, "memtrace_version",
	                    json_str_or_null(mt_reader_meta(in->r, "memtrace_version")));
	json_object_set_new(o, "command_line",
	                    json_str_or_null(mt_reader_meta(in->r, "command_line")));
	json_object_set_new(o, "capture", json_str_or_null(mt_reader_meta(in->r, "capture")));
	json_object_set_new(o, "host", json_str_or_null(mt_reader_meta(in->r, "host")));
	json_object_set_new(o, "complete", json_boolean(!incomplete));
	json_object_set_new(o, "complete_until_ts", incomplete ? json_u64(until) : json_null());
	json_object_set_new(
	        o, "history_from_ns",
	        mt_reader_meta(in->r, "history_from")
	                ? json_u64(strtoull(mt_reader_meta(in->r, "history_from"), NULL, 10))
	                : json_null());
	for (size_t i = 0; i < ndev; i++) {
		const struct mt_device *d = mt_reader_device(in->r, i);
		json_array_append_new(
		        devices, json_pack("{s:I, s:I, s:s, s:s, s:s, s:o, s:o, s:o}", "id",
		                           (json_int_t)d->id, "ordinal", (json_int_t)d->ordinal,
		                           "pci_bus_id", d->pci_bus_id ? d->pci_bus_id : "", "name",
		                           d->name ? d->name : "", "uuid", d->uuid ? d->uuid : "",
		                           "total_bytes", json_u64(d->total_bytes),
		                           "peak_live_bytes", json_u64(in->peaks[i].bytes),
		                           "peak_live_ts", json_ts(in->peaks[i].ts)));
	}
	json_object_set_new(o, "devices", devices);
	for (size_t i = 0; i < nproc; i++) {
		const struct mt_process *p = mt_reader_process(in->r, i);
		json_array_append_new(processes,
		                      json_pack("{s:I, s:I, s:I, s:s, s:s, s:o}", "id",
		                                (json_int_t)p->id, "parent", (json_int_t)p->parent,
		                                "pid", (json_int_t)p->pid, "command_line",
		                                p->command_line ? p->command_line : "", "hostname",
		                                p->hostname ? p->hostname : "", "start_ns",
		                                json_ts(p->start_ns)));
	}
	json_object_set_new(o, "processes", processes);
	json_object_set_new(o, "peak_layer", json_string(mt_layer_name(in->layer)));
	json_object_set_new(o, "first_ts", json_ts(in->first_ts));
	json_object_set_new(o, "last_ts", json_ts(in->last_ts));
	json_object_set_new(o, "duration_ns",
	                    in->first_ts == MT_TIME_UNKNOWN ? json_null()
	                                                    : json_u64(in->last_ts - in->first_ts));
	for (unsigned k = 1; k <= MT_EVENT_KIND_MAX; k++) {
		const struct mt_kind_stats *s = &in->stats[k];
		json_object_set_new(events, mt_event_kind_name(k),
		                    json_pack("{s:o, s:o, s:o, s:o}", "events", json_u64(s->events),
		                              "chunks", json_u64(s->chunks), "blob_bytes",
		                              json_u64(s->blob_bytes), "blob_bytes_per_event",
		                              json_ratio(s->blob_bytes, s->events)));
	}
	json_object_set_new(o, "events", events);
	json_object_set_new(o, "total_events", json_u64(in->events));
	json_object_set_new(o, "blob_bytes", json_u64(in->blob_bytes));
	json_object_set_new(o, "blob_bytes_per_event", json_ratio(in->blob_bytes, in->events));
	json_object_set_new(o, "file_bytes", json_u64(in->file_bytes));
	json_object_set_new(o, "file_bytes_per_event", json_ratio(in->file_bytes, in->events));
	return o;
}

int cli_cmd_info(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct info in = { .path = CLI_DEFAULT_TRACE };
	bool json = false;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			usage();
			return CLI_EXIT_OK;
		default:
			return cli_bad_option(CMD, c, argv);
		}
	}
	if (argc - optind > 1)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind + 1]);
	if (optind < argc)
		in.path = argv[optind];

	rc = cli_open_trace(CMD, in.path, &in.r);
	if (rc)
		return rc;
	rc = gather(&in);
	if (!rc) {
		if (json) {
			rc = cli_print_json(info_json(&in));
		} else {
			print_text(&in);
			if (fflush(stdout) == EOF)
				rc = CLI_EXIT_FAILURE;
		}
		if (rc)
			cli_error(CMD, "cannot write the output: %s", strerror(errno));
	}
	free(in.peaks);
	mt_reader_free(in.r);
	return rc;
}
