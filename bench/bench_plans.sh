#!/usr/bin/env bash
# Fusion plans on whole GNN models (issue 16; AutoSparse's Figure 3 in loom's terms).
#
# For each model on Cora (features 1433 -> 16 -> 7): every fusion plan `loom plan describe`
# enumerates (each subset of the fusable edges; the dataflow orders left to the design space)
# is scored by `loom plan score --measure`: the best of --fills design-space draws per plan on
# the simulator, that draw compiled, run and checked against the reference on this machine.
# Printed: each plan's estimated FLOPs and bytes per forward pass next to its measured latency;
# then unfused (no edge fused), fully fused (every fusable edge fused) and the best plan; then
# a tuning campaign seeded with the best plan (`loom tune --plans`), whose best should be at
# least as fast as the plan.  PubMed has no features in ../shared/data, so it is not run.
#
# usage: bash bench/bench_plans.sh [--quick] [--trials N] [--fills N]
#   --quick     gcn2 only, 2 fills, 16 trials (a smoke run, ~1 minute)
# Run it on a quiet machine: the latencies are medians of real runs.
set -euo pipefail
cd "$(dirname "$0")/.."
LOOM=${LOOM:-build/loom}
TRIALS=64
FILLS=4
MODELS="gcn2 gcn2_norm sage2"
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) MODELS="gcn2"; FILLS=2; TRIALS=16 ;;
    --trials) TRIALS="$2"; shift ;;
    --fills) FILLS="$2"; shift ;;
    *) echo "usage: bash bench/bench_plans.sh [--quick] [--trials N] [--fills N]" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$LOOM" ] || make -s all
DATA="--data A=data/cora_adj.mtx --data X=data/cora_features.mtx"
TMP=$(mktemp -d /tmp/loom-bench-plans-XXXXXX)
trap 'rm -rf "$TMP"' EXIT

for m in $MODELS; do
    echo "== $m on Cora (workloads/$m.loom) =="
    $LOOM plan describe "workloads/$m.loom" $DATA --out "$TMP/$m.describe.json"
    # every plan of the enumeration, in AutoSparse's schema, named by its fusion mask
    python3 - "$TMP/$m.describe.json" "$TMP/$m.plans.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
plans = [{"name": "mask%d" % p["fusion_mask"],
          "fusion_groups": [{"name": g["name"], "ops": g["ops"]} for g in p["fusion_groups"]]}
         for p in d["plans"]]
json.dump(plans, open(sys.argv[2], "w"))
edges = sum(1 for e in d["edges"] if e["fusable"])
print("%d operators, %d fusable edges, %d plans; target %s: balance %.2f FLOP/byte"
      % (len(d["operators"]), edges, len(plans), d["target"]["name"], d["target"]["balance_flops_per_byte"]))
EOF
    $LOOM plan score "$TMP/$m.plans.json" "workloads/$m.loom" $DATA --fills "$FILLS" --measure --json \
        > "$TMP/$m.score.json" || true
    python3 - "$TMP/$m.describe.json" "$TMP/$m.score.json" "$TMP/$m.best.json" "$TMP/$m.plans.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
plans = {p["name"]: p for p in json.load(open(sys.argv[4]))}
nedges = sum(1 for e in d["edges"] if e["fusable"])
full = "mask%d" % ((1 << nedges) - 1)
print("%-10s %10s %10s %8s %12s %12s" % ("plan", "MFLOP", "MB", "FLOP/B", "simulated", "measured"))
rows = s["plans"]
for r in rows:
    print("%-10s %10.3f %10.3f %8.3f %9.1f us %9s" % (
        r["name"], r["flops"] / 1e6, r["bytes"] / 1e6, r["intensity"], r.get("simulated_s", float("nan")) * 1e6,
        ("%.1f us" % (r["measured_s"] * 1e6)) if "measured_s" in r else "-"))
meas = {r["name"]: r.get("measured_s") for r in rows}
ok = [r for r in rows if r.get("measured_s")]
if not ok:
    print("no plan measured"); sys.exit(0)
best = min(ok, key=lambda r: r["measured_s"])
def ratio(name):
    v = meas.get(name)
    return ("%.2fx" % (v / best["measured_s"])) if v else "n/a"
print("best plan %s: %.1f us; unfused (mask0) %s slower, fully fused (%s) %s slower"
      % (best["name"], best["measured_s"] * 1e6, ratio("mask0"), full, ratio(full)))
json.dump([plans[best["name"]]], open(sys.argv[3], "w"))
EOF
    if [ -s "$TMP/$m.best.json" ]; then
        $LOOM tune "workloads/$m.loom" $DATA --trials "$TRIALS" --db "$TMP/$m.db" --plans "$TMP/$m.best.json" -q \
            | sed 's/^/  tuned: /'
    fi
    echo
done
echo "(latencies: medians on this machine; FLOPs and bytes: loom's estimate per forward pass, search/plan.h)"
