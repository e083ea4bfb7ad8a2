#!/usr/bin/env python3
"""The cost of recording per PyTorch operation, away from any model: a
"step" is 1000 operations of one kind, so ms per step is microseconds per
operation. `--op alloc`: torch.empty + del, an ALLOC, a FREE_REQUESTED and a
FREE_COMPLETED through the caching allocator and no kernel, made --depth
Python frames deep (a model's forward is 20-40 deep). `--op launch`: one
small kernel (torch.add into an existing tensor), no allocation. Run by
run.py (--only torch_ops.py) plain and recorded, like the workloads.

Usage: torch_ops.py [--op alloc|launch] [--depth N] [--steps N] [--json PATH]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "samples", "torch"))
import common  # noqa: E402

OPS = 1000


def extra(p):
    p.add_argument("--op", choices=("alloc", "launch"), default="alloc")
    p.add_argument("--depth", type=int, default=25, help="Python frames above the operation")


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

    body = allocs if args.op == "alloc" else launches
    return lambda: nested(args.depth, body)


def main():
    args = common.parse(__doc__.splitlines()[0], steps=200, batch=1, extra=extra)
    common.run(args, setup)


if __name__ == "__main__":
    main()
