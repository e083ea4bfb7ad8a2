# info on a small synthetic training trace. The compressed sizes depend on
# the codec, so the file size line and the table's size columns are cut.
"$MEMTRACE" synth --pattern train --events 2000 --seed 7 -o t.db >/dev/null
"$MEMTRACE" info t.db | sed -E 's/^(file size +).*/\1(codec-dependent)/' | sed -E '/^  [a-z_]+ /s/^(.{36}).*/\1/'
