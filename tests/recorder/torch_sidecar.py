"""A small PyTorch program for the gpu suite's launcher cases
(gpu_launcher_tests.py): started through bash -c, env, sh, make, torchrun
and the rest, it allocates tensors of sizes of its own on GPU 0, runs a
matmul, frees them, and writes PyTorch's own figures of this process as a
sidecar: SIDECAR_DIR/PID.json (argv[1] is SIDECAR_DIR) with pid, rank,
requested_bytes.all.peak, allocation.all.allocated and
max_memory_reserved, and the same as one stdout line "sidecar {...}".

Under torchrun (WORLD_SIZE set) each rank joins a gloo process group on the
one GPU, and rank r's sizes differ from the other's.
"""
import json
import os
import sys

import torch

MiB = 1 << 20


def main():
    out = sys.argv[1]
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo")
    torch.cuda.set_device(0)
    keep = [torch.empty((rank + 1) * MiB + k * 4096 + 17, dtype=torch.uint8, device="cuda")
            for k in range(8)]
    for t in keep:
        t.fill_(rank + 1)
    x = torch.randn(512, 512, device="cuda")
    y = x @ x
    torch.cuda.synchronize()
    del keep, x, y
    torch.cuda.synchronize()
    if world > 1:
        total = torch.tensor([rank + 1.0])
        dist.all_reduce(total)  # on the CPU: gloo
        dist.destroy_process_group()
    stats = torch.cuda.memory_stats()
    side = {
        "pid": os.getpid(),
        "rank": rank,
        "requested_peak": stats["requested_bytes.all.peak"],
        "allocs": stats["allocation.all.allocated"],
        "max_reserved": torch.cuda.max_memory_reserved(),
    }
    with open(os.path.join(out, "%d.json" % os.getpid()), "w") as f:
        json.dump(side, f)
    sys.stdout.write("sidecar " + json.dumps(side) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
