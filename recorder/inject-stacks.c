/* inject-stacks.c — call sites of allocations (`memtrace record --stacks`).
 *
 * A call site is the allocating thread's stack, innermost frame first, one
 * frame per line, interned once into the trace's strings table (see
 * docs/FORMAT.md, "strings").
 * - native: return addresses from glibc's backtrace(), named with dladdr as
 *   "function+0xOFF (module)" or "module+0xOFF"; frames inside this library
 *   are left out. Stacks seen before are found by their return addresses in
 *   a table (site-table.c, shared with the bridge), so a site string is
 *   built and interned once and each allocation pays for the unwinding and
 *   a lookup.
 * - python: named by the PyTorch bridge (recorder/torch-bridge.cpp), which
 *   reads the interpreter's frames; it interns through memtrace_intern_site.
 */
#include "config.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject-private.h"
#include "site-table-private.h"

#define MAX_FRAMES 20
#define SITE_BYTES 8192 /* longest site string */

/* Exported to the PyTorch bridge. */
uint32_t memtrace_intern_site(const char *site);

static struct rec_site_table native_sites;
static pthread_mutex_t native_lock = PTHREAD_MUTEX_INITIALIZER; /* adders of native_sites */

static uint32_t intern(const char *site)
{
	uint32_t id;

	pthread_mutex_lock(&rec_state.writer_lock);
	id = rec_sink_intern_locked(site);
	pthread_mutex_unlock(&rec_state.writer_lock);
	return id;
}

__attribute__((visibility("default"))) uint32_t memtrace_intern_site(const char *site)
{
	return site && *site ? intern(site) : 0;
}

/* "function+0xOFF (module)" or "module+0xOFF" for a return address. */
static size_t native_frame_text(void *pc, char *buf, size_t off)
{
	Dl_info info;
	int len;

	if (dladdr(pc, &info) && info.dli_fname) {
		if (info.dli_sname && info.dli_saddr)
			len = snprintf(buf + off, SITE_BYTES - off, "%s+0x%lx (%s)\n",
			               info.dli_sname,
			               (unsigned long)((char *)pc - (char *)info.dli_saddr),
			               info.dli_fname);
		else
			len = snprintf(buf + off, SITE_BYTES - off, "%s+0x%lx\n", info.dli_fname,
			               (unsigned long)((char *)pc - (char *)info.dli_fbase));
	} else {
		len = snprintf(buf + off, SITE_BYTES - off, "%p\n", pc);
	}
	return len < 0 || (size_t)len >= SITE_BYTES - off ? off : off + (size_t)len;
}

static uint32_t native_site(void)
{
	void *pcs[MAX_FRAMES + 16];
	uintptr_t key[MAX_FRAMES];
	static void *self_base;
	size_t k = 0;
	uint32_t id;
	uint64_t h;
	int n;

	if (!self_base) {
		Dl_info me;
		if (dladdr((void *)native_site, &me))
			self_base = me.dli_fbase;
	}
	n = backtrace(pcs, MAX_FRAMES + 16);
	for (int i = 0; i < n && k < MAX_FRAMES; i++) {
		Dl_info info;
		/* leave out this library's own frames */
		if (k == 0 && dladdr(pcs[i], &info) && info.dli_fbase == self_base)
			continue;
		/* a return address points after the call: name the call */
		key[k++] = (uintptr_t)pcs[i] - 1;
	}
	if (!k)
		return 0;
	h = rec_site_hash(key, k);
	if ((id = rec_site_find(&native_sites, h, key, k)))
		return id;
	pthread_mutex_lock(&native_lock);
	if (!(id = rec_site_find(&native_sites, h, key, k))) {
		char *buf = malloc(SITE_BYTES);
		size_t off = 0;
		if (buf) {
			for (size_t i = 0; i < k; i++)
				off = native_frame_text((void *)key[i], buf, off);
			buf[off ? off - 1 : 0] = 0;
			id = intern(buf);
			free(buf);
		}
		rec_site_add(&native_sites, h, key, k, id);
	}
	pthread_mutex_unlock(&native_lock);
	return id;
}

uint32_t rec_stacks_site(void)
{
	return rec_state.stacks == REC_STACKS_NATIVE ? native_site() : 0;
}
