#!/bin/sh
# The README's four pictures, drawn by memtrace from the GPT-2 training
# sample (recorded on an H100 with the PyTorch allocator hook).
# Usage, from the repository root:
#   docs/images/render.sh [MEMTRACE [TRACE]]
# (defaults: build/cli/memtrace, samples/traces/gpt2-train.db)
set -eu
m=${1:-build/cli/memtrace}
trace=${2:-samples/traces/gpt2-train.db}
out=$(dirname "$0")
# the training steps end before 3 s; the rest of the trace is the program's exit
"$m" render "$trace" "$out/timeline.png" --to 3.2s
"$m" render "$trace" "$out/segments.png" --policy caching,expandable
"$m" render "$trace" "$out/policies.png" --to 3.2s
"$m" render "$trace" "$out/anatomy.png" --size 1600x480
