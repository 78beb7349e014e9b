#!/usr/bin/env bash
# Fail when libloom.a exports a symbol without loom's prefix (issue 15):
# public symbols start with loom_, private cross-file ones with loom__, so a
# program or user module linking libloom.a cannot clash with loom's names.
#
#   scripts/check-symbols.sh [LIB]       (default build/libloom.a)
#
# Prints each offending symbol with the object that defines it; exit status
# 1 when there is one, 2 when LIB cannot be read, 0 otherwise.  Symbols the
# compiler adds for instrumentation (__odr_asan.NAME under AddressSanitizer,
# make check-asan; __gcov_*) are not loom's and are skipped.
set -euo pipefail

lib=${1:-build/libloom.a}
if [ ! -r "$lib" ]; then
    echo "check-symbols: cannot read '$lib' (build first: make)" >&2
    exit 2
fi

bad=$(nm -g --defined-only "$lib" | awk '
    /:$/ { obj = substr($0, 1, length($0) - 1); next }
    NF >= 3 && $3 !~ /^loom_/ && $3 !~ /^__(odr_asan|asan|ubsan|gcov)/ { print "  " $3 " (" obj ")" }')
if [ -n "$bad" ]; then
    echo "check-symbols: $lib exports symbols without the loom_ prefix" >&2
    echo "$bad" >&2
    echo "  public: loom_NAME; private, shared between files: loom__NAME; else make it static" >&2
    exit 1
fi
echo "check-symbols: every symbol exported by $lib starts with loom_"
