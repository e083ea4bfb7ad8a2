#!/usr/bin/env python3
"""What the readings of device memory at decisive moments cost (issue 16
item 3): the recorder reads device memory after each failed allocation (at
most 100 per device and second) and after each segment that raises the
reserved peak (at most one per device every 10 ms, the last raise of a
burst read when the gap has passed), beside its periodic samples. Prints
figures and asserts nothing.

Two parts, for BERT-base bf16 training and the GPT-2 generation loop:

1. How many such readings a run takes: each workload recorded once with
   --sample-ms 0, so that every sample event in the trace is one of them
   (`memtrace info --json`, events.sample), over the trace's duration;
   with the run's wall time and its ms per step (the program's sidecar).
2. What they cost: run.py's lockstep, side by side in one run: plain, memtrace
   record as shipped ('readings'), the same with the readings switched off
   (MEMTRACE_MOMENT_READINGS=0, 'no-readings') and a second plain run ('A/A',
   what the lockstep reads where nothing differs). The readings' cost is
   the difference between the 'readings' and 'no-readings' ratios; run.py
   prints the ratio of the means, the per-cycle median and range, and the
   ratio of the lower quartiles. Its wall time is printed after it.

The defaults (6 cycles, 10 counted steps) are meant to fit in 4 minutes of an
H100 (estimated from the step times in bench/RESULTS.md, not yet timed).

Usage: readings.py MEMTRACE [--cycles N] [--pin CPU] [--steps N] [--json PATH]
  --cycles, --pin  passed to run.py (default 6 cycles; --pin as run.py's)
  --steps N        timed steps of each counting run (default 10)
  --json PATH      the counts and run.py's rows, as JSON
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH = os.path.join(HERE, "..", "..", "samples", "torch")
# script, its arguments (as run.py runs it)
WORKLOADS = [
    ("bert_train.py", ["--warmup", "5", "--batch", "32"]),
    ("generate.py", ["--warmup", "1", "--batch", "4", "--tokens", "256"]),
]


def count(memtrace, script, args, steps, tmp):
    """Readings at decisive moments in one recorded run of SCRIPT."""
    out = os.path.join(tmp, script + ".db")
    side = os.path.join(tmp, script + ".json")
    cmd = [memtrace, "record", "-o", out, "--sample-ms", "0", "--", sys.executable,
           os.path.join(TORCH, script), "--no-expandable", "--steps", str(steps),
           "--json", side] + args
    start = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - start
    with open(side) as f:
        ms_per_step = json.load(f)["ms_per_step"]
    info = json.loads(subprocess.run([memtrace, "info", "--json", out], check=True,
                                     stdout=subprocess.PIPE, text=True).stdout)
    readings = info["events"].get("sample", {}).get("events", 0)
    seconds = info["duration_ns"] / 1e9
    row = dict(workload=script, steps=steps, readings=readings, seconds=round(seconds, 3),
               per_second=round(readings / seconds, 2) if seconds else None,
               wall_s=round(wall, 2), ms_per_step=ms_per_step)
    print("%-16s %d readings at failures and peak raises in %d steps, %.2f s (%.1f/s);"
          " recorded run %.1f s wall, %.3f ms a step"
          % (script, readings, steps, seconds, row["per_second"] or 0, wall, ms_per_step),
          flush=True)
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("memtrace")
    p.add_argument("--cycles", type=int, default=6)
    p.add_argument("--pin", type=int)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--json")
    a = p.parse_args()
    result = {"counts": [], "lockstep": None, "lockstep_wall_s": None}
    with tempfile.TemporaryDirectory() as tmp:
        for script, args in WORKLOADS:
            result["counts"].append(count(a.memtrace, script, args, a.steps, tmp))
        lock_json = os.path.join(tmp, "lockstep.json")
        cmd = [sys.executable, os.path.join(HERE, "run.py"), a.memtrace,
               "--only", ",".join(w[0] for w in WORKLOADS), "--cycles", str(a.cycles),
               "--variant", "readings=", "--variant", "no-readings=MEMTRACE_MOMENT_READINGS=0",
               "--variant", "A/A=plain", "--json", lock_json]
        if a.pin is not None:
            cmd += ["--pin", str(a.pin)]
        start = time.monotonic()
        rc = subprocess.run(cmd).returncode
        result["lockstep_wall_s"] = round(time.monotonic() - start, 1)
        print("lockstep: %.1f s wall" % result["lockstep_wall_s"], flush=True)
        if os.path.exists(lock_json):
            with open(lock_json) as f:
                result["lockstep"] = json.load(f)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
