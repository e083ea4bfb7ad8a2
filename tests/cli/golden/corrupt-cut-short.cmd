# a trace cut to half its size (a copy that did not finish); the sizes in
# the message depend on the codec, so they are masked
"$MEMTRACE" synth --events 20000 --seed 1 -o t.db >/dev/null
size=$(stat -c %s t.db)
head -c $((size / 2)) t.db > cut.db
"$MEMTRACE" info cut.db 2>err
status=$?
sed -E 's/[0-9]+ of [0-9]+ bytes/N of 2N bytes/' err >&2
exit $status
