# info --json on a small synthetic trace; fields that depend on the codec's
# compressed sizes are checked for presence and type, then removed.
"$MEMTRACE" synth --pattern random --events 500 --seed 3 -o r.db >/dev/null
"$MEMTRACE" info --json r.db | python3 -c '
import json, sys
o = json.load(sys.stdin)
def strip(d, keys):
    for k in keys:
        assert d[k] is None or isinstance(d[k], (int, float)), k
        del d[k]
assert o["file_bytes"] > o["blob_bytes"] > 0
strip(o, ("blob_bytes", "blob_bytes_per_event", "file_bytes", "file_bytes_per_event"))
for v in o["events"].values():
    strip(v, ("blob_bytes", "blob_bytes_per_event"))
json.dump(o, sys.stdout, indent=2)
print()
'
