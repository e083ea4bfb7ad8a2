# a trace whose writer died before its first chunk: metadata, a process and
# a device, no events
sh -c '"$KILL_WRITER" k.db 0 100' 2>/dev/null
"$MEMTRACE" info k.db | sed -E 's/^(file size +).*/\1(codec-dependent)/' | sed -E '/^  [a-z_]+ /s/^(.{36}).*/\1/'
"$MEMTRACE" info --json k.db | python3 -c '
import json, sys
o = json.load(sys.stdin)
print("json:", o["total_events"], o["first_ts"], o["duration_ns"], o["devices"][0]["peak_live_bytes"],
      o["devices"][0]["peak_live_ts"], o["blob_bytes_per_event"], o["events"]["alloc"])'
