# Issue 16 item 4: replay --json states the capacity it used on every
# shipped sample trace (and the imported OOM snapshot, which records no
# device memory): by default the recorded card, its total less the CUDA
# context and libraries and the memory outside the process, which must be
# the same two parts report --json's anatomy gives at the peak of live
# bytes (the same reading), the outside part without the driver's reserve
# where the trace records it, and less the driver allocations live at the
# peak in which no request lay (computed again here from the CSV export). --limit 80GB is 80 000 000 000 bytes, --limit
# none none; each option run under is in the result, as is memtrace's
# version, and the saved row holds the same.
"$MEMTRACE" import "$SRC/samples/snapshots/oom.pickle" -o oom.db >/dev/null
for t in "$SRC"/samples/traces/*.db oom.db; do
    name=$(basename "$t")
    "$MEMTRACE" replay "$t" --backend sim --policy caching --json --no-save >"$name.replay.json"
    "$MEMTRACE" report "$t" --json >"$name.report.json"
    "$MEMTRACE" export "$t" -o "$name.csv" >/dev/null
done
cp "$SRC/samples/traces/linear-small.db" saved.db
"$MEMTRACE" replay saved.db --backend sim --policy bestfit --limit 80GB --json >limit.json
"$MEMTRACE" replay saved.db --backend sim --policy bestfit --limit none --json --no-save >none.json
"$MEMTRACE" replay saved.db --backend sim --policy bestfit --limit 80GB | head -1
"$MEMTRACE" replay saved.db --backend sim --policy bestfit --no-save | head -1
python3 - "$SRC" <<'PY'
import csv, glob, json, os, sqlite3, sys
src = sys.argv[1]

def library_bytes(name, peak):
    """Driver allocations live at peak that no request lay in since their start
    (none in a trace without requests: its driver allocations are the requests)."""
    drv, held, requests = {}, set(), False
    for e in csv.DictReader(open(name + ".csv")):
        if int(e["ts_ns"]) > peak or e["kind"] not in ("alloc", "free"):
            continue
        key, addr = (e["process"], e["address"]), int(e["address"])
        if e["layer"] == "driver":
            if e["kind"] == "alloc":
                drv[key] = int(e["bytes"])
                held.discard(key)
            else:
                drv.pop(key, None)
        elif e["kind"] == "alloc":
            requests = True
            for (p, a), b in drv.items():
                if p == e["process"] and int(a) <= addr < int(a) + b:
                    held.add((p, a))
    return sum(b for k, b in drv.items() if k not in held) if requests else 0

names = [os.path.basename(p) for p in sorted(glob.glob(src + "/samples/traces/*.db"))] + ["oom.db"]
for name in names:
    c = json.load(open(name + ".replay.json"))[0]["capacity"]
    d = json.load(open(name + ".report.json"))["devices"][0]
    if c["source"] == "recorded":
        parts = d["anatomy"]["parts"]
        outside = parts["other_processes"] + parts["cuda_context_and_libraries"]
        reserve = c["driver_reserved_bytes"] or 0
        assert c["context_bytes"] + c["outside_bytes"] + reserve == outside, (name, c, parts)
        libs = library_bytes(name, d["start_ts"] + d["peak_at_ns"])
        assert c["library_bytes"] == libs, (name, c, libs)
        assert c["bytes"] == c["device_total"] - outside + reserve - libs, (name, c)
        assert c["reading_at_ns"] == d["anatomy"]["reading_at_ns"], (name, c)
        print("%s: %s, %d bytes = %d total - %d context - %d outside - %d libraries, "
              "reading at %d ns"
              % (name, c["source"], c["bytes"], c["device_total"], c["context_bytes"],
                 c["outside_bytes"], c["library_bytes"], c["reading_at_ns"]))
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
