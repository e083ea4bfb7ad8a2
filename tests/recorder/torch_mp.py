"""torch.multiprocessing for the gpu suite (gpu_multiproc_tests.py).

The parent starts CUDA and allocates one tensor of PARENT_BYTES (so that it
has a trace row the children name), then spawns NPROCS workers with
torch.multiprocessing.spawn (start method spawn). Worker r allocates, on
GPU 0, the uint8 tensors sizes_of(r) -- all alive at once, then all freed --
and prints PyTorch's own figures as one JSON line "figures {...}" (rank,
pid, allocs, requested_bytes.all.peak, sizes). The parent prints its own
line (rank -1) last.
"""
import json
import os
import sys

import torch
import torch.multiprocessing as mp

NPROCS = 2
PARENT_BYTES = 12345
MiB = 1 << 20


def sizes_of(rank):
    """Distinct per rank: (rank+1) MiB + k*512 + rank + 1 bytes, k = 0..7."""
    return [(rank + 1) * MiB + k * 512 + rank + 1 for k in range(8)]


def figures(rank, sizes):
    stats = torch.cuda.memory_stats()
    line = json.dumps({
        "rank": rank,
        "pid": os.getpid(),
        "allocs": stats["allocation.all.allocated"],
        "requested_peak": stats["requested_bytes.all.peak"],
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "sizes": sizes,
    })
    # One write per line: the processes share the pipe.
    sys.stdout.write("figures " + line + "\n")
    sys.stdout.flush()


def worker(rank):
    torch.cuda.set_device(0)
    sizes = sizes_of(rank)
    keep = [torch.empty(n, dtype=torch.uint8, device="cuda") for n in sizes]
    for i in range(len(keep)):
        keep[i].fill_(rank + 1)
    torch.cuda.synchronize()
    del keep
    torch.cuda.synchronize()
    figures(rank, sizes)


def main():
    mine = torch.empty(PARENT_BYTES, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    mp.spawn(worker, nprocs=NPROCS, join=True, start_method="spawn")
    del mine
    torch.cuda.synchronize()
    figures(-1, [PARENT_BYTES])


if __name__ == "__main__":
    main()
