# index rows their chunks do not confirm are corrupt, in one line, status 1:
# a copy of an alloc chunk's row (it doubled the peak), a last_ts of 2^64-5
# (a 16651286633 s time span), a process that is no row, an unknown kind
"$MEMTRACE" synth --events 2000 --seed 1 -o good.db >/dev/null
edit() {
    cp good.db "$1"
    python3 -c 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute(sys.argv[2]); db.commit()' "$1" "$2"
    "$MEMTRACE" info "$1" >/dev/null; echo "info $1: exit $?"
    "$MEMTRACE" report "$1" >/dev/null; echo "report $1: exit $?"
    "$MEMTRACE" replay --backend sim --policy native --no-save "$1" >/dev/null; echo "replay $1: exit $?"
}
edit copy.db "INSERT INTO chunks (process, device, kind, first_ts, last_ts, first_seq, count, codec, raw_bytes, layers, blob) SELECT process, device, kind, first_ts, last_ts, first_seq, count, codec, raw_bytes, layers, blob FROM chunks WHERE kind = 1 ORDER BY id LIMIT 1"
edit late.db "UPDATE chunks SET last_ts = -5 WHERE id = (SELECT max(id) FROM chunks WHERE kind = 2)"
edit process.db "UPDATE chunks SET process = 9 WHERE id = 2"
edit kind.db "UPDATE chunks SET kind = 12 WHERE id = 2"
"$MEMTRACE" render late.db late.png; echo "render late.db: exit $?"
