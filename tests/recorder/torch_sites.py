"""Call sites and NVTX ranges for the gpu suite (recorded with --stacks
python). Each allocation the checks look for has its own size and a marker
comment on its line; the checks find the line numbers from the markers.
Prints PyTorch's own allocation count as JSON on the last line."""
import json

import torch
from torch.cuda import nvtx

x = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")  # SITE-PLAIN
with nvtx.range("phase-a"):
    y = torch.empty(3 << 20, dtype=torch.uint8, device="cuda")  # SITE-RANGE
w = torch.randn(300, 200, device="cuda", requires_grad=True)  # SITE-LEAF
loss = (w @ w.T).sum()
loss.backward()  # SITE-BACKWARD
with torch.autograd.profiler.emit_nvtx():
    z = w.detach() @ w.detach().T
torch.cuda.synchronize()
stats = torch.cuda.memory_stats()
print(json.dumps({"allocs": stats["allocation.all.allocated"]}))
