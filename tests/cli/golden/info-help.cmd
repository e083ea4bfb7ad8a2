"$MEMTRACE" info --help
