#!/usr/bin/env bash
# Fail when the files of one source folder call each other in a cycle
# (issue 15: each folder is layered, a file calls only the files below it).
#
#   scripts/check-cycles.sh [OBJDIR]     (default build/obj; run `make` first)
#
# For every folder of OBJDIR that holds object files (dsl, runtime/lower,
# runtime/measure, ... and cli; not tests/, whose files are test suites, not
# layers: with its 69 files it took most of the check's 36 s), a file uses another when it has an undefined
# symbol (nm -u) that the other defines (nm --defined-only -g): a call or a
# data reference.  Files that reach each other through such uses form a
# cycle (a strongly connected component of more than one file).  The same
# check runs one level up: the role sub-folders of a folder (dsl/front,
# dsl/ir, dsl/schedule; search/strategy, ...; and the library's top-level
# folders themselves) are the nodes, and no sub-folder may call one that
# calls it back ("dsl/*: front ir").  The sub-folder layers, lowest first:
# dsl: ir < front < schedule; runtime: data, machine < lower < sim < measure
# < target < runner; search: database < strategy < plan < navigate < tune
# < model.  Each cycle
# is printed with the uses inside it; the exit status is 1 when one is not in
# the KNOWN list below, 2 on bad usage, 0 otherwise.  Static functions are
# not seen (they cannot be called from another file), so a callback through
# a function pointer does not count as a use: that is how a lower layer hands
# work back to the one above it (runtime/lower/lower_internal.h, lctx.inner).
set -euo pipefail

objdir=${1:-build/obj}
if [ ! -d "$objdir" ]; then
    echo "check-cycles: no object directory '$objdir' (build first: make)" >&2
    exit 2
fi

# Cycles known when this check was added, outside the folders it was written
# for; each is "folder: file file ..." (sorted).  A listed cycle that grows,
# or any other cycle, fails.  Remove an entry once its cycle is broken.
KNOWN=(
    # none: the last one, "runtime/*: lower measure target", was broken by
    # moving the machine model (limits, JSON, host model, fingerprints) to
    # runtime/machine/, below lower/ and measure/ (issue 28)
)

# The uses between the nodes of one unit, as "D node symbol" / "U node symbol"
# lines.  $1 is the mode: "file" (a node is an object file) or "folder" (a
# node is the sub-folder of $2 that holds the object); the rest are objects.
uses() {
    local mode=$1 pre=$2
    shift 2
    {
        nm -A --defined-only -g "$@" | sed 's|\.o:|.o |' | awk 'NF >= 4 { print "D", $1, $4 }'
        nm -A -u "$@" | sed 's|\.o:|.o |' | awk '{ print "U", $1, $NF }'
    } | awk -v mode="$mode" -v pre="$pre/" '{
        f = $2
        if (mode == "file") { sub(/^.*\//, "", f); sub(/\.o$/, "", f) }
        else { f = substr(f, length(pre) + 1); sub(/\/.*$/, "", f) }
        print $1, f, $3
    }'
}

# Print every cycle among the nodes of one unit: "LABEL: a b<TAB>details".
cycles_of() {
    local label=$1
    shift
    uses "$@" | awk -v folder="$label" '
            $1 == "D" { def[$3] = $2; node[$2] = 1; next }
            { node[$2] = 1; use[++nu] = $2 " " $3 }
            END {
                for (k = 1; k <= nu; k++) {
                    split(use[k], a, " ")
                    if ((a[2] in def) && def[a[2]] != a[1]) {
                        e = a[1] SUBSEP def[a[2]]
                        reach[e] = 1
                        if (!(e in why)) why[e] = a[2]
                    }
                }
                n = 0
                for (x in node) names[++n] = x
                # transitive closure (Floyd-Warshall); folders hold a few dozen files
                for (k = 1; k <= n; k++)
                    for (i = 1; i <= n; i++)
                        if ((names[i] SUBSEP names[k]) in reach)
                            for (j = 1; j <= n; j++)
                                if ((names[k] SUBSEP names[j]) in reach)
                                    reach[names[i] SUBSEP names[j]] = 1
                for (i = 1; i <= n; i++) {
                    if (names[i] in done) continue
                    m = 0
                    for (j = 1; j <= n; j++)
                        if (i == j || (((names[i] SUBSEP names[j]) in reach) && ((names[j] SUBSEP names[i]) in reach)))
                            scc[++m] = names[j]
                    for (j = 1; j <= m; j++) done[scc[j]] = 1
                    if (m < 2) continue
                    # sort the members (insertion sort)
                    for (j = 2; j <= m; j++) {
                        v = scc[j]
                        for (l = j - 1; l >= 1 && scc[l] > v; l--) scc[l + 1] = scc[l]
                        scc[l + 1] = v
                    }
                    line = folder ":"
                    for (j = 1; j <= m; j++) line = line " " scc[j]
                    detail = ""
                    for (j = 1; j <= m; j++)
                        for (l = 1; l <= m; l++)
                            if ((scc[j] SUBSEP scc[l]) in why)
                                detail = detail ";" scc[j] " -> " scc[l] " (" why[scc[j] SUBSEP scc[l]] ")"
                    print line "\t" detail
                }
            }'
}

status=0
found=0
check_unit() {
    local cycles
    cycles=$(cycles_of "$@")
    [ -n "$cycles" ] || return 0
    while IFS=$'\t' read -r scc detail; do
        found=$((found + 1))
        known=0
        for k in ${KNOWN[@]+"${KNOWN[@]}"}; do
            [ "$k" = "$scc" ] && known=1
        done
        if [ "$known" = 1 ]; then
            echo "check-cycles: known cycle (to break): $scc"
        else
            echo "check-cycles: FILE-LEVEL CALL CYCLE in $scc" >&2
            tr ';' '\n' <<< "$detail" | sed -e '/^$/d' -e 's/^/    /' >&2
            echo "  break it: move the shared functions to a lower-level file, or pass a callback down" >&2
            status=1
        fi
    done <<< "$cycles"
}

while IFS= read -r dir; do
    rel=${dir#"$objdir"/}
    [ "$dir" = "$objdir" ] && rel=.
    # the files directly in the folder
    objs=()
    for o in "$dir"/*.o; do [ -e "$o" ] && objs+=("$o"); done
    [ "${#objs[@]}" -ge 2 ] && check_unit "$rel" file "$dir" "${objs[@]}"
    # the folder's role sub-folders (dsl/front, dsl/ir, ...) as nodes: no
    # sub-folder may call one that calls it back
    mapfile -t sub < <(find "$dir" -mindepth 2 -name "*.o" -not -path "$objdir/tests/*" | sort)
    nsub=$(printf '%s\n' "${sub[@]}" | sed -n "s|^$dir/\([^/]*\)/.*|\1|p" | sort -u | wc -l)
    [ "$nsub" -ge 2 ] && check_unit "$rel/*" folder "$dir" "${sub[@]}"
done < <(find "$objdir" -type d \( -name tests -prune -o -print \) | sort)

if [ "$status" = 0 ]; then
    echo "check-cycles: no new file-level call cycle in $objdir ($found known)"
fi
exit "$status"
