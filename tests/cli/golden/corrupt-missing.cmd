"$MEMTRACE" info nothing-here.db
