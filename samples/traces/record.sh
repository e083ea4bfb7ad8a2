#!/bin/bash
# Records the committed sample traces on a GPU machine:
#   samples/traces/record.sh MEMTRACE OUTDIR [NAME...]
# Each trace comes with the .json sidecar its script wrote from PyTorch's
# own figures (same run). tests/recorder/check_samples.py compares them.
# With NAMEs, only those traces are recorded. gpt2-train-stacks and
# linear-small name Python call sites (--stacks python); the training
# scripts push the NVTX phases forward, backward and optimizer.
set -u
MEMTRACE=${1:?memtrace binary}
OUT=${2:?output folder}
HERE=$(cd "$(dirname "$0")/.." && pwd)/torch
mkdir -p "$OUT"
NAMES=" ${*:3} "
rec() { # name capture stacks script args...
	name=$1 capture=$2 stacks=$3 script=$4
	shift 4
	case "$NAMES" in "  ") ;; *" $name "*) ;; *) return ;; esac
	rm -f "$OUT/$name.db" "$OUT/$name.db.old"
	"$MEMTRACE" record -o "$OUT/$name.db" --capture "$capture" --stacks "$stacks" -- \
		python3 "$HERE/$script" --json "$OUT/$name.json" "$@"
	echo "$name: exit $?"
}
rec gpt2-train requests none gpt2_train.py --steps 20 --batch 8
rec gpt2-train-stacks requests python gpt2_train.py --steps 20 --batch 8
rec resnet50-train requests none resnet50_train.py --steps 20 --batch 64
rec bert-base-bf16-train requests none bert_train.py --steps 30 --batch 32
rec gpt2-generate-as-is as-is none generate.py --steps 2 --batch 4 --tokens 128
rec linear-small requests python linear_small.py
