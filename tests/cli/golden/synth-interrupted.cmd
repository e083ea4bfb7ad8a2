# synth stopped with Ctrl-C (SIGINT) after its first commit of everything
# (2^20 events): the trace is marked incomplete and readers use only the
# span every kind covers, so allocations and frees stay together (a stop
# used to leave the frees a chunk behind: a peak of 1567.9 % of the device)
# (a background job of a script ignores SIGINT: give synth the default back,
# as a terminal's Ctrl-C would find it)
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$MEMTRACE" synth --events 50M -o t.db >/dev/null 2>&1 &
pid=$!
size() { stat -c %s "$1" 2>/dev/null || echo 0; }
# 6 MB of trace: past the first commit (2^20 events take about 3 MB)
until [ $(( $(size t.db) + $(size t.db-wal) )) -ge 6000000 ]; do sleep 0.1; done
kill -INT $pid
wait $pid
echo "synth: $(kill -l $(( $? - 128 )))"
"$MEMTRACE" info --json t.db | python3 -c '
import json, sys
o = json.load(sys.stdin)
d = o["devices"][0]
a, f = o["events"]["alloc"]["events"], o["events"]["free"]["events"]
print("complete:", o["complete"])
# what is left live at the end (weights, Adam states: a few thousand), not
# a chunk of 65536 frees missing
print("frees behind allocs by less than 8192:", 0 <= a - f < 8192)
print("peak below the device:", d["peak_live_bytes"] < d["total_bytes"])'
