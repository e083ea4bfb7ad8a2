# a writer SIGKILLed after 3 flushed rounds of 500 allocs (and 500 frees of
# the round before): every committed chunk is read, the unflushed 500
# allocs are lost, the peak is 2 x 500 x 64 KiB = 62.5 MiB; the trace is
# incomplete, complete up to the last flush
sh -c '"$KILL_WRITER" k.db 3 500; echo "writer: $(kill -l $(( $? - 128 )))" >status' 2>/dev/null
cat status
ls | grep -c k.db-wal
"$MEMTRACE" info k.db | grep -E '^(command line|capture|state|peak live|  (alloc|free|total) )' | sed -E '/^  [a-z_]+ /s/^(.{36}).*/\1/'
"$MEMTRACE" report k.db | sed -n 1,2p
