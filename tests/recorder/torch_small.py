"""A small PyTorch run for the gpu suite: tensors of assorted sizes on two
streams, a matmul, frees in mixed order, one record_stream, the peak in an
NVTX range right after a fill kernel; prints PyTorch's
own figures as JSON on the last line (the request counts are the native
allocator's; under backend:cudaMallocAsync PyTorch does not keep them)."""
import json

import torch

side = torch.cuda.Stream()
keep = []
for i in range(200):
    a = torch.empty(1000 + 37 * i, dtype=torch.uint8, device="cuda")
    b = torch.randn(64 + i, 128, device="cuda")
    c = b @ b.T
    if i % 3 == 0:
        keep.append(c)
    if i % 50 == 0:
        with torch.cuda.stream(side):
            d = torch.ones(3 << 20, dtype=torch.uint8, device="cuda")
        d.record_stream(torch.cuda.current_stream())
        del d
    del a, b
    if len(keep) > 20:
        keep.pop(0)
# the peak: inside an NVTX range, right after a kernel on this stream
torch.cuda.nvtx.range_push("peak-phase")
filled = torch.ones(4096, device="cuda")
big = torch.empty(300 << 20, dtype=torch.uint8, device="cuda")
torch.cuda.nvtx.range_pop()
del big, keep, filled
torch.cuda.synchronize()
stats = torch.cuda.memory_stats()
print(json.dumps({
    "torch_max_memory_allocated": torch.cuda.max_memory_allocated(),
    "torch_requested_bytes_peak": stats["requested_bytes.all.peak"],
    "torch_max_memory_reserved": torch.cuda.max_memory_reserved(),
    "allocs": stats["allocation.all.allocated"],
    "requested_total": stats["requested_bytes.all.allocated"],
    "live": stats["allocation.all.current"],
}))
