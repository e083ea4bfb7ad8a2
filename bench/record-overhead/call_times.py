#!/usr/bin/env python3
"""Where a program's time in CUDA calls went, one run against another: reads
the files that libcupti-kernels.so writes with MT_BENCH_CALL_TIMES=PREFIX
(PREFIX.PID, one per process) and prints, per run, the time inside the timed
calls (launches, synchronizations, copies, queries, allocations, not counting
a call made inside another), then per call the count, the microseconds per call
and how the total differs from the first run's. Runs that did the same work
(run.py's lockstep) compare call for call; what their step times differ by
beyond the calls' difference lies outside the calls. Asserts nothing.

Usage: call_times.py LABEL=PREFIX LABEL=PREFIX... [--top N] [--json PATH]
"""
import argparse
import glob
import json


def load(prefix):
    """The summed figures of every process written under prefix."""
    run = {"outermost_ns": 0, "calls": {}, "processes": 0}
    for path in sorted(glob.glob(glob.escape(prefix) + ".[0-9]*")):
        with open(path) as f:
            one = json.load(f)
        run["processes"] += 1
        run["outermost_ns"] += one["outermost_ns"]
        for c in one["calls"]:
            mine = run["calls"].setdefault(c["name"], {"count": 0, "ns": 0})
            mine["count"] += c["count"]
            mine["ns"] += c["ns"]
    return run


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", metavar="LABEL=PREFIX")
    p.add_argument("--top", type=int, default=12, help="calls shown (default 12)")
    p.add_argument("--json", metavar="PATH")
    a = p.parse_args()
    runs = {}
    for spec in a.runs:
        label, _, prefix = spec.partition("=")
        runs[label] = load(prefix)
        if not runs[label]["processes"]:
            p.error("%s: no files %s.PID" % (label, prefix))
    first = next(iter(runs.values()))
    for label, r in runs.items():
        print("%-14s %d processes, in timed calls %7.3f s (%+.3f s)" % (
            label, r["processes"], r["outermost_ns"] / 1e9,
            (r["outermost_ns"] - first["outermost_ns"]) / 1e9))
    names = sorted(set().union(*(r["calls"] for r in runs.values())),
                   key=lambda n: -max(r["calls"].get(n, {"ns": 0})["ns"] for r in runs.values()))
    print("%-40s" % "call" + "".join("%26s" % label for label in runs))
    for n in names[:a.top]:
        line = "%-40s" % n[:40]
        for r in runs.values():
            c = r["calls"].get(n, {"count": 0, "ns": 0})
            base = first["calls"].get(n, {"ns": 0})["ns"]
            line += "%9d %6.2fus %+8.3fs" % (c["count"], c["ns"] / max(c["count"], 1) / 1e3,
                                            (c["ns"] - base) / 1e9)
        print(line)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
