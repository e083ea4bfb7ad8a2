#!/bin/bash
# device-22.sh — issue 22's deciding measurement on one GPU: what it costs a
# CPU-bound PyTorch loop to put kernels on the memory timeline, by CUPTI's
# kernel activity records against CUPTI callbacks on the launch APIs alone
# (cupti-kernels.c, MT_BENCH_KERNELS=launch), beside memtrace's own modes and
# PyTorch's _record_memory_history as the peer. Prints figures, asserts
# nothing; everything goes under $OUT. At most about 8 minutes of wall time:
# each lockstep runs under its own time limit, and run.py writes its JSON
# after each workload, so a step cut short keeps what it measured.
#
# Rows of each lockstep (run.py --pin 2, every process at once, turns):
#   plain            the script alone
#   A/A              a second plain run: what the lockstep reads where
#                    nothing differs
#   cupti-activity   CUPTI's concurrent kernel records alone (no memtrace)
#   cupti-launch     CUPTI launch callbacks alone: name pointer, stream, CPU
#                    time, correlation id into a per-thread ring
#   cupti-launch-drv the same on the driver's launch APIs only
#   default          memtrace record as built
#   no-kernels       memtrace record --no-kernels
#   mt-launch        memtrace record --kernels launch (only where the build
#                    has that option)
#   peer             torch.cuda.memory._record_memory_history(), defaults
#
# Run from the repository root on the device, with the build in .dev/build:
#   mkdir -p /work; [ -e /work/main ] || ln -s "$PWD" /work/main; cd /work/main
#   export LD_LIBRARY_PATH=/work/main/.dev/lib HF_HUB_OFFLINE=1
#   bash bench/record-overhead/device-22.sh
set -u
: "${OUT:?OUT must name the folder for the results}"
here=bench/record-overhead
build=${BUILD:-.dev/build}
start=$(date +%s)
log=$OUT/device-22.txt

say() { echo "$*" | tee -a "$log"; }

say "device-22 on $(hostname) at $(date -u +%FT%TZ), $(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi -L 2>&1 | tee -a "$log"
nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | tee -a "$log"
python3 -c 'import torch; print("torch", torch.__version__)' 2>&1 | tee -a "$log"
nproc | sed 's/^/cpus /' | tee -a "$log"

if command -v ninja >/dev/null; then
	ninja -C "$build" >"$OUT/build.log" 2>&1 || say "ninja failed (build.log); using the build as carried"
fi
lib=$PWD/$build/$here/libcupti-kernels.so
memtrace=$PWD/$build/cli/memtrace
if ! grep -q MT_BENCH_LAUNCH_SUMMARY "$lib" 2>/dev/null; then
	say "$lib has no launch mode (rebuild it): stopping"
	exit 1
fi

has_kernels_option=0
"$memtrace" record --help 2>&1 | grep -q -- '--kernels' && has_kernels_option=1

# one lockstep: NAME LIMIT_S run.py-arguments...
lockstep() {
	local name=$1 limit=$2 t0
	shift 2
	local variants=(
		--variant "A/A=plain"
		--variant "cupti-activity=plain CUDA_INJECTION64_PATH=$lib"
		--variant "cupti-launch=plain CUDA_INJECTION64_PATH=$lib MT_BENCH_KERNELS=launch MT_BENCH_LAUNCH_SUMMARY=$OUT/launches-$name"
		--variant "cupti-launch-drv=plain CUDA_INJECTION64_PATH=$lib MT_BENCH_KERNELS=launch MT_BENCH_LAUNCH_DOMAINS=driver MT_BENCH_LAUNCH_SUMMARY=$OUT/launches-drv-$name"
		--variant "default="
		--variant "no-kernels=--no-kernels"
	)
	[ $has_kernels_option = 1 ] && variants+=(--variant "mt-launch=--kernels launch")
	variants+=(--variant "peer=plain --memory-history")
	say "== $name (limit ${limit} s, from $(($(date +%s) - start)) s)"
	t0=$(date +%s)
	timeout -k 10 "$limit" python3 "$here/run.py" "$memtrace" --pin 2 --json "$OUT/$name.json" \
		"${variants[@]}" "$@" 2>&1 | tee -a "$log"
	say "== $name: rc ${PIPESTATUS[0]} in $(($(date +%s) - t0)) s"
}

# BERT-base bf16 training, 12 steps a turn (about 0.5 s)
lockstep bert 190 --only bert_train.py --cycles 20
# GPT-2 generation: 64 tokens a step, one step a turn, so that more, shorter
# turns fit (256-token turns swung 1.5-2.7 s in earlier runs)
lockstep generate 190 --only generate.py --script-args "--tokens 64" --cycles 20
# per operation (us per op): alloc+free, kernel launch, cudaGetDevice
lockstep ops 80 --only torch_ops.py --block 10 --cycles 16

for f in "$OUT"/launches-*; do
	[ -e "$f" ] && say "$(basename "$f"): $(tr -d '\n' <"$f")"
done
say "device-22: $(($(date +%s) - start)) s in all"
