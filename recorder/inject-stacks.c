/* inject-stacks.c — call sites of allocations (`memtrace record --stacks`).
 *
 * A call site is the allocating thread's stack, innermost frame first, one
 * frame per line, interned once into the trace's strings table (see
 * docs/FORMAT.md, "strings").
 * - native: return addresses from glibc's backtrace(), named with dladdr as
 *   "function+0xOFF (module)" or "module+0xOFF"; frames inside this library
 *   are left out. Stacks seen before are found by their return addresses in
 *   a table, so a site string is built and interned once and each
 *   allocation pays for the unwinding and a lookup.
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

#define MAX_FRAMES 20
#define SITE_SLOTS 8192 /* per table; stacks past 3/4 full are interned uncached */
#define SITE_BYTES 8192 /* longest site string */

/* Exported to the PyTorch bridge. */
uint32_t memtrace_intern_site(const char *site);

struct site_entry {
	uint64_t hash; /* 0 = empty slot */
	uint32_t id;
	uint32_t nkeys;
	uintptr_t key[MAX_FRAMES];
};

struct site_table {
	struct site_entry *slots; /* SITE_SLOTS, allocated on first use */
	size_t used;
};

static struct site_table native_sites;
static pthread_mutex_t native_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t hash_keys(const uintptr_t *key, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;

	for (size_t i = 0; i < n; i++) {
		h ^= (uint64_t)key[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

/* The slot holding these keys, or the empty slot where they would go (NULL
 * when the table cannot take more). */
static struct site_entry *lookup(struct site_table *t, uint64_t h, const uintptr_t *key, size_t n,
                                 bool *found)
{
	*found = false;
	if (!t->slots && !(t->slots = calloc(SITE_SLOTS, sizeof(*t->slots))))
		return NULL;
	for (size_t i = 0, s = (size_t)h % SITE_SLOTS; i < SITE_SLOTS;
	     i++, s = (s + 1) % SITE_SLOTS) {
		struct site_entry *e = &t->slots[s];
		if (!e->hash)
			return t->used < SITE_SLOTS * 3 / 4 ? e : NULL;
		if (e->hash == h && e->nkeys == n && !memcmp(e->key, key, n * sizeof(*key))) {
			*found = true;
			return e;
		}
	}
	return NULL;
}

static void remember(struct site_table *t, struct site_entry *e, uint64_t h, const uintptr_t *key,
                     size_t n, uint32_t id)
{
	if (!e || !id)
		return;
	e->hash = h;
	e->id = id;
	e->nkeys = (uint32_t)n;
	memcpy(e->key, key, n * sizeof(*key));
	t->used++;
}

static uint32_t intern(const char *site)
{
	uint32_t id;

	pthread_mutex_lock(&mt_inject_state.writer_lock);
	id = mt_sink_intern_locked(site);
	pthread_mutex_unlock(&mt_inject_state.writer_lock);
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
	struct site_entry *e;
	size_t k = 0;
	uint32_t id;
	uint64_t h;
	bool found;
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
	h = hash_keys(key, k);
	pthread_mutex_lock(&native_lock);
	e = lookup(&native_sites, h, key, k, &found);
	if (found) {
		id = e->id;
	} else {
		char *buf = malloc(SITE_BYTES);
		size_t off = 0;
		id = 0;
		if (buf) {
			for (size_t i = 0; i < k; i++)
				off = native_frame_text((void *)key[i], buf, off);
			buf[off ? off - 1 : 0] = 0;
			id = intern(buf);
			free(buf);
		}
		remember(&native_sites, e, h, key, k, id);
	}
	pthread_mutex_unlock(&native_lock);
	return id;
}

uint32_t mt_stacks_site(void)
{
	return mt_inject_state.stacks == MT_STACKS_NATIVE ? native_site() : 0;
}
