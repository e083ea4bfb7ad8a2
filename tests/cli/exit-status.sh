#!/bin/sh
# Every command the top-level help lists exits 2 on an unknown option and
# 1 when its input (or the folder of its output) does not exist (issue 16
# item 5: 2 only for usage errors, 1 for failures). record is the one
# exception, as documented in its help: its status is the program's, and a
# program that cannot be started gives 127, as env(1) and sh do. A command
# added to the registry without a failure case below fails this test.
M="$1"
case "$M" in /*) ;; *) M="$PWD/$M" ;; esac # meson passes it relative
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
"$M" synth -o good.mt -n 200 >/dev/null 2>&1 || { echo "synth failed"; exit 1; }

missing_case() {
	case "$1" in
	record) echo "127 record -o x.mt -- $dir/no-such-program" ;;
	replay|report|info) echo "1 $1 missing.mt" ;;
	render) echo "1 render missing.mt out.png" ;;
	compare) echo "1 compare missing.mt good.mt" ;;
	export) echo "1 export missing.mt -f csv -o out.csv" ;;
	import) echo "1 import missing.json -o imported.mt" ;;
	synth) echo "1 synth -n 10 -o $dir/none/x.mt" ;;
	predict) echo "1 predict missing.mt@1 good.mt@2 --to 4" ;;
	*) return 1 ;;
	esac
}

commands=$("$M" --help | awk '/^Commands:/ { f = 1; next }
	f && /^  [a-z]/ { print $1 } f && /^$/ { exit }')
[ -n "$commands" ] || { echo "no commands in memtrace --help"; exit 1; }
n=0
fail=0
for c in $commands; do
	if "$M" "$c" --help 2>&1 | grep -q "not built"; then # record without CUPTI
		echo "ok $((n + 1)) - # SKIP $c: not in this build"
		echo "ok $((n + 2)) - # SKIP $c: not in this build"
		n=$((n + 2))
		continue
	fi
	n=$((n + 1))
	"$M" "$c" --no-such-option >/dev/null 2>err
	rc=$?
	lines=$(wc -l <err)
	if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ]; then
		echo "not ok $n - $c --no-such-option: exit $rc, $lines lines on stderr (want 2, 1)"
		fail=1
	else
		echo "ok $n - $c --no-such-option exits 2"
	fi
	n=$((n + 1))
	if ! args=$(missing_case "$c"); then
		echo "not ok $n - $c: no missing-file case in exit-status.sh"
		fail=1
		continue
	fi
	# shellcheck disable=SC2086
	want=${args%% *}
	args=${args#* }
	"$M" $args >/dev/null 2>err
	rc=$?
	lines=$(wc -l <err)
	if [ "$rc" -ne "$want" ] || [ "$lines" -ne 1 ]; then
		echo "not ok $n - $args: exit $rc, $lines lines on stderr (want $want, 1)"
		sed 's/^/# /' err
		fail=1
	else
		echo "ok $n - $args exits $want"
	fi
done
echo "1..$n"
exit $fail
