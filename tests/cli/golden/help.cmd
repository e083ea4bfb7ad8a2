"$MEMTRACE" --help
