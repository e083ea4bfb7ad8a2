"""The classic question: move a Linear(10, 10) to the GPU and nvidia-smi
shows hundreds of MiB. This script only moves the layer to the GPU, then
waits --hold seconds so that the recorder samples the device memory in use,
and prints (and writes with --json) PyTorch's own figures and the driver's:

  torch_memory_allocated   torch.cuda.memory_allocated(): the layer's tensors
  torch_memory_reserved    torch.cuda.memory_reserved(): the caching allocator's segments
  device_used_bytes        total - free from torch.cuda.mem_get_info() (cudaMemGetInfo),
                           what nvidia-smi counts for the device
"""
import argparse
import json
import time

import torch

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--json", metavar="PATH", help="write the figures here")
p.add_argument("--hold", type=float, default=0.5, help="seconds to wait (default %(default)s)")
args = p.parse_args()

layer = torch.nn.Linear(10, 10).cuda()
torch.cuda.synchronize()
time.sleep(args.hold)
free, total = torch.cuda.mem_get_info()
figures = {
    "torch_memory_allocated": torch.cuda.memory_allocated(),
    "torch_memory_reserved": torch.cuda.memory_reserved(),
    "device_used_bytes": total - free,
    "device_total_bytes": total,
    "gpu": torch.cuda.get_device_name(),
    "torch_version": torch.__version__,
    "script": "linear_small.py",
}
print(json.dumps(figures, indent=1))
if args.json:
    with open(args.json, "w") as f:
        json.dump(figures, f, indent=1)
        f.write("\n")
