"$MEMTRACE" report --help
"$MEMTRACE" help report | cmp - <("$MEMTRACE" report -h) && echo same
