#!/usr/bin/env python3
"""Recording overhead as users feel it: step time under `memtrace record`
(default capture: requests, kernels on) divided by the step time of the same
script run plain with PyTorch's default allocator, for GPT-2 small training,
ResNet-50 training, BERT-base bf16 training and the GPT-2 generation loop.
Plain and recorded runs alternate, --reps times each; the figure is the
ratio of the medians. Targets: 1.03, 1.03, 1.05, 1.05. With --breakdown it
also runs `--capture as-is` (no PyTorch bridge) and `--no-kernels` once
each, to show where the cost goes. Prints figures and asserts nothing.

Usage: run.py MEMTRACE [--reps N] [--json PATH]
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


def one(memtrace, script, args, recorded, tmp, opts=()):
    side = os.path.join(tmp, "side.json")
    cmd = [sys.executable, os.path.join(TORCH, script), "--no-expandable", "--json", side] + args
    if recorded:
        cmd = [memtrace, "record", "-o", os.path.join(tmp, "bench.db")] + list(opts) + ["--"] + cmd
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(side) as f:
        return json.load(f)["ms_per_step"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("memtrace")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--json")
    p.add_argument("--only", help="comma-separated workload scripts to run")
    p.add_argument("--breakdown", action="store_true")
    a = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, script, args, target in WORKLOADS:
            if a.only and script not in a.only.split(","):
                continue
            plain, rec = [], []
            for _ in range(a.reps):
                plain.append(one(a.memtrace, script, args, False, tmp))
                rec.append(one(a.memtrace, script, args, True, tmp))
            base = statistics.median(plain)
            ratio = statistics.median(rec) / base
            row = dict(workload=name, plain_ms=plain, recorded_ms=rec, ratio=round(ratio, 4),
                       target=target)
            line = "%-22s plain %8.2f ms  recorded %8.2f ms  ratio %.3f (target %.2f)" % (
                name, base, statistics.median(rec), ratio, target)
            if a.breakdown:
                for key, opts in (("as_is", ["--capture", "as-is"]), ("no_kernels", ["--no-kernels"])):
                    ms = one(a.memtrace, script, args, True, tmp, opts)
                    row[key + "_ms"] = ms
                    line += "  %s %.3f" % (key, ms / base)
            rows.append(row)
            print(line, flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
