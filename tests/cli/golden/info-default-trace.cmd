# without a TRACE argument info reads memtrace.db; first where there is none
"$MEMTRACE" info
echo "exit $?"
"$MEMTRACE" synth --events 100 --pattern small >/dev/null
"$MEMTRACE" info --json | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["trace"], o["total_events"])'
