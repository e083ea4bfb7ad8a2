# bytes flipped inside the blob of the first alloc chunk: info reports the
# chunk (it decodes alloc/free chunks for the peak) in one line
"$MEMTRACE" synth --events 2000 --seed 1 -o t.db >/dev/null
python3 - <<'PY'
import sqlite3
db = sqlite3.connect("t.db")
cid, blob = db.execute("SELECT id, blob FROM chunks WHERE kind = 1 ORDER BY id LIMIT 1").fetchone()
b = bytearray(blob)
for i in range(len(b) // 3, len(b) // 3 + 8):
    b[i] ^= 0x5A
db.execute("UPDATE chunks SET blob = ? WHERE id = ?", (bytes(b), cid))
db.commit()
db.close()
print("flipped 8 bytes in chunk", cid)
PY
"$MEMTRACE" info t.db
