/* bench-interop — figures for import and export: for a trace (default the
 * largest sample, samples/traces/bert-base-bf16-train.db), each export
 * format's speed (trace events read per second, bytes written), then the
 * import speed (entries per second) of the files memtrace writes that it
 * also reads: the trace as a PyTorch snapshot (pickle) and as an RMM log,
 * each imported into a fresh trace (SQLite writes included).
 * Exports write to a counting stream (no disk); imports read the file from
 * the page cache. Each figure is the best of --repeat runs (default 3), in
 * events per second of this process's CPU time, with wall time beside it
 * (a shared machine stretches the wall, not the CPU time). Prints figures
 * and asserts nothing:
 *   build/bench/interop/bench-interop [--repeat N] [TRACE]
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "memtrace-interop.h"

struct clock_pair {
	double cpu, wall;
};

static struct clock_pair now(void)
{
	struct timespec c, w;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
	clock_gettime(CLOCK_MONOTONIC, &w);
	return (struct clock_pair){ c.tv_sec + c.tv_nsec * 1e-9, w.tv_sec + w.tv_nsec * 1e-9 };
}

static ssize_t count_write(void *cookie, const char *buf, size_t n)
{
	(void)buf;
	*(uint64_t *)cookie += n;
	return (ssize_t)n;
}

/* Exports r in format to a stream that only counts; best of repeat. */
static int bench_export(struct mt_reader *r, const struct mt_interop_format *f, int repeat)
{
	double best_cpu = 1e300, best_wall = 1e300;
	struct mt_export_result res = { 0 };
	uint64_t bytes = 0;
	char err[512];

	for (int i = 0; i < repeat; i++) {
		struct mt_export_options opt = { .format = f };
		cookie_io_functions_t io = { .write = count_write };
		struct clock_pair t0, t1;
		FILE *out;

		bytes = 0;
		out = fopencookie(&bytes, "w", io);
		if (!out)
			return -errno;
		setvbuf(out, NULL, _IOFBF, 1 << 20);
		t0 = now();
		if (mt_export_file(r, out, &opt, &res, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s: %s\n", mt_interop_format_name(f), err);
			fclose(out);
			return -1;
		}
		fclose(out);
		t1 = now();
		if (t1.cpu - t0.cpu < best_cpu)
			best_cpu = t1.cpu - t0.cpu;
		if (t1.wall - t0.wall < best_wall)
			best_wall = t1.wall - t0.wall;
	}
	printf("  %-11s %10" PRIu64 " %12.2f %12.2f %10.1f %9.0f\n", mt_interop_format_name(f),
	       res.events, res.events / best_cpu / 1e6, res.events / best_wall / 1e6,
	       bytes / 1048576.0, (double)bytes / (res.events ? res.events : 1));
	return 0;
}

/* Exports r to path in format. */
static int write_file(struct mt_reader *r, const char *format, const char *path)
{
	struct mt_export_options opt = { .format = mt_interop_format_find(format) };
	FILE *out = fopen(path, "wb");
	char err[512];
	int rc;

	if (!out)
		return -errno;
	rc = mt_export_file(r, out, &opt, NULL, err, sizeof(err));
	if (fclose(out) != 0 && rc == 0)
		rc = -errno;
	if (rc < 0)
		fprintf(stderr, "%s: %s\n", format, err);
	return rc;
}

/* Imports path into a fresh trace; best of repeat. */
static int bench_import(const char *name, const char *path, const char *trace, int repeat)
{
	double best_cpu = 1e300, best_wall = 1e300;
	struct mt_import_result res = { 0 };
	struct stat st;
	char err[512];

	for (int i = 0; i < repeat; i++) {
		struct mt_writer *w = mt_writer_new();
		struct clock_pair t0, t1;
		int rc;

		unlink(trace);
		if (!w || mt_writer_open(w, trace, MT_WRITER_CREATE) < 0)
			return -1;
		t0 = now();
		rc = mt_import_file(path, w, NULL, &res, err, sizeof(err));
		mt_writer_free(w);
		t1 = now();
		if (rc < 0) {
			fprintf(stderr, "%s: %s\n", name, err);
			return rc;
		}
		if (t1.cpu - t0.cpu < best_cpu)
			best_cpu = t1.cpu - t0.cpu;
		if (t1.wall - t0.wall < best_wall)
			best_wall = t1.wall - t0.wall;
	}
	stat(path, &st);
	printf("  %-11s %10" PRIu64 " %12.2f %12.2f %10.1f %9" PRIu64 "\n", name, res.entries,
	       res.entries / best_cpu / 1e6, res.entries / best_wall / 1e6, st.st_size / 1048576.0,
	       res.events);
	unlink(trace);
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = MT_SOURCE_ROOT "/samples/traces/bert-base-bf16-train.db";
	char dir[] = "/tmp/bench-interop-XXXXXX", pickle[64], rmm[64], trace[64];
	struct mt_reader *r;
	int repeat = 3;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = atoi(argv[++i]);
		else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: %s [--repeat N] [TRACE]\n", argv[0]);
			return 2;
		} else
			path = argv[i];
	}
	if (repeat < 1 || !mkdtemp(dir))
		return 1;
	r = mt_reader_new();
	if (!r || mt_reader_open(r, path) < 0) {
		fprintf(stderr, "%s: %s\n", path, r ? mt_reader_message(r) : "out of memory");
		return 1;
	}
	printf("trace %s, best of %d\n\n", path, repeat);
	printf("export      %10s %12s %12s %10s %9s\n", "events", "M ev/s CPU", "M ev/s wall",
	       "MiB out", "B/event");
	for (size_t i = 0; i < mt_interop_format_count(); i++)
		if (mt_interop_format_exports(mt_interop_format_at(i)))
			bench_export(r, mt_interop_format_at(i), repeat);
	snprintf(pickle, sizeof(pickle), "%s/trace.pickle", dir);
	snprintf(rmm, sizeof(rmm), "%s/trace.rmm.csv", dir);
	snprintf(trace, sizeof(trace), "%s/imported.db", dir);
	printf("\nimport      %10s %12s %12s %10s %9s\n", "entries", "M ent/s CPU", "M ent/s wall",
	       "MiB in", "events");
	if (write_file(r, "snapshot", pickle) == 0)
		bench_import("snapshot", pickle, trace, repeat);
	if (write_file(r, "rmm", rmm) == 0)
		bench_import("rmm", rmm, trace, repeat);
	mt_reader_free(r);
	unlink(pickle);
	unlink(rmm);
	rmdir(dir);
	return 0;
}
