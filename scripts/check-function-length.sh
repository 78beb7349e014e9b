#!/usr/bin/env bash
# Fail when a C function is longer than 150 lines (issue 15; cli/ included since
# 2026-11-25, when its last long commands were split).
#
#   scripts/check-function-length.sh [ROOT] [MAX]    (default . and 150)
#
# A function's length is counted from its opening brace to its closing one,
# both included, in loom's style: the header starts in column 0 and the
# braces of a function body stand alone in column 0 (statements inside are
# indented).  Every .c file under ROOT is read except build trees and
# generated code.  Prints each function over MAX as FILE:LINE NAME LENGTH;
# exit status 1 when one is not in the KNOWN list below, 0 otherwise.
set -euo pipefail

root=${1:-.}
max=${2:-150}

# Over the limit when this check was added, in other helpers' areas; each is
# "FILE NAME".  Remove an entry once its function is split.
KNOWN=(
)

cd "$root"
long=$(find . -name '*.c' -not -path './build*' -not -path './.git/*' -not -path '*/gen/*' |
    sed 's|^\./||' | sort | xargs awk -v max="$max" '
    FNR == 1 { infn = 0 }
    /^[A-Za-z_].*\(/ && !/;[[:space:]]*$/ && !infn { h = $0 }
    /^\{[[:space:]]*$/ && !infn {
        infn = 1; open = FNR; name = h
        sub(/\(.*/, "", name); n = split(name, w, /[ *]+/); name = w[n]
    }
    /^\}/ && infn {
        infn = 0
        if (FNR - open + 1 > max) print FILENAME ":" open " " name " " (FNR - open + 1)
    }')

status=0
while IFS= read -r line; do
    [ -n "$line" ] || continue
    file=${line%%:*}
    rest=${line#*:}
    name=$(awk '{ print $2 }' <<< "$rest")
    len=$(awk '{ print $3 }' <<< "$rest")
    known=0
    for k in "${KNOWN[@]}"; do
        [ "$k" = "$file $name" ] && known=1
    done
    if [ "$known" = 1 ]; then
        echo "check-function-length: known (to split): $file $name, $len lines"
    else
        echo "check-function-length: $line: $name is $len lines, more than $max: split it" >&2
        status=1
    fi
done <<< "$long"
[ "$status" = 0 ] && echo "check-function-length: no new function over $max lines"
exit "$status"
