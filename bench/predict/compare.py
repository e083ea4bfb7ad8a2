#!/usr/bin/env python3
"""Compares `memtrace predict` with PyTorch's own figures measured on the GPU
(samples/predict/validate.sh): for every program of the truth table, predicts
from its traces at N = 1, 2, 4 every N the table measured, and prints per point
the predicted and true peak live (requested_bytes.all.peak) and peak reserved
under caching (max_memory_reserved()), their errors, and the errors of the
naive extrapolation (the least-squares line through the recorded runs' own
peaks, from their sidecars); then --max-fit against the OOM search.

  bench/predict/compare.py MEMTRACE [DIR] [--capacity BYTES] [--check]

DIR defaults to samples/predict. Prints markdown. With --check (the test
tests/predict/test-samples.sh) it exits 1 unless the predicted peak live is
within 2% of PyTorch's at every point, the predicted peak reserved (caching, at
the default capacity, no OOM) within 3%, and --max-fit within 1 of the OOM search.
"""
import argparse
import json
import os
import subprocess
import sys


def line(xs, ys, at):
    n = len(xs)
    sx, sy = sum(xs), sum(ys)
    sxx = sum(x * x for x in xs)
    sxy = sum(x * y for x, y in zip(xs, ys))
    den = n * sxx - sx * sx
    slope = (n * sxy - sx * sy) / den if den else 0.0
    return (sy - slope * sx) / n + slope * at


def err(pred, true):
    return 100.0 * (pred - true) / true


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("memtrace")
    ap.add_argument("dir", nargs="?", default=os.path.join(os.path.dirname(__file__),
                                                           "../../samples/predict"))
    ap.add_argument("--capacity", help="passed to memtrace predict")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    a = ap.parse_args()
    missed = []
    truth = json.load(open(os.path.join(a.dir, "truth.json")))
    inputs = [1, 2, 4]
    for name, t in truth.items():
        traces = [os.path.join(a.dir, "traces", "%s-n%d.db" % (name, n)) for n in inputs]
        sides = [json.load(open(p[:-3] + ".json")) for p in traces]
        points = [p for p in t["points"] if p["fits"]]
        sizes = sorted({p["size"] for p in points})
        argv = [a.memtrace, "predict"] + ["%s@%d" % (p, n) for p, n in zip(traces, inputs)] + \
            ["--to", ",".join(map(str, sizes)), "--max-fit", "--json"]
        if a.capacity:
            argv += ["--capacity", a.capacity]
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            print("%s: %s" % (name, r.stderr.strip()))
            missed.append("%s refused" % name)
            continue
        j = json.loads(r.stdout)
        pred = {p["size"]: p for p in j["predictions"]}
        live_in = [s["torch_requested_bytes_peak"] for s in sides]
        res_in = [s["torch_max_memory_reserved_native"] for s in sides]
        print("\n%s (capacity %.3f GiB, aligned %.1f%%)\n" % (
            name, j["capacity_bytes"] / 2**30, 100 * j["aligned_fraction"]))
        print("| N | true live GiB | predicted | error | naive error | true reserved GiB "
              "| predicted | error | naive error |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for p in sorted(points, key=lambda p: p["size"]):
            n = p["size"]
            q = pred[n]
            tl, tr = p["torch_requested_bytes_peak"], p["torch_max_memory_reserved_native"]
            pl = q["peak_live_bytes"]
            c = q["policies"]["caching"]
            pr = c["peak_reserved_bytes"]
            oom = " (OOM)" if c["oom_count"] else ""
            if abs(err(pl, tl)) > 2:
                missed.append("%s N=%d: peak live %+.2f%%" % (name, n, err(pl, tl)))
            if oom or abs(err(pr, tr)) > 3:
                missed.append("%s N=%d: peak reserved %+.2f%%%s" % (name, n, err(pr, tr), oom))
            print("| %d | %.3f | %.3f | %+.2f%% | %+.1f%% | %.3f | %.3f%s | %+.2f%% | %+.1f%% |" % (
                n, tl / 2**30, pl / 2**30, err(pl, tl), err(line(inputs, live_in, n), tl),
                tr / 2**30, pr / 2**30, oom, err(pr, tr), err(line(inputs, res_in, n), tr)))
        if abs(j["max_fit"]["caching"] - t["max_fit"]) > 1:
            missed.append("%s: max fit %d, OOM search %d" % (
                name, j["max_fit"]["caching"], t["max_fit"]))
        print("\nmax fit: predicted %d, OOM search %d%s" % (
            j["max_fit"]["caching"], t["max_fit"],
            "" if t["search_complete"] else " (search incomplete: %d fails)" % t["first_fail"]))

    if missed:
        print("\nmissed: " + "; ".join(missed))
    return 1 if a.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
