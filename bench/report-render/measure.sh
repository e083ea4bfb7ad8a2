# measure NAME CMD...: runs CMD under GNU time and prints one line with its
# peak RSS (MiB), wall and CPU seconds, and the load average as it ended.
# Sourced by the scripts here; $dir is their temporary directory.
measure() {
	local name=$1
	shift
	/usr/bin/time -v -o "$dir/time" "$@" >/dev/null 2>"$dir/err" ||
		{ echo "$name failed: $(tail -1 "$dir/err")" >&2; return 1; }
	awk -v name="$name" -v load="$(cut -d' ' -f1 /proc/loadavg)" '
		/Maximum resident set size/ { rss = $NF }
		/User time|System time/ { cpu += $NF }
		/Elapsed \(wall clock\)/ {
			n = split($NF, p, ":"); s = 0
			for (i = 1; i <= n; i++) s = s * 60 + p[i]
			wall = s
		}
		END { printf "%-34s %9.1f MiB %8.2f s %8.2f s cpu  load %s\n",
		      name, rss / 1024, wall, cpu, load }
	' "$dir/time"
}
