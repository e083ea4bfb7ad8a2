#!/usr/bin/env python3
"""What CUPTI's timed activity kinds add to one PyTorch kernel launch,
measured inside one process, so a shared host's drift cancels out. Run it
under `memtrace record --no-kernels`: the recorder is attached with its
kernel, memcpy and memset records off, and this script switches them on and
off through CUPTI itself (the same libcupti the recorder loaded) between
blocks of 1000 launches, the states interleaved block by block: --op add,
torch.add into an existing tensor (a PyTorch elementwise kernel); --op mm, a
64x64 bf16 matrix product (a cuBLAS kernel, launched as cuBLAS launches). Prints, per state, the median microseconds per
launch and the difference to the state with none of them; asserts nothing.

Usage: memtrace record --no-kernels -- python3 cupti_kinds.py [--op add|mm] [--blocks N]
                                                              [--json PATH]
"""
import argparse
import ctypes
import json
import statistics
import sys
import time

LAUNCHES = 1000
# CUpti_ActivityKind values (cupti_activity.h)
CONCURRENT_KERNEL, MEMCPY, MEMSET = 10, 1, 2
STATES = [
    ("none", []),
    ("kernel", [CONCURRENT_KERNEL]),
    ("memcpy+memset", [MEMCPY, MEMSET]),
    ("all three", [CONCURRENT_KERNEL, MEMCPY, MEMSET]),
]


def loaded_cupti():
    """The libcupti the recorder loaded into this process, or None."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "/libcupti.so" in path:
                return ctypes.CDLL(path)
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=60, help="blocks per state (default 60)")
    p.add_argument("--op", choices=("add", "mm"), default="add")
    p.add_argument("--json", metavar="PATH")
    a = p.parse_args()

    import torch

    if a.op == "add":
        x = torch.ones(256, device="cuda")
    else:
        x = torch.ones(64, 64, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    launch = torch.add if a.op == "add" else torch.mm
    cupti = loaded_cupti()
    if not cupti:
        sys.exit("cupti_kinds: no libcupti in this process; run it under memtrace record "
                 "--no-kernels")
    us = {name: [] for name, _ in STATES}
    for b in range(a.blocks * len(STATES) + len(STATES)):
        name, kinds = STATES[b % len(STATES)]
        for k in (CONCURRENT_KERNEL, MEMCPY, MEMSET):
            rc = (cupti.cuptiActivityEnable if k in kinds else cupti.cuptiActivityDisable)(k)
            if rc:
                sys.exit("cupti_kinds: CUPTI refused kind %d: error %d" % (k, rc))
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(LAUNCHES):
            launch(x, x, out=out)
        torch.cuda.synchronize()
        if b >= len(STATES):  # the first round warms up
            us[name].append((time.perf_counter() - t0) * 1e6 / LAUNCHES)
    base = statistics.median(us["none"])
    figures = {"op": a.op, "gpu": torch.cuda.get_device_name(), "torch_version": torch.__version__,
               "blocks": a.blocks, "launches_per_block": LAUNCHES, "states": {}}
    for name, _ in STATES:
        med = statistics.median(us[name])
        figures["states"][name] = dict(us_per_launch=round(med, 4),
                                       us_added=round(med - base, 4), blocks_us=us[name])
        print("%-14s %7.3f us per launch (%+.3f)" % (name, med, med - base))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
