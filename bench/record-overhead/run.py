#!/usr/bin/env python3
"""Recording overhead as users feel it: step time under `memtrace record`
(default capture: requests, kernels on) divided by the step time of the same
script run plain with PyTorch's default allocator, for GPT-2 small training,
ResNet-50 training, BERT-base bf16 training and the GPT-2 generation loop.
Targets: 1.03, 1.03, 1.05, 1.05. Prints figures and asserts nothing.

Lockstep. A shared host's speed drifts over tens of seconds by more than
recording costs, so runs one after another compare badly. Instead the plain
run and each recorded configuration run at the same time, each in its own
process with its model loaded, and take turns (samples/torch/common.py
--turns): one block of steps each, a fraction of a second, one process at a
time on the GPU, --cycles times (the order reversed every other cycle).
Each line gives per configuration the mean ms per step, the ratio of the
means to plain, and the median and range of the ratios within a cycle.

Where the cost goes:
- --variant adds recorded configurations: 'NAME=OPTIONS' with `memtrace
  record` options ('as-is=--capture as-is', 'stacks-none=--stacks none'); a
  word VAR=VALUE among them sets the environment instead
  ('old=MEMTRACE_INJECT_PATH=/path/libmemtrace-inject.so'); 'NAME=plain'
  adds a second plain run, whose ratio shows what the lockstep itself reads
  where nothing differs.
- --hook-floor LIB --recorder DIR adds 'hook' and 'hook+frames': the script
  run with the PyTorch bridge attached and nothing behind it
  (hook_floor.py), the least request capture can cost.
- --only torch_ops.py runs the per-operation workloads instead (1000
  allocations, or 1000 kernel launches, a step: ms per step is us per
  operation; the difference to plain is what recording adds to each).

Each process also reports its CPU time (all threads) per step, and the
ratio of those means is printed beside the wall-time ratio.

Usage: run.py MEMTRACE [--cycles N] [--block N] [--variant NAME[=OPTIONS]]... [--cpus LIST]
              [--hook-floor LIB --recorder DIR] [--only SCRIPTS] [--json PATH]
"""
import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH = os.path.join(HERE, "..", "..", "samples", "torch")

# name, script, arguments, steps a turn, target
WORKLOADS = [
    ("gpt2-small train", "gpt2_train.py", ["--warmup", "3", "--batch", "8"], 4, 1.03),
    ("resnet50 train", "resnet50_train.py", ["--warmup", "3", "--batch", "64"], 8, 1.03),
    ("bert-base bf16 train", "bert_train.py", ["--warmup", "5", "--batch", "32"], 12, 1.05),
    ("gpt2 generation", "generate.py", ["--warmup", "1", "--batch", "4", "--tokens", "256"], 1,
     1.05),
]
# Per operation (microseconds per op); only with --only torch_ops.py.
OPS = [
    ("alloc+free, 25 frames deep", "torch_ops.py", ["--op", "alloc", "--warmup", "5"], 30, None),
    ("kernel launch", "torch_ops.py", ["--op", "launch", "--warmup", "5"], 30, None),
]


def command(memtrace, script, args, tmp, how, cpus):
    """The command line and environment of one run: plain (how None),
    recorded (("record", OPTS, ENV)) or with the hook and nothing behind it
    (("floor", ARGS))."""
    path = os.path.join(TORCH if script != "torch_ops.py" else HERE, script)
    cmd = [sys.executable, path, "--no-expandable"] + args
    env = dict(os.environ)
    if how and how[0] == "record":
        cmd = [memtrace, "record", "-o", os.path.join(tmp, "bench.db")] + how[1] + ["--"] + cmd
        env.update(how[2])
    elif how:
        cmd = [sys.executable, os.path.join(HERE, "hook_floor.py")] + how[1] + cmd[1:]
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    return cmd, env


class Runner:
    """One process of a lockstep: started at once, then given turns."""

    def __init__(self, name, memtrace, script, args, tmp, how, cpus):
        self.name, self.tmp = name, tmp
        os.makedirs(tmp)
        self.go, self.done = os.path.join(tmp, "go"), os.path.join(tmp, "done")
        os.mkfifo(self.go)
        os.mkfifo(self.done)
        self.side = os.path.join(tmp, "side.json")
        cmd, env = command(memtrace, script, args + ["--turns", self.go + "," + self.done,
                                                     "--json", self.side], tmp, how, cpus)
        self.log = open(os.path.join(tmp, "log"), "w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.go_fd = self.done_fd = None

    def died(self):
        self.log.flush()
        with open(self.log.name) as f:
            tail = f.read()[-2000:]
        raise RuntimeError("%s exited with %s:\n%s" % (self.name, self.proc.poll(), tail))

    def open(self):
        """Opens the FIFOs once the process has (after loading its model)."""
        while self.go_fd is None:
            try:
                self.go_fd = os.open(self.go, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader yet
                if self.proc.poll() is not None:
                    self.died()
                select.select([], [], [], 0.05)
        os.set_blocking(self.go_fd, True)
        self.done_fd = os.open(self.done, os.O_RDONLY | os.O_NONBLOCK)

    def turn(self):
        """Gives the process one turn and waits until it hands it back."""
        try:
            os.write(self.go_fd, b"g")
        except BrokenPipeError:
            self.died()
        while True:
            ready, _, _ = select.select([self.done_fd], [], [], 1.0)
            data = os.read(self.done_fd, 1) if ready else b""
            if data:
                return
            if self.proc.poll() is not None:
                self.died()
            if ready:  # end of file: the process has not opened DONE yet
                select.select([], [], [], 0.01)

    def finish(self):
        """Waits for the process and returns its sidecar."""
        os.close(self.go_fd)
        if self.proc.wait() != 0:
            self.died()
        os.close(self.done_fd)
        self.log.close()
        with open(self.side) as f:
            return json.load(f)


def lockstep(memtrace, script, args, block, cycles, runs, tmp, cpus):
    """Runs plain and each configuration in lockstep; returns each one's
    sidecar (block_ms, block_cpu_ms: per step of every block), in the order
    of runs."""
    args = args + ["--steps", str(block * cycles), "--block", str(block)]
    procs = []
    try:
        for i, (name, how) in enumerate(runs):
            procs.append(Runner(name, memtrace, script, args, os.path.join(tmp, str(i)), how,
                                cpus))
        for p in procs:
            p.open()
        for p in procs:  # warm-up, one at a time
            p.turn()
        for c in range(cycles):
            for p in procs if c % 2 == 0 else procs[::-1]:
                p.turn()
        return [p.finish() for p in procs]
    finally:
        for p in procs:
            if p.proc.poll() is None:
                p.proc.kill()
                p.proc.wait()


def variant(text):
    """NAME or NAME=WORDS: memtrace record options, and VAR=VALUE words for the
    environment."""
    name, _, words = text.partition("=")
    if words == "plain":
        return name, None
    opts = [w for w in words.split() if not (w[:1].isupper() and "=" in w)]
    env = dict(w.split("=", 1) for w in words.split() if w[:1].isupper() and "=" in w)
    return name, ("record", opts, env)


def report(name, target, sides, names):
    """Prints a workload's line (per configuration: mean ms per step, the
    ratio of the means to plain, the median and range of the ratios within a
    cycle, the ratio of the mean CPU times) and returns its row for --json."""
    plain, plain_cpu = sides[0]["block_ms"], sides[0]["block_cpu_ms"]
    base, base_cpu = statistics.mean(plain), statistics.mean(plain_cpu)
    row = dict(workload=name, plain_ms=plain, plain_cpu_ms=plain_cpu, target=target,
               variants={})
    line = "%-26s plain %8.3f ms" % (name, base)
    for v, side in zip(names[1:], sides[1:]):
        runs, cpu = side["block_ms"], side["block_cpu_ms"]
        mean = statistics.mean(runs)
        paired = sorted(r / p for r, p in zip(runs, plain))
        row["variants"][v] = dict(recorded_ms=runs, recorded_cpu_ms=cpu,
                                  cpu_ratio=round(statistics.mean(cpu) / base_cpu, 4),
                                  ratio=round(mean / base, 4),
                                  paired_ratio=round(statistics.median(paired), 4),
                                  paired_min=round(paired[0], 4),
                                  paired_max=round(paired[-1], 4),
                                  added_ms=round(mean - base, 4))
        line += "  %s %8.3f ms ratio %.3f (cycles %.3f, %.3f-%.3f; cpu %.3f)" % (
            v, mean, mean / base, statistics.median(paired), paired[0], paired[-1],
            statistics.mean(cpu) / base_cpu)
    print(line + ("  (target %.2f)" % target if target else ""), flush=True)
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("memtrace")
    p.add_argument("--cycles", type=int, default=10, help="turns each run takes (default 10)")
    p.add_argument("--block", type=int, metavar="N",
                   help="steps a turn (default: the workload's own, 1-12)")
    p.add_argument("--json")
    p.add_argument("--only", help="comma-separated workload scripts to run")
    p.add_argument("--variant", action="append", type=variant, metavar="NAME[=OPTIONS]",
                   help="a recorded configuration (memtrace record options); repeatable; "
                        "default: one, 'default', with no options")
    p.add_argument("--cpus", help="run every process under taskset -c CPUS")
    p.add_argument("--hook-floor", metavar="LIB", help="libhook-floor.so: add the hook-only rows")
    p.add_argument("--recorder", metavar="DIR",
                   help="with --hook-floor: the folder with torch-bridge.cpp and python/")
    a = p.parse_args()
    variants = a.variant or [("default", ("record", [], {}))]
    if a.hook_floor:
        if not a.recorder:
            p.error("--hook-floor needs --recorder")
        floor = ["--noop", a.hook_floor, "--recorder", a.recorder]
        variants = [("hook", ("floor", floor)),
                    ("hook+frames", ("floor", floor + ["--python-sites"]))] + variants
    runs = [("plain", None)] + variants
    only = a.only.split(",") if a.only else None
    chosen = [w for w in WORKLOADS + OPS if (w[1] in only if only else w[1] != "torch_ops.py")]
    if not chosen:
        p.error("--only: no such workload script")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # the first recording of a Python program may build the PyTorch bridge
        cmd, env = command(a.memtrace, chosen[0][1], chosen[0][2] + ["--steps", "1"], tmp,
                           ("record", [], {}), None)
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        for n, (name, script, args, block, target) in enumerate(chosen):
            sides = lockstep(a.memtrace, script, args, a.block or block, a.cycles, runs,
                             os.path.join(tmp, "w%d" % n), a.cpus)
            rows.append(report(name, target, sides, [r for r, _ in runs]))
            if a.json:  # after each workload: a run cut short keeps what it measured
                with open(a.json, "w") as f:
                    json.dump(rows, f, indent=1)

if __name__ == "__main__":
    main()
