"""Checks a PyTorch memory snapshot that memtrace exported with PyTorch's own
tools: pickle.load reads it, `python3 -m torch.cuda._memory_viz trace_plot`
and `segment_plot` write their pages, and the snapshot embedded in each page
(base64 of a pickle, as _memory_viz embeds it) shows the expected peak.

  check_memory_viz.py SNAPSHOT --peak BYTES [--out DIR]

The peak is of the requested bytes live at once, frees counted when
requested (as memtrace counts them: `memtrace info --json` gives
peak_live_bytes per device): what was live at the first entry (frees of
blocks never allocated, final blocks never allocated) plus the allocs less
the frees, in order. The peak memory_viz draws (frees counted when completed)
is printed beside it. Prints one JSON line; exit 0 when every check holds.
"""
import argparse
import base64
import json
import os
import pickle
import re
import subprocess
import sys


def peaks(snap, device):
    """(peak with frees at request, peak with frees at completion)."""
    entries = snap["device_traces"][device] if device < len(snap["device_traces"]) else []
    allocated = set()
    before = {}
    for e in entries:
        if e["action"] == "alloc":
            allocated.add(e["addr"])
        elif e["action"] == "free_requested" and e["addr"] not in allocated and e["addr"] not in before:
            before[e["addr"]] = e["size"]
    live_end = set()
    for e in entries:
        if e["action"] == "alloc":
            live_end.add(e["addr"])
        elif e["action"] == "free_requested":
            live_end.discard(e["addr"])
    for seg in snap["segments"]:
        if seg.get("device", 0) != device:
            continue
        addr = seg["address"]
        for b in seg["blocks"]:
            baddr = b.get("address", addr)
            addr = baddr + b["size"]
            if b["state"] == "active_allocated" and baddr not in live_end and baddr not in before:
                before[baddr] = b.get("requested_size", b["size"])
    result = []
    for free_action in ("free_requested", "free_completed"):
        live = dict(before)
        total = peak = sum(live.values())
        for e in entries:
            if e["action"] == "alloc":
                total += e["size"] - live.get(e["addr"], 0)
                live[e["addr"]] = e["size"]
            elif e["action"] == free_action and e["addr"] in live:
                total -= live.pop(e["addr"])
            peak = max(peak, total)
        result.append(peak)
    return result


def embedded(page):
    """The snapshot a _memory_viz page embeds."""
    m = re.search(r"const local_files = (\[.*?\])\n", page, re.S)
    if not m:
        raise ValueError("no embedded snapshot in the page")
    files = json.loads(m.group(1))
    return pickle.loads(base64.b64decode(files[0]["base64"]))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("snapshot")
    p.add_argument("--peak", type=int, required=True, help="expected peak live bytes")
    p.add_argument("--device", type=int, default=0, help="device index (default 0)")
    p.add_argument("--out", default=".", help="folder for the pages")
    args = p.parse_args()

    out = {"snapshot": args.snapshot, "expected_peak": args.peak, "ok": False}
    with open(args.snapshot, "rb") as f:
        snap = pickle.load(f)
    out["pickle_load"] = True
    out["entries"] = sum(len(t) for t in snap["device_traces"])
    out["segments"] = len(snap["segments"])
    out["peak"], out["peak_memory_viz"] = peaks(snap, args.device)
    ok = out["peak"] == args.peak
    stem = os.path.join(args.out, os.path.splitext(os.path.basename(args.snapshot))[0])
    for plot in ("trace_plot", "segment_plot"):
        page = f"{stem}.{plot}.html"
        r = subprocess.run([sys.executable, "-m", "torch.cuda._memory_viz", plot, args.snapshot,
                            "-d", str(args.device), "-o", page],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        check = {"exit": r.returncode, "page": page}
        if r.returncode != 0:
            check["output"] = r.stdout[-2000:]
            ok = False
        else:
            with open(page) as f:
                text = f.read()
            check["bytes"] = len(text)
            check["peak_embedded"] = peaks(embedded(text), args.device)[0]
            ok &= check["peak_embedded"] == args.peak
        out[plot] = check
    out["ok"] = ok
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
