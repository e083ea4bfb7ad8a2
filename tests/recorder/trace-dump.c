/* trace-dump.c — prints a trace as plain lines for the gpu tests and the
 * sample checks (tests/recorder/check_trace.py reads them).
 *
 *   meta KEY VALUE
 *   process ID PARENT PID
 *   device ID ORDINAL TOTAL UUID NAME
 *   stats KIND EVENTS CHUNKS BLOB_BYTES
 *   peak LAYER BYTES TS
 *   KIND TS SEQ PROCESS DEVICE FIELDS...   (with --events; see print_event)
 *
 * alloc, free and alloc_failed lines end with the call site: its frames
 * joined by '|' (innermost first), or '-' when there is none.
 *
 * Usage: trace-dump [--events] TRACE
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "memtrace-format.h"

/* The call site as one word-separated field: frames joined by '|'. */
static void print_site(struct mt_reader *r, uint32_t site)
{
	const char *s = site ? mt_reader_string(r, site) : NULL;

	if (!s || !*s) {
		printf(" -\n");
		return;
	}
	putchar(' ');
	for (; *s; s++)
		putchar(*s == '\n' ? '|' : *s);
	putchar('\n');
}

static void print_event(struct mt_reader *r, const struct mt_event *e)
{
	printf("%s %llu %llu %u %u", mt_event_kind_name(e->kind), (unsigned long long)e->ts,
	       (unsigned long long)e->seq, e->process, e->device);
	switch (e->kind) {
	case MT_EVENT_ALLOC:
	case MT_EVENT_FREE:
		printf(" %s %s %s %llu %llu %llu %llu", mt_layer_name(e->alloc.layer),
		       mt_api_name(e->alloc.api), mt_mem_kind_name(e->alloc.mem_kind),
		       (unsigned long long)e->alloc.address, (unsigned long long)e->alloc.bytes,
		       (unsigned long long)e->alloc.stream,
		       (unsigned long long)e->alloc.reuse_delay);
		print_site(r, e->alloc.site);
		break;
	case MT_EVENT_ALLOC_FAILED:
		printf(" %s %s %llu %llu %u %llu", mt_layer_name(e->failed.layer),
		       mt_api_name(e->failed.api), (unsigned long long)e->failed.bytes,
		       (unsigned long long)e->failed.free_bytes, e->failed.error,
		       (unsigned long long)e->failed.stream);
		print_site(r, e->failed.site);
		break;
	case MT_EVENT_KERNEL:
		printf(" %llu %llu %s\n", (unsigned long long)e->kernel.end,
		       (unsigned long long)e->kernel.stream,
		       mt_reader_string(r, e->kernel.name) ? "named" : "unnamed");
		break;
	case MT_EVENT_MEMCPY:
	case MT_EVENT_MEMSET:
		printf(" %llu %llu %llu %u\n", (unsigned long long)e->copy.end,
		       (unsigned long long)e->copy.bytes, (unsigned long long)e->copy.stream,
		       e->copy.copy_kind);
		break;
	case MT_EVENT_RANGE: {
		const char *name = mt_reader_string(r, e->range.name);
		printf(" %llu %u %u %s\n", (unsigned long long)e->range.end, e->range.depth,
		       e->range.thread, name && *name ? name : "-");
		break;
	}
	case MT_EVENT_SAMPLE:
		printf(" %llu %llu\n", (unsigned long long)e->sample.used_bytes,
		       (unsigned long long)e->sample.process_bytes);
		break;
	case MT_EVENT_POOL:
		printf(" %llu %llu %llu %u\n", (unsigned long long)e->pool.pool,
		       (unsigned long long)e->pool.reserved_bytes,
		       (unsigned long long)e->pool.used_bytes, e->pool.op);
		break;
	default:
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	static const char *const keys[] = { "capture",      "capture_env",      "dropped_records",
		                            "command_line", "memtrace_version", "format_version",
		                            "stacks",       "untimed_records",  "kernels" };
	struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
	struct mt_query q = { 0 };
	struct mt_reader *r;
	struct mt_iter *it = NULL;
	struct mt_event e;
	int events = argc > 2 && !strcmp(argv[1], "--events");
	const char *path = argv[argc - 1];
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: trace-dump [--events] TRACE\n");
		return 2;
	}
	r = mt_reader_new();
	if (!r || mt_reader_open(r, path) < 0) {
		fprintf(stderr, "trace-dump: %s: %s\n", path,
		        r ? mt_reader_message(r) : "no memory");
		return 1;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = mt_reader_meta(r, keys[i]);
		if (v)
			printf("meta %s %s\n", keys[i], v);
	}
	for (size_t i = 0; i < mt_reader_process_count(r); i++) {
		const struct mt_process *p = mt_reader_process(r, i);
		printf("process %u %u %lld %s\n", p->id, p->parent, (long long)p->pid,
		       p->capture && *p->capture ? p->capture : "-");
	}
	for (size_t i = 0; i < mt_reader_device_count(r); i++) {
		const struct mt_device *d = mt_reader_device(r, i);
		printf("device %u %u %llu %s %s %s\n", d->id, d->ordinal,
		       (unsigned long long)d->total_bytes, d->uuid,
		       d->pci_bus_id && *d->pci_bus_id ? d->pci_bus_id : "-", d->name);
	}
	if (mt_reader_kind_stats(r, &q, stats) == 0)
		for (unsigned k = 1; k <= MT_EVENT_KIND_MAX; k++)
			printf("stats %s %llu %llu %llu\n", mt_event_kind_name(k),
			       (unsigned long long)stats[k].events,
			       (unsigned long long)stats[k].chunks,
			       (unsigned long long)stats[k].blob_bytes);
	for (unsigned layer = 0; layer <= 1; layer++) {
		uint64_t peak = 0, ts = 0;
		if (mt_reader_peak_live(r, &q, layer, &peak, &ts) == 0)
			printf("peak %s %llu %llu\n", mt_layer_name(layer),
			       (unsigned long long)peak, (unsigned long long)ts);
	}
	rc = 0;
	if (events && (rc = mt_reader_iter(r, &q, &it)) == 0) {
		while ((rc = mt_iter_next(it, &e)) == 1)
			print_event(r, &e);
	}
	if (rc < 0)
		fprintf(stderr, "trace-dump: %s: %s\n", path, mt_reader_message(r));
	mt_iter_free(it);
	mt_reader_free(r);
	return rc < 0 ? 1 : 0;
}
