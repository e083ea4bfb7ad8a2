# Issue 16 item 2: the issue's OOM program in small (tests/analyze/
# fixtures.c, OOM_LOOP: tensors until PyTorch raises, caught, all freed, 7
# rounds; every figure worked out there): 21 failed allocations are 7 OOMs,
# each with its 2 driver attempts; each OOM's anatomy is the reading taken
# at it and its parts add up to it. The saved replays ran against the
# recorded capacity (800 MiB), the room at every OOM: replay holds the
# recorded program (no OOM), says it does not repeat the 21 failed
# allocations, and the report says no policy would have held the failed
# request, each needing its reserved peak plus the request.
"$WRITE_TRACE" oom-loop loop.db
"$MEMTRACE" replay loop.db --backend sim --policy native,caching >replay.txt
sed -n 1p replay.txt
awk '/^(native|caching) / {print $1, $2, $3, $4, "OOMs:", $8}' replay.txt
grep '^the trace records' replay.txt
# a replay saved under a --limit too small for the run: its verdict names it
"$MEMTRACE" replay loop.db --backend sim --policy bestfit --limit 100MiB >/dev/null
"$MEMTRACE" report loop.db | sed -n '/^Out of memory/,/^  OOM 2 /p'
"$MEMTRACE" report loop.db --json | python3 -c '
import json, sys
d = json.load(sys.stdin)["devices"][0]
s = d["oom_summary"]
print("summary:", s["count"], "OOMs of", s["failed_allocations"], "failures;",
      s["framework_failures"], "framework,", s["driver_attempts"], "attempts")
for i, o in enumerate(d["ooms"], 1):
    a = o["anatomy"]
    assert sum(a["parts"].values()) == a["reading_bytes"], o
    assert a["reading_at_ns"] == o["at_ns"], (i, a["reading_at_ns"], o["at_ns"])
    held = [p["policy"] for p in o["replays"] if p["held"]]
    print("OOM %d at %d ns: %d attempts, reading at the OOM, room %d MiB, held by %s, smallest %s %d MiB" % (
        i, o["at_ns"], len(o["attempts"]), o["room_bytes"] >> 20, held,
        o["smallest_capacity_policy"], o["smallest_capacity_bytes"] >> 20))'
