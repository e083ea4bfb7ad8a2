#!/usr/bin/env python3
"""The cost of recording per PyTorch operation, away from any model: a
"step" is 1000 operations of one kind, so ms per step is microseconds per
operation. `--op alloc`: torch.empty + del, an ALLOC, a FREE_REQUESTED and a
FREE_COMPLETED through the caching allocator and no kernel, made --depth
Python frames deep (a model's forward is 20-40 deep). `--op launch`: one
small kernel (torch.add into an existing tensor), no allocation. `--op
device`: torch.cuda.current_device(), one cudaGetDevice and nothing else
(PyTorch makes about 11 000 of those a BERT step). Run by
run.py (--only torch_ops.py) plain and recorded, like the workloads.

A shared host's speed differs between processes by more than recording
adds to an operation, even in run.py's lockstep. With --hook-floor LIB
--recorder DIR the script instead compares inside one process: --blocks
steps timed, then the PyTorch bridge attached with nothing behind it
(hook_floor.py), then as many steps again; it prints (and with --json
writes) us_per_op before and after, and their difference: what PyTorch's
allocator hook and the bridge (with --python-sites, its frame walk too) add
to each operation.

Usage: torch_ops.py [--op alloc|launch|device] [--depth N] [--steps N] [--json PATH]
       torch_ops.py --hook-floor LIB --recorder DIR [--python-sites] [--blocks N]
                    [--op alloc|launch] [--depth N] [--json PATH]
"""
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "samples", "torch"))
import common  # noqa: E402

OPS = 1000


def extra(p):
    p.add_argument("--op", choices=("alloc", "launch", "device"), default="alloc")
    p.add_argument("--depth", type=int, default=25, help="Python frames above the operation")
    p.add_argument("--hook-floor", metavar="LIB", help="compare before/after attaching the "
                   "bridge with libhook-floor.so behind it, in this process")
    p.add_argument("--recorder", metavar="DIR", help="with --hook-floor: the folder with "
                   "torch-bridge.cpp and python/")
    p.add_argument("--python-sites", action="store_true", help="with --hook-floor: name sites")
    p.add_argument("--blocks", type=int, default=30, help="with --hook-floor: timed steps each way")


def nested(depth, fn):
    return fn() if depth <= 0 else nested(depth - 1, fn)


def setup(args):
    import torch

    a = torch.ones(256, device="cuda")
    out = torch.empty_like(a)

    def allocs():
        for _ in range(OPS):
            x = torch.empty(256, device="cuda")
            del x

    def launches():
        for _ in range(OPS):
            torch.add(a, a, out=out)

    def devices():
        for _ in range(OPS):
            torch.cuda.current_device()

    body = {"alloc": allocs, "launch": launches, "device": devices}[args.op]
    return lambda: nested(args.depth, body)


def before_after(args):
    """Median us per op of --blocks steps before and after attaching the
    bridge with nothing behind it."""
    import torch

    sys.path.insert(0, HERE)
    import hook_floor

    attach = hook_floor.attacher(args.hook_floor, args.recorder, args.python_sites)
    step = setup(args)

    def timed():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e6 / OPS

    figures = {}
    for when in ("before", "after"):
        if when == "after":
            attach()  # torch.cuda is initialised: the allocator exists
        for _ in range(args.warmup):
            step()
        figures["us_per_op_" + when] = round(statistics.median(
            timed() for _ in range(args.blocks)), 4)
    figures["us_added_per_op"] = round(figures["us_per_op_after"] - figures["us_per_op_before"], 4)
    figures.update(op=args.op, depth=args.depth, python_sites=args.python_sites,
                   gpu=torch.cuda.get_device_name(), torch_version=torch.__version__)
    print(json.dumps(figures))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
            f.write("\n")


def main():
    args = common.parse(__doc__.splitlines()[0], steps=200, batch=1, extra=extra)
    if args.hook_floor:
        if not args.recorder:
            sys.exit("torch_ops: --hook-floor needs --recorder")
        before_after(args)
    else:
        common.run(args, setup)


if __name__ == "__main__":
    main()
