#!/usr/bin/env bash
# Run every fuzz harness for SECONDS seconds, one after the other (make fuzz).
#   scripts/fuzz.sh SECONDS FORMAT...
# Each runs on build-fuzz/corpus/FORMAT (grown) and tests/fuzz/corpus/FORMAT
# (the seeds), single process, with a 10 s per-input time limit and a
# 256 MiB cap on any single allocation (inputs are at most a few KB, so a
# larger allocation is a reader trusting a size it was told).  A crash,
# leak, timeout or over-limit allocation is saved under build-fuzz/crashes/
# and makes the script fail.  Prints the executions of each harness.
# Environment: FUZZ_NICE=N runs the harnesses under `nice -n N`; FUZZ_RUNS=N
# stops each after N executions (SECONDS still caps the time).  The database
# harness writes its input to a file each time: it runs in /dev/shm when
# there is one (10x faster than a disk-backed /tmp).  FUZZ_BIN_DIR=D runs
# the harnesses built in D (default build-fuzz).
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:?usage: scripts/fuzz.sh SECONDS FORMAT...}
shift
mkdir -p build-fuzz/crashes build-fuzz/logs
fail=0
for f in "$@"; do
  mkdir -p "build-fuzz/corpus/$f"
  dict=()
  [ -f "tests/fuzz/$f.dict" ] && dict=("-dict=tests/fuzz/$f.dict")
  log="build-fuzz/logs/$f.log"
  runs=()
  [ -n "${FUZZ_RUNS:-}" ] && runs=("-runs=$FUZZ_RUNS")
  tmp=${TMPDIR:-/tmp}
  [ -d /dev/shm ] && [ -w /dev/shm ] && tmp=/dev/shm
  TMPDIR=$tmp ${FUZZ_NICE:+nice -n "$FUZZ_NICE"} "${FUZZ_BIN_DIR:-build-fuzz}/fuzz_$f" -max_total_time="$secs" "${runs[@]}" -print_final_stats=1 \
    -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256 -max_len=8192 \
    -artifact_prefix="build-fuzz/crashes/$f-" "${dict[@]}" \
    "build-fuzz/corpus/$f" "tests/fuzz/corpus/$f" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ $rc -ne 0 ]; then
    echo "fuzz $f: FAILED (exit $rc) after ${execs:-?} executions; see $log and build-fuzz/crashes/$f-*"
    grep -m3 -E "ERROR|SUMMARY" "$log" | sed 's/^/    /'
    fail=1
  else
    echo "fuzz $f: ${execs:-?} executions (at most ${secs} s), no crash"
  fi
done
exit $fail
