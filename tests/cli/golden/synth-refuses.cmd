# synth replaces or renames nothing but a trace: a folder or another file at
# the output is left as it was (status 1, one line); an absurd count is a
# usage error (status 2) before anything is written
mkdir results
echo "keep me" >results/notes.txt
"$MEMTRACE" synth --events 100 -o results; echo "exit $?"
echo "alloc,free" >data.csv
"$MEMTRACE" synth --events 100 -o data.csv; echo "exit $?"
"$MEMTRACE" synth --events 18446744073709551615 -o t.db; echo "exit $?"
"$MEMTRACE" synth --events 10000000001 -o t.db; echo "exit $?"
ls
cat results/notes.txt data.csv
