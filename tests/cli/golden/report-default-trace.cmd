# without a TRACE argument report reads memtrace.db; first where there is none
"$MEMTRACE" report
echo "exit $?"
cp "$SRC/samples/traces/gpt2-generate-as-is.db" memtrace.db
"$MEMTRACE" report | head -3
