# The OOM story on a hand-written trace (tests/analyze/fixtures.c, OOMS:
# every figure below is worked out there): 8 failed allocations are 4 OOMs
# the program saw (PyTorch's two with the driver attempts behind them, one
# the framework recovered from, two of a process without recorded
# requests, one of them retried); each with the anatomy at its moment, the
# room, the lower bound and the saved replays' verdicts. --json says the
# same, and at every OOM the anatomy's parts add up to its reading.
"$WRITE_TRACE" ooms ooms.db
"$MEMTRACE" report ooms.db | sed -n '/^Out of memory/,$p'
"$MEMTRACE" report ooms.db --json | python3 -c '
import json, sys
d = json.load(sys.stdin)["devices"][0]
s = d["oom_summary"]
print("summary:", s["count"], "OOMs of", s["failed_allocations"], "failures;",
      s["framework_failures"], "framework,", s["driver_attempts"], "attempts,",
      s["recovered_attempts"], "recovered")
for i, o in enumerate(d["ooms"], 1):
    a = o["anatomy"]
    assert sum(a["parts"].values()) == a["reading_bytes"], o
    held = [p["policy"] for p in o["replays"] if p["held"]]
    print("OOM %d at %d ns: %d MiB, %d attempts, room %d MiB, lower bound %d MiB, held by %s, smallest %s %s MiB" % (
        i, o["at_ns"], o["request_bytes"] >> 20, len(o["attempts"]), o["room_bytes"] >> 20,
        o["lower_bound_bytes"] >> 20, held, o["smallest_capacity_policy"],
        o["smallest_capacity_bytes"] >> 20))'
