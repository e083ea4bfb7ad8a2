#!/bin/sh
# test-cli.sh MEMTRACE WRITE_TRACE — `memtrace replay` on the hand-worked
# trace of write-trace.c (lower bound 6 MiB; A 4 MiB, B 2 MiB, C 4 MiB).
set -u
M=$1
W=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/../tap.sh"
"$W" "$dir/t.db" || exit 1

"$M" replay "$dir/t.db" --backend sim --policy native,bestfit,planned --no-save >"$dir/out" 2>"$dir/err"
check "exit 0" test $? -eq 0
check "the capacity first: the recorded device's total (no reading)" \
	sh -c "sed -n 1p '$dir/out' | grep -qx 'capacity: 80.0 GiB (the device.s 80.0 GiB: no reading of the memory in use)'"
check "lower bound is the first row, 6 MiB" \
	sh -c "sed -n 3p '$dir/out' | grep -q '^lower bound (peak live) .* 6.00 MiB'"
check "planned reaches the bound" sh -c "grep -q '^planned .* sim .* 6.00 MiB  *1.000x' '$dir/out'"
check "three policy rows and planned's planning time" test "$(wc -l <"$dir/out")" -eq 7
check "planning time said apart" sh -c "tail -1 '$dir/out' | grep -q '^planned: planning took [0-9.]* s (wall) before its replay'"
check "nothing on stderr off a terminal" test ! -s "$dir/err"

"$M" replay "$dir/t.db" --backend sim --policy native --json --no-save >"$dir/out"
check "json exit 0" test $? -eq 0
check "json fields" sh -c "grep -q '\"policy\": \"native\"' '$dir/out' &&
	grep -q '\"peak_reserved\": 6291456' '$dir/out' &&
	grep -q '\"peak_allocated\": 6291456' '$dir/out' && grep -q '\"oom_count\": 0' '$dir/out' &&
	grep -q '\"driver_calls\"' '$dir/out' && grep -q '\"events\": 6' '$dir/out' &&
	grep -q '\"failed_allocations_left_out\": 0,' '$dir/out'"
check "json capacity: the device's 80 GiB, recorded" sh -c "grep -q '\"bytes\": 85899345920,' '$dir/out' &&
	grep -q '\"source\": \"recorded\"' '$dir/out'"

# --limit 80GB is 80 000 000 000 bytes (GB = 10^9), said as such
"$M" replay "$dir/t.db" --backend sim --policy native --limit 80GB --json --no-save >"$dir/out"
check "--limit 80GB: 80000000000 bytes, from --limit" sh -c "grep -q '\"bytes\": 80000000000,' '$dir/out' &&
	grep -q '\"source\": \"limit\"' '$dir/out' && grep -q '\"limit\": \"80GB\"' '$dir/out'"
"$M" replay "$dir/t.db" --backend sim --policy native --limit 80GB --no-save >"$dir/out"
check "--limit 80GB in words" sh -c "sed -n 1p '$dir/out' | grep -qx 'capacity: 74.5 GiB (--limit 80GB: 80000000000 bytes)'"
"$M" replay "$dir/t.db" --backend sim --policy native --limit 80GiB --json --no-save >"$dir/out"
check "--limit 80GiB: 85899345920 bytes" grep -q '"bytes": 85899345920,' "$dir/out"
"$M" replay "$dir/t.db" --backend sim --policy native --limit none --json --no-save >"$dir/out"
check "--limit none: no capacity" sh -c "grep -q '\"bytes\": null,' '$dir/out' &&
	grep -q '\"source\": \"none\"' '$dir/out'"
"$M" replay "$dir/t.db" --backend sim --limit 0 2>"$dir/err"
check "--limit 0 exit 2" test $? -eq 2
# --device is the CUDA device number the program saw (the trace's device
# row 1 is ordinal 0), as report and render take it
"$M" replay "$dir/t.db" --backend sim --policy native --device 0 --no-save >"$dir/out"
check "--device 0: the device" sh -c "grep -q '^native .* 6.00 MiB' '$dir/out'"
"$M" replay "$dir/t.db" --backend sim --policy native --device 1 --no-save 2>"$dir/err"
check "--device 1: exit 2" test $? -eq 2
check "--device 1: one line" sh -c "test \$(wc -l <'$dir/err') -eq 1 && grep -q 'no device 1' '$dir/err'"

"$M" replay "$dir/t.db" --backend sim --policy native --limit 5MiB --find-min-capacity \
	--no-save >"$dir/out"
check "limit exit 0" test $? -eq 0
check "OOM described" grep -q \
	'^native: 1 OOM at 5.00 MiB; first at +10 ns: request #1 of 2.00 MiB with 4.00 MiB live (largest live: 4.00 MiB)$' \
	"$dir/out"
check "min capacity 6 MiB" sh -c "grep -q '^native .* 6.00 MiB ' '$dir/out'"

"$M" replay "$dir/t.db" --backend sim --policy nosuch >"$dir/out" 2>"$dir/err"
check "unknown policy exit 2" test $? -eq 2
check "unknown policy: one line naming the valid ones" sh -c \
	"test \$(wc -l <'$dir/err') -eq 1 && grep -q 'nosuch.*valid: native' '$dir/err'"
"$M" replay "$dir/t.db" --backend sim --limit 12XB 2>"$dir/err"
check "bad size exit 2" test $? -eq 2
"$M" replay "$dir/nonexistent.db" --backend sim 2>"$dir/err"
check "missing trace exit 1" test $? -eq 1
check "missing trace: one line" test "$(wc -l <"$dir/err")" -eq 1

"$M" replay "$dir/t.db" --backend cuda --policy native --no-save >/dev/null 2>"$dir/err"
rc=$?
if [ $rc -ne 0 ]; then # no GPU here
	check "cuda without GPU exit 1" test $rc -eq 1
	check "cuda without GPU: one line" test "$(wc -l <"$dir/err")" -eq 1
fi

"$M" replay "$dir/t.db" --backend sim --policy native,planned >/dev/null
check "saving run exit 0" test $? -eq 0
"$W" --replays "$dir/t.db" >"$dir/out"
check "two replays saved with series" sh -c \
	"grep -q '^native sim [1-9][0-9]* \"peak_reserved\":6291456' '$dir/out' &&
	 grep -q '^planned sim [1-9]' '$dir/out' && test \$(wc -l <'$dir/out') -eq 2"
"$M" replay "$dir/t.db" --backend sim --policy native >/dev/null
check "events untouched, replays added" test "$("$W" --replays "$dir/t.db" | wc -l)" -eq 3
# SIGINT stops the replay cleanly: one line, exit 130, nothing saved
"$W" --synth 300000 "$dir/big.db" || exit 1
"$M" replay "$dir/big.db" --backend sim --policy all >/dev/null 2>"$dir/err" &
pid=$!
# a background job of sh starts with SIGINT ignored until memtrace installs
# its handler: one SIGINT sent before then (a slow start under ASan) would
# be lost, so send one every 0.3 s until the replay says it stopped
for i in $(seq 1 200); do
	sleep 0.3
	[ -s "$dir/err" ] && break
	kill -INT $pid 2>/dev/null || break
done
wait $pid
check "SIGINT exit 130" test $? -eq 130
check "SIGINT: one line" sh -c "test \$(wc -l <'$dir/err') -eq 1 && grep -q interrupted '$dir/err'"
check "SIGINT: nothing saved" test "$("$W" --replays "$dir/big.db" | wc -l)" -eq 0
tap_done
