# Issue 6's bars on the shipped recordings. GPT-2 training recorded with
# Python call sites and NVTX phases: at the peak, at least 90% of the live
# bytes have a call site or a range, and the largest tensors are named by
# the model's or the script's own lines (not PyTorch's), each in a phase.
# Linear(10, 10) moved to the GPU: the CUDA context and libraries are nearly
# all of the process's device memory.
cp "$SRC/samples/traces/gpt2-train-stacks.db" "$SRC/samples/traces/linear-small.db" .
"$MEMTRACE" report gpt2-train-stacks.db --json | python3 -c '
import json, sys
o = json.load(sys.stdin)
top = o["top_at_peak"]
own = [t for t in top if t["site"] and "/site-packages/torch/" not in t["site"]]
print("attributed_fraction >= 0.9:", o["attributed_fraction"] >= 0.9)
print("top at peak:", len(top), "named outside torch:", len(own), "in a phase:",
      sum(1 for t in top if t["range"] in ("forward", "backward", "optimizer")))
for t in top[:6]:
    print("  %4d MiB  %-10s %s" % (t["bytes"] >> 20, t["range"] or "-", t["site"].split("/")[-1]))'
"$MEMTRACE" report linear-small.db --json | python3 -c '
import json, sys
a = json.load(sys.stdin)["anatomy"]
ctx, proc = a["parts"]["cuda_context_and_libraries"], a["process_bytes"]
print("live tensors:", a["parts"]["live_allocations"], "B")
print("context and libraries: %d MiB of this process'"'"'s %d MiB (%.1f%%)" % (ctx >> 20, proc >> 20, 100.0 * ctx / proc))
print("nearly all (>= 95%):", ctx >= 0.95 * proc)'
