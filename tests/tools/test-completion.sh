#!/usr/bin/env bash
# The bash or zsh completion written from --help (tools/help-to-completion)
# offers what the binary offers: completing 'memtrace rep' gives the
# commands memtrace --help lists that begin with 'rep', and
# 'memtrace replay --policy ' and 'memtrace render --view ' give the names
# the binary itself accepts (read from its own error for an unknown name).
# bash: the completion function is called with COMP_WORDS set. zsh: an
# interactive zsh in a pseudo-terminal (zpty) completes the line and
# reports what its completion adds; skipped (TAP plan 1..0) without zsh.
# TAP output.
#
# Usage: test-completion.sh bash|zsh COMPLETION_FILE (MEMTRACE: the binary)
set -u
shell=$1
completion=$2
memtrace=${MEMTRACE:?}
if [ "$shell" = zsh ] && ! command -v zsh >/dev/null; then
    echo "1..0 # SKIP zsh is not installed"
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
failed=0

check() { # WHAT EXPECTED GOT
    n=$((n + 1))
    if [ "$2" = "$3" ]; then
        echo "ok $n - $shell: $1"
    else
        echo "not ok $n - $shell: $1"
        echo "#   expected: $2"
        echo "#   got:      $3"
        failed=1
    fi
}

if [ "$shell" = bash ]; then
    # shellcheck source=/dev/null
    source "$completion"
    complete_line() { # LINE: the completions of its last word, sorted
        read -ra COMP_WORDS <<<"$1"
        [[ $1 == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMPREPLY=()
        _memtrace
        printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort | tr '\n' ' '
    }
else
    mkdir "$work/fpath" "$work/bin"
    cp "$completion" "$work/fpath/_memtrace"
    ln -s "$(cd "$(dirname "$memtrace")" && pwd)/$(basename "$memtrace")" "$work/bin/memtrace"
    complete_line() { # LINE: what zsh's completion adds after LINE, sorted
        # a loaded machine can lose the pty's exchange: nothing added is
        # asked again, up to three times in all (a broken completion adds
        # nothing every time; twice was not enough at load 4 on 2 vCPUs)
        local got="" _
        for _ in 1 2 3; do
            got=$(zsh_complete "$1")
            [ -z "$got" ] || break
        done
        printf '%s' "$got"
    }
    zsh_complete() {
        : >"$work/added"
        # shellcheck disable=SC2016 # the script is zsh's, expanded by zsh
        PATH="$work/bin:$PATH" timeout 60 zsh -f -c '
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
fi

accepted() { # the names in "(valid: a, b, c)", "(a, b, c)" or "(a|b|c)" of stderr
    sed -n "s/.*unknown [a-z]* 'no-such-name' (\(valid: \)\{0,1\}\([^)]*\)).*/\2/p" |
        tr ',|' '  ' | tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' '
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
    # the registry's own listing where the binary has one, else its error
    if "$memtrace" render --list-views >/dev/null 2>&1; then
        views=$("$memtrace" render --list-views | sort | tr '\n' ' ')
    else
        views=$("$memtrace" render "$work/t.db" "$work/x.png" --view no-such-name 2>&1 | accepted)
    fi
    check "views are read from the binary" "yes" "$([ -n "$views" ] && echo yes)"
    check "memtrace render --view " "$views" "$(complete_line 'memtrace render --view ')"
fi

if [ "$shell" = bash ]; then # the forms zsh's _arguments and _values take care of
    check "memtrace replay --policy=" "$policies" "$(complete_line 'memtrace replay --policy = ')"
    expected=$(for p in $policies; do case $p in b*) echo "caching,$p" ;; esac; done |
        sort | tr '\n' ' ')
    check "memtrace replay --policy caching,b" "$expected" \
        "$(complete_line 'memtrace replay --policy caching,b')"
    options=$("$memtrace" info --help | grep -o -- '^ \{1,6\}-[-a-z, ]*' | grep -o -- '-[-a-z]*' |
        sort | tr '\n' ' ')
    check "memtrace info -" "$options" "$(complete_line 'memtrace info -')"
fi

echo "1..$n"
exit $failed
