#!/usr/bin/env bash
# The zsh completion written from --help (tools/help-to-completion) offers
# what the binary offers, as the bash test checks: 'memtrace rep' gives the
# commands beginning with rep, 'memtrace replay --policy ' the policies the
# binary accepts. zsh runs interactively in a pseudo-terminal (zpty) and
# reports what its completion adds. Skips (TAP plan 1..0) without zsh.
#
# Usage: test-completion-zsh.sh COMPLETION_FILE (MEMTRACE: the binary)
set -u
completion=$1
memtrace=${MEMTRACE:?}
command -v zsh >/dev/null || { echo "1..0 # SKIP zsh is not installed"; exit 0; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/fpath"
cp "$completion" "$work/fpath/_memtrace"
mkdir "$work/bin"
ln -s "$(cd "$(dirname "$memtrace")" && pwd)/$(basename "$memtrace")" "$work/bin/memtrace"
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

complete_line() {
    : >"$work/added"
    # shellcheck disable=SC2016 # the script is zsh's, expanded by zsh
    PATH="$work/bin:$PATH" timeout 30 zsh -f -c '
        zmodload zsh/zpty
        zpty z zsh -f -i
        zpty -w z "fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -d $2.dump; PS1="
        zpty -w z "compadd() { if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then builtin compadd \"\$@\"; return; fi; local -a h; builtin compadd -A h \"\$@\"; print -l -- \$h >> $2; builtin compadd \"\$@\"; }"
        zpty -w z "print -- ready-\$((6 * 7))"
        zpty -r z out "*ready-42*"
        zpty -w -n z "$3"$'"'"'\t\025'"'"'
        zpty -w z "print -- done-\$((6 * 7))"
        zpty -r z out "*done-42*"
        zpty -d z' zsh "$work/fpath" "$work/added" "$1" >/dev/null 2>&1
    sort -u "$work/added" | tr '\n' ' '
}

accepted() { # the names in "(valid: a, b, c)" or "(a, b, c)" of stderr
    sed -n "s/.*unknown [a-z]* 'no-such-name' (\(valid: \)\{0,1\}\([^)]*\)).*/\2/p" |
        tr -d ',' | tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' '
}

built_rep=$("$memtrace" --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' |
    while read -r c; do
        case $c in rep*) "$memtrace" "$c" --help >/dev/null 2>&1 && echo "$c" ;; esac
    done | sort | tr '\n' ' ')
check "commands beginning with rep are built" "yes" "$([ -n "$built_rep" ] && echo yes)"
check "memtrace rep" "$built_rep" "$(complete_line 'memtrace rep')"

"$memtrace" synth --events 200 -o "$work/t.db" >/dev/null 2>&1
policies=$("$memtrace" replay "$work/t.db" --policy no-such-name --backend sim --no-save 2>&1 | accepted)
check "policies are read from the binary" "yes" "$([ -n "$policies" ] && echo yes)"
check "memtrace replay --policy " "$policies" "$(complete_line 'memtrace replay --policy ')"

if "$memtrace" render --help >/dev/null 2>&1; then
    views=$("$memtrace" render "$work/t.db" "$work/x.png" --view no-such-name 2>&1 | accepted)
    check "memtrace render --view " "$views" "$(complete_line 'memtrace render --view ')"
fi

echo "1..$n"
exit $failed
