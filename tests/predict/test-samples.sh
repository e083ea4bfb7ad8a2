#!/bin/sh
# test-samples.sh MEMTRACE — memtrace predict on the H100 validation traces
# (samples/predict: GPT-2, BERT with gradient checkpointing, generation, at
# N = 1, 2, 4) against PyTorch's own figures: peak live within 2% and peak
# reserved within 3% at every point of the truth table and --max-fit within 1
# of the OOM search (bench/predict/compare.py --check), from the recorded
# traces and from PyTorch's own snapshots of runs at N = 1, 2, 4 (imported);
# the data-dependent branch refused.
set -u
M=$1
S=$MT_SOURCE_ROOT/samples/predict
python3 "$MT_SOURCE_ROOT/bench/predict/compare.py" --check "$M" "$S" >/dev/null
rc=$?
# the same from PyTorch's own snapshots of runs at N = 1, 2, 4, imported
# (no device memory in them: the capacity of the recorded GPT-2 trace)
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
mkdir "$d/traces" && cp "$S"/snapshots/*.db "$S"/snapshots/*.json "$d/traces/" &&
	cp -r "$S/truth" "$S/truth.json" "$d/" &&
	python3 "$MT_SOURCE_ROOT/bench/predict/compare.py" --check "$M" "$d" --capacity 84215529472 >/dev/null
src=$?
"$M" predict "$S/traces/branch-n1.db@1" "$S/traces/branch-n2.db@2" "$S/traces/branch-n4.db@4" \
	--to 8 >/dev/null 2>&1
brc=$?
[ $rc -eq 0 ] && echo "ok 1 - peak live, peak reserved and max fit on the H100 traces" || echo "not ok 1 - peak live, peak reserved and max fit on the H100 traces"
[ $src -eq 0 ] && echo "ok 2 - the same from imported PyTorch snapshots" || echo "not ok 2 - the same from imported PyTorch snapshots"
[ $brc -eq 1 ] && echo "ok 3 - the data-dependent branch refused" || echo "not ok 3 - the data-dependent branch refused (exit $brc)"
echo "1..3"
[ $rc -eq 0 ] && [ $src -eq 0 ] && [ $brc -eq 1 ]
