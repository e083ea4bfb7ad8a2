# report --json on a requests capture and an as-is capture
for t in gpt2-train gpt2-generate-as-is; do
    cp "$SRC/samples/traces/$t.db" .
    "$MEMTRACE" report --json "$t.db" || exit
done
