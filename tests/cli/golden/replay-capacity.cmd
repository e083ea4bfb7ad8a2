# Issue 16 item 4: replay --json states the capacity it used on every
# shipped sample trace (and the imported OOM snapshot, which records no
# device memory): by default the recorded card, its total less the CUDA
# context and libraries and the memory outside the process, which must be
# the same two parts report --json's anatomy gives at the peak of live
# bytes (the same reading). --limit 80GB is 80 000 000 000 bytes, --limit
# none none; each option run under is in the result, as is memtrace's
# version, and the saved row holds the same.
"$MEMTRACE" import "$SRC/samples/snapshots/oom.pickle" -o oom.db >/dev/null
for t in "$SRC"/samples/traces/*.db oom.db; do
    name=$(basename "$t")
    "$MEMTRACE" replay "$t" --backend sim --policy caching --json --no-save >"$name.replay.json"
    "$MEMTRACE" report "$t" --json >"$name.report.json"
done
cp "$SRC/samples/traces/linear-small.db" saved.db
"$MEMTRACE" replay saved.db --backend sim --policy bestfit --limit 80GB --json >limit.json
"$MEMTRACE" replay saved.db --backend sim --policy bestfit --limit none --json --no-save >none.json
"$MEMTRACE" replay saved.db --backend sim --policy bestfit --limit 80GB | head -1
"$MEMTRACE" replay saved.db --backend sim --policy bestfit --no-save | head -1
python3 - "$SRC" <<'PY'
import glob, json, os, sqlite3, sys
src = sys.argv[1]
names = [os.path.basename(p) for p in sorted(glob.glob(src + "/samples/traces/*.db"))] + ["oom.db"]
for name in names:
    c = json.load(open(name + ".replay.json"))[0]["capacity"]
    d = json.load(open(name + ".report.json"))["devices"][0]
    if c["source"] == "recorded":
        parts = d["anatomy"]["parts"]
        outside = parts["other_processes"] + parts["cuda_context_and_libraries"]
        assert c["context_bytes"] + c["outside_bytes"] == outside, (name, c, parts)
        assert c["bytes"] == c["device_total"] - outside, (name, c)
        assert c["reading_at_ns"] == d["anatomy"]["reading_at_ns"], (name, c)
        print("%s: %s, %d bytes = %d total - %d context - %d outside, reading at %d ns"
              % (name, c["source"], c["bytes"], c["device_total"], c["context_bytes"],
                 c["outside_bytes"], c["reading_at_ns"]))
    else:
        print("%s: %s, %s (%s)" % (name, c["source"], c["bytes"], c["description"]))
limit = json.load(open("limit.json"))[0]
print("--limit 80GB:", limit["capacity"]["bytes"], limit["capacity"]["source"], limit["options"])
none = json.load(open("none.json"))[0]
print("--limit none:", none["capacity"]["bytes"], none["capacity"]["source"], none["options"]["limit"])
assert limit["memtrace_version"] == none["memtrace_version"] != ""
db = sqlite3.connect("saved.db")
rows = db.execute("select result_json from replays").fetchall()
saved = json.loads(rows[-1][0])
print("saved row:", len(rows), "row;", saved["capacity"]["bytes"], saved["capacity"]["source"],
      saved["options"], "version kept:", saved["memtrace_version"] == limit["memtrace_version"])
PY
