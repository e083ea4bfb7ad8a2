# --events accepts 1e3 / 2.5k / 3000 forms; every pattern writes that many
# alloc+free events, give or take 1%, on one process and one device
for args in "train 1e3 1000" "random 2.5k 2500" "small 3000 3000" "train 20K 20000"; do
    set -- $args
    "$MEMTRACE" synth --pattern $1 --events $2 --seed 5 -o $1-$3.db >/dev/null || exit 1
    "$MEMTRACE" info --json $1-$3.db | python3 -c '
import json, sys
want = int(sys.argv[1])
o = json.load(sys.stdin)
n = o["events"]["alloc"]["events"] + o["events"]["free"]["events"]
print(o["trace"], "alloc+free within 1%:", abs(n - want) <= 0.01 * want,
      "devices:", [(d["name"], d["total_bytes"]) for d in o["devices"]],
      "processes:", len(o["processes"]), "capture:", o["capture"],
      "kernels:", o["events"]["kernel"]["events"] > 0,
      "ranges:", o["events"]["range"]["events"] > 0)
' "$3"
done
