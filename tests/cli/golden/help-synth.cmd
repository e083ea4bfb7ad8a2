"$MEMTRACE" help synth
