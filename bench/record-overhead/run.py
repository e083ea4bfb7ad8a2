#!/usr/bin/env python3
"""Recording overhead as users feel it: step time under `memtrace record`
(default capture: requests, kernels on) divided by the step time of the same
script run plain with PyTorch's default allocator, for GPT-2 small training,
ResNet-50 training, BERT-base bf16 training and the GPT-2 generation loop.
Plain and recorded runs alternate, --reps rounds of each (the order reversed
every other round); the figure is the ratio of the medians, shown beside the
median of the ratios within a round. Targets: 1.03, 1.03, 1.05, 1.05. Prints figures and
asserts nothing.

Where the cost goes:
- --variant adds recorded configurations to the same rounds: 'NAME=OPTIONS'
  with `memtrace record` options ('as-is=--capture as-is', 'stacks-none=
  --stacks none'); a word VAR=VALUE among them sets the environment instead
  ('old=MEMTRACE_INJECT_PATH=/path/libmemtrace-inject.so').
- --hook-floor LIB --recorder DIR adds 'hook' and 'hook+frames': the script
  run with the PyTorch bridge attached and nothing behind it
  (hook_floor.py), the least request capture can cost.
- --only torch_ops.py runs the per-operation workloads instead (1000
  allocations, or 1000 kernel launches, a step: ms per step is us per
  operation; the difference to plain is what recording adds to each).

Usage: run.py MEMTRACE [--reps N] [--variant NAME[=OPTIONS]]... [--cpus LIST]
              [--hook-floor LIB --recorder DIR] [--only SCRIPTS] [--json PATH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH = os.path.join(HERE, "..", "..", "samples", "torch")

WORKLOADS = [
    ("gpt2-small train", "gpt2_train.py", ["--steps", "30", "--warmup", "3", "--batch", "8"], 1.03),
    ("resnet50 train", "resnet50_train.py", ["--steps", "30", "--warmup", "3", "--batch", "64"], 1.03),
    ("bert-base bf16 train", "bert_train.py", ["--steps", "60", "--warmup", "5", "--batch", "32"], 1.05),
    ("gpt2 generation", "generate.py", ["--steps", "2", "--warmup", "1", "--batch", "4", "--tokens", "256"], 1.05),
]
# Per operation (microseconds per op); only with --only torch_ops.py.
OPS = [
    ("alloc+free, 25 frames deep", "torch_ops.py", ["--op", "alloc", "--steps", "50"], None),
    ("kernel launch", "torch_ops.py", ["--op", "launch", "--steps", "50"], None),
]


def one(memtrace, script, args, tmp, how=None, cpus=None):
    """The sidecar of one run: plain (how None), recorded (("record", OPTS,
    ENV)) or with the hook and nothing behind it (("floor", ARGS))."""
    side = os.path.join(tmp, "side.json")
    path = os.path.join(TORCH if script != "torch_ops.py" else HERE, script)
    cmd = [sys.executable, path, "--no-expandable", "--json", side] + args
    env = dict(os.environ)
    if how and how[0] == "record":
        cmd = [memtrace, "record", "-o", os.path.join(tmp, "bench.db")] + how[1] + ["--"] + cmd
        env.update(how[2])
    elif how:
        cmd = [sys.executable, os.path.join(HERE, "hook_floor.py")] + how[1] + cmd[1:]
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    with open(side) as f:
        return json.load(f)


def variant(text):
    """NAME or NAME=WORDS: memtrace record options, and VAR=VALUE words for the
    environment."""
    name, _, words = text.partition("=")
    opts = [w for w in words.split() if not (w[:1].isupper() and "=" in w)]
    env = dict(w.split("=", 1) for w in words.split() if w[:1].isupper() and "=" in w)
    return name, ("record", opts, env)


def report(name, target, plain, rec):
    """Prints a workload's line: per variant the median ms per step, the ratio
    of the medians, and the median and range of the ratios within a round
    (a round's runs are close in time; a shared host's speed drifts over
    tens of seconds); returns its row for --json."""
    base = statistics.median(plain)
    row = dict(workload=name, plain_ms=plain, target=target, variants={})
    line = "%-26s plain %8.3f ms" % (name, base)
    for v, runs in rec.items():
        med = statistics.median(runs)
        paired = sorted(r / p for r, p in zip(runs, plain))
        row["variants"][v] = dict(recorded_ms=runs, ratio=round(med / base, 4),
                                  paired_ratio=round(statistics.median(paired), 4),
                                  added_ms=round(med - base, 4))
        line += "  %s %8.3f ms ratio %.3f (paired %.3f, %.3f-%.3f)" % (
            v, med, med / base, statistics.median(paired), paired[0], paired[-1])
    print(line + ("  (target %.2f)" % target if target else ""), flush=True)
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("memtrace")
    p.add_argument("--reps", type=int, default=2)
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
    only = a.only.split(",") if a.only else None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # the first recording of a Python program may build the PyTorch bridge
        one(a.memtrace, WORKLOADS[0][1], ["--steps", "1", "--warmup", "0"], tmp, ("record", [], {}))
        for name, script, args, target in WORKLOADS + OPS:
            if (only and script not in only) or (not only and script == "torch_ops.py"):
                continue
            plain, rec = [], {v: [] for v, _ in variants}
            for r in range(a.reps):  # rounds: plain and each variant, order reversed every other
                order = [(None, None)] + variants
                for v, how in order if r % 2 == 0 else order[::-1]:
                    ms = one(a.memtrace, script, args, tmp, how, a.cpus)["ms_per_step"]
                    (plain if v is None else rec[v]).append(ms)
            rows.append(report(name, target, plain, rec))
            if a.json:  # after each workload: a run cut short keeps what it measured
                with open(a.json, "w") as f:
                    json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
