#!/bin/bash
# The GPU side of memtrace's PyTorch snapshot interop, run once on a GPU
# machine with PyTorch, transformers and torchvision:
#
#   samples/snapshots/record.sh MEMTRACE OUTDIR
#
# MEMTRACE is a built memtrace binary. Everything goes into OUTDIR/work and
# ends in one tarball, OUTDIR/interop-gpu.tar.gz:
#  1. snapshots of real models (samples/torch/snapshot.py), each with its
#     sidecar of PyTorch's own figures: complete histories of gpt2, bert,
#     resnet50 and t5; an OOM run; history switched on mid-run; a ring
#     buffer (max_entries) that wraps; one written with pickle protocol 5;
#     one under expandable segments;
#  2. each imported (memtrace import), with memtrace info --json and a
#     simulated replay --policy caching --json beside it;
#  3. snapshots exported by memtrace from the sample traces
#     (samples/traces/*.db) and from the imports above, checked with
#     PyTorch's own tools (samples/torch/check_memory_viz.py: pickle.load,
#     torch.cuda._memory_viz trace_plot and segment_plot, the peak in the
#     pages' embedded data);
#  4. a caching replay's segments of a sample trace through segment_plot;
#  5. summary.txt: one line per check.
set -u
MEMTRACE=$(realpath "${1:?memtrace binary}")
OUT=$(realpath -m "${2:?output folder}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$OUT/work
mkdir -p "$W"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec > >(tee "$W/log.txt") 2>&1
date -u +"start %Y-%m-%dT%H:%M:%SZ"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__)'
"$MEMTRACE" --version

snap() { # name [env VAR=VALUE...] -- snapshot.py args...
	local name=$1 envs=()
	shift
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" python3 "$ROOT/samples/torch/snapshot.py" \
		-o "$W/$name.pickle" --json "$W/$name.json" "$@"
	echo "$name: snapshot exit $?"
}

snap gpt2 -- --model gpt2 --steps 2 --batch 4
snap bert -- --model bert --steps 2 --batch 8
snap resnet50 -- --model resnet50 --steps 2 --batch 16
snap t5 -- --model t5 --steps 2 --batch 8
snap oom -- --model oom
snap gpt2-midrun -- --model gpt2 --mode midrun --steps 2 --batch 4
snap gpt2-wrap -- --model gpt2 --mode wrap --steps 3 --batch 4 --max-entries 3000
snap gpt2-protocol5 -- --model gpt2 --steps 2 --batch 4 --protocol 5
snap resnet50-expandable PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- \
	--model resnet50 --steps 2 --batch 16

summary=$W/summary.txt
: >"$summary"
for pk in "$W"/*.pickle; do
	name=$(basename "$pk" .pickle)
	start=$(date +%s%N)
	"$MEMTRACE" import "$pk" -o "$W/$name.db" --json >"$W/$name.import.json"
	echo "$name: import exit $? in $((($(date +%s%N) - start) / 1000000)) ms" | tee -a "$summary"
	"$MEMTRACE" info "$W/$name.db" --json >"$W/$name.info.json"
	"$MEMTRACE" replay "$W/$name.db" --policy caching --backend sim --json --no-save \
		>"$W/$name.replay.json"
	python3 - "$W/$name" >>"$summary" <<'PY'
import json, sys
base = sys.argv[1]
side = json.load(open(base + ".json"))
info = json.load(open(base + ".info.json"))
rep = json.load(open(base + ".replay.json"))
rep = rep[0] if isinstance(rep, list) else rep
peak = max(d.get("peak_live_bytes") or 0 for d in info["devices"])
res = rep.get("peak_reserved") or 0
want = side["torch_max_memory_reserved"]
print(f"{base.rsplit('/', 1)[-1]}: mode {side['mode']} entries {side['entries']}: "
      f"peak live {peak} vs requested_bytes.all.peak {side['torch_requested_bytes_peak']} "
      f"({'equal' if peak == side['torch_requested_bytes_peak'] else 'DIFFERENT'}); "
      f"caching replay reserved {res} vs max_memory_reserved {want} "
      f"({(res / want - 1) * 100 if want else float('nan'):+.3f} %)")
PY
done

# memtrace's own snapshots through PyTorch's tools
for db in "$ROOT"/samples/traces/*.db "$W"/gpt2.db "$W"/gpt2-midrun.db; do
	name=export-$(basename "$db" .db)
	"$MEMTRACE" export "$db" -o "$W/$name.pickle"
	peak=$("$MEMTRACE" info "$db" --json | python3 -c \
		'import json,sys; d=json.load(sys.stdin)["devices"]; print(max(x.get("peak_live_bytes") or 0 for x in d))')
	python3 "$ROOT/samples/torch/check_memory_viz.py" "$W/$name.pickle" --peak "$peak" \
		--out "$W" >"$W/$name.check.json"
	echo "$name: check_memory_viz exit $? $(cat "$W/$name.check.json")" >>"$summary"
	"$MEMTRACE" import "$W/$name.pickle" -o "$W/$name.db" >/dev/null
	echo "$name: memtrace re-import exit $?" >>"$summary"
	rm -f "$W"/"$name".*.html # the pages embed the whole snapshot; the check keeps their figures
done

# a replayed policy's segments, as memory_viz's segment_plot draws them
"$MEMTRACE" export "$ROOT/samples/traces/gpt2-train.db" -o "$W/policy-caching.pickle" --policy caching
python3 -m torch.cuda._memory_viz segment_plot "$W/policy-caching.pickle" -o "$W/policy-caching.html"
echo "policy-caching: segment_plot exit $? $(wc -c <"$W/policy-caching.html") bytes" >>"$summary"
rm -f "$W/policy-caching.html"

cat "$summary"
date -u +"end %Y-%m-%dT%H:%M:%SZ"
tar czf "$OUT/interop-gpu.tar.gz" -C "$W" --exclude='export-*.pickle' --exclude='export-*.db' .
echo "wrote $OUT/interop-gpu.tar.gz"
