#!/usr/bin/env bash
# Fusion plans on whole GNN models (issue 16; AutoSparse's Figure 3 in loom's terms).
#
# Graphs (feature widths in -> 16 -> classes):
#   cora      data/cora_{adj,features}.mtx: real graph, real features (1433-16-7)
#   pubmed    ../shared/data/pubmed/pubmed_adj.mtx: real graph; SYNTHETIC features of PubMed's real
#             shape (19717 x 500, TF-IDF-like, ~10% dense; scripts/synth_features.py, seed 1), because
#             the real ones are not in ../shared/data (500-16-3)
#   facebook  ../shared/data/facebook/facebook_{adj,features}.mtx: real graph, real features
#             (4714-16-4)
# A graph whose files are absent is skipped with a message.
#
# For each model on each graph: every fusion plan `loom plan describe` enumerates (each subset of
# the fusable edges; the dataflow orders left to the design space) is scored by `loom plan score
# --measure`: the best of --fills design-space draws per plan on the simulator, its cost-model
# score, and that draw compiled, run and checked against the reference on this machine.  Printed:
# each plan's estimated FLOPs and bytes per forward pass next to its measured latency; then
# unfused (no edge fused), fully fused (every fusable edge fused), the best plan, and a tuning
# campaign seeded with the best plan (`loom tune --plans`), whose best should be at least as fast
# as the plan; a summary table of all graphs at the end.
#
# usage: bash bench/bench_plans.sh [--quick] [--graphs LIST] [--models LIST] [--trials N] [--fills N]
#        [--pretrain N]
#   --graphs    comma-separated, from cora,pubmed,facebook (default: all three)
#   --models    comma-separated workloads/NAME.loom (default: gcn2,gcn2_norm,sage2 on cora and
#               gcn2,sage2 on the larger graphs)
#   --trials N  trials of each seeded campaign (default 32)
#   --fills N   design-space draws per plan (default 4)
#   --pretrain N  simulated schedules the cost models (plan score's, the campaign's) are
#               pre-trained on (default 16)
#   --quick     gcn2 only, 2 fills, 8 trials (a smoke run)
# Environment: LOOM (default build/loom), LOOM_SHARED_DATA (default ../shared/data).
# Run it on a quiet machine: the latencies are medians of real runs.
set -euo pipefail
cd "$(dirname "$0")/.."
LOOM=${LOOM:-build/loom}
SHARED=${LOOM_SHARED_DATA:-../shared/data}
TRIALS=32
FILLS=4
PRETRAIN=16
GRAPHS="cora,pubmed,facebook"
MODELS=""
usage() { sed -n '/^# usage:/,/^# Run it/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) MODELS="gcn2"; FILLS=2; TRIALS=8 ;;
    --graphs) GRAPHS="$2"; shift ;;
    --models) MODELS="$2"; shift ;;
    --trials) TRIALS="$2"; shift ;;
    --fills) FILLS="$2"; shift ;;
    --pretrain) PRETRAIN="$2"; shift ;;
    *) usage ;;
    esac
    shift
done
[ -x "$LOOM" ] || make -s all
TMP=$(mktemp -d /tmp/loom-bench-plans-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
SUMMARY="$TMP/summary.txt"
: > "$SUMMARY"

# graph_setup NAME: sets DATA, PARAMS, LABEL; returns 1 (with a message) when the data is absent
graph_setup() {
    case "$1" in
    cora)
        DATA="--data A=data/cora_adj.mtx --data X=data/cora_features.mtx"; PARAMS="--param C=7"
        LABEL="Cora (2708 nodes, 10556 edges; real features 2708 x 1433, widths 1433-16-7)" ;;
    pubmed)
        if [ ! -f "$SHARED/pubmed/pubmed_adj.mtx" ]; then
            echo "== PubMed skipped: $SHARED/pubmed/pubmed_adj.mtx absent (set LOOM_SHARED_DATA) =="; return 1
        fi
        local feat=build/data/pubmed_features_synthetic.mtx
        if [ ! -f "$feat" ]; then
            mkdir -p build/data
            python3 scripts/synth_features.py 19717 500 0.10 "$feat" --seed 1 --name "PubMed's shape" >/dev/null
        fi
        DATA="--data A=$SHARED/pubmed/pubmed_adj.mtx --data X=$feat"; PARAMS="--param C=3"
        LABEL="PubMed (19717 nodes, 88648 edges; SYNTHETIC features 19717 x 500, TF-IDF-like ~10% dense, PubMed's shape: the real ones are not in $SHARED; widths 500-16-3)" ;;
    facebook)
        if [ ! -f "$SHARED/facebook/facebook_adj.mtx" ] || [ ! -f "$SHARED/facebook/facebook_features.mtx" ]; then
            echo "== Facebook skipped: $SHARED/facebook/facebook_{adj,features}.mtx absent (set LOOM_SHARED_DATA) =="
            return 1
        fi
        DATA="--data A=$SHARED/facebook/facebook_adj.mtx --data X=$SHARED/facebook/facebook_features.mtx"
        PARAMS="--param C=4"
        LABEL="Facebook Page-Page (22470 nodes, 341646 edges; real features 22470 x 4714, widths 4714-16-4)" ;;
    *) echo "unknown graph '$1' (cora, pubmed, facebook)" >&2; exit 2 ;;
    esac
}

# run_model GRAPH MODEL: the enumeration, the scores, the seeded campaign, the summary lines
run_model() {
    local g=$1 m=$2 p="$TMP/$1.$2"
    echo "== $m on $LABEL (workloads/$m.loom) =="
    $LOOM plan describe "workloads/$m.loom" $DATA $PARAMS --out "$p.describe.json"
    # every plan of the enumeration, in AutoSparse's schema, named by its fusion mask
    python3 - "$p.describe.json" "$p.plans.json" <<'EOF'
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
    $LOOM plan score "$p.plans.json" "workloads/$m.loom" $DATA $PARAMS --fills "$FILLS" --pretrain "$PRETRAIN" \
        --measure --json > "$p.score.json" || true
    python3 - "$p.describe.json" "$p.score.json" "$p.best.json" "$p.plans.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
plans = {p["name"]: p for p in json.load(open(sys.argv[4]))}
print("cost model: %s" % s.get("cost_model", "-"))
print("%-10s %10s %10s %8s %8s %12s %12s" % ("plan", "MFLOP", "MB", "FLOP/B", "score", "simulated", "measured"))
rows = s["plans"]
for r in rows:
    print("%-10s %10.3f %10.3f %8.3f %8s %9.1f us %12s" % (
        r["name"], r["flops"] / 1e6, r["bytes"] / 1e6, r["intensity"],
        ("%.4f" % r["model_score"]) if "model_score" in r else "-", r.get("simulated_s", float("nan")) * 1e6,
        ("%.1f us" % (r["measured_s"] * 1e6)) if "measured_s" in r else "-"))
    if r.get("note"):
        print("           %s" % r["note"][:300])
ok = [r for r in rows if r.get("measured_s")]
if not ok:
    print("no plan measured"); sys.exit(0)
best = min(ok, key=lambda r: r["measured_s"])
json.dump([plans[best["name"]]], open(sys.argv[3], "w"))
EOF
    local tuned="null"
    if [ -s "$p.best.json" ]; then
        if $LOOM tune "workloads/$m.loom" $DATA $PARAMS --trials "$TRIALS" --pretrain "$PRETRAIN" --db "$p.db" \
            --plans "$p.best.json" --json > "$p.tune.json" 2> "$p.tune.err"; then
            tuned="$p.tune.json"
        else
            echo "tuned campaign failed: $(tail -2 "$p.tune.err")"
        fi
    fi
    python3 - "$p.describe.json" "$p.score.json" "$tuned" "$g" "$m" "$SUMMARY" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
graph, model, summary = sys.argv[4], sys.argv[5], sys.argv[6]
cost = {p["fusion_mask"]: p for p in d["plans"]}
nedges = sum(1 for e in d["edges"] if e["fusable"])
meas = {r["name"]: r for r in s["plans"]}
ok = [r for r in s["plans"] if r.get("measured_s")]
rows = []
def plan_row(label, name):
    r = meas.get(name)
    rows.append((label, name, r["flops"] if r else None, r["bytes"] if r else None,
                 r.get("measured_s") if r else None))
plan_row("unfused", "mask0")
plan_row("fully fused", "mask%d" % ((1 << nedges) - 1))
if ok:
    b = min(ok, key=lambda r: r["measured_s"])
    plan_row("best plan", b["name"])
if sys.argv[3] != "null":
    t = json.load(open(sys.argv[3]))
    mask = None
    try:
        tr = json.load(open(t["best_trace"]))
        idx = [k for k, i in enumerate(tr["insts"]) if i[0] == "SampleFusionGroup"]
        dec = {k: v for k, v in tr["decisions"]}
        mask = dec.get(idx[0]) if idx else None
    except (OSError, KeyError, ValueError, IndexError):
        pass
    c = cost.get(mask)
    rows.append(("tuned (seeded)", ("mask%d" % mask) if mask is not None else "default", c["flops"] if c else None,
                 c["bytes"] if c else None, t.get("best_latency_s")))
base = [r[4] for r in rows if r[4]]
bestlat = min(base) if base else None
out = []
for label, name, fl, by, lat in rows:
    out.append("%-9s %-10s %-15s %-8s %10s %10s %12s %8s" % (
        graph, model, label, name, ("%.3f" % (fl / 1e6)) if fl else "-", ("%.3f" % (by / 1e6)) if by else "-",
        ("%.1f us" % (lat * 1e6)) if lat else "-", ("%.2fx" % (lat / bestlat)) if lat and bestlat else "-"))
print("\n".join(out))
open(summary, "a").write("\n".join(out) + "\n")
EOF
    echo
}

main() {
    for g in ${GRAPHS//,/ }; do
        graph_setup "$g" || continue
        models=${MODELS:-$([ "$g" = cora ] && echo gcn2,gcn2_norm,sage2 || echo gcn2,sage2)}
        for m in ${models//,/ }; do
            run_model "$g" "$m"
        done
    done
    echo "== summary: per forward pass, loom's FLOP and byte estimate (search/plan/plan.h) next to the measured latency =="
    printf "%-9s %-10s %-15s %-8s %10s %10s %12s %8s\n" graph model config plan MFLOP MB measured "vs best"
    cat "$SUMMARY"
    echo "(PubMed's features are SYNTHETIC (PubMed's shape, scripts/synth_features.py); Cora's and Facebook's are real."
    echo " Latencies: medians on this machine under its current load; 'tuned (seeded)': the campaign's best,"
    echo " FLOPs/bytes of its fusion mask, 'default' when the best is the default schedule.)"
}
# the whole file is read before anything runs (editing it during a run is safe)
main; exit $?
