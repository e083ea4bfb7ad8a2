# The live allocations at the moment, grouped by call site (the default),
# by NVTX range or one by one, --top rows; paths shortened to the
# program's folder or the installed package. Bad --by and --top values are
# usage errors.
cp "$SRC/samples/traces/gpt2-train-stacks.db" .
"$MEMTRACE" report gpt2-train-stacks.db --top 5 | sed -n '/^Live at/,/^$/p'
"$MEMTRACE" report gpt2-train-stacks.db --top 5 --by range | sed -n '/^Live at/,/^$/p'
"$MEMTRACE" report gpt2-train-stacks.db --top 3 --by tensor | sed -n '/^Live at/,/^$/p'
"$MEMTRACE" report gpt2-train-stacks.db --top 2 | sed -n '/^NVTX ranges/,/^$/p'
"$MEMTRACE" report gpt2-train-stacks.db --json --top 4 | python3 -c '
import json, sys
d = json.load(sys.stdin)
g = d["groups"]
print("by", d["by"], "groups", len(g), "bytes descending", [x["bytes"] for x in g] == sorted((x["bytes"] for x in g), reverse=True))
print("top_at_peak", len(d["top_at_peak"]), "program_dir set", d["program_dir"] != "")'
"$MEMTRACE" report gpt2-train-stacks.db --by size; echo "exit $?"
"$MEMTRACE" report gpt2-train-stacks.db --top 0; echo "exit $?"
"$MEMTRACE" report gpt2-train-stacks.db --top many; echo "exit $?"
