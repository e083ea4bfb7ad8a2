# short and long spellings, options after the output, the summary line
"$MEMTRACE" synth -p small -n 50 -s 3 -o a.db | sed -E 's/, [0-9.]+ [KMG]?i?B compressed$/, (size) compressed/'
"$MEMTRACE" synth --output=b.db --seed=3 --events=50 --pattern=small | sed -E 's/, [0-9.]+ [KMG]?i?B compressed$/, (size) compressed/'
"$MEMTRACE" info --json a.db | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["command_line"], o["total_events"])'
