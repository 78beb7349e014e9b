#!/usr/bin/env bash
# make demo: the main job on the real Cora graph (2708 papers, 10556 edges).
# Tunes SpMM (F = 64) and the GCN layer with short campaigns (a few minutes
# on 2 cores), replays each best record into a standalone C file, compiles
# that file with plain cc, re-runs the best trace against the reference on
# the same data, and prints the speedups over the default schedule and the naive
# loop nest.  Campaign directories: build/demo/.  (bench/bench_tune.sh runs the
# compiled file itself against the reference.)  Last, a whole model: the 2-layer
# GCN on Cora (models/gcn2_cora.model's four tasks), weights trained by PyTorch,
# tuned as one model (loom tune MODEL), shipped as one library (loom replay
# MODEL --emit-lib) and run end to end beside PyTorch (bench/bench_models.py):
# its test accuracy and latency.
set -euo pipefail
cd "$(dirname "$0")/.."
LOOM=./build/loom
OUT=build/demo
mkdir -p "$OUT"
SPMM_TRIALS=${LOOM_DEMO_TRIALS:-192}
GCN_TRIALS=${LOOM_DEMO_GCN_TRIALS:-160}
MODEL_TRIALS=${LOOM_DEMO_MODEL_TRIALS:-64}

tune() {
  local name=$1 trials=$2 workload=$3; shift 3
  local db="$OUT/$name"
  echo
  echo "== loom tune $workload $* --trials $trials --db $db"
  "$LOOM" tune "$workload" "$@" --trials "$trials" --db "$db"
  echo "== loom replay --db $db $workload --emit-c $OUT/$name-best.c"
  "$LOOM" replay --db "$db" "$workload" "$@" --emit-c "$OUT/$name-best.c" --emit-trace "$OUT/$name-best.json"
  cc -std=c11 -O3 -march=native -fopenmp -fPIC -shared -o "$OUT/$name-best.so" "$OUT/$name-best.c"
  echo "== $OUT/$name-best.c compiles with plain cc; the best trace re-run and checked against the reference:"
  "$LOOM" run "$workload" "$@" --trace "$OUT/$name-best.json" | tail -n 3
}
tune spmm "$SPMM_TRIALS" workloads/spmm.loom --data A=data/cora_adj.mtx --param F=64
tune gcn "$GCN_TRIALS" workloads/gcn.loom --data A=data/cora_adj.mtx --data X=data/cora_features.mtx
echo
echo "== a whole model: the 2-layer GCN on Cora, trained by PyTorch, tuned by loom tune MODEL --trials $MODEL_TRIALS,"
echo "   shipped by loom replay MODEL --emit-lib, run end to end beside PyTorch (test accuracy, latency)"
/usr/bin/python3 bench/bench_models.py --datasets cora --models gcn --trials "$MODEL_TRIALS" --batch 16 --reps 20 \
  --ae "" --out "$OUT/model" --loom "$LOOM"
echo
echo "demo: the campaigns finished; records in $OUT/*/records.jsonl (loom db $OUT/spmm), the model's in $OUT/model/cora/gcn_db"
