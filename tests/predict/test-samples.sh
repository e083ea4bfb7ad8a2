#!/bin/sh
# test-samples.sh MEMTRACE — memtrace predict on the H100 validation traces
# (samples/predict: GPT-2, BERT with gradient checkpointing, generation, at
# N = 1, 2, 4) against PyTorch's own figures: peak live within 2% and peak
# reserved within 3% at every point of the truth table and --max-fit within 1
# of the OOM search (bench/predict/compare.py --check); the data-dependent
# branch refused.
set -u
M=$1
S=$MT_SOURCE_ROOT/samples/predict
python3 "$MT_SOURCE_ROOT/bench/predict/compare.py" --check "$M" "$S" >/dev/null
rc=$?
"$M" predict "$S/traces/branch-n1.db@1" "$S/traces/branch-n2.db@2" "$S/traces/branch-n4.db@4" \
	--to 8 >/dev/null 2>&1
brc=$?
[ $rc -eq 0 ] && echo "ok 1 - peak live, peak reserved and max fit on the H100 traces" || echo "not ok 1 - peak live, peak reserved and max fit on the H100 traces"
[ $brc -eq 1 ] && echo "ok 2 - the data-dependent branch refused" || echo "not ok 2 - the data-dependent branch refused (exit $brc)"
echo "1..2"
[ $rc -eq 0 ] && [ $brc -eq 1 ]
