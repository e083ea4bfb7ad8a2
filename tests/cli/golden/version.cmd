"$MEMTRACE" --version
