#!/usr/bin/env bash
# memtrace render's argument handling: the view from the file name, bad
# extensions and folders refused in one line with the documented status,
# and SVG output that parses as XML with an <svg> root.
set -u
M=${MEMTRACE:?MEMTRACE is not set}
dir=$(mktemp -d /tmp/mt-render-cli-XXXXXX)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/../tap.sh"
# status STATUS CMD...: runs CMD, wants that exit status and, when it is
# not 0, exactly one line on stderr starting "memtrace render: "
status() {
    local want=$1
    shift
    "$@" >"$dir/out" 2>"$dir/err"
    local got=$?
    if [ "$got" != "$want" ]; then
        echo "status $got, wanted $want: $*" >&2
        cat "$dir/err" >&2
        return 1
    fi
    if [ "$want" != 0 ]; then
        [ "$(wc -l <"$dir/err")" = 1 ] && grep -q '^memtrace render: ' "$dir/err" \
            || { echo "not one error line: $(cat "$dir/err")" >&2; return 1; }
    fi
    return 0
}

"$M" synth --events 4000 --seed 3 -o "$dir/t.db" >/dev/null 2>&1 || { echo "synth failed" >&2; exit 1; }
mkdir "$dir/a" "$dir/b"

check "help" status 0 "$M" render --help
check "stem names the view" status 0 "$M" render "$dir/t.db" "$dir/a/segments.png"
check "explicit view" status 0 "$M" render "$dir/t.db" "$dir/b/x.png" --view segments
check "same picture" cmp -s "$dir/a/segments.png" "$dir/b/x.png"
check "timeline default" status 0 "$M" render "$dir/t.db" "$dir/b/other.png"
check "timeline differs from segments" bash -c "! cmp -s '$dir/b/other.png' '$dir/b/x.png'"
check "PNG signature" bash -c "head -c 8 '$dir/b/other.png' | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a'"
check "unknown extension" status 2 "$M" render "$dir/t.db" "$dir/a/out.jpg"
check "no extension" status 2 "$M" render "$dir/t.db" "$dir/a/out"
check "no file written for a bad extension" test ! -e "$dir/a/out.jpg"
check "missing folder" status 1 "$M" render "$dir/t.db" "$dir/nowhere/timeline.png"
chmod a-w "$dir/b"
if [ "$(id -u)" != 0 ]; then
    check "unwritable folder" status 1 "$M" render "$dir/t.db" "$dir/b/timeline.png"
fi
chmod u+w "$dir/b"
check "missing trace" status 1 "$M" render "$dir/missing.db" "$dir/a/timeline.png"
check "bad size" status 2 "$M" render "$dir/t.db" "$dir/a/t.png" --size 100x100
check "garbage size" status 2 "$M" render "$dir/t.db" "$dir/a/t.png" --size big
check "unknown view" status 2 "$M" render "$dir/t.db" "$dir/a/t.png" --view pie
check "help names every view" bash -c "for v in \$('$M' render --list-views); do '$M' render --help | grep -q \"^      \$v: \" || exit 1; done"
check "unknown policy" status 2 "$M" render "$dir/t.db" "$dir/a/t.png" --policy nosuch
check "bad time" status 2 "$M" render "$dir/t.db" "$dir/a/t.png" --at soon
check "empty window" status 2 "$M" render "$dir/t.db" "$dir/a/t.png" --from 2s --to 1s
check "window after the end" status 2 "$M" render "$dir/t.db" "$dir/a/t.png" --from 100s
check "size honoured" status 0 "$M" render "$dir/t.db" "$dir/a/small.png" --size 640x400
check "PNG of 640x400" bash -c "od -An -tx1 -j16 -N8 '$dir/a/small.png' | tr -d ' \n' | grep -qx '0000028000000190'"

# planned's replay within MEMTRACE_PLAN_BUDGET, else left out with a note
check "help names the plan budget" bash -c "'$M' render --help | grep -q MEMTRACE_PLAN_BUDGET"
check "plan budget not a size" status 2 env MEMTRACE_PLAN_BUDGET=lots \
    "$M" render "$dir/t.db" "$dir/a/p.png" --view policies --policy planned
check "plan budget of 0" status 2 env MEMTRACE_PLAN_BUDGET=0 \
    "$M" render "$dir/t.db" "$dir/a/p.png" --view policies --policy planned
check "planned within the default budget" status 0 \
    "$M" render "$dir/t.db" "$dir/a/planned.png" --view policies --policy caching,planned
check "no budget" status 0 env MEMTRACE_PLAN_BUDGET=none \
    "$M" render "$dir/t.db" "$dir/a/none.png" --view policies --policy caching,planned
check "the same picture as with no budget" cmp -s "$dir/a/planned.png" "$dir/a/none.png"
check "planned over the budget" status 0 env MEMTRACE_PLAN_BUDGET=1KiB \
    "$M" render "$dir/t.db" "$dir/a/left.png" --view policies --policy caching,planned
check "planned left out" bash -c "! cmp -s '$dir/a/left.png' '$dir/a/none.png'"
for view in policies timeline; do
    check "$view: only planned, left out" status 0 env MEMTRACE_PLAN_BUDGET=1KiB \
        "$M" render "$dir/t.db" "$dir/a/only-$view.png" --view $view --policy planned
done
check "segments: planned over the budget refused" status 1 env MEMTRACE_PLAN_BUDGET=1KiB \
    "$M" render "$dir/t.db" "$dir/a/seg-left.png" --view segments --policy planned
check "segments: says what it would need" grep -q "would need" "$dir/err"
check "segments: nothing written" test ! -e "$dir/a/seg-left.png"
check "segments: planned within the budget" status 0 \
    "$M" render "$dir/t.db" "$dir/a/seg-planned.png" --view segments --policy planned
# a saved replay of planned is drawn whatever the budget
cp "$dir/t.db" "$dir/saved.db"
check "planned saved" status 0 "$M" replay "$dir/saved.db" --policy planned,caching --backend sim
check "saved: no budget" status 0 env MEMTRACE_PLAN_BUDGET=none \
    "$M" render "$dir/saved.db" "$dir/a/saved-none.png" --view policies
check "saved: over the budget" status 0 env MEMTRACE_PLAN_BUDGET=1KiB \
    "$M" render "$dir/saved.db" "$dir/a/saved-left.png" --view policies
check "saved planned drawn" cmp -s "$dir/a/saved-none.png" "$dir/a/saved-left.png"

views=$("$M" render --list-views)
check "views listed" test -n "$views"
# whether a view writes an extension (render checks that before reading)
writes() { ! "$M" render "$dir/missing.db" "$dir/probe.$2" --view "$1" 2>&1 | grep -q "view cannot write"; }
vector_views=
for view in $views; do
    writes "$view" svg && writes "$view" pdf && vector_views="$vector_views $view"
done
check "some views draw vector pictures" test -n "$vector_views"
views=$vector_views
for view in $views; do
    # two policies keep the sanitizer build quick; the reference test draws
    # saved replays, and timeline/segments draw the recorded allocator
    extra=()
    [ "$view" = policies ] && extra=(--policy bestfit,buddy)
    check "$view svg" status 0 "$M" render "$dir/t.db" "$dir/a/$view.svg" "${extra[@]}"
    check "$view pdf" status 0 "$M" render "$dir/t.db" "$dir/a/$view.pdf" "${extra[@]}"
    check "$view pdf header" bash -c "head -c 5 '$dir/a/$view.pdf' | grep -q '%PDF-'"
    check "$view pdf end" bash -c "tail -c 64 '$dir/a/$view.pdf' | grep -q '%%EOF'"
done
if command -v python3 >/dev/null; then
    check "svg parses with an <svg> root" python3 - "$dir/a" $views <<'PY'
import sys, xml.etree.ElementTree as ET
for view in sys.argv[2:]:
    root = ET.parse(f"{sys.argv[1]}/{view}.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg", (view, root.tag)
    assert root.get("width") == "1600pt" and root.get("height") == "900pt", (view, root.attrib)
    # something was drawn: text (glyph uses) and shapes or an embedded image
    # (outside <defs>, which holds the glyph outlines)
    body = [e.tag.split("}")[1] for c in root if not c.tag.endswith("defs") for e in c.iter()]
    assert "use" in body and ("path" in body or "image" in body), (view, body[:20])
PY
fi
tap_done
