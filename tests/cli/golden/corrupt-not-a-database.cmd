printf 'alloc 0x7f0000000000 4096\nfree 0x7f0000000000\n' > notes.db
"$MEMTRACE" info notes.db
