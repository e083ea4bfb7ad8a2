#!/usr/bin/env python3
"""Checks memtrace's exports with other tools' readers (suite cli):

- perfetto: protoc decodes the file against the schema subset kept here
  (perfetto-subset.proto); one process track per process, every counter
  track in bytes (UNIT_SIZE_BYTES) under its process, as many slices begun
  as ended and as ranges (+ kernels) in the trace, one instant per failed
  allocation, a track per saved replay, and the live-bytes track's highest
  value is the peak memtrace info reports;
- chrome: the JSON parses, its live-bytes counter peaks at info's peak and
  its reserved-bytes counter at the driver layer's peak, which is computed
  here from the CSV export (so the CSV is checked too: one row per event,
  every row as many fields as the header names);
- rmm: the log imports back with the same peak and event count;
- minimalloc: one buffer per allocation, lower < upper, sizes that add up;
- folded: the stacks add up to the peak;
- snapshot --policy: a replayed policy's segments at its peak hold what the
  replay reports as its peak reserved, each tiled by its blocks.

Needs MEMTRACE (the binary) and protoc; exits 77 (skip) without protoc.
"""
import csv
import json
import os
import pickle
import shutil
import sqlite3
import subprocess
import sys
import tempfile

MEMTRACE = os.environ["MEMTRACE"]
SRC = os.environ["MT_SOURCE_ROOT"]
failures = []


# A PyTorch snapshot with two failed allocations and a record_function range.
OOM_SNAPSHOT = {
    "segments": [],
    "device_traces": [[
        {"action": "segment_alloc", "addr": 1 << 30, "size": 20 << 20, "stream": 0, "time_us": 1},
        {"action": "alloc", "addr": 1 << 30, "size": 12 << 20, "stream": 0, "time_us": 2},
        {"action": "oom", "device_free": 1 << 20, "size": 80 << 30, "stream": 0, "time_us": 3},
        {"action": "oom", "device_free": 1 << 20, "size": 40 << 30, "stream": 0, "time_us": 4},
        {"action": "free_requested", "addr": 1 << 30, "size": 12 << 20, "stream": 0, "time_us": 5},
        {"action": "free_completed", "addr": 1 << 30, "size": 12 << 20, "stream": 0, "time_us": 5},
        {"action": "segment_free", "addr": 1 << 30, "size": 20 << 20, "stream": 0, "time_us": 6},
    ]],
    "external_annotations": [
        {"name": "step", "stage": "START", "device": 0, "time_us": 1},
        {"name": "step", "stage": "END", "device": 0, "time_us": 6},
    ],
}


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, **kw):
    return subprocess.run([MEMTRACE, *args], check=True, stdout=subprocess.PIPE, text=True, **kw).stdout


def text_format(text):
    """protoc's text output as nested dicts: each field a list of values."""
    root, stack = {}, []
    cur = root
    for line in text.splitlines():
        line = line.strip()
        if line.endswith("{"):
            child = {}
            cur.setdefault(line[:-1].strip(), []).append(child)
            stack.append(cur)
            cur = child
        elif line == "}":
            cur = stack.pop()
        elif line:
            key, value = line.split(":", 1)
            value = value.strip()
            cur.setdefault(key, []).append(json.loads(value) if value.startswith('"') else value)
    return root


def saved_replays(trace):
    """Saved replays with a series (one track each)."""
    with sqlite3.connect(f"file:{trace}?mode=ro", uri=True) as db:
        return db.execute("select count(*) from replays where length(series) > 0").fetchone()[0]


def info(trace):
    return json.loads(run("info", trace, "--json"))


def from_csv(path, layer):
    """From the CSV export: the driver layer's peak per device, pairing as
    docs/FORMAT.md does (an alloc over an open one leaves the earlier counted),
    and the buffers a MiniMalloc export of `layer` holds (its allocs and
    its frees of memory never seen allocated)."""
    live, total, peak = {}, {}, {}
    open_in_layer, buffers = set(), 0
    with open(path, newline="") as f:
        rows = csv.reader(f)
        header = next(rows)
        check(header[:4] == ["ts_ns", "kind", "process", "device"], f"csv header {header}")
        for row in rows:
            check(len(row) == len(header), f"csv row of {len(row)} fields: {row[:4]}")
            if row[1] not in ("alloc", "free"):
                continue
            key = (row[2], row[3], row[5])
            if row[4] == layer:
                if row[1] == "alloc":
                    open_in_layer.add(key)
                    buffers += 1
                elif key in open_in_layer:
                    open_in_layer.discard(key)
                elif int(row[6]):
                    buffers += 1
            if row[4] != "driver":
                continue
            dev = row[3]
            if row[1] == "alloc":
                total[dev] = total.get(dev, 0) + int(row[6])
                live[key] = int(row[6])
            elif key in live:
                total[dev] -= live.pop(key)
            peak[dev] = max(peak.get(dev, 0), total.get(dev, 0))
    return peak, buffers


def check_perfetto(trace, path, workdir, expect):
    proto = os.path.join(SRC, "tests", "interop", "perfetto-subset.proto")
    with open(path, "rb") as f:
        out = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", os.path.dirname(proto),
                              os.path.basename(proto)], stdin=f, stdout=subprocess.PIPE, check=True,
                             text=True).stdout
    packets = text_format(out).get("packet", [])
    tracks = {}
    values, begins, ends, instants = {}, 0, 0, 0
    for p in packets:
        check(p.get("trusted_packet_sequence_id") == ["1"], "a packet off sequence 1")
        for d in p.get("track_descriptor", []):
            tracks[d["uuid"][0]] = d
        for e in p.get("track_event", []):
            kind = e["type"][0]
            if kind == "TYPE_COUNTER":
                t = tracks[e["track_uuid"][0]]
                values.setdefault(t["name"][0], []).append(int(e["counter_value"][0]))
            begins += kind == "TYPE_SLICE_BEGIN"
            ends += kind == "TYPE_SLICE_END"
            instants += kind == "TYPE_INSTANT"
    check(packets[0].get("sequence_flags") == ["1"], "the first packet clears incremental state")
    processes = [d for d in tracks.values() if "process" in d]
    check(len(processes) == expect["processes"], f"{len(processes)} process tracks, expected {expect['processes']}")
    counters = [d for d in tracks.values() if "counter" in d]
    for d in counters:
        check(d["counter"][0]["unit"] == ["UNIT_SIZE_BYTES"], f"track {d['name']} not in bytes")
        check("parent_uuid" in d or d["name"][0].startswith("replay "), f"track {d['name']} has no process")
    live = [n for n in values if "live bytes" in n]
    check(len(live) == expect["devices"], f"live tracks {live}")
    check(max(max(values[n]) for n in live) == expect["peak"],
          f"perfetto live peak {max(max(values[n]) for n in live)} != {expect['peak']}")
    check(begins == ends == expect["slices"], f"slices begun {begins}, ended {ends}, expected {expect['slices']}")
    check(instants == expect["failures"], f"{instants} instants, {expect['failures']} failed allocations")
    replays = [n for n in values if n.startswith("replay ")]
    check(len(replays) == expect["replays"], f"replay tracks {replays}, expected {expect['replays']}")
    print(f"perfetto {os.path.basename(trace)}: {len(packets)} packets, {len(tracks)} tracks, "
          f"{begins} slices, {instants} instants")


def check_chrome(trace, path, expect, driver_peak):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    series = {}
    for e in events:
        if e["ph"] == "C":
            series.setdefault(e["name"], []).append(e["args"]["bytes"])
    live = max(max(v) for n, v in series.items() if "live bytes" in n)
    check(live == expect["peak"], f"chrome live peak {live} != {expect['peak']}")
    for dev, peak in driver_peak.items():
        name = f"device {dev} reserved bytes (allocator segments)"
        if expect["layer"] == "request":
            check(name in series and max(series[name]) == peak,
                  f"chrome {name}: {max(series.get(name, [0]))} != {peak}")
    xs = sum(e["ph"] == "X" for e in events)
    check(xs == expect["ranges"], f"{xs} X events, {expect['ranges']} ranges")
    print(f"chrome {os.path.basename(trace)}: {len(events)} events")


def check_policy_snapshot(trace, work):
    path = os.path.join(work, "policy.pickle")
    run("export", trace, "-o", path, "--policy", "caching")
    with open(path, "rb") as f:
        snap = pickle.load(f)
    replay = json.loads(run("replay", trace, "--policy", "caching", "--backend", "sim", "--no-save",
                            "--json"))[0]
    total = sum(seg["total_size"] for seg in snap["segments"])
    check(snap["memtrace_replay"]["reserved"] == replay["peak_reserved"] == total,
          f"policy snapshot: {snap['memtrace_replay']['reserved']} / {total}, replay {replay['peak_reserved']}")
    for seg in snap["segments"]:
        check(sum(b["size"] for b in seg["blocks"]) == seg["total_size"], f"segment {seg['address']} not tiled")
    live = sum(b["requested_size"] for seg in snap["segments"] for b in seg["blocks"]
               if b["state"] == "active_allocated")
    check(live == replay["peak_allocated_rounded"] or live <= replay["peak_allocated_rounded"],
          f"policy snapshot blocks {live} > {replay['peak_allocated_rounded']}")
    print(f"policy snapshot: {len(snap['segments'])} segments, {total} bytes")


def main():
    if not shutil.which("protoc"):
        print("protoc not found (Debian: protobuf-compiler)")
        return 77
    with tempfile.TemporaryDirectory() as work:
        synth = os.path.join(work, "synth.db")
        run("synth", "--pattern", "train", "--events", "20000", "--seed", "3", "-o", synth)
        run("replay", synth, "--policy", "caching,bestfit", "--backend", "sim")
        oom = os.path.join(work, "oom.db")
        with open(os.path.join(work, "oom-snapshot.json"), "w") as f:
            json.dump(OOM_SNAPSHOT, f)
        run("import", os.path.join(work, "oom-snapshot.json"), "-o", oom)
        traces = [synth, oom] + [os.path.join(SRC, "samples", "traces", n)
                            for n in ("gpt2-train-stacks.db", "gpt2-generate-as-is.db", "linear-small.db")]
        for trace in traces:
            i = info(trace)
            n = {k: v["events"] for k, v in i["events"].items()}
            expect = {
                "processes": len(i["processes"]),
                "devices": sum(1 for d in i["devices"] if d.get("peak_live_bytes")),
                "peak": max(d.get("peak_live_bytes") or 0 for d in i["devices"]),
                "layer": i["peak_layer"],
                "ranges": n["range"],
                "slices": n["range"] + n["kernel"],
                "failures": n["alloc_failed"],
                "replays": saved_replays(trace),
            }
            base = os.path.join(work, os.path.splitext(os.path.basename(trace))[0])
            run("export", trace, "-o", base + ".perfetto-trace", "--kernels")
            check_perfetto(trace, base + ".perfetto-trace", work, expect)
            run("export", trace, "-o", base + ".csv")
            driver, buffers = from_csv(base + ".csv", expect["layer"])
            run("export", trace, "-o", base + ".json")
            check_chrome(trace, base + ".json", expect, driver)

            run("export", trace, "-o", base + ".rmm.csv")
            run("import", base + ".rmm.csv", "-o", base + ".rmm.db")
            back = info(base + ".rmm.db")
            check(back["devices"][0]["peak_live_bytes"] == expect["peak"],
                  f"rmm round trip peak {back['devices'][0]['peak_live_bytes']} != {expect['peak']}")

            run("export", trace, "-o", base + ".folded")
            with open(base + ".folded") as f:
                total = sum(int(line.rsplit(" ", 1)[1]) for line in f)
            check(total == expect["peak"] or expect["devices"] > 1,
                  f"folded stacks add up to {total}, peak {expect['peak']}")

            if expect["devices"] == 1:
                run("export", trace, "-o", base + ".minimalloc.csv")
                with open(base + ".minimalloc.csv", newline="") as f:
                    rows = list(csv.DictReader(f))
                check(all(int(r["lower"]) < int(r["upper"]) for r in rows), "minimalloc lower >= upper")
                ids = [r["id"] for r in rows]
                check(len(ids) == len(set(ids)), "minimalloc ids repeat")
                check(len(rows) == buffers, f"minimalloc {len(rows)} buffers, expected {buffers}")
        check_policy_snapshot(os.path.join(SRC, "samples", "traces", "gpt2-train.db"), work)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
