/* fixtures.h — the hand-written traces of the analyze tests (fixtures.c
 * says what each holds and which figures follow from it), for
 * test-analyze.c and, through write-trace, the report goldens. */
#ifndef MEMTRACE_TESTS_ANALYZE_FIXTURES_H
#define MEMTRACE_TESTS_ANALYZE_FIXTURES_H

#define T0 1000000000ull
#define MS 1000000ull
#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define A 0x10000000ull
#define B 0x20000000ull
#define C 0x30000000ull

enum fx_trace {
	FX_MAIN = 0,
	FX_MAIN_REPLAYS = 1, /* MAIN with saved replays */
	FX_ASIS = 2,
	FX_ASIS_NO_SAMPLE = 3,
	FX_OOMS = 4,
	FX_OOM_LOOP = 5,       /* the OOM program: 7 rounds */
	FX_CAPACITY = 6,       /* a driver reserve and a library's allocation */
	FX_KERNELS_GPU = 7,    /* kernels with GPU times at the peak and OOMs */
	FX_KERNELS_LAUNCH = 8, /* the same recorded at launch (meta kernels) */
};

/* Call-site strings of MAIN. */
extern const char fx_site1[], fx_site2[];

/* Writes the trace into path (replaced). Returns 0 or a negative errno. */
int fx_write(enum fx_trace which, const char *path);
/* The trace named "main", "main-replays", "asis", "asis-no-sample",
 * "ooms", "oom-loop", "capacity", "kernels-gpu" or "kernels-launch";
 * -EINVAL for another name. */
int fx_from_name(const char *name, enum fx_trace *which);

#endif
