#!/usr/bin/env python3
"""The cost of recording per PyTorch operation, away from any model: a
"step" is 1000 operations of one kind, so ms per step is microseconds per
operation. `--op alloc`: torch.empty + del, an ALLOC, a FREE_REQUESTED and a
FREE_COMPLETED through the caching allocator and no kernel, made --depth
Python frames deep (a model's forward is 20-40 deep). `--op launch`: one
small kernel (torch.add into an existing tensor), no allocation. Run by
run.py (--only torch_ops.py) plain and recorded, like the workloads.

Time per operation varies by tens of percent between processes on a shared
host, more than what recording adds; so the sidecar also has the
instructions the calling thread retired per operation (Linux perf_event,
user and kernel), which do not depend on how fast the CPU ran:
`instructions_per_op`, or null where the counter cannot be opened.

Usage: torch_ops.py [--op alloc|launch] [--depth N] [--steps N] [--json PATH]
"""
import ctypes
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "samples", "torch"))
import common  # noqa: E402

OPS = 1000


def extra(p):
    p.add_argument("--op", choices=("alloc", "launch"), default="alloc")
    p.add_argument("--depth", type=int, default=25, help="Python frames above the operation")


class InstructionCounter:
    """Instructions retired by the calling thread (perf_event_open)."""
    SYSCALL = 298  # x86-64

    def __init__(self):
        libc = ctypes.CDLL(None, use_errno=True)
        # perf_event_attr, first 64 bytes: type=HARDWARE, size, config=INSTRUCTIONS,
        # flags: disabled (bit 0), exclude_hv (bit 6)
        attr = struct.pack("IIQQQQQ", 0, 64, 1, 0, 0, 0, 1 | 1 << 6) + bytes(8)
        buf = ctypes.create_string_buffer(attr, 64)
        self.fd = libc.syscall(self.SYSCALL, buf, 0, -1, -1, 0) if sys.platform == "linux" else -1
        self.libc = libc

    def start(self):
        if self.fd >= 0:
            self.libc.ioctl(self.fd, 0x2403, 0)  # PERF_EVENT_IOC_RESET
            self.libc.ioctl(self.fd, 0x2400, 0)  # PERF_EVENT_IOC_ENABLE

    def stop(self):
        if self.fd < 0:
            return None
        self.libc.ioctl(self.fd, 0x2401, 0)  # PERF_EVENT_IOC_DISABLE
        return struct.unpack("Q", os.read(self.fd, 8))[0]


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
    counter = InstructionCounter()
    counted = {"steps": 0, "instructions": 0}

    def step():
        counter.start()
        nested(args.depth, body)
        n = counter.stop()
        if n is not None:
            counted["steps"] += 1
            counted["instructions"] += n
    step.counted = counted
    return step


def main():
    args = common.parse(__doc__.splitlines()[0], steps=200, batch=1, extra=extra)
    steps = []
    common.run(args, lambda a: steps.append(setup(a)) or steps[0])
    c = steps[0].counted
    if args.json:  # add the count to the sidecar common.run wrote
        with open(args.json) as f:
            side = json.load(f)
        side["instructions_per_op"] = (round(c["instructions"] / (c["steps"] * OPS), 1)
                                       if c["steps"] else None)
        with open(args.json, "w") as f:
            json.dump(side, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
