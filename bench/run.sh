#!/usr/bin/env bash
# loom benchmarks: the machine's roofline, SpMM against Eigen, then trace
# replay throughput (one core), then the cost model.
# Run from the repository root after `make -C bench` (or via `make bench`).
# Arguments go to bench_spmm: --quick, --large, --markdown, --min-seconds S.
# Matrices: $LOOM_SHARED_DATA, else ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/bench
for b in roofline bench_spmm bench_replay bench_model; do
  if [ ! -x "$BIN/$b" ]; then
    echo "bench/run.sh: $BIN/$b is missing: run 'make bench' (or 'make && make -C bench')" >&2
    exit 1
  fi
done
echo "== roofline =="
"$BIN/roofline"
echo
echo "== spmm: loom default schedule vs Eigen =="
"$BIN/bench_spmm" "$@"
echo
echo "== replay: traces replayed and validated per second, one core =="
"$BIN/bench_replay"
echo
echo "== cost model: training time and ranking quality on synthetic records =="
"$BIN/bench_model"
