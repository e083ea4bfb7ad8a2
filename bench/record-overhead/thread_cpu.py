#!/usr/bin/env python3
"""Where a recorded program's CPU time goes, by thread: runs `memtrace
record -- PROG ARGS`, and after --after seconds reads every thread's CPU time
from /proc twice, --window seconds apart. Prints per thread name the share of
one core it used in that window: the program's own threads, CUPTI's, and the
recorder's (named 'memtrace'). A recorder thread that keeps a core busy can
slow the program's threads on a host whose cores share their execution units
(hyperthreads). Asserts nothing.

Usage: thread_cpu.py MEMTRACE [--after S] [--window S] [--record OPTIONS] [--json PATH]
                      -- PROG [ARGS]
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

from run import descendants

TICK = os.sysconf("SC_CLK_TCK")


def cpu_by_thread(pid):
    """{(tid, name): CPU seconds} of every thread of pid."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = f.read().strip()
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[(tid, name)] = (int(fields[11]) + int(fields[12])) / TICK  # utime + stime
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("memtrace")
    p.add_argument("--after", type=float, default=20.0, help="seconds before the window")
    p.add_argument("--window", type=float, default=10.0, help="seconds measured")
    p.add_argument("--record", default="", metavar="OPTIONS",
                   help="memtrace record options, one string ('--no-kernels')")
    p.add_argument("--json", metavar="PATH")
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        p.error("no program: MEMTRACE [OPTIONS] -- PROG [ARGS]")
    a = p.parse_args(argv[:argv.index("--")])
    prog = argv[argv.index("--") + 1:]
    with tempfile.TemporaryDirectory() as tmp:
        rec = subprocess.Popen([a.memtrace, "record", "-o", os.path.join(tmp, "t.db")]
                               + a.record.split() + ["--"]
                               + prog, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(a.after)
        kids = descendants(rec.pid)
        if not kids:
            raise SystemExit("thread_cpu: the program ended before the window")
        pid = kids[0]
        before, t0 = cpu_by_thread(pid), time.monotonic()
        time.sleep(a.window)
        after, wall = cpu_by_thread(pid), time.monotonic() - t0
        rec.wait()
    share = collections.Counter()
    for key, cpu in after.items():
        share[key[1]] += (cpu - before.get(key, 0.0)) / wall
    rows = [dict(thread=name, core_share=round(s, 4)) for name, s in share.most_common() if s]
    for r in rows:
        print("%-18s %6.1f %% of a core" % (r["thread"], 100 * r["core_share"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(window_s=round(wall, 3), threads=rows), f, indent=1)


if __name__ == "__main__":
    main()
