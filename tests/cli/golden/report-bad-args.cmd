# bad input: one line on stderr, exit 1 (runtime) or 2 (usage)
"$MEMTRACE" report missing.db; echo "exit $?"
head -c 5000 /dev/urandom >garbage.db; "$MEMTRACE" report garbage.db 2>&1 >/dev/null | sed 's/(.*)/(why)/' >&2; echo "exit $?"
cp "$SRC/samples/traces/gpt2-train.db" .
"$MEMTRACE" report gpt2-train.db --at soon; echo "exit $?"
"$MEMTRACE" report gpt2-train.db --at -1s; echo "exit $?"
"$MEMTRACE" report gpt2-train.db --at 1h; echo "exit $?"
"$MEMTRACE" report gpt2-train.db --at 999s; echo "exit $?"
"$MEMTRACE" report gpt2-train.db --at; echo "exit $?"
"$MEMTRACE" report --bogus gpt2-train.db; echo "exit $?"
"$MEMTRACE" report gpt2-train.db other.db; echo "exit $?"
"$MEMTRACE" synth --events 0 -o empty.db >/dev/null
"$MEMTRACE" report empty.db; echo "exit $?"
