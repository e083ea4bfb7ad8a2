# Property: on every shipped sample trace and a synthetic one, at the peak
# and at moments spread over the trace, the anatomy's parts add up to the
# device reading exactly, the top list is at most 20 long and descending,
# and attributed_fraction lies in [0, 1]. At the peak, what is left
# unexplained is within 1% of the reading (the issue's bar). One python run
# reads every report (python starts slowly on a busy machine).
"$MEMTRACE" synth --pattern train --events 20000 --seed 5 -o synth.db >/dev/null
for t in "$SRC"/samples/traces/*.db synth.db; do
    name=$(basename "$t")
    for at in peak 0 0.5 2s 4s 8s; do
        "$MEMTRACE" report "$t" --json --at $at 2>/dev/null >"$name@$at.json" || { [ $? = 2 ] && continue; echo "$name $at failed"; continue; }
        echo "$name@$at.json" >>reports
    done
done
python3 - <<'PY'
import json
for path in open("reports").read().split():
    name, at = path[:-5].split("@")
    o = json.load(open(path))
    for d in o["devices"]:
        a = d["anatomy"]
        if a is None:
            print(name, at, "no anatomy:", d["anatomy_unavailable"]); continue
        s = sum(a["parts"].values())
        assert s == a["reading_bytes"], (name, at, s, a["reading_bytes"])
        assert all(v >= 0 for k, v in a["parts"].items() if k != "unexplained"), a
        if at == "peak":
            assert abs(a["parts"]["unexplained"]) <= 0.01 * a["reading_bytes"], (name, a)
        top = [x["bytes"] for x in d["top_at_peak"]]
        assert len(top) <= 20 and top == sorted(top, reverse=True)
        assert 0 <= d["attributed_fraction"] <= 1
        assert sum(top) <= d["peak_live_bytes"]
    print(name, at, "ok")
PY
