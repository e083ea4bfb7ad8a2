#!/usr/bin/env python3
"""bench.py — the HTML view's size and speed in headless Chromium, measured
with the page's own performance timings (MT.timings, MT.bench in
viewer/html/selftest.js):

    bench/html/bench.py [--memtrace build/cli/memtrace] [--events 1e7]
                        [--runs 3] [--keep DIR]

Writes the synthetic training trace (memtrace synth --pattern train --seed 1)
unless --trace names one, renders it to HTML, then loads the page --runs
times in a fresh browser each and prints: file size, the time from
navigation to interactive (first frame drawn, handlers bound) and its
parts, and the pan/zoom frame times (p50, p95, max, frames over 16 ms).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "html"))
import cdp  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--memtrace", default="build/cli/memtrace")
    ap.add_argument("--events", default="1e7")
    ap.add_argument("--trace")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--keep")
    ap.add_argument("--nice", type=int, default=0,
                    help="run the browser at this nice value (negative: before other work; root only)")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="mt-bench-html-")
    os.makedirs(work, exist_ok=True)
    trace = args.trace
    if not trace:
        trace = os.path.join(work, "synth.db")
        if not os.path.exists(trace):
            subprocess.run([args.memtrace, "synth", "--pattern", "train", "--events", args.events,
                            "--seed", "1", "-o", trace], check=True)
    html = os.path.join(work, "view.html")
    t0 = time.monotonic()
    subprocess.run([args.memtrace, "render", trace, html], check=True)
    render_s = time.monotonic() - t0
    size = os.path.getsize(html)
    print("trace %s\nrender %.1f s, file %d bytes (%.1f MiB)" % (trace, render_s, size, size / 2**20))
    with open("/proc/loadavg") as f:
        print("load average before: " + " ".join(f.read().split()[:3]))
    loads, benches = [], []
    for run in range(args.runs):
        with cdp.Browser(timeout=600, nice=args.nice) as b:
            page = b.open("file://" + os.path.abspath(html), args.width, args.height)
            page.wait("window.mtReady", timeout=600)
            t = page.eval("MT.timings(mtPage)")
            nav = page.eval("performance.getEntriesByType('navigation')[0].toJSON()")
            t["dom_content_loaded_ms"] = nav["domContentLoadedEventEnd"]
            loads.append(t)
            r = page.eval("(() => { const r = MT.bench(mtPage); delete r.detail; return r; })()", timeout=600)
            benches.append(r)
            print("run %d: interactive %.0f ms (script starts %.0f, inflated %.0f, decoded %.0f); "
                  "%d frames: p50 %.1f ms, p95 %.1f ms, max %.1f ms, %d over 16 ms"
                  % (run + 1, t["interactive_ms"], t["script_start_ms"], t["inflated_ms"], t["decoded_ms"],
                     r["frames"], r["p50_ms"], r["p95_ms"], r["max_ms"], r["over_16ms"]))
    with open("/proc/loadavg") as f:
        print("load average after: " + " ".join(f.read().split()[:3]))
    print("median interactive %.0f ms; median frame p95 %.1f ms, worst max %.1f ms"
          % (statistics.median(x["interactive_ms"] for x in loads),
             statistics.median(x["p95_ms"] for x in benches), max(x["max_ms"] for x in benches)))
    print(json.dumps({"size": size, "loads": loads, "benches": benches}))


if __name__ == "__main__":
    main()
