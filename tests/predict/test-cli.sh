#!/bin/sh
# test-cli.sh MEMTRACE WRITE_MODEL — `memtrace predict` on synthetic model
# traces (tests/predict/model-trace.h) at N = 1, 2, 4; TAP output.
set -u
M=$1
W=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/../tap.sh"
for s in 1 2 4 64; do
	"$W" --quad 65536 "$dir/m$s.db" $s || exit 1
	"$W" --branch-at 2 "$dir/b$s.db" $s || exit 1
done
in="$dir/m1.db@1 $dir/m2.db@2 $dir/m4.db@4"

# shellcheck disable=SC2086
"$M" predict $in --to 64,16 --max-fit >"$dir/out" 2>"$dir/err"
check "text: exit 0" test $? -eq 0
check "text: aligned and fitted" sh -c "grep -q '^inputs: 3 traces, 100.0% of their' '$dir/out' &&
	grep -q '^fit: [0-9]* constant, [0-9]* affine, 72 quadratic$' '$dir/out'"
check "text: capacity from the samples" grep -q \
	'^capacity: 79.0 GiB (device 80.0 GiB less 512 MiB CUDA context and libraries and 500 MiB outside the process)$' \
	"$dir/out"
check "text: targets in order, with the naive columns" sh -c \
	"grep -A2 '^ *N  *peak live  *caching fits  *| naive:' '$dir/out' | sed -n 2p | grep -q '^ *16 ' &&
	grep -q '^ *64 .* yes  *| ' '$dir/out'"
check "text: max fit" grep -q '^max fit (caching): N = [0-9]* in 79.0 GiB$' "$dir/out"
check "text: nothing on stderr off a terminal" test ! -s "$dir/err"

# the prediction at 64 equals the model written at 64
"$M" predict $in --to 64 --json >"$dir/json"
check "json: exit 0" test $? -eq 0
"$M" info "$dir/m64.db" --json >"$dir/info"
"$M" replay "$dir/m64.db" --policy caching --backend sim --json --no-save >"$dir/replay"
check "json: exactly the keys of the issue, the truth at N=64" python3 - "$dir/json" "$dir/info" \
	"$dir/replay" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
info = json.load(open(sys.argv[2]))
replay = json.load(open(sys.argv[3]))
assert set(j) == {"inputs", "aligned_fraction", "predictions", "capacity_bytes"}, set(j)
assert [set(i) for i in j["inputs"]] == [{"trace", "size"}] * 3
assert [i["size"] for i in j["inputs"]] == [1, 2, 4]
assert j["aligned_fraction"] == 1.0
(p,) = j["predictions"]
assert set(p) == {"size", "peak_live_bytes", "policies"} and p["size"] == 64
assert set(p["policies"]) == {"caching"}
assert set(p["policies"]["caching"]) == {"peak_reserved_bytes", "oom_count"}
peak = info["devices"][0]["peak_live_bytes"] if "devices" in info else None
assert p["policies"]["caching"]["peak_reserved_bytes"] == replay[0]["peak_reserved"], \
    (p, replay[0]["peak_reserved"])
assert p["peak_live_bytes"] == replay[0]["peak_allocated"]
assert j["capacity_bytes"] == (80 << 30) - (512 << 20) - (500 << 20)
PY

"$M" predict $in --to 8 --max-fit --capacity 4GiB --policy caching,native --json >"$dir/json"
check "json: max_fit per policy at --capacity" python3 -c "
import json, sys
j = json.load(open('$dir/json'))
assert set(j) == {'inputs', 'aligned_fraction', 'predictions', 'capacity_bytes', 'max_fit'}
assert j['capacity_bytes'] == 4 << 30
assert set(j['max_fit']) == {'caching', 'native'} and j['max_fit']['native'] >= j['max_fit']['caching'] > 4
assert set(j['predictions'][0]['policies']) == {'caching', 'native'}
"

# a data-dependent branch at N = 2: refused, naming where
"$M" predict "$dir/b1.db@1" "$dir/b2.db@2" "$dir/b4.db@4" --to 16 >"$dir/out" 2>"$dir/err"
check "branch: exit 1" test $? -eq 1
check "branch: one line naming the divergence" sh -c "test \$(wc -l <'$dir/err') -eq 1 &&
	grep -q '^memtrace predict: cannot predict: the inputs diverge (N=1 and N=4 agree and N=2 does not: control flow that follows the data): .*b2.db (N=2) at request #[0-9]* (/work/model.py:70:Block.refine' '$dir/err'"
check "branch: nothing on stdout" test ! -s "$dir/out"

"$M" predict "$dir/m1.db@1" --to 8 2>"$dir/err"
check "one input: usage error" test $? -eq 2
"$M" predict "$dir/m1.db" "$dir/m2.db@2" --to 8 2>"$dir/err"
check "no @N: usage error naming it" sh -c "test $? -eq 2 && grep -q 'is not TRACE@N' '$dir/err'"
"$M" predict "$dir/m1.db@1" "$dir/m2.db@1" --to 8 2>"$dir/err"
check "equal sizes: refused" sh -c "test $? -eq 1 && grep -q 'sizes must differ' '$dir/err'"
"$M" predict "$dir/m1.db@1" "$dir/m2.db@2" 2>"$dir/err"
check "no target: usage error" test $? -eq 2
"$M" predict "$dir/m1.db@1" "$dir/m2.db@2" --to 0 2>"$dir/err"
check "--to 0: usage error" test $? -eq 2
"$M" predict "$dir/m1.db@1" "$dir/m2.db@2" --to 8 --policy nosuch 2>"$dir/err"
check "unknown policy: usage error" sh -c "test $? -eq 2 && grep -q 'unknown policy' '$dir/err'"
"$M" predict "$dir/none.db@1" "$dir/m2.db@2" --to 8 2>"$dir/err"
check "missing trace: exit 1" test $? -eq 1
"$M" predict --help >"$dir/out"
check "--help: exit 0 on stdout" sh -c "test $? -eq 0 && grep -q '^usage: memtrace predict' '$dir/out'"
tap_done
