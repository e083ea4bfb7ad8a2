"""The OOM story in a loop: on a side stream, allocate 1 GiB tensors until
PyTorch raises torch.cuda.OutOfMemoryError, catch it, free everything, and
do it again, --rounds times (default 7): --rounds OOMs, each caught. Each
tensor is filled (a kernel on the side stream) once allocated, all inside
the NVTX range "fill-until-oom": the kernel and range live at each OOM.

  memtrace record -o oom.db -- python3 samples/torch/oom_loop.py --json oom.json

Prints and writes (--json PATH) PyTorch's own figures of the run: ooms
(the OutOfMemoryErrors caught), the largest number of 1 GiB tensors held at
once, torch_requested_bytes_peak (memory_stats()['requested_bytes.all.peak']),
torch_max_memory_reserved, memory_stats()['num_ooms'] and the pid. Each
round ends with torch.cuda.empty_cache(), so that every round asks the
driver again.
"""
import argparse
import json
import os

import torch

GiB = 1 << 30


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7, help="OOMs to reach (default %(default)s)")
    p.add_argument("--json", metavar="PATH", help="write the figures here")
    a = p.parse_args()
    side = torch.cuda.Stream()
    ooms = most = 0
    for _ in range(a.rounds):
        held = []
        torch.cuda.nvtx.range_push("fill-until-oom")
        with torch.cuda.stream(side):
            try:
                while True:
                    held.append(torch.empty(GiB, dtype=torch.uint8, device="cuda"))
                    held[-1].fill_(1)
            except torch.cuda.OutOfMemoryError:
                ooms += 1
        torch.cuda.nvtx.range_pop()
        most = max(most, len(held))
        del held
        side.synchronize()
        torch.cuda.empty_cache()
    stats = torch.cuda.memory_stats()
    fig = {
        "pid": os.getpid(),
        "ooms": ooms,
        "most_held_gib": most,
        "torch_requested_bytes_peak": stats["requested_bytes.all.peak"],
        "torch_max_memory_reserved": torch.cuda.max_memory_reserved(),
        "torch_num_ooms": stats.get("num_ooms"),
    }
    print(json.dumps(fig), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(fig, f)


if __name__ == "__main__":
    main()
