#!/usr/bin/env bash
# Every view renders every sample trace (samples/traces/*.db) as PNG, SVG
# and PDF. Skips (77) when this build's reader cannot read a sample at all
# (that is the trace format's business, reported by `memtrace info`).
set -u
M=${MEMTRACE:?MEMTRACE is not set}
root=${MT_SOURCE_ROOT:?MT_SOURCE_ROOT is not set}
dir=$(mktemp -d /tmp/mt-render-samples-XXXXXX)
trap 'rm -rf "$dir"' EXIT
shopt -s nullglob
traces=("$root"/samples/traces/*.db)
if [ ${#traces[@]} = 0 ]; then
    echo "no sample traces" >&2
    exit 77
fi
for t in "${traces[@]}"; do
    if ! "$M" info "$t" >/dev/null 2>"$dir/err"; then
        echo "skip: $(cat "$dir/err")" >&2
        exit 77
    fi
done
views=$("$M" render --list-views) || { echo "render --list-views failed" >&2; exit 1; }
. "$(dirname "$0")/../tap.sh"
# draw TRACE OUT VIEW ARGS...: the view drawn, into a file not empty
draw() {
    local t=$1 out=$2 view=$3
    shift 3
    "$M" render "$t" "$out" --view "$view" "$@" 2>"$dir/err" && [ -s "$out" ] \
        || { cat "$dir/err" >&2; return 1; }
}
for t in "${traces[@]}"; do
    b=$(basename "$t" .db)
    for view in $views; do
        # three policies keep it short; the policies view draws them all alike
        extra=()
        [ "$view" = policies ] && extra=(--policy caching,expandable,bestfit)
        for ext in png svg pdf; do
            # a view that does not write this extension says so before reading
            if "$M" render "$dir/missing.db" "$dir/probe.$ext" --view "$view" 2>&1 \
                | grep -q "view cannot write"; then
                continue
            fi
            check "$b $view $ext" draw "$t" "$dir/$b-$view.$ext" "$view" "${extra[@]}"
        done
    done
done
tap_done
