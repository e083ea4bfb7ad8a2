// The part of c10's CUDACachingAllocator.h that recorder/torch-bridge.cpp
// uses, so that the bridge's Python frame reading can be built and tested
// where PyTorch is not installed (tests/recorder/bridge_frames_test.py). The
// hook itself is only exercised against real PyTorch, in the gpu suite.
#pragma once
#include <cstddef>
#include <functional>

namespace c10::cuda::CUDACachingAllocator
{
struct TraceEntry {
	enum Action {
		ALLOC,
		FREE_REQUESTED,
		FREE_COMPLETED,
		SEGMENT_ALLOC,
		SEGMENT_FREE,
		SEGMENT_MAP,
		SEGMENT_UNMAP,
		SNAPSHOT,
		OOM,
		USER_DEFINED
	};
	Action action_;
	signed char device_;
	size_t addr_;
	void *stream_;
	size_t size_;
};
using AllocatorTraceTracker = std::function<void(const TraceEntry &)>;
inline void attachAllocatorTraceTracker(AllocatorTraceTracker)
{
}
} // namespace c10::cuda::CUDACachingAllocator
