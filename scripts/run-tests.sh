#!/usr/bin/env bash
# make test's two runs of the Criterion suite, with every failure repeated at
# the end of the output.
#
#   scripts/run-tests.sh TESTS LOG      (the environment is make test's TEST_ENV)
#
# The suite runs first without the tuneguard suite (two jobs), then the
# tuneguard suite alone (one job: it loads the machine on purpose and judges
# what its campaigns crowned; see the Makefile).  Both runs go ahead; either
# failing fails the script.  Everything the two print goes to the terminal
# and to LOG.  Criterion prints a failed assertion where it happens, among
# hundreds of lines of the other tests' output, and a CI log keeps only its
# tail: a run of 2026-12-07 on a fresh machine said "Failing: 1" and nothing
# of which test.  So at the end the failed and crashed tests are listed again,
# each with its assertion lines ([----] file:line: ... and the message).
set -u
tests=$1
log=$2
: >"$log"
"$tests" --jobs 2 --filter '!(tuneguard/*)' 2>&1 | tee -a "$log"
s=${PIPESTATUS[0]}
"$tests" --jobs 1 --filter 'tuneguard/*' 2>&1 | tee -a "$log"
t=${PIPESTATUS[0]}
if [ "$s" -ne 0 ] || [ "$t" -ne 0 ]; then
    echo
    echo "==== failed or crashed tests (the full output: $log) ===="
    # the assertion lines ([----] with a file:line, and the message lines that follow
    # them up to the next test's line) and each [FAIL] verdict
    awk '/^\[----\] [^ ]+:[0-9]+: / { keep = 1; print; next }
         /^\[----\]   / && keep { print; next }
         /^\[FAIL\]/ { print; keep = 0; next }
         { keep = 0 }' "$log"
fi
[ "$s" -eq 0 ] && [ "$t" -eq 0 ]
