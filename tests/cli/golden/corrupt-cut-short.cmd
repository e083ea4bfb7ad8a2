# a trace cut to half its size (a copy that did not finish)
"$MEMTRACE" synth --events 20000 --seed 1 -o t.db >/dev/null
size=$(stat -c %s t.db)
head -c $((size / 2)) t.db > cut.db
"$MEMTRACE" info cut.db
