# an existing trace is never overwritten: it becomes TRACE.old
"$MEMTRACE" synth --pattern small --events 200 --seed 1 -o t.db >/dev/null
"$MEMTRACE" synth --pattern random --events 300 --seed 1 -o t.db >/dev/null
ls | grep -v -e -wal -e -shm
"$MEMTRACE" info --json t.db.old | python3 -c 'import json,sys; o=json.load(sys.stdin); print("t.db.old:", o["command_line"])'
"$MEMTRACE" info --json t.db | python3 -c 'import json,sys; o=json.load(sys.stdin); print("t.db:", o["command_line"])'
