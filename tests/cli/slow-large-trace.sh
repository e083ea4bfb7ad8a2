#!/bin/sh
# Suite slow: a 10 M-event synthetic training trace through synth, info,
# replay and report — the sizes the benchmarks use, end to end through the command.
# Checks: info counts alloc+free within 1% of 10 M and fewer than 1% of the
# allocations never freed (weights, optimizer states); replay (caching, sim)
# replays the request stream (all but the driver segments) with no OOM, peak
# reserved >= the lower bound, and the lower bound equals info's peak live;
# report gives the same peak, its anatomy parts add up to the sample, and
# the ranges forward/backward/optimizer are all in its table.
set -u
M=$1
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
"$M" synth --pattern train --events 10M --seed 7 -o "$dir/t.db" >/dev/null || exit 1
"$M" info "$dir/t.db" --json >"$dir/info.json" || exit 1
"$M" replay "$dir/t.db" --policy caching --backend sim --json --no-save >"$dir/replay.json" || exit 1
start=$(date +%s)
"$M" report "$dir/t.db" --json >"$dir/report.json" || exit 1
echo "report took $(( $(date +%s) - start )) s"
python3 - "$dir/info.json" "$dir/replay.json" "$dir/report.json" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
rep = json.load(open(sys.argv[2]))[0]
ev = info["events"]
allocs, frees = ev["alloc"]["events"], ev["free"]["events"]
fail = []
if abs(allocs + frees - 10_000_000) > 100_000:
    fail.append(f"alloc+free {allocs + frees} not within 1% of 10 M")
if not (0 < allocs - frees < allocs // 100):
    fail.append(f"{allocs - frees} allocations never freed of {allocs}")
# the replayed stream is the request layer: all but the few driver segments
if rep["events"] < 0.99 * (allocs + frees):
    fail.append(f"replayed {rep['events']} of {allocs + frees} events")
if rep["oom_count"] != 0:
    fail.append(f"{rep['oom_count']} OOMs")
if rep["peak_reserved"] < rep["peak_allocated"]:
    fail.append("peak reserved below the lower bound")
peak = info["devices"][0].get("peak_live_bytes") if info.get("devices") else None
if peak is not None and peak != rep["peak_allocated"]:
    fail.append(f"lower bound {rep['peak_allocated']} != info's peak live {peak}")
rep = json.load(open(sys.argv[3]))
if peak is not None and rep["peak_live_bytes"] != peak:
    fail.append(f"report's peak {rep['peak_live_bytes']} != info's {peak}")
a = rep["anatomy"]
if a is not None and sum(a["parts"].values()) != a["reading_bytes"]:
    fail.append("report's anatomy parts do not add up to the sample")
names = {r["name"] for r in rep["ranges"]}
if not {"forward", "backward", "optimizer"} <= names:
    fail.append(f"report's ranges {sorted(names)} lack a phase")
for f in fail:
    print("FAIL:", f)
print("ok" if not fail else "not ok")
sys.exit(1 if fail else 0)
PY
