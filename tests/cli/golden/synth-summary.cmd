"$MEMTRACE" synth --events 1000 --seed 2 -o s.db | sed -E 's/, [0-9.]+ [KMG]?i?B compressed$/, (size) compressed/'
