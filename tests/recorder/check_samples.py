#!/usr/bin/env python3
"""Checks recorded sample traces against their sidecars (PyTorch's own
figures from the same run) and prints one line per trace:

  peak live (request layer) vs torch_requested_bytes_peak (within 0.1%)
  peak of the bytes a `caching` replay hands out (PyTorch's rounding and
  splitting) vs torch_max_memory_allocated (within 0.1%)
  the PyTorch allocator's reserved peak (bridge pool events) vs max_memory_reserved (exact)
  the driver layer's peak (CUPTI) vs max_memory_reserved
  blob bytes per alloc/free event (target <= 4), dropped records (target 0), file size

Usage: check_samples.py TRACE_DUMP TRACE.db... ; writes JSON with --json PATH.
MEMTRACE names the memtrace binary (default: memtrace on PATH).
Exit 1 if a requests-capture trace misses a target.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_trace import Trace, caching_peak_allocated  # noqa: E402

MEMTRACE = os.environ.get("MEMTRACE", "memtrace")


def main(argv):
    out_json = None
    if "--json" in argv:
        i = argv.index("--json")
        out_json = argv[i + 1]
        del argv[i:i + 2]
    dump, traces = argv[0], argv[1:]
    rows, ok = [], True
    for path in traces:
        side = os.path.splitext(path)[0] + ".json"
        fig = json.load(open(side)) if os.path.exists(side) else {}
        t = Trace(dump, path)
        req = t.peak_live("request")
        row = {
            "trace": os.path.basename(path),
            "capture": t.meta.get("capture"),
            "file_bytes": os.path.getsize(path),
            "events": {k: v["events"] for k, v in t.stats.items() if v["events"]},
            "dropped_records": int(t.meta.get("dropped_records", "-1")),
            "bytes_per_alloc_free_event": round(t.bytes_per_alloc_free(), 3),
            "peak_request": req,
            "peak_request_rounded": caching_peak_allocated(MEMTRACE, path),
            "reader_peak_request": t.peak.get("request"),
            "torch_reserved_peak": t.torch_reserved_peak(),
            "peak_driver": t.peak_live("driver"),
            "pairing_request": t.pairing("request"),
            "sidecar": fig,
        }
        if fig.get("torch_requested_bytes_peak"):  # a training sample's sidecar
            rp = fig.get("torch_requested_bytes_peak", 0)
            ma = fig.get("torch_max_memory_allocated", 0)
            mr = fig.get("torch_max_memory_reserved_native", 0)
            row["request_vs_requested_peak"] = req / rp if rp else None
            row["rounded_vs_max_allocated"] = row["peak_request_rounded"] / ma if ma else None
            row["reserved_equal"] = row["torch_reserved_peak"] == mr
            row["driver_vs_max_reserved"] = row["peak_driver"] / mr if mr else None
            if (t.meta.get("capture") or "").startswith("requests"):
                good = (rp and abs(req - rp) <= 0.001 * rp and row["reserved_equal"]
                        and ma and abs(row["peak_request_rounded"] - ma) <= 0.001 * ma
                        and row["bytes_per_alloc_free_event"] <= 4 and row["dropped_records"] == 0
                        and row["file_bytes"] <= 8 << 20)
                row["targets_met"] = bool(good)
                ok = ok and bool(good)
        rows.append(row)
        print("%-28s %s" % (row["trace"], json.dumps({k: v for k, v in row.items()
                                                      if k not in ("trace", "sidecar")})))
    if out_json:
        with open(out_json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
