/* viewer-test.h — what the viewer tests share: a small trace written with
 * the writer API whose contents (and so the right pictures) are known, a
 * render call, and reading pictures back pixel by pixel. The tests check
 * with tests/tap.h; these helpers return errors and print why on stderr. */
#ifndef MEMTRACE_TESTS_VIEWER_TEST_H
#define MEMTRACE_TESTS_VIEWER_TEST_H

#include <stdint.h>
#include <stdio.h>

#include <cairo.h>

#include "memtrace-viewer.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define MS 1000000ull
/* the traces start at 1 s on the recorder's clock */
#define T0 1000000000ull

enum vt_trace {
	/* segments with requests inside, samples, phases, kernels, a failed
	 * allocation and two saved replays (see viewer-test.c) */
	VT_FULL,
	/* four request-layer allocations, nothing else (see viewer-test.c) */
	VT_BANDS,
};

/* Writes the trace into path (created). Returns 0 or a negative errno. */
int vt_write_trace(const char *path, enum vt_trace which);

/* A fresh folder under /tmp for this test run; removed by vt_cleanup. */
const char *vt_tmpdir(void);
/* path inside the folder (a static buffer per call slot 0..3) */
const char *vt_path(unsigned slot, const char *name);
void vt_cleanup(void);

/* Renders trace into out. policies and at_ms (< 0: peak) as for the CLI.
 * Returns mt_render's value; prints its message on failure. */
int vt_render(const char *trace, const char *out, const char *view, const char *policies,
              double at_ms, unsigned width, unsigned height);
/* The same with every option given (format and trace_name set here). */
int vt_render_options(const char *trace, const char *out, struct mt_render_options o);

/* An opaque pixel 0xRRGGBB of a PNG read back. */
uint32_t vt_pixel(cairo_surface_t *img, int x, int y);

#endif
