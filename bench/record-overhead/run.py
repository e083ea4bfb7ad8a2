#!/usr/bin/env python3
"""Recording overhead as users feel it: step time under `memtrace record`
(default capture: requests, kernels on) divided by the step time of the same
script run plain with PyTorch's default allocator, for GPT-2 small training,
ResNet-50 training, BERT-base bf16 training and the GPT-2 generation loop.
Plain and recorded runs alternate, --reps times each; the figure is the
ratio of the medians. Targets: 1.03, 1.03, 1.05, 1.05. --variant adds
recorded configurations to the same rounds (e.g. 'as-is=--capture as-is',
'stacks-none=--stacks none') to show where the cost goes. Prints figures
and asserts nothing.

Usage: run.py MEMTRACE [--reps N] [--variant NAME[=OPTIONS]]... [--cpus LIST]
              [--only SCRIPTS] [--json PATH]
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


def one(memtrace, script, args, recorded, tmp, opts=(), cpus=None):
    side = os.path.join(tmp, "side.json")
    cmd = [sys.executable, os.path.join(TORCH, script), "--no-expandable", "--json", side] + args
    if recorded:
        cmd = [memtrace, "record", "-o", os.path.join(tmp, "bench.db")] + list(opts) + ["--"] + cmd
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(side) as f:
        return json.load(f)["ms_per_step"]


def variant(text):
    """NAME or NAME=OPTIONS ('stacks-none=--stacks none')."""
    name, _, opts = text.partition("=")
    return name, opts.split()


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
    a = p.parse_args()
    variants = a.variant or [("default", [])]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # the first recording of a Python program may build the PyTorch bridge
        one(a.memtrace, WORKLOADS[0][1], ["--steps", "1", "--warmup", "0"], True, tmp)
        for name, script, args, target in WORKLOADS:
            if a.only and script not in a.only.split(","):
                continue
            plain, rec = [], {v: [] for v, _ in variants}
            for _ in range(a.reps):  # interleaved: plain, then each variant
                plain.append(one(a.memtrace, script, args, False, tmp, cpus=a.cpus))
                for v, opts in variants:
                    rec[v].append(one(a.memtrace, script, args, True, tmp, opts, a.cpus))
            base = statistics.median(plain)
            row = dict(workload=name, plain_ms=plain, target=target, variants={})
            line = "%-22s plain %8.2f ms" % (name, base)
            for v, _ in variants:
                ratio = statistics.median(rec[v]) / base
                row["variants"][v] = dict(recorded_ms=rec[v], ratio=round(ratio, 4))
                line += "  %s %8.2f ms ratio %.3f" % (v, statistics.median(rec[v]), ratio)
            rows.append(row)
            print(line + "  (target %.2f)" % target, flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
