"""Shared by the PyTorch samples: arguments, the timed step loop and the
JSON sidecar with PyTorch's own memory figures.

Each sample script gives a setup(args) returning a step() callable; run()
does warm-up steps, times the rest, and writes (with --json PATH):

  torch_max_memory_allocated            torch.cuda.max_memory_allocated() of this run
  torch_requested_bytes_peak            memory_stats()['requested_bytes.all.peak'] of this run
  torch_max_memory_reserved_native      torch.cuda.max_memory_reserved() of this run (native allocator)
  torch_max_memory_reserved_expandable  the same steps in a fresh process with
                                        PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  ms_per_step, gpu, torch_version, steps, batch, script
  block_ms                              ms per step of each timed block (--block)
  block_cpu_ms                          CPU time of the whole process (all its threads)
                                        per step of each timed block
  block_step_cpu_ms                     the same, of the threads that run the steps only (the
                                        main thread and PyTorch's pt_autograd threads): what
                                        a recorder adds on the program's own threads, apart
                                        from its own thread's work

bench/record-overhead/run.py runs several copies of a script at once in
lockstep (--turns): each waits for its turn before every block of steps, so
plain and recorded blocks alternate a fraction of a second apart and a shared
host's drift hits both alike.
"""

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def parse(description, steps=10, batch=8, extra=None):
    p = argparse.ArgumentParser(description=description)
    if extra:
        extra(p)
    p.add_argument("--steps", type=int, default=steps, help="timed steps (default %(default)s)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first (default %(default)s)")
    p.add_argument("--batch", type=int, default=batch, help="batch size (default %(default)s)")
    p.add_argument("--json", metavar="PATH", help="write the sidecar with PyTorch's figures here")
    p.add_argument("--no-expandable", action="store_true",
                   help="skip the second run with expandable_segments:True")
    p.add_argument("--emit-nvtx", action="store_true",
                   help="run the steps under torch.autograd.profiler.emit_nvtx() (one NVTX "
                        "range per operator)")
    p.add_argument("--memory-history", action="store_true",
                   help="record with PyTorch's own torch.cuda.memory._record_memory_history() "
                        "(its defaults) from before the model exists: the peer of memtrace "
                        "record in bench/record-overhead/run.py")
    p.add_argument("--block", type=int, metavar="N",
                   help="time the steps in blocks of N (default: one block)")
    p.add_argument("--turns", metavar="GO,DONE",
                   help="two FIFOs: wait for a byte on GO before the warm-up and before each "
                        "block, write one to DONE after it (run.py's lockstep)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


def _clean_env():
    """The environment without memtrace's recording (the expandable run is not recorded)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMTRACE_") and k not in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in env.get("PYTHONPATH", "").split(os.pathsep)
        if p and not os.path.isfile(os.path.join(p, "sitecustomize.py")))
    env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    return env


def train_step(forward, opt):
    """A training step in the NVTX phases forward, backward and optimizer
    (torch.cuda.nvtx ranges; free when no tool listens). forward() returns
    the loss."""
    from torch.cuda import nvtx

    def step():
        with nvtx.range("forward"):
            loss = forward()
        with nvtx.range("backward"):
            loss.backward()
        with nvtx.range("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
    return step


class _Turns:
    """Lockstep with other runs (--turns GO,DONE): take() blocks until
    run.py gives this run its turn, give() hands the turn back. After its
    last block a run takes one more turn, which run.py gives every run at
    once when all blocks are timed. Without --turns both do nothing."""

    def __init__(self, spec):
        self.go = self.done = None
        if spec:
            go, done = spec.split(",")
            self.go = open(go, "rb", buffering=0)  # the order run.py opens them in
            self.done = open(done, "wb", buffering=0)

    def take(self):
        if self.go and not self.go.read(1):
            sys.exit("common: --turns: the other end closed")

    def give(self):
        if self.done:
            self.done.write(b".")


def _step_threads_ns():
    """Nanoseconds on the CPU so far of the threads that run the steps: the
    main thread and PyTorch's autograd threads (the kernel's schedstat, exact
    to the ns, where /proc's utime counts whole ticks)."""
    total = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                name = f.read().strip()
            if int(tid) != os.getpid() and not name.startswith("pt_autograd"):
                continue
            with open("/proc/self/task/%s/schedstat" % tid) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError):  # the thread has ended
            pass
    return total


def _timed_blocks(args, step):
    """Warm-up, then the timed steps in blocks of --block, each synchronized
    and taken as a turn; returns ms per step of each block, the process's CPU
    ms per step of each block, the step threads' CPU ms per step of each
    block, and ms per step of them all."""
    import torch

    turns = _Turns(args.turns)
    turns.take()
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    turns.give()
    blocks, cpu, step_cpu, left, total = [], [], [], args.steps, 0.0
    while left > 0:
        n = min(args.block or left, left)
        turns.take()
        s0 = _step_threads_ns()
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1000.0
        cpu.append((time.process_time() - c0) * 1000.0 / n)
        step_cpu.append((_step_threads_ns() - s0) / 1e6 / n)
        turns.give()
        blocks.append(ms / n)
        total += ms
        left -= n
    turns.take()  # exit only once every run's blocks are timed: a teardown slows a GPU neighbour
    return blocks, cpu, step_cpu, total / max(args.steps, 1)


def run(args, setup):
    import contextlib

    import torch

    torch.manual_seed(0)
    if args.memory_history:
        torch.cuda.memory._record_memory_history()
    step = setup(args)
    ops = torch.autograd.profiler.emit_nvtx() if args.emit_nvtx else contextlib.nullcontext()
    with ops:
        blocks, cpu, step_cpu, ms = _timed_blocks(args, step)
    stats = torch.cuda.memory_stats()
    figures = {
        "torch_max_memory_allocated": torch.cuda.max_memory_allocated(),
        "torch_requested_bytes_peak": stats.get("requested_bytes.all.peak", 0),
        "torch_max_memory_reserved_native": torch.cuda.max_memory_reserved(),
    }
    if args.child:
        print(json.dumps(figures))
        return
    if not args.no_expandable:
        argv = [sys.executable, sys.argv[0]] + [a for a in sys.argv[1:]] + ["--child"]
        argv = _drop_options(argv, ("--json", "--turns"))
        r = subprocess.run(argv, env=_clean_env(), stdout=subprocess.PIPE, text=True, check=True)
        child = json.loads(r.stdout.strip().splitlines()[-1])
        figures["torch_max_memory_reserved_expandable"] = child["torch_max_memory_reserved_native"]
    figures.update({
        "ms_per_step": round(ms, 3),
        "block_ms": [round(b, 4) for b in blocks],
        "block_cpu_ms": [round(c, 4) for c in cpu],
        "block_step_cpu_ms": [round(c, 4) for c in step_cpu],
        "steps": args.warmup + args.steps,
        "batch": args.batch,
        "script": os.path.basename(sys.argv[0]),
        "gpu": torch.cuda.get_device_name(),
        "torch_version": torch.__version__,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    })
    print(json.dumps(figures, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
            f.write("\n")


def _drop_options(argv, names):
    """argv without the options in names and their values."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in names:
            skip = True
            continue
        if a.split("=", 1)[0] in names:
            continue
        out.append(a)
    return out
