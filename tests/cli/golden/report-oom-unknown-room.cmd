# An OOM in a trace that does not record the device's memory (a PyTorch
# snapshot imported): the room is unknown, so no verdict says held or not
# held (before: "room 0 B", "no allocator holds it"); what each saved
# replay needs and the smallest capacity are still given; --json has
# room_bytes and held null. replay states it ran without a capacity.
"$MEMTRACE" import "$SRC/samples/snapshots/oom.pickle" -o oom.db >/dev/null
"$MEMTRACE" replay oom.db --backend sim --policy caching,bestfit | sed -n 1p
"$MEMTRACE" report oom.db | sed -n '/^  OOM 1/,$p'
"$MEMTRACE" report oom.db --json | python3 -c '
import json, sys
o = json.load(sys.stdin)["devices"][0]["ooms"][0]
print("room_bytes:", o["room_bytes"], "verdicts:", [(p["policy"], p["held"], p["needs_bytes"]) for p in o["replays"]])'
