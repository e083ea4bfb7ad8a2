#!/usr/bin/env bash
# Runs one golden case of the memtrace command: tests/cli/golden/NAME.cmd is
# a shell snippet run (bash -o pipefail) in a fresh empty folder with
# $MEMTRACE (the binary), $SRC (the source root), $KILL_WRITER (the
# SIGKILL writer helper) and $WRITE_TRACE (the analyze tests' hand-written
# traces: write-trace NAME PATH) set. Its stdout must equal NAME.stdout and its exit
# status NAME.exit; its stderr must equal NAME.stderr, or be empty when
# there is no such file. MT_GOLDEN_UPDATE=1 writes what it got into the
# golden files instead (then read them before committing).
set -u
name=$1
: "${MEMTRACE:?MEMTRACE must name the memtrace binary}"
: "${MT_SOURCE_ROOT:?MT_SOURCE_ROOT must name the source root}"
export SRC=$MT_SOURCE_ROOT
golden=$SRC/tests/cli/golden/$name
[ -f "$golden.cmd" ] || { echo "no case $golden.cmd"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/work"
(cd "$tmp/work" && exec bash -o pipefail "$golden.cmd") >"$tmp/stdout" 2>"$tmp/stderr"
echo $? >"$tmp/exit"

if [ "${MT_GOLDEN_UPDATE:-0}" = 1 ]; then
    cp "$tmp/stdout" "$golden.stdout"
    cp "$tmp/exit" "$golden.exit"
    if [ -s "$tmp/stderr" ]; then cp "$tmp/stderr" "$golden.stderr"; else rm -f "$golden.stderr"; fi
    echo "updated $golden.*"
    exit 0
fi

fail=0
diff -u "$golden.exit" "$tmp/exit" || { echo "exit status differs"; fail=1; }
diff -u "$golden.stdout" "$tmp/stdout" || { echo "stdout differs"; fail=1; }
if [ -f "$golden.stderr" ]; then
    diff -u "$golden.stderr" "$tmp/stderr" || { echo "stderr differs"; fail=1; }
elif [ -s "$tmp/stderr" ]; then
    echo "unexpected stderr:"; cat "$tmp/stderr"; fail=1
fi
exit $fail
