// torch-bridge.cpp — PyTorch's caching-allocator events into memtrace.
//
// Models: c10::cuda::CUDACachingAllocator's AllocatorTraceTracker hook
// (c10/cuda/CUDACachingAllocator.h): a callback run for every TraceEntry
// (ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC/FREE/MAP/UNMAP, OOM)
// while the allocator's per-device lock is held — so it must be cheap, must
// not take the GIL and must not call the allocator. It forwards the entry's
// action, device, address, size and stream to memtrace_torch_event() in
// libmemtrace-inject.so, which timestamps it on CUPTI's clock and queues it.
//
// The only C++ in memtrace: the hook is a C++ API. It is compiled on first
// use against the program's own PyTorch (recorder/python/sitecustomize.py,
// torch.utils.cpp_extension) and cached per PyTorch version.
#include <c10/cuda/CUDACachingAllocator.h>

#include <cstdint>

namespace
{

using event_fn = void (*)(int action, int device, uint64_t address, uint64_t bytes,
                          uint64_t stream);

event_fn sink = nullptr;

namespace alloc = c10::cuda::CUDACachingAllocator;

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

void on_trace(const alloc::TraceEntry &te)
{
	int action = action_of(te.action_);

	if (action >= 0)
		sink(action, static_cast<int>(te.device_), static_cast<uint64_t>(te.addr_),
		     static_cast<uint64_t>(te.size_),
		     static_cast<uint64_t>(reinterpret_cast<uintptr_t>(te.stream_)));
}

} // namespace

// Attaches the hook; `fn` is memtrace_torch_event. Call after the CUDA
// allocator is initialised (torch.cuda lazy init) and before the first
// allocation. Returns 0, or -1 if the current allocator refused the hook
// (the cudaMallocAsync backend throws).
extern "C" __attribute__((visibility("default"))) int memtrace_torch_bridge_attach(void *fn)
{
	if (!fn || sink)
		return -1;
	try {
		sink = reinterpret_cast<event_fn>(fn);
		alloc::attachAllocatorTraceTracker(on_trace);
	} catch (...) {
		sink = nullptr;
		return -1;
	}
	return 0;
}
