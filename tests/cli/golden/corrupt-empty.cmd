: > empty.db
"$MEMTRACE" info empty.db
