"$MEMTRACE" info a.db b.db; echo "exit $?"
"$MEMTRACE" info --bogus; echo "exit $?"
"$MEMTRACE" info -x t.db; echo "exit $?"
"$MEMTRACE" info --json=yes t.db; echo "exit $?"
