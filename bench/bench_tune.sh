#!/usr/bin/env bash
# loom bench: tuning campaigns.  SpMM (F = 64) on Cora and PubMed: a
# 256-trial campaign against the default schedule and the naive loop nest,
# where the campaign's wall time went (search overhead = everything but
# compile and measure; goal < 10%), and the best record replayed into a C
# file that is compiled separately (plain cc) and checked against the
# reference on the same data.
# Usage: bench/bench_tune.sh [TRIALS]   (default 256)
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=${1:-256}
SHARED=${LOOM_SHARED_DATA:-../shared/data}
OUT=build/bench/tune
mkdir -p "$OUT"
run() {
  local name=$1 mtx=$2
  if [ ! -f "$mtx" ]; then echo "$name: $mtx is absent: skipped"; return; fi
  local db="$OUT/$name-spmm64"
  rm -rf "$db"
  local js
  js=$(build/loom tune workloads/spmm.loom --data A="$mtx" --param F=64 --trials "$TRIALS" --db "$db" --json -q)
  echo "$name spmm F=64: $js" | python3 -c '
import json, sys
line = sys.stdin.read()
name, js = line.split(": ", 1)
r = json.loads(js)
s = r["seconds"]
best, dflt, naive = r["best_latency_s"], r["default_latency_s"], r["naive_latency_s"]
print("%s: %d trials, best %.1f us (%.1f GFLOP/s), default %.1f us, naive %.1f us: %.2fx over default, %.2fx over naive"
      % (name, r["trials"], best * 1e6, r["best_gflops"], dflt * 1e6, naive * 1e6, dflt / best, naive / best))
print("  wall %.1f s: search %.1f s, cost model %.1f s, compile %.1f s, measure %.1f s; search overhead %.1f%% (goal < 10%%); failed %d %s"
      % (s["total"], s["search"], s["cost_model"], s["compile"], s["measure"], 100 * r["search_overhead"], r["failed_total"], r["failed"]))
'
  build/loom replay --db "$db" workloads/spmm.loom --data A="$mtx" --param F=64 --emit-c "$OUT/$name-best.c" >/dev/null
  cc -std=c11 -O3 -march=native -fopenmp -fPIC -shared -o "$OUT/$name-best.so" "$OUT/$name-best.c"
  printf '  replayed C file compiled with plain cc: '
  build/bench/check_replay "$OUT/$name-best.so" workloads/spmm.loom --data A="$mtx" --param F=64
}
run cora data/cora_adj.mtx
run pubmed "$SHARED/pubmed/pubmed_adj.mtx"
