#!/usr/bin/env python3
"""What CUPTI's timed activity kinds add to PyTorch work, measured inside one
process, so a shared host's swings between processes cancel out. Run it
under `memtrace record --no-kernels`: the recorder is attached with its
kernel, memcpy and memset records off, and this script switches them on and
off through CUPTI itself (the same libcupti the recorder loaded) between
blocks of work, the states interleaved block by block. The work:
  --op add     1000 launches of torch.add into an existing tensor of
               --elements floats (a PyTorch elementwise kernel; 256 elements
               are one thread block, so the launch dominates; 16M elements
               are thousands of blocks, so the GPU does); us per launch
  --op mm      1000 64x64 bf16 matrix products (cuBLAS kernels, launched as
               cuBLAS launches); us per launch
  --script S   --steps-per-block steps of a sample in samples/torch (its
               setup() and step, with ARGS after --); ms per step
Prints, per state, the median and mean of the blocks and the difference to
the state with none of the records; asserts nothing.

--launch-callbacks switches CUPTI's callbacks on the launch APIs instead
of activity kinds: run under the bench library alone
(CUDA_INJECTION64_PATH=.../libcupti-kernels.so MT_BENCH_KERNELS=launch, no
memtrace), states none, driver (callbacks on the driver's launch APIs only)
and runtime+driver (both domains, as the recorder subscribes): what a
launch pays for each domain's callbacks, the records they take included.

--never N first runs N blocks before any kind was ever switched on (the
state 'never'), to show whether switching a kind on leaves a cost behind
once it is off again: 'never' against 'none'. Those blocks come first, not
interleaved, so the host's drift between them and the rest is in the
difference too.

Usage: memtrace record --no-kernels -- python3 cupti_kinds.py [--blocks N] [--never N] [--json PATH]
           (--op add|mm | --script SCRIPT [--steps-per-block N] [-- ARGS])
       CUDA_INJECTION64_PATH=LIB MT_BENCH_KERNELS=launch python3 cupti_kinds.py --launch-callbacks ...
"""
import argparse
import ctypes
import json
import os
import runpy
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "..", "..", "samples", "torch")
LAUNCHES = 1000
# CUpti_ActivityKind values (cupti_activity.h)
MEMCPY, MEMSET, KERNEL, CONCURRENT_KERNEL = 1, 2, 3, 10
KINDS = (CONCURRENT_KERNEL, KERNEL, MEMCPY, MEMSET)
STATES = [
    ("none", []),
    ("kernel", [CONCURRENT_KERNEL]),
    ("memcpy+memset", [MEMCPY, MEMSET]),
    ("all three", [CONCURRENT_KERNEL, MEMCPY, MEMSET]),
    # CUPTI's serialized kernel records: kernels on different streams no
    # longer overlap, and timing no longer instruments the kernel's code
    ("kernel, serial", [KERNEL]),
]
# --launch-callbacks: (runtime, driver) launch callbacks on
CALLBACK_STATES = [
    ("none", (0, 0)),
    ("driver", (0, 1)),
    ("runtime+driver", (1, 1)),
]


def loaded(name):
    """The library whose file name contains name, as loaded into this
    process (by the recorder, or as the injection library), or None."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if name in path:
                return ctypes.CDLL(path)
    return None


def kinds_switch(cupti):
    """Sets a state of STATES: its kinds on, the others off."""
    def switch(kinds):
        for k in sorted(KINDS, key=lambda k: k in kinds):  # disable before enable
            rc = (cupti.cuptiActivityEnable if k in kinds else cupti.cuptiActivityDisable)(k)
            if rc:
                sys.exit("cupti_kinds: CUPTI refused kind %d: error %d" % (k, rc))
    return switch


def callbacks_switch(bench):
    """Sets a state of CALLBACK_STATES: each domain's launch callbacks."""
    def switch(domains):
        if bench.mt_bench_launch_callbacks(*domains):
            sys.exit("cupti_kinds: the bench library is not in launch mode "
                     "(MT_BENCH_KERNELS=launch)")
    return switch


def launches(op, elements):
    """A block of --op work and its unit: (callable, count per block, unit)."""
    import torch

    if op == "add":
        x = torch.ones(elements, device="cuda")
    else:
        x = torch.ones(64, 64, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    launch = torch.add if op == "add" else torch.mm

    def block():
        for _ in range(LAUNCHES):
            launch(x, x, out=out)
    return block, LAUNCHES, 1e6, "us per launch"


def script_steps(script, args, per_block):
    """A block of a sample's steps: runs the sample as __main__ with its own
    argument parsing, but takes its step from common.run instead of running
    it there."""
    sys.path.insert(0, SAMPLES)
    import common

    got = {}

    def keep(parsed, setup):
        import torch

        torch.manual_seed(0)
        got["step"] = setup(parsed)
    common.run = keep
    sys.argv = [script] + args
    runpy.run_path(os.path.join(SAMPLES, script), run_name="__main__")
    step = got["step"]

    def block():
        for _ in range(per_block):
            step()
    return block, per_block, 1e3, "ms per step"


def main():
    argv = sys.argv[1:]
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=60, help="blocks per state (default 60)")
    p.add_argument("--op", choices=("add", "mm"), default="add")
    p.add_argument("--elements", type=int, default=256, help="--op add: tensor size")
    p.add_argument("--script", help="a sample in samples/torch, e.g. bert_train.py")
    p.add_argument("--steps-per-block", type=int, default=4)
    p.add_argument("--never", type=int, default=0, metavar="N",
                   help="blocks before any kind is switched on (default 0)")
    p.add_argument("--launch-callbacks", action="store_true",
                   help="switch the launch callbacks of libcupti-kernels.so, not activity kinds")
    p.add_argument("--json", metavar="PATH")
    a = p.parse_args(argv)

    import torch

    torch.ones(1, device="cuda")  # CUDA up: the injection library is loaded
    if a.launch_callbacks:
        bench = loaded("libcupti-kernels.so")
        if not bench:
            sys.exit("cupti_kinds: no libcupti-kernels.so in this process; run it with "
                     "CUDA_INJECTION64_PATH=.../libcupti-kernels.so MT_BENCH_KERNELS=launch")
        states, switch = CALLBACK_STATES, callbacks_switch(bench)
    else:
        cupti = loaded("/libcupti.so")
        if not cupti:
            sys.exit("cupti_kinds: no libcupti in this process; run it under memtrace record "
                     "--no-kernels")
        states, switch = STATES, kinds_switch(cupti)
    if a.script:
        block, count, scale, unit = script_steps(a.script, rest, a.steps_per_block)
    else:
        block, count, scale, unit = launches(a.op, a.elements)
    per = {name: [] for name, _ in states}

    def timed(work):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        work()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * scale / count

    if a.never:
        block()  # warm-up
        per["never"] = [timed(block) for _ in range(a.never)]
    for b in range(a.blocks * len(states) + len(states)):
        name, setting = states[b % len(states)]
        switch(setting)
        took = timed(block)
        if b >= len(states):  # the first round warms up
            per[name].append(took)
    base = statistics.median(per["none"])
    work = a.script or (a.op if a.op == "mm" else "add of %d" % a.elements)
    figures = {"work": work, "unit": unit, "gpu": torch.cuda.get_device_name(),
               "torch_version": torch.__version__, "blocks": a.blocks, "per_block": count,
               "states": {}}
    for name in per:
        med, mean = statistics.median(per[name]), statistics.mean(per[name])
        figures["states"][name] = dict(median=round(med, 4), mean=round(mean, 4),
                                       added=round(med - base, 4), blocks=per[name])
        print("%-14s %9.3f %s median, %9.3f mean (%+.3f)" % (name, med, unit, mean, med - base))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
