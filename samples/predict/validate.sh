#!/bin/bash
# memtrace predict's validation set, on one GPU (made for an 80 GB H100):
#   samples/predict/validate.sh MEMTRACE OUTDIR
# For each sized program of samples/torch/ (GPT-2 small training with N =
# batch size; BERT-base training with gradient checkpointing and N =
# sequence length / 32; GPT-2 large generation with N = batch size):
#  - records traces at N = 1, 2, 4 with `memtrace record --stacks python`,
#    each with the sidecar of PyTorch's own figures from the same run;
#  - measures PyTorch's requested_bytes.all.peak and max_memory_reserved()
#    at each N of the table 1..120 (30 x the largest input) that fits, and
#    finds the largest N that fits by doubling and bisection, every trial in
#    a fresh process (sized.py).
# Then records the data-dependent branch program (sized_branch.py) at
# N = 1, 2, 4, which predict must refuse. Everything (small traces,
# sidecars, truth/*.json, truth.json, log.txt) goes into
# OUTDIR/predict-validation.tar.gz. Progress lines carry the seconds since
# the start. Planned to end within 9 minutes: the truth searches share the
# time left after the recordings, and the branch program is recorded only
# when a minute is left.
set -u
MEMTRACE=$(realpath "${1:?memtrace binary}")
OUTDIR=${2:?output folder}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
TORCH=$HERE/samples/torch
WORK=$OUTDIR/predict-validation
DEADLINE=${VALIDATE_SECONDS:-510}
mkdir -p "$WORK/traces" "$WORK/truth" || exit 1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
START=$(date +%s)
elapsed() { echo $(($(date +%s) - START)); }
log() { echo "[$(elapsed) s] $*" | tee -a "$WORK/log.txt"; }

PROGRAMS="gpt2-train:sized_gpt2_train.py bert-ckpt:sized_bert_ckpt.py generate:sized_generate.py"

record() { # name script n
	local out=$WORK/traces/$1-n$3
	"$MEMTRACE" record -o "$out.db" --stacks python -- \
		python3 "$TORCH/$2" --size "$3" --json "$out.json" >>"$WORK/log.txt" 2>&1
	log "recorded $1 at N=$3: exit $?, $(du -k "$out.db" 2>/dev/null | cut -f1) KiB"
}

log "validate.sh on $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null)"
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' 2>&1 |
	tee -a "$WORK/log.txt"
"$MEMTRACE" --version | tee -a "$WORK/log.txt"

for p in $PROGRAMS; do
	for n in 1 2 4; do
		record "${p%%:*}" "${p#*:}" "$n"
	done
done

left=3
for p in $PROGRAMS; do
	budget=$(((DEADLINE - 75 - $(elapsed)) / left))
	left=$((left - 1))
	log "truth for ${p%%:*}: budget $budget s"
	python3 "$TORCH/${p#*:}" --truth "$WORK/truth/${p%%:*}.json" --budget "$budget" 2>&1 |
		tee -a "$WORK/log.txt"
done

if [ $((DEADLINE - $(elapsed))) -ge 60 ]; then
	for n in 1 2 4; do
		record branch sized_branch.py "$n"
	done
else
	log "branch program not recorded: $((DEADLINE - $(elapsed))) s left"
fi

python3 - "$WORK" <<'PY' 2>&1 | tee -a "$WORK/log.txt"
import glob, json, os, sys
work = sys.argv[1]
table = {}
for path in sorted(glob.glob(os.path.join(work, "truth", "*.json"))):
    with open(path) as f:
        t = json.load(f)
    name = os.path.basename(path)[:-5]
    table[name] = {
        "script": t["script"],
        "max_fit": t["max_fit"],
        "first_fail": t["first_fail"],
        "search_complete": t["search_complete"],
        "points": [{k: p.get(k) for k in ("size", "fits", "oom", "torch_requested_bytes_peak",
                                          "torch_max_memory_reserved_native", "device_total_bytes",
                                          "device_free_bytes", "error")}
                   for p in sorted(t["points"], key=lambda p: p["size"])],
    }
    print("%s: largest N %s%s, %d points" % (name, t["max_fit"],
          "" if t["search_complete"] else " (incomplete)", len(t["points"])))
with open(os.path.join(work, "truth.json"), "w") as f:
    json.dump(table, f, indent=1)
    f.write("\n")
PY
tar czf "$OUTDIR/predict-validation.tar.gz" -C "$OUTDIR" predict-validation &&
	log "wrote $OUTDIR/predict-validation.tar.gz ($(du -k "$OUTDIR/predict-validation.tar.gz" | cut -f1) KiB)"
