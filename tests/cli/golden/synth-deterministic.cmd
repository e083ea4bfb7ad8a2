# the same seed writes the same file byte for byte; another seed does not
mkdir a b c
(cd a && "$MEMTRACE" synth --events 3000 --seed 11 -o t.db >/dev/null)
(cd b && "$MEMTRACE" synth --events 3000 --seed 11 -o t.db >/dev/null)
(cd c && "$MEMTRACE" synth --events 3000 --seed 12 -o t.db >/dev/null)
cmp -s a/t.db b/t.db && echo "seed 11 twice: same bytes"
cmp -s a/t.db c/t.db || echo "seed 11 and 12: different"
