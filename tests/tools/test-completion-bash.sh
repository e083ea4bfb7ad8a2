#!/usr/bin/env bash
# The bash completion written from --help (tools/help-to-completion) offers
# what the binary offers: completing 'memtrace rep' gives the commands
# memtrace --help lists that begin with 'rep', and 'memtrace replay --policy '
# and 'memtrace render --view ' give the names the binary itself accepts
# (read from its own error message for an unknown name). TAP output.
#
# Usage: test-completion-bash.sh COMPLETION_FILE (MEMTRACE: the binary)
set -u
completion=$1
memtrace=${MEMTRACE:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
failed=0

check() { # WHAT EXPECTED GOT
    n=$((n + 1))
    if [ "$2" = "$3" ]; then
        echo "ok $n - $1"
    else
        echo "not ok $n - $1"
        echo "#   expected: $2"
        echo "#   got:      $3"
        failed=1
    fi
}

complete_line() { # WORDS...: the completions of the last word, sorted
    COMP_WORDS=("$@")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _memtrace
    printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}

accepted() { # the names in "(valid: a, b, c)" or "(a, b, c)" of stderr
    sed -n "s/.*unknown [a-z]* 'no-such-name' (\(valid: \)\{0,1\}\([^)]*\)).*/\2/p" |
        tr -d ',' | tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' '
}

# shellcheck source=/dev/null
source "$completion"

built_rep=$("$memtrace" --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' |
    while read -r c; do
        case $c in rep*) "$memtrace" "$c" --help >/dev/null 2>&1 && echo "$c" ;; esac
    done | sort | tr '\n' ' ')
check "commands beginning with rep are built" "yes" "$([ -n "$built_rep" ] && echo yes)"
check "memtrace rep" "$built_rep" "$(complete_line memtrace rep)"

"$memtrace" synth --events 200 -o "$work/t.db" >/dev/null 2>&1
policies=$("$memtrace" replay "$work/t.db" --policy no-such-name --backend sim --no-save 2>&1 | accepted)
check "policies are read from the binary" "yes" "$([ -n "$policies" ] && echo yes)"
check "memtrace replay --policy " "$policies" "$(complete_line memtrace replay --policy '')"
check "memtrace replay --policy=" "$policies" "$(complete_line memtrace replay --policy = '')"
expected=$(for p in $policies; do case $p in b*) echo "caching,$p" ;; esac; done | sort | tr '\n' ' ')
check "memtrace replay --policy caching,b" "$expected" "$(complete_line memtrace replay --policy caching,b)"

if "$memtrace" render --help >/dev/null 2>&1; then
    views=$("$memtrace" render "$work/t.db" "$work/x.png" --view no-such-name 2>&1 | accepted)
    check "views are read from the binary" "yes" "$([ -n "$views" ] && echo yes)"
    check "memtrace render --view " "$views" "$(complete_line memtrace render --view '')"
fi

options=$("$memtrace" info --help | grep -o -- '^ \{1,6\}-[-a-z, ]*' | grep -o -- '-[-a-z]*' | sort | tr '\n' ' ')
check "memtrace info -" "$options" "$(complete_line memtrace info -)"

echo "1..$n"
exit $failed
