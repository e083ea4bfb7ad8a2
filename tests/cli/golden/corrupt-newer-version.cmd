# a trace written by a newer format version is refused, not misread
"$MEMTRACE" synth --events 200 --seed 1 -o t.db >/dev/null
python3 -c '
import sqlite3
db = sqlite3.connect("t.db")
db.execute("UPDATE meta SET value = ? WHERE key = ?", ("2", "format_version"))
db.commit()
'
"$MEMTRACE" info t.db
