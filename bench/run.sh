#!/usr/bin/env bash
# loom benchmarks: the machine's roofline, the default schedule's cost, SpMM
# (naive nest and default schedule) against Eigen, trace replay throughput
# (one core), GEMM against OpenBLAS, the cost model, tuning campaigns, then the simulator against
# measurements.
# Run from the repository root after `make -C bench` (or via `make bench`).
# Arguments go to bench_spmm: --quick, --large, --markdown, --min-seconds S;
# --quick also makes bench_attention quick (N = 1024, 16-trial campaigns).
# Matrices: $LOOM_SHARED_DATA, else ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/bench
for b in roofline bench_attention bench_gemm bench_spmm bench_replay bench_default bench_model bench_sim check_replay; do
  if [ ! -x "$BIN/$b" ]; then
    echo "bench/run.sh: $BIN/$b is missing: run 'make bench' (or 'make && make -C bench')" >&2
    exit 1
  fi
done
echo "== roofline =="
"$BIN/roofline"
echo
echo "== default schedule: time to produce it, per workload (goal < 10 ms) =="
"$BIN/bench_default"
echo
echo "== attention: tuned fused vs tuned unfused vs OpenBLAS =="
ATT_ARGS=()
for a in "$@"; do [ "$a" = "--quick" ] && ATT_ARGS=(--quick); done
"$BIN/bench_attention" "${ATT_ARGS[@]}"
echo
echo "== gemm: loom default and tuned (re-measured) vs OpenBLAS sgemm =="
GEMM_ARGS=()
for a in "$@"; do [ "$a" = "--quick" ] && GEMM_ARGS=(--quick); done
"$BIN/bench_gemm" "${GEMM_ARGS[@]}"
echo
echo "== spmm: loom's naive loop nest and default schedule vs Eigen =="
"$BIN/bench_spmm" "$@"
echo
echo "== replay: traces replayed and validated per second, one core =="
"$BIN/bench_replay"
echo
echo "== cost model: training time and ranking quality on synthetic records =="
"$BIN/bench_model"
echo
echo "== tune: 256-trial SpMM campaigns vs the default schedule =="
bash bench/bench_tune.sh
echo
echo "== simulator: rank correlation with measured latency, simulation time =="
"$BIN/bench_sim" --threads 1
