#!/usr/bin/env python3
"""bench.py — the HTML view's size and speed in headless Chromium, measured
with the page's own performance timings (MT.timings, MT.bench in
viewer/html/selftest.js):

    bench/html/bench.py [--memtrace build/cli/memtrace] [--events 1e7]
                        [--runs 3] [--keep DIR] [--nice N] [--html PAGE]
                        [--frames] [--centres peak,0.25,0.5,0.75] [--early]

Writes the synthetic training trace (memtrace synth --pattern train --seed 1)
unless --trace names one, renders it to HTML, then loads the page --runs
times in a fresh browser each and prints: file size, the time from
navigation to interactive (first frame drawn, handlers bound) and its
parts, the time until every part of the data is in and until the page has
warmed its timeline code (viewer/html/warm.js), and the pan/zoom frame
times (p50, p95, max, frames over 16 ms; in all and per scenario: zoom in,
pan, zoom out) and the mean of each part of a frame once it is; the load
average before and after; each frame's least time over the runs (each run
draws the same frames: a frame's own cost, with the least of the machine's
other work), per centre, with the heaviest of them and their parts; and
the CPU time the browser's processes used (from /proc:
less sensitive to other work on the machine than the page's wall-clock
timings). --frames also lists each frame
over 16 ms: its scenario, window, level (-1: every allocation), the
allocations drawn one by one and the parts of its time. --early starts
the first centre's frames the moment the page is interactive, each a task
of its own (MT.benchEarly), while it still reads its parts and warms up,
as a person's first zooms would come.
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


def tree_cpu(root):
    """CPU seconds (user + system) used so far by process root's live
    descendants (the browser's renderer, GPU and utility processes)."""
    parent, cpu = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)] = int(fields[1])
        cpu[int(d)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in cpu:
        p = pid
        while p in parent and p != root:
            p = parent[p]
        if p == root and pid != root:
            total += cpu[pid]
    return total


def centre_arg(centre):
    """MT.bench's centre argument: null for the peak, else a fraction of the span."""
    return "null" if centre == "peak" else "%s * mtPage.data.span" % float(centre)


def describe(f):
    """A frame of MT.bench's detail, in words."""
    return ("%-8s window %.6g ns at %.6g, level %d, %d drawn one by one: %.1f ms (%s)"
            % (f["what"], f["span"], f.get("a", float("nan")), f["level"], f["drawn"], f["ms"],
               ", ".join("%s %.1f" % (p, f.get(p) or 0) for p in ("compute", "paint", "put", "lines"))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--memtrace", default="build/cli/memtrace")
    ap.add_argument("--events", default="1e7")
    ap.add_argument("--trace")
    ap.add_argument("--html", help="measure this page (rendered already) instead of rendering one")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--keep")
    ap.add_argument("--frames", action="store_true", help="list each frame over 16 ms")
    ap.add_argument("--centres", default="peak",
                    help="zoom and pan about these points, comma-separated: peak or a fraction of the span")
    ap.add_argument("--early", action="store_true",
                    help="the first centre's frames from the moment the page is interactive")
    ap.add_argument("--heaviest", type=int, default=5, help="list this many heaviest frames (least times) a centre")
    ap.add_argument("--nice", type=int, default=0,
                    help="run the browser at this nice value (negative: before other work; root only)")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="mt-bench-html-")
    os.makedirs(work, exist_ok=True)
    trace, html = args.trace, args.html
    if not html:
        if not trace:
            trace = os.path.join(work, "synth.db")
            if not os.path.exists(trace):
                subprocess.run([args.memtrace, "synth", "--pattern", "train", "--events", args.events,
                                "--seed", "1", "-o", trace], check=True)
        html = os.path.join(work, "view.html")
        t0 = time.monotonic()
        subprocess.run([args.memtrace, "render", trace, html], check=True)
        print("trace %s\nrender %.1f s" % (trace, time.monotonic() - t0))
    size = os.path.getsize(html)
    print("file %s: %d bytes (%.1f MiB)" % (html, size, size / 2**20))
    with open("/proc/loadavg") as f:
        print("load average before: " + " ".join(f.read().split()[:3]))
    centres = args.centres.split(",")
    loads, benches, details = [], [], {c: [] for c in centres}
    if args.early:
        details[centres[0] + " (early)"] = []
    for run in range(args.runs):
        with open("/proc/loadavg") as f:
            print("run %d: load average %s" % (run + 1, " ".join(f.read().split()[:3])))
        with cdp.Browser(timeout=600, nice=args.nice) as b:
            cpu0 = tree_cpu(b.proc.pid)
            page = b.open("file://" + os.path.abspath(html), args.width, args.height)
            early = None
            if args.early:
                page.wait("window.mtPage && mtPage.timings && mtPage.timings.interactive > 0", timeout=600)
                early = page.eval("MT.benchEarly(mtPage, %s)" % centre_arg(centres[0]), timeout=600)
            page.wait("window.mtReady", timeout=600)
            cpu1 = tree_cpu(b.proc.pid)
            t = page.eval("MT.timings(mtPage)")
            nav = page.eval("performance.getEntriesByType('navigation')[0].toJSON()")
            t["dom_content_loaded_ms"] = nav["domContentLoadedEventEnd"]
            loads.append(t)
            for centre in centres:
                cpu2 = tree_cpu(b.proc.pid)
                r = early or page.eval("MT.bench(mtPage, %s)" % centre_arg(centre), timeout=600)
                if early:
                    centre, early = centre + " (early)", None
                detail = r.pop("detail")
                details[centre].append(detail)
                r["cpu_load_s"] = cpu1 - cpu0
                r["cpu_frames_ms_mean"] = (tree_cpu(b.proc.pid) - cpu2) * 1000 / r["frames"]
                r["centre"] = centre
                benches.append(r)
                print("run %d: interactive %.0f ms (script starts %.0f, first buffer read %.0f, decoded %.0f); "
                      "every part in %.0f ms, warm %s; centre %s, %d frames: p50 %.1f ms, p95 %.1f ms, max %.1f ms, "
                      "%d over 16 ms"
                      % (run + 1, t["interactive_ms"], t["script_start_ms"], t["first_buffer_ms"], t["decoded_ms"],
                         t["complete_ms"], "%.0f ms" % t["warm_ms"] if t.get("warm_ms") is not None else "-",
                         centre, r["frames"], r["p50_ms"], r["p95_ms"], r["max_ms"], r["over_16ms"]))
                for what, sc in r["scenarios"].items():
                    print("       %-8s %3d frames: p50 %.1f ms, p95 %.1f ms, max %.1f ms, %d over 16 ms"
                          % (what, sc["frames"], sc["p50_ms"], sc["p95_ms"], sc["max_ms"], sc["over_16ms"]))
                if all(v is not None for v in r["phases_ms"].values()):  # older pages lack them
                    print("       a frame on average: " + ", ".join("%s %.1f ms" % kv for kv in r["phases_ms"].items()))
                print("       browser CPU: %.2f s to load the page, %.1f ms a frame on average"
                      % (r["cpu_load_s"], r["cpu_frames_ms_mean"]))
                for k, f in enumerate(detail if args.frames else []):
                    if f["ms"] > 16:
                        print("       frame %3d %s" % (k, describe(f)))
    with open("/proc/loadavg") as f:
        print("load average after: " + " ".join(f.read().split()[:3]))
    print("median interactive %.0f ms; median frame p95 %.1f ms, worst max %.1f ms"
          % (statistics.median(x["interactive_ms"] for x in loads),
             statistics.median(x["p95_ms"] for x in benches), max(x["max_ms"] for x in benches)))
    # the runs draw the same frames: a frame's least time is its own cost
    # with the least of what else the machine did
    for centre, runs in details.items():
        if not runs:  # its frames were all early ones
            continue
        least = [min(runs, key=lambda d: d[k]["ms"])[k] for k in range(len(runs[0]))]
        ms = sorted(f["ms"] for f in least)
        print("centre %s, each frame's least time over the %d runs: p95 %.1f ms, max %.1f ms, %d over 12 ms, "
              "%d over 16 ms" % (centre, len(runs), ms[min(len(ms) - 1, int(0.95 * len(ms)))], ms[-1],
                                 sum(v > 12 for v in ms), sum(v > 16 for v in ms)))
        heavy = sorted(range(len(least)), key=lambda k: -least[k]["ms"])[:args.heaviest]
        for k in heavy:
            print("       frame %3d %s" % (k, describe(least[k])))
    print(json.dumps({"size": size, "loads": loads, "benches": benches}))


if __name__ == "__main__":
    main()
