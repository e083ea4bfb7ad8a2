# report on each shipped sample trace (copied here so that the path printed
# is the same everywhere)
for t in gpt2-train resnet50-train bert-base-bf16-train gpt2-generate-as-is; do
    cp "$SRC/samples/traces/$t.db" .
    "$MEMTRACE" report "$t.db" || exit
    echo
done
