#!/usr/bin/env bash
# make demo: the main job on the real Cora graph (2708 papers, 10556 edges).
# For now (before the tuner lands) it runs the default schedule of the GNN
# workloads on Cora: lowered, compiled, measured in a child process, checked
# against the reference interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
LOOM=./build/loom
run() {
  echo
  echo "== loom run $*"
  "$LOOM" run "$@"
}
run workloads/spmm.loom --data A=data/cora_adj.mtx --param F=64
run workloads/gcn.loom --data A=data/cora_adj.mtx --data X=data/cora_features.mtx
run workloads/sddmm.loom --data M=data/cora_adj.mtx
run workloads/sparse_attention.loom --data A=data/cora_adj.mtx
run workloads/attention_causal.loom --param N=1024
echo
echo "demo: all kernels correct"
