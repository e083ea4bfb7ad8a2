"$MEMTRACE" synth --help
