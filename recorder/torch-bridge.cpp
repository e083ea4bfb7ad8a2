// torch-bridge.cpp — PyTorch's caching-allocator events into memtrace.
//
// Models: c10::cuda::CUDACachingAllocator's AllocatorTraceTracker hook
// (c10/cuda/CUDACachingAllocator.h): a callback run for every TraceEntry
// (ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC/FREE/MAP/UNMAP, OOM)
// while the allocator's per-device lock is held — so it must be cheap, must
// not take the GIL and must not call the allocator. It forwards the entry's
// action, device, address, size, stream and (with --stacks python) call site
// and time (the TraceEntry's, on PyTorch's own clock: c10::getApproximateTime,
// the TSC on x86, whose ticks the recorder maps onto CUPTI's clock; given to
// it through memtrace_torch_clock before the hook is attached) to
// memtrace_torch_event() in libmemtrace-inject.so, which queues it.
//
// Python call sites. PyTorch releases the GIL around most operators, so the
// allocating thread usually does not hold it; but its own Python frames are
// frozen while it runs C++ code, and only it could change them. The bridge
// therefore reads the calling thread's interpreter frames directly (CPython
// 3.11–3.13, whose frame layout is mirrored below), never another thread's,
// without taking the GIL, calling into Python or allocating: per frame a code
// object and a byte offset. A stack seen before is found in a table; a new one
// is named ("path:line:function" per frame, innermost first, from the code
// object's immutable fields and PyCode_Addr2Line) and interned through
// memtrace_intern_site(). The table is the injection library's own
// (site-table.c, built into the bridge beside this file). Threads without Python frames (autograd's
// backward threads) get the site of the Python line that started the work, set by
// recorder/python/sitecustomize.py around torch.autograd.backward/grad.
//
// The only C++ in memtrace: the hook is a C++ API. It is compiled on first
// use against the program's own PyTorch and Python (recorder/python/
// sitecustomize.py, torch.utils.cpp_extension), cached per version of both.
#include <c10/cuda/CUDACachingAllocator.h>
#if __has_include(<c10/util/ApproximateClock.h>)
#include <c10/util/ApproximateClock.h>
#define REC_APPROX_CLOCK 1
#endif

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "site-table-private.h"

#if __has_include(<Python.h>)
#include <Python.h>
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000 && !defined(Py_GIL_DISABLED)
#define REC_PYTHON_FRAMES 1
#endif
#endif

namespace
{

using event_fn = void (*)(int action, int device, uint64_t address, uint64_t bytes, uint64_t stream,
                          uint32_t site, uint64_t ticks);
using intern_fn = uint32_t (*)(const char *site);
using clock_fn = uint64_t (*)();
using set_clock_fn = void (*)(clock_fn);

event_fn sink = nullptr;
intern_fn intern = nullptr;
bool python_sites = false;
std::atomic<uint32_t> work_site{ 0 };

namespace alloc = c10::cuda::CUDACachingAllocator;

#ifdef REC_PYTHON_FRAMES

// The head of CPython's _PyInterpreterFrame (Include/internal/pycore_frame.h)
// for the versions this bridge knows; only these fields are read.
#if PY_VERSION_HEX < 0x030C0000 // 3.11
struct interp_frame {
	PyObject *f_func, *f_globals, *f_builtins, *f_locals;
	PyCodeObject *f_code;
	PyObject *frame_obj;
	interp_frame *previous;
	const uint16_t *prev_instr; // _Py_CODEUNIT: 2 bytes
	int stacktop;
	bool is_entry;
	char owner;
};
interp_frame *current_frame(PyThreadState *ts)
{
	return ts->cframe ? reinterpret_cast<interp_frame *>(ts->cframe->current_frame) : nullptr;
}
PyCodeObject *code_of(const interp_frame *f)
{
	return f->f_code;
}
const uint16_t *instr_of(const interp_frame *f)
{
	return f->prev_instr;
}
#elif PY_VERSION_HEX < 0x030D0000 // 3.12
struct interp_frame {
	PyCodeObject *f_code;
	interp_frame *previous;
	PyObject *f_funcobj, *f_globals, *f_builtins, *f_locals, *frame_obj;
	const uint16_t *prev_instr; // _Py_CODEUNIT: 2 bytes
	int stacktop;
	uint16_t return_offset;
	char owner;
};
interp_frame *current_frame(PyThreadState *ts)
{
	return ts->cframe ? reinterpret_cast<interp_frame *>(ts->cframe->current_frame) : nullptr;
}
PyCodeObject *code_of(const interp_frame *f)
{
	return f->owner == 3 /* FRAME_OWNED_BY_CSTACK */ ? nullptr : f->f_code;
}
const uint16_t *instr_of(const interp_frame *f)
{
	return f->prev_instr;
}
#else                             // 3.13
struct interp_frame {
	PyObject *f_executable;
	interp_frame *previous;
	PyObject *f_funcobj, *f_globals, *f_builtins, *f_locals, *frame_obj;
	const uint16_t *instr_ptr; // _Py_CODEUNIT: 2 bytes
	int stacktop;
	uint16_t return_offset;
	char owner;
};
interp_frame *current_frame(PyThreadState *ts)
{
	return reinterpret_cast<interp_frame *>(ts->current_frame);
}
PyCodeObject *code_of(const interp_frame *f)
{
	if (f->owner == 3 /* FRAME_OWNED_BY_CSTACK */ || !f->f_executable ||
	    !PyCode_Check(f->f_executable))
		return nullptr;
	return reinterpret_cast<PyCodeObject *>(f->f_executable);
}
const uint16_t *instr_of(const interp_frame *f)
{
	return f->instr_ptr;
}
#endif

constexpr int max_frames = REC_SITE_KEYS / 2; // two words a frame
constexpr size_t site_bytes = 8192;

std::mutex site_lock; // adders of sites; the allocator's own locks are per device
rec_site_table sites{};

// UTF-8 of a str without allocating: compact ASCII data, or the cached UTF-8.
const char *utf8_of(PyObject *s)
{
	if (!s || !PyUnicode_Check(s))
		return "?";
	if (PyUnicode_IS_COMPACT_ASCII(s))
		return reinterpret_cast<const char *>(reinterpret_cast<PyASCIIObject *>(s) + 1);
	const char *u = reinterpret_cast<PyCompactUnicodeObject *>(s)->utf8;
	return u ? u : "?";
}

uint32_t name_and_intern(PyCodeObject *const *codes, const int *offsets, int n)
{
	char *buf = static_cast<char *>(std::malloc(site_bytes));
	size_t off = 0;
	uint32_t id;

	if (!buf)
		return 0;
	for (int i = 0; i < n; i++) {
		int line = PyCode_Addr2Line(codes[i], offsets[i]);
		int len = std::snprintf(buf + off, site_bytes - off, "%s:%d:%s\n",
		                        utf8_of(codes[i]->co_filename), line,
		                        utf8_of(codes[i]->co_qualname));
		if (len < 0 || static_cast<size_t>(len) >= site_bytes - off)
			break;
		off += static_cast<size_t>(len);
	}
	buf[off ? off - 1 : 0] = 0; // no newline after the outermost frame
	id = off ? intern(buf) : 0;
	std::free(buf);
	return id;
}

// The site of the calling thread's Python frames, leaving out `skip`
// innermost ones; 0 when it has none.
uint32_t python_site(int skip)
{
	PyCodeObject *codes[max_frames];
	int offsets[max_frames];
	uintptr_t key[2 * max_frames];
	int n = 0;

	if (!Py_IsInitialized())
		return 0;
	PyThreadState *ts = PyGILState_GetThisThreadState();
	for (interp_frame *f = ts ? current_frame(ts) : nullptr; f && n < max_frames;
	     f = f->previous) {
		PyCodeObject *co = code_of(f);
		if (!co)
			continue;
		if (skip > 0) {
			skip--;
			continue;
		}
		long off = reinterpret_cast<const char *>(instr_of(f)) - co->co_code_adaptive;
		if (off < 0 || off >= static_cast<long>(Py_SIZE(co)) * 2)
			off = -1; // a frame not started yet: its first line
		codes[n] = co;
		offsets[n] = static_cast<int>(off);
		key[2 * n] = reinterpret_cast<uintptr_t>(co);
		key[2 * n + 1] = static_cast<uintptr_t>(off) << 24 ^
		                 static_cast<uintptr_t>(co->co_firstlineno);
		n++;
	}
	if (!n)
		return 0;

	size_t nkeys = 2 * static_cast<size_t>(n);
	uint64_t h = rec_site_hash(key, nkeys);
	uint32_t id = rec_site_find(&sites, h, key, nkeys);
	if (id)
		return id;
	std::lock_guard<std::mutex> guard(site_lock);
	if ((id = rec_site_find(&sites, h, key, nkeys)))
		return id; // another thread named it meanwhile
	id = name_and_intern(codes, offsets, n);
	rec_site_add(&sites, h, key, nkeys, id);
	return id;
}

#else

uint32_t python_site(int)
{
	return 0;
}

#endif

// The bridge's own action numbers (inject-torch.c), independent of c10's enum order.
int action_of(alloc::TraceEntry::Action a)
{
	switch (a) {
	case alloc::TraceEntry::ALLOC:
		return 0;
	case alloc::TraceEntry::FREE_REQUESTED:
		return 1;
	case alloc::TraceEntry::FREE_COMPLETED:
		return 2;
	case alloc::TraceEntry::SEGMENT_ALLOC:
		return 3;
	case alloc::TraceEntry::SEGMENT_FREE:
		return 4;
	case alloc::TraceEntry::SEGMENT_MAP:
		return 5;
	case alloc::TraceEntry::SEGMENT_UNMAP:
		return 6;
	case alloc::TraceEntry::OOM:
		return 7;
	default:
		return -1; // SNAPSHOT, USER_DEFINED: nothing to record
	}
}

#ifdef REC_APPROX_CLOCK
// PyTorch's clock, as the allocator reads it for each TraceEntry.
uint64_t approx_now()
{
	return static_cast<uint64_t>(c10::getApproximateTime());
}
uint64_t ticks_of(const alloc::TraceEntry &te)
{
	return static_cast<uint64_t>(te.time_.approx_t_);
}
#else
uint64_t ticks_of(const alloc::TraceEntry &)
{
	return 0; // no clock given: the recorder reads its own
}
#endif

void on_trace(const alloc::TraceEntry &te)
{
	int action = action_of(te.action_);
	uint32_t site = 0;

	if (action < 0)
		return;
	if (python_sites &&
	    (te.action_ == alloc::TraceEntry::ALLOC || te.action_ == alloc::TraceEntry::OOM)) {
		site = python_site(0);
		if (!site)
			site = work_site.load(std::memory_order_relaxed);
	}
	sink(action, static_cast<int>(te.device_), static_cast<uint64_t>(te.addr_),
	     static_cast<uint64_t>(te.size_),
	     static_cast<uint64_t>(reinterpret_cast<uintptr_t>(te.stream_)), site, ticks_of(te));
}

} // namespace

// Attaches the hook: `event` is memtrace_torch_event, `intern_site`
// memtrace_intern_site, `set_clock` memtrace_torch_clock (given PyTorch's
// clock first, where this PyTorch has one), `python` non-zero to name Python
// call sites. Call after the CUDA allocator is initialised (torch.cuda lazy
// init) and before the first allocation. Returns 0, or -1 if the current
// allocator refused the hook (the cudaMallocAsync backend throws).
extern "C" __attribute__((visibility("default"))) int
memtrace_torch_bridge_attach(void *event, void *intern_site, void *set_clock, int python)
{
	if (!event || !intern_site || !set_clock || sink)
		return -1;
	try {
		sink = reinterpret_cast<event_fn>(event);
		intern = reinterpret_cast<intern_fn>(intern_site);
		python_sites = python != 0;
#ifdef REC_APPROX_CLOCK
		reinterpret_cast<set_clock_fn>(set_clock)(approx_now);
#endif
		alloc::attachAllocatorTraceTracker(on_trace);
	} catch (...) {
		sink = nullptr;
		return -1;
	}
	return 0;
}

// Whether this build can name Python call sites (CPython 3.11–3.13 headers).
extern "C" __attribute__((visibility("default"))) int memtrace_torch_bridge_python_sites(void)
{
#ifdef REC_PYTHON_FRAMES
	return 1;
#else
	return 0;
#endif
}

// Around work that runs on other threads (autograd's backward): the caller's
// Python line (its innermost frame, sitecustomize's wrapper, left out) becomes
// the site of allocations made by threads without Python frames. Returns the
// previous work site, to be given back to memtrace_torch_bridge_work_end.
extern "C" __attribute__((visibility("default"))) uint32_t memtrace_torch_bridge_work_begin(void)
{
	uint32_t site = python_sites && intern ? python_site(1) : 0;

	return work_site.exchange(site);
}

extern "C" __attribute__((visibility("default"))) void
memtrace_torch_bridge_work_end(uint32_t previous)
{
	work_site.store(previous);
}
