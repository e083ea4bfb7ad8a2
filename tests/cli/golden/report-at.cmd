# --at: the anatomy and the largest allocations at a moment (the peak is
# reported all the same); peak names the default
cp "$SRC/samples/traces/gpt2-train.db" .
"$MEMTRACE" report gpt2-train.db --at 5s | sed -n '1,25p'
"$MEMTRACE" report gpt2-train.db --at peak >peak.txt
"$MEMTRACE" report gpt2-train.db >default.txt
cmp peak.txt default.txt && echo "--at peak is the default"
"$MEMTRACE" report gpt2-train.db --json --at 1500ms | python3 -c '
import json, sys
o = json.load(sys.stdin)
print("at_ns", o["at_ns"], "peak_at_ns", o["peak_at_ns"])
print("top_at", len(o["top_at"]), "sum", sum(a["bytes"] for a in o["top_at"]) <= o["live_at_bytes"])
print("anatomy at", o["anatomy"]["at_ns"])'
