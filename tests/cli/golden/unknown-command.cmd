"$MEMTRACE" frobnicate --json
