/* inject-stacks.c — call sites of allocations (`memtrace record --stacks`).
 *
 * A call site is the allocating thread's stack, innermost frame first, one
 * frame per line, interned once into the trace's strings table (see
 * format/FORMAT.md, "strings"):
 * - python: the Python frames of the allocating thread while it holds the
 *   GIL, as "path:line:function", read in-process through CPython's C API.
 *   The functions are looked up with dlsym in the running program, so
 *   nothing is compiled against Python and a program without Python simply
 *   has no Python frames. A thread that does not hold the GIL (autograd's
 *   backward threads) gets the site of the Python code that started the
 *   work, which recorder/python/sitecustomize.py announces around
 *   torch.autograd.backward and torch.autograd.grad
 *   (memtrace_python_work_begin/end).
 * - native: return addresses from glibc's backtrace(), named with dladdr as
 *   "function+0xOFF (module)" or "module+0xOFF"; frames inside this library
 *   are left out.
 * Stacks seen before are found by their frame keys (code object and
 * bytecode offset, or return address) in a table, so a site string is built
 * and interned once and each allocation pays only for the walk and a lookup.
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

/* Exported to recorder/python/sitecustomize.py (called with the GIL held,
 * through ctypes.PyDLL). */
uint32_t memtrace_python_work_begin(void);
void memtrace_python_work_end(uint32_t previous);

struct site_entry {
	uint64_t hash; /* 0 = empty slot */
	uint32_t id;
	uint32_t nkeys;
	uintptr_t key[2 * MAX_FRAMES];
};

struct site_table {
	struct site_entry *slots; /* SITE_SLOTS, allocated on first use */
	size_t used;
};

/* CPython's C API (stable since 3.9; PyFrame_GetLasti since 3.11). */
struct python_api {
	int (*gil_check)(void);
	void *(*this_thread_state)(void);
	void *(*thread_frame)(void *tstate);
	void *(*frame_back)(void *frame);
	void *(*frame_code)(void *frame);
	int (*frame_lasti)(void *frame);
	int (*frame_line)(void *frame);
	void (*decref)(void *obj);
	void *(*getattr)(void *obj, const char *name);
	const char *(*utf8)(void *obj);
	void (*err_fetch)(void **type, void **value, void **tb);
	void (*err_restore)(void *type, void *value, void *tb);
	void (*err_clear)(void);
	int (*initialized)(void);
	int (*finalizing)(void);
	bool ok;
};

static pthread_once_t python_once = PTHREAD_ONCE_INIT;
static struct python_api py;
/* Python's table is used only by the thread holding the GIL, which is its
 * lock; the native one has its own. */
static struct site_table python_sites;
static struct site_table native_sites;
static pthread_mutex_t native_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t work_site;

static void *python_symbol(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

static void python_load(void)
{
	py.gil_check = python_symbol("PyGILState_Check");
	py.this_thread_state = python_symbol("PyGILState_GetThisThreadState");
	py.thread_frame = python_symbol("PyThreadState_GetFrame");
	py.frame_back = python_symbol("PyFrame_GetBack");
	py.frame_code = python_symbol("PyFrame_GetCode");
	py.frame_lasti = python_symbol("PyFrame_GetLasti");
	py.frame_line = python_symbol("PyFrame_GetLineNumber");
	py.decref = python_symbol("Py_DecRef");
	py.getattr = python_symbol("PyObject_GetAttrString");
	py.utf8 = python_symbol("PyUnicode_AsUTF8");
	py.err_fetch = python_symbol("PyErr_Fetch");
	py.err_restore = python_symbol("PyErr_Restore");
	py.err_clear = python_symbol("PyErr_Clear");
	py.initialized = python_symbol("Py_IsInitialized");
	py.finalizing = python_symbol("Py_IsFinalizing");
	if (!py.finalizing)
		py.finalizing = python_symbol("_Py_IsFinalizing");
	py.ok = py.gil_check && py.this_thread_state && py.thread_frame && py.frame_back &&
	        py.frame_code && py.frame_line && py.decref && py.getattr && py.utf8 &&
	        py.err_fetch && py.err_restore && py.err_clear && py.initialized;
}

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

/* Appends "path:line:function\n" for a frame; the GIL is held. */
static size_t python_frame_text(void *frame, void *code, char *buf, size_t off)
{
	void *file = py.getattr(code, "co_filename");
	void *name = py.getattr(code, "co_name");
	const char *f = file ? py.utf8(file) : NULL;
	const char *n = name ? py.utf8(name) : NULL;
	int len = snprintf(buf + off, SITE_BYTES - off, "%s:%d:%s\n", f ? f : "?",
	                   py.frame_line(frame), n ? n : "?");

	if (file)
		py.decref(file);
	if (name)
		py.decref(name);
	return len < 0 || (size_t)len >= SITE_BYTES - off ? off : off + (size_t)len;
}

/* Builds and interns the site of frames[0..n); the GIL is held. Whatever
 * error the attribute lookups raise is cleared and the program's own pending
 * exception, if any, put back. */
static uint32_t python_intern(void *const *frames, void *const *codes, size_t n)
{
	char *buf = malloc(SITE_BYTES);
	void *type, *value, *tb;
	size_t off = 0;
	uint32_t id;

	if (!buf)
		return 0;
	py.err_fetch(&type, &value, &tb);
	for (size_t i = 0; i < n; i++)
		off = python_frame_text(frames[i], codes[i], buf, off);
	py.err_clear(); /* what the lookups may have raised */
	py.err_restore(type, value, tb);
	if (off)
		buf[off - 1] = 0; /* no newline after the outermost frame */
	else
		snprintf(buf, SITE_BYTES, "?");
	id = intern(buf);
	free(buf);
	return id;
}

/* The site of the calling thread's Python stack, skipping `skip` innermost
 * frames; 0 when the thread does not hold the GIL or has no frames. */
static uint32_t python_site(unsigned skip)
{
	void *frames[MAX_FRAMES + 4], *codes[MAX_FRAMES + 4];
	uintptr_t key[2 * MAX_FRAMES];
	struct site_entry *e;
	size_t n = 0, k = 0;
	void *tstate, *f;
	uint32_t id = 0;
	uint64_t h;
	bool found;

	pthread_once(&python_once, python_load);
	if (!py.ok || !py.initialized() || (py.finalizing && py.finalizing()) || !py.gil_check())
		return 0;
	if (!(tstate = py.this_thread_state()))
		return 0;
	f = py.thread_frame(tstate);
	while (f && n < MAX_FRAMES + skip) {
		void *back = py.frame_back(f);
		if (n >= skip) {
			void *code = py.frame_code(f);
			frames[k] = f;
			codes[k] = code;
			key[2 * k] = (uintptr_t)code;
			key[2 * k + 1] =
			        (uintptr_t)(py.frame_lasti ? py.frame_lasti(f) : py.frame_line(f));
			k++;
		} else {
			py.decref(f);
		}
		n++;
		f = back;
	}
	if (f)
		py.decref(f);
	if (k) {
		h = hash_keys(key, 2 * k);
		e = lookup(&python_sites, h, key, 2 * k, &found);
		if (found) {
			id = e->id;
		} else {
			id = python_intern(frames, codes, k);
			remember(&python_sites, e, h, key, 2 * k, id);
		}
	}
	for (size_t i = 0; i < k; i++) {
		py.decref(codes[i]);
		py.decref(frames[i]);
	}
	return id;
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
	uint32_t id;

	switch (mt_inject_state.stacks) {
	case MT_STACKS_PYTHON:
		id = python_site(0);
		return id ? id : atomic_load_explicit(&work_site, memory_order_relaxed);
	case MT_STACKS_NATIVE:
		return native_site();
	default:
		return 0;
	}
}

__attribute__((visibility("default"))) uint32_t memtrace_python_work_begin(void)
{
	/* the innermost frame is sitecustomize's wrapper: leave it out */
	uint32_t site = mt_inject_state.stacks == MT_STACKS_PYTHON ? python_site(1) : 0;

	return atomic_exchange(&work_site, site);
}

__attribute__((visibility("default"))) void memtrace_python_work_end(uint32_t previous)
{
	atomic_store(&work_site, previous);
}
