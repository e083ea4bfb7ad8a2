# a trace that cannot be created is one line and status 1
"$MEMTRACE" synth --events 10 -o missing-dir/t.db
