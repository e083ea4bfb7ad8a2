#!/usr/bin/env python3
"""The PyTorch memory snapshots recorded on the H100 (samples/snapshots/*.pickle,
each with the sidecar of PyTorch's own figures from the same run), imported
(suite cli, TAP):

- every snapshot imports; the partial ones (history switched on mid-run,
  a wrapped ring) say so, the complete ones do not;
- the imported peak of live bytes equals the sidecar's
  requested_bytes.all.peak to the byte (for mid-run, PyTorch's peak was
  reset when history began, so it covers what the trace holds);
- the allocator's segments as imported (the driver layer: segment_alloc/free,
  or segment_map/unmap under expandable segments) peak at the sidecar's
  max_memory_reserved() to the byte, for complete histories;
- a simulated replay of a complete history through the policy of the run's
  allocator (caching, or expandable under expandable_segments:True)
  reserves within 0.2 % of the sidecar's max_memory_reserved().
"""
import csv
import glob
import json
import os
import subprocess
import sys
import tempfile

MEMTRACE = os.environ["MEMTRACE"]
SRC = os.environ["MT_SOURCE_ROOT"]

cases = 0


def tap(ok, name):
    global cases
    cases += 1
    print(f"{'ok' if ok else 'not ok'} {cases} - {name}")
    sys.stdout.flush()
    return ok


def memtrace(*args):
    return subprocess.run([MEMTRACE, *args], check=True, stdout=subprocess.PIPE, text=True).stdout


def driver_peak(db, work):
    """The driver layer's peak, from the CSV export."""
    path = os.path.join(work, "driver.csv")
    memtrace("export", db, "-o", path)
    live, total, peak = {}, 0, 0
    with open(path, newline="") as f:
        rows = csv.reader(f)
        next(rows)
        for row in rows:
            if row[1] not in ("alloc", "free") or row[4] != "driver":
                continue
            if row[1] == "alloc":
                live[row[5]] = int(row[6])
                total += int(row[6])
            elif row[5] in live:
                total -= live.pop(row[5])
            peak = max(peak, total)
    os.unlink(path)
    return peak


def main():
    failed = False
    snapshots = sorted(glob.glob(os.path.join(SRC, "samples", "snapshots", "*.pickle")))
    with tempfile.TemporaryDirectory() as work:
        for pk in snapshots:
            name = os.path.splitext(os.path.basename(pk))[0]
            with open(os.path.splitext(pk)[0] + ".json") as f:
                side = json.load(f)
            db = os.path.join(work, name + ".db")
            res = json.loads(memtrace("import", pk, "-o", db, "--json"))
            partial = side["mode"] != "complete"
            failed |= not tap(res["partial_history"] == partial and res["entries"] == side["entries"],
                              f"{name}: imports {res['entries']} entries, partial history "
                              f"{res['partial_history']} ({side['mode']})")
            info = json.loads(memtrace("info", db, "--json"))
            peak = max(d["peak_live_bytes"] or 0 for d in info["devices"])
            want = side["torch_requested_bytes_peak"]
            failed |= not tap(peak == want, f"{name}: peak live {peak} = requested_bytes.all.peak {want}")
            if partial:
                continue
            segments = driver_peak(db, work)
            failed |= not tap(segments == side["torch_max_memory_reserved"],
                              f"{name}: segments peak at {segments}, max_memory_reserved "
                              f"{side['torch_max_memory_reserved']}")
            policy = "expandable" if "expandable_segments:True" in side["alloc_conf"] else "caching"
            rep = json.loads(memtrace("replay", db, "--policy", policy, "--backend", "sim",
                                      "--no-save", "--json"))[0]
            reserved, want = rep["peak_reserved"], side["torch_max_memory_reserved"]
            off = (reserved / want - 1) * 100
            failed |= not tap(abs(off) <= 0.2,
                              f"{name}: {policy} replay reserves {reserved}, max_memory_reserved "
                              f"{want} ({off:+.3f} %)")
    print(f"1..{cases}")
    return 1 if failed or not snapshots else 0


if __name__ == "__main__":
    sys.exit(main())
