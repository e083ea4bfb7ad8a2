# an existing trace is never overwritten: it becomes TRACE.1, the next one
# TRACE.2, and the three runs' traces all stay readable
"$MEMTRACE" synth --pattern small --events 200 --seed 1 -o t.db >/dev/null
"$MEMTRACE" synth --pattern random --events 300 --seed 1 -o t.db >/dev/null
"$MEMTRACE" synth --pattern train --events 400 --seed 1 -o t.db >/dev/null
ls | grep -v -e -wal -e -shm
for t in t.db.1 t.db.2 t.db; do
    "$MEMTRACE" info --json $t | python3 -c 'import json,sys; o=json.load(sys.stdin); print(sys.argv[1] + ":", o["command_line"])' $t
done
