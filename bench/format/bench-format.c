/* bench-format — figures for the trace format: bytes per event and encode
 * and decode speed, on two mixes of about 10 M events taken from a
 * synthetic training-loop trace (memtrace synth --pattern train):
 *  - alloc/free: the loop's alloc and free events (both layers);
 *  - kernel: its kernel events, repeated with shifted timestamps until
 *    there are as many.
 * For each mix it measures the chunk codec alone (mt_chunk_encode and
 * mt_chunk_decode on chunks of 65536 events, checking the round trip; each
 * chunk is decoded a second time to show the cost with warm caches), and
 * the writer and reader end to end (a trace holding only that mix: appends
 * through mt_writer_append, then an ordered mt_reader_iter walk), with the
 * bytes per event in the blobs and in the file. Rates are per second of
 * this thread's CPU time (one core; wall time beside it).
 * glibc's malloc is told to keep freed memory (M_MMAP_THRESHOLD 256 MiB,
 * M_TRIM_THRESHOLD 1 GiB): with its defaults every 5.6 MiB array of 65536
 * decoded events is a fresh mmap, and on a VM the page faults of touching
 * it cost more than decoding. --default-malloc measures with the defaults.
 * --flush-every N flushes the writer after every N appends, as the recorder
 * does every 200 ms (BERT training appends about 20 000 events in that
 * time), so the write figure includes what periodic flushes cost.
 * Prints figures and asserts nothing: run by hand, pinned to one core:
 *   taskset -c 1 build/bench/format/bench-format [--default-malloc]
 *                                                [--flush-every N] [EVENTS]
 * Targets (docs/HACKING.md): <= 4 B per alloc/free event, <= 8 B per kernel
 * event, decode >= 50 M events/s, encode >= 20 M events/s.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "memtrace-common.h"
#include "memtrace-format.h"
#include "memtrace-synth.h"

#define CHUNK 65536

struct clock_pair {
	double cpu, wall;
};

static double now(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void clock_start(struct clock_pair *c)
{
	c->cpu -= now(CLOCK_THREAD_CPUTIME_ID);
	c->wall -= now(CLOCK_MONOTONIC);
}

static void clock_stop(struct clock_pair *c)
{
	c->cpu += now(CLOCK_THREAD_CPUTIME_ID);
	c->wall += now(CLOCK_MONOTONIC);
}

static _Noreturn void die(const char *what, const char *msg, int rc)
{
	fprintf(stderr, "bench-format: %s: %s (%s)\n", what, msg, strerror(-rc));
	exit(1);
}

/* Where the events of a mix come from: an ordered walk of one or more
 * kinds of the source trace, restarted with a time shift (repeat) until
 * `total` events were handed out. */
struct source {
	struct mt_reader *r;
	struct mt_iter *it;
	struct mt_query q;
	uint64_t total, given, shift, span, first_ts, last_ts;
	bool any_this_pass;
};

static void source_open(struct source *s, struct mt_reader *r, uint32_t kinds, uint64_t total)
{
	memset(s, 0, sizeof(*s));
	s->r = r;
	s->q.kinds = kinds;
	s->total = total;
}

/* Fills up to n events; returns how many (0 at the end). */
static size_t source_fill(struct source *s, struct mt_event *ev, size_t n)
{
	size_t got = 0;
	int rc;

	while (got < n && s->given < s->total) {
		if (!s->it) {
			rc = mt_reader_iter(s->r, &s->q, &s->it);
			if (rc < 0)
				die("mt_reader_iter", mt_reader_message(s->r), rc);
			s->any_this_pass = false;
		}
		rc = mt_iter_next(s->it, &ev[got]);
		if (rc < 0)
			die("mt_iter_next", mt_reader_message(s->r), rc);
		if (rc == 0) {
			mt_iter_free(s->it);
			s->it = NULL;
			if (!s->any_this_pass)
				break; /* the source has no event of these kinds */
			s->shift += s->last_ts - s->first_ts + 1000000;
			continue;
		}
		if (!s->any_this_pass && s->shift == 0)
			s->first_ts = ev[got].ts;
		s->any_this_pass = true;
		if (s->shift == 0)
			s->last_ts =
			        ev[got].kind == MT_EVENT_KERNEL ? ev[got].kernel.end : ev[got].ts;
		ev[got].ts += s->shift;
		if (ev[got].kind == MT_EVENT_KERNEL)
			ev[got].kernel.end += s->shift;
		got++;
		s->given++;
	}
	return got;
}

static void source_close(struct source *s)
{
	mt_iter_free(s->it);
	s->it = NULL;
}

static bool same_event(const struct mt_event *a, const struct mt_event *b)
{
	if (a->ts != b->ts || a->kind != b->kind)
		return false;
	if (a->kind == MT_EVENT_KERNEL)
		return a->kernel.end == b->kernel.end && a->kernel.name == b->kernel.name &&
		       a->kernel.stream == b->kernel.stream &&
		       a->kernel.correlation == b->kernel.correlation &&
		       a->kernel.grid[0] == b->kernel.grid[0] &&
		       a->kernel.shared_bytes == b->kernel.shared_bytes;
	return a->alloc.address == b->alloc.address && a->alloc.bytes == b->alloc.bytes &&
	       a->alloc.stream == b->alloc.stream && a->alloc.layer == b->alloc.layer &&
	       a->alloc.api == b->alloc.api;
}

struct figures {
	uint64_t events, blob_bytes, file_bytes;
	struct clock_pair encode, decode, decode_warm, write, read;
	bool round_trip;
};

/* Encodes one chunk and decodes it again, checking the round trip. */
static void codec_chunk(struct figures *f, unsigned kind, const struct mt_event *ev, size_t n)
{
	struct mt_event *out = NULL;
	size_t got = 0, blob_len = 0;
	void *blob = NULL;
	int rc;

	clock_start(&f->encode);
	rc = mt_chunk_encode(kind, ev, n, &blob, &blob_len);
	clock_stop(&f->encode);
	if (rc < 0)
		die("mt_chunk_encode", "failed", rc);
	clock_start(&f->decode);
	rc = mt_chunk_decode(kind, blob, blob_len, n, 1, 1, &out, &got);
	clock_stop(&f->decode);
	if (rc < 0)
		die("mt_chunk_decode", "failed", rc);
	/* again, with the output and the codec's buffers in the caches: what
	 * decoding costs apart from the memory traffic of a fresh chunk */
	free(out);
	clock_start(&f->decode_warm);
	rc = mt_chunk_decode(kind, blob, blob_len, n, 1, 1, &out, &got);
	clock_stop(&f->decode_warm);
	if (rc < 0)
		die("mt_chunk_decode", "failed", rc);
	if (got != n)
		f->round_trip = false;
	for (size_t i = 0; i < n && f->round_trip; i++)
		f->round_trip = same_event(&ev[i], &out[i]);
	f->blob_bytes += blob_len;
	f->events += n;
	free(blob);
	free(out);
}

/* Runs the codec over the mix in chunks of CHUNK events of one kind, as
 * the writer batches them. */
static void bench_codec(struct source *src, struct figures *f, struct mt_event *buf)
{
	struct mt_event *chunk[MT_EVENT_KIND_MAX + 1] = { 0 };
	size_t fill[MT_EVENT_KIND_MAX + 1] = { 0 }, n;
	unsigned k;

	f->round_trip = true;
	while ((n = source_fill(src, buf, CHUNK)) > 0) {
		for (size_t i = 0; i < n; i++) {
			k = buf[i].kind;
			if (!chunk[k] && !(chunk[k] = malloc(CHUNK * sizeof(*chunk[k]))))
				die("allocating", "out of memory", -ENOMEM);
			chunk[k][fill[k]++] = buf[i];
			if (fill[k] == CHUNK) {
				codec_chunk(f, k, chunk[k], CHUNK);
				fill[k] = 0;
			}
		}
	}
	source_close(src);
	for (k = 1; k <= MT_EVENT_KIND_MAX; k++) {
		if (fill[k])
			codec_chunk(f, k, chunk[k], fill[k]);
		free(chunk[k]);
	}
}

static uint64_t file_size(const char *path)
{
	char wal[4200];
	struct stat st;
	uint64_t total = 0;

	if (stat(path, &st) == 0)
		total = (uint64_t)st.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (stat(wal, &st) == 0)
		total += (uint64_t)st.st_size;
	return total;
}

static uint32_t copy_rows(struct mt_reader *r, struct mt_writer *w)
{
	uint32_t pid, did;
	int rc = mt_writer_add_process(w, mt_reader_process(r, 0), &pid);

	if (!rc)
		rc = mt_writer_add_device(w, mt_reader_device(r, 0), &did);
	if (rc < 0 || pid != 1 || did != 1)
		die("copying rows", mt_writer_message(w), rc < 0 ? rc : -EINVAL);
	return pid;
}

/* Writes the mix into a trace of its own through the writer, flushing after
 * every `flush_every` appends (0: only at the end), then walks it with the
 * reader. */
static void bench_end_to_end(struct source *src, struct figures *f, struct mt_event *buf,
                             const char *path, uint32_t kinds, uint64_t flush_every)
{
	uint64_t appended = 0;
	struct mt_writer *w = mt_writer_new();
	struct mt_reader *r = mt_reader_new();
	struct mt_query q = { .kinds = kinds };
	struct mt_iter *it;
	struct mt_event ev;
	const char *s;
	uint64_t read = 0;
	size_t n;
	int rc;

	if (!w || !r)
		die("allocating", "out of memory", -ENOMEM);
	rc = mt_writer_open(w, path, MT_WRITER_CREATE);
	if (rc < 0)
		die(path, mt_writer_message(w), rc);
	copy_rows(src->r, w);
	/* the strings, so the name ids the events carry exist */
	for (uint32_t i = 1, id; (s = mt_reader_string(src->r, i)) != NULL; i++)
		if ((rc = mt_writer_intern(w, s, &id)) < 0 || id != i)
			die("interning", mt_writer_message(w), rc < 0 ? rc : -EINVAL);
	while ((n = source_fill(src, buf, CHUNK)) > 0) {
		clock_start(&f->write);
		for (size_t i = 0; i < n; i++) {
			if ((rc = mt_writer_append(w, &buf[i])) < 0)
				die("mt_writer_append", mt_writer_message(w), rc);
			if (flush_every && ++appended % flush_every == 0 &&
			    (rc = mt_writer_flush(w)) < 0)
				die("mt_writer_flush", mt_writer_message(w), rc);
		}
		clock_stop(&f->write);
	}
	source_close(src);
	clock_start(&f->write);
	rc = mt_writer_flush(w);
	mt_writer_free(w);
	clock_stop(&f->write);
	if (rc < 0)
		die("mt_writer_flush", "failed", rc);
	f->file_bytes = file_size(path);

	clock_start(&f->read);
	rc = mt_reader_open(r, path);
	if (rc < 0)
		die(path, mt_reader_message(r), rc);
	rc = mt_reader_iter(r, &q, &it);
	while (rc >= 0 && (rc = mt_iter_next(it, &ev)) > 0)
		read++;
	mt_iter_free(it);
	clock_stop(&f->read);
	if (rc < 0)
		die("reading back", mt_reader_message(r), rc);
	if (read != f->events)
		fprintf(stderr, "bench-format: read back %" PRIu64 " of %" PRIu64 " events\n", read,
		        f->events);
	mt_reader_free(r);
}

static void remove_trace(const char *path)
{
	static const char *const suffixes[] = { "", "-wal", "-shm" };
	char p[PATH_MAX];

	for (int i = 0; i < 3; i++)
		if (snprintf(p, sizeof(p), "%s%s", path, suffixes[i]) < (int)sizeof(p))
			unlink(p);
}

static double rate(uint64_t events, double seconds)
{
	return seconds > 0 ? (double)events / seconds / 1e6 : 0;
}

static void print_rate(const char *what, uint64_t events, struct clock_pair c, double target)
{
	printf("  %-34s %6.1f M events/s (wall %.1f)", what, rate(events, c.cpu),
	       rate(events, c.wall));
	if (target > 0)
		printf("   target >= %.0f: %s", target,
		       rate(events, c.cpu) >= target ? "met" : "MISSED");
	printf("\n");
}

/* Bytes per event of the given kinds in the training trace: their blob
 * bytes, and their share (by blob bytes) of the whole file. */
static void trace_bytes(const struct mt_kind_stats *stats, uint64_t file_bytes, uint32_t kinds,
                        double *per_blob, double *per_file)
{
	uint64_t events = 0, blob = 0, all_blob = 0;

	for (unsigned k = 1; k <= MT_EVENT_KIND_MAX; k++) {
		all_blob += stats[k].blob_bytes;
		if (kinds & MT_KIND_BIT(k)) {
			events += stats[k].events;
			blob += stats[k].blob_bytes;
		}
	}
	*per_blob = events ? (double)blob / (double)events : 0;
	*per_file = events && all_blob ? (double)file_bytes * ((double)blob / (double)all_blob) /
	                                         (double)events
	                               : 0;
}

static void print_figures(const char *mix, const struct figures *f, double per_blob,
                          double per_file, double bytes_target)
{
	printf("%s: %" PRIu64 " events, codec round trip %s\n", mix, f->events,
	       f->round_trip ? "exact" : "DIFFERS");
	printf("  %-34s %6.2f B/event   target <= %.0f: %s\n", "in the training trace's file",
	       per_file, bytes_target, per_file <= bytes_target ? "met" : "MISSED");
	printf("  %-34s %6.2f B/event\n", "in the training trace's blobs", per_blob);
	printf("  %-34s %6.2f B/event\n", "in the codec's blobs (this mix)",
	       (double)f->blob_bytes / (double)f->events);
	printf("  %-34s %6.2f B/event\n", "in a file of only this mix",
	       (double)f->file_bytes / (double)f->events);
	print_rate("encode (codec)", f->events, f->encode, 20);
	print_rate("decode (codec)", f->events, f->decode, 50);
	print_rate("decode (codec, cache-warm)", f->events, f->decode_warm, 0);
	print_rate("write (writer, end to end)", f->events, f->write, 0);
	print_rate("read (reader, end to end)", f->events, f->read, 0);
}

int main(int argc, char **argv)
{
	uint64_t events = 10000000, flush_every = 0;
	char dir[] = "/tmp/bench-format.XXXXXX", path[3][64];
	struct mt_event *buf = malloc(CHUNK * sizeof(*buf));
	struct figures mixes[2] = { 0 };
	const uint32_t kinds[2] = { MT_KIND_BIT(MT_EVENT_ALLOC) | MT_KIND_BIT(MT_EVENT_FREE),
		                    MT_KIND_BIT(MT_EVENT_KERNEL) };
	struct clock_pair synth = { 0 };
	struct mt_writer *w = mt_writer_new();
	struct mt_reader *r = mt_reader_new();
	struct mt_kind_stats stats[MT_EVENT_KIND_MAX + 1];
	struct mt_query all = { 0 };
	struct source src;
	uint64_t train_bytes;
	double per_blob, per_file;
	bool default_malloc = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--default-malloc")) {
			default_malloc = true;
		} else if (!strcmp(argv[i], "--flush-every") && i + 1 < argc &&
		           mt_size_parse(argv[i + 1], &flush_every) == 0) {
			i++;
		} else if (mt_size_parse(argv[i], &events) < 0) {
			fprintf(stderr, "usage: bench-format [--default-malloc] [--flush-every N] "
			                "[EVENTS]  (default 10M, e.g. 1e6)\n");
			return 2;
		}
	}
	if (!default_malloc &&
	    (!mallopt(M_MMAP_THRESHOLD, 256 << 20) || !mallopt(M_TRIM_THRESHOLD, 1 << 30)))
		die("mallopt", "refused", -EINVAL);
	if (!buf || !w || !r || !mkdtemp(dir))
		die("setting up", "out of memory or no /tmp", -errno);
	for (int i = 0; i < 3; i++)
		snprintf(path[i], sizeof(path[i]), "%s/%s.db", dir,
		         (const char *[]){ "train", "allocs", "kernels" }[i]);

	/* the source: a training loop of `events` alloc/free events */
	clock_start(&synth);
	rc = mt_writer_open(w, path[0], MT_WRITER_CREATE);
	if (!rc)
		rc = mt_synth_write(w, MT_SYNTH_TRAIN, events, 1);
	if (!rc)
		rc = mt_writer_flush(w);
	clock_stop(&synth);
	if (rc < 0)
		die("synth", mt_writer_message(w), rc);
	mt_writer_free(w);
	rc = mt_reader_open(r, path[0]);
	if (!rc)
		rc = mt_reader_kind_stats(r, &all, stats);
	if (rc < 0)
		die(path[0], mt_reader_message(r), rc);
	train_bytes = file_size(path[0]);
	printf("bench-format: synthetic training loop, seed 1: %" PRIu64 " alloc/free, %" PRIu64
	       " kernel events; file %.1f MiB (synth + writer: %.1f s); malloc %s; writer "
	       "flushed every %" PRIu64 " events (0: at the end)\n\n",
	       stats[MT_EVENT_ALLOC].events + stats[MT_EVENT_FREE].events,
	       stats[MT_EVENT_KERNEL].events, (double)train_bytes / (1 << 20), synth.wall,
	       default_malloc ? "defaults" : "keeps freed memory", flush_every);

	for (int m = 0; m < 2; m++) {
		source_open(&src, r, kinds[m], events);
		bench_codec(&src, &mixes[m], buf);
		source_open(&src, r, kinds[m], events);
		bench_end_to_end(&src, &mixes[m], buf, path[m + 1], kinds[m], flush_every);
		trace_bytes(stats, train_bytes, kinds[m], &per_blob, &per_file);
		print_figures(m ? "kernel mix" : "alloc/free mix", &mixes[m], per_blob, per_file,
		              m ? 8 : 4);
		printf("\n");
	}
	mt_reader_free(r);
	for (int i = 0; i < 3; i++)
		remove_trace(path[i]);
	rmdir(dir);
	free(buf);
	return 0;
}
