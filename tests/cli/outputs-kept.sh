#!/bin/sh
# Nothing a user had is replaced or renamed but a memtrace trace a command
# was asked to write, and that one is kept as FILE.N (issue 16 item 5).
M="$1"
case "$M" in /*) ;; *) M="$PWD/$M" ;; esac # meson passes it relative
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
n=0
check() { # description, then a shell condition
	n=$((n + 1))
	if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
readable() { "$M" info "$1" >/dev/null 2>&1; }

mkdir folder && echo mine >folder/file
"$M" synth -n 100 -o folder >/dev/null 2>err
rc=$?
check "synth -o FOLDER exits 1 with one line" '[ $rc -eq 1 ] && [ $(wc -l <err) -eq 1 ]'
check "the folder and its file are untouched" '[ "$(cat folder/file)" = mine ] && ! ls -d folder.* 2>/dev/null'

echo notes >notes.txt
"$M" synth -n 100 -o notes.txt >/dev/null 2>&1
rc=$?
check "synth -o a plain file refuses and leaves it" '[ $rc -eq 1 ] && [ "$(cat notes.txt)" = notes ]'

for seed in 1 2 3; do "$M" synth -n 100 --seed $seed -o t.mt >/dev/null 2>&1; done
check "a third synth keeps both earlier traces readable" \
	'readable t.mt && readable t.mt.1 && readable t.mt.2'
check "each generation is a different trace" \
	'[ "$("$M" info t.mt.1 | md5sum)" != "$("$M" info t.mt.2 | md5sum)" ]'

cp t.mt.1 trace-named.png
"$M" render t.mt trace-named.png >/dev/null 2>&1
check "render over a trace keeps it as FILE.1" 'readable trace-named.png.1'
echo old >plain.png
"$M" render t.mt plain.png >/dev/null 2>&1
check "render replaces a plain picture" '[ "$(head -c 4 plain.png | tail -c 3)" = PNG ] && ! ls plain.png.* 2>/dev/null'
mkdir pic.png
"$M" render t.mt pic.png >/dev/null 2>err
rc=$?
check "render to a folder exits 1 with one line" '[ $rc -eq 1 ] && [ $(wc -l <err) -eq 1 ] && [ -d pic.png ]'

"$M" synth -n 18446744073709551615 -o huge.mt >/dev/null 2>err
rc=$?
check "synth -n 2^64-1 is a usage error in one line" '[ $rc -eq 2 ] && [ $(wc -l <err) -eq 1 ] && [ ! -e huge.mt ]'
"$M" replay t.mt --no-save --limit 99999999999TiB >/dev/null 2>err
rc=$?
check "a --limit beyond 2^64 bytes is a usage error in one line" '[ $rc -eq 2 ] && [ $(wc -l <err) -eq 1 ]'
echo "1..$n"
