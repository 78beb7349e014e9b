#!/usr/bin/env bash
# loom bench (issue 13): search efficiency on the simulator.  For each
# workload/data case, each strategy (evolutionary, metaschedule, random),
# 6 seeds, with and without pre-training the cost model on the simulator
# (--pretrain), a campaign on target sim:spr-2c (deterministic: the figures
# do not depend on the machine's load); then, per case, the best schedule
# any campaign found, and for every campaign the number of trials (records
# in database order, the default schedule's record -- the first of a fresh
# database -- left out: the search's own trials) until a record within 95%
# of that best (latency <= best / 0.95).  The best known is the best
# schedule of the design space any campaign found (the default's record
# left out too).  The cases are spaces of >= 10^5 distinct valid schedules
# (counted by build/bench/bench_space_count: distinct structural hashes of
# 10^6 draws, and Chao's estimate; --count prints them first), except the
# SDDMM row, whose space is 4.7e3 (reported, not counted in the goal).  Prints a table
# and the geometric means per strategy, and the issue's goal: evolutionary
# <= 1/2 of metaschedule's and <= 1/5 of random's trials.  A campaign that
# never gets there counts as its budget + 1.
# The best known of a case also counts a long reference campaign
# (--reference N trials, evolutionary, seed 100, pre-trained; default 1000;
# 0: none), as the issue asks ("found by a long campaign"): without it the
# best known was the best of the nine short campaigns, and on GCN2 and SAGE2,
# where 160 trials rarely find the same optimum twice, it moved with every
# campaign added.  The reference campaign's own trials are not scored.
# Seeds: 6 by default (--seeds LIST): on these cases one seed's trials to
# 95% range from 1 to a miss for the same strategy, and the metaschedule
# strategy's geometric mean was 62.0 on seeds 1-3 and 36.0 on seeds 4-6.
# Usage: bench/bench_search_sim.sh [--quick] [--trials N] [--seeds LIST] [--pretrain N] [--pretrains "0 N"] [--reference N] [--count]
#   --quick: 2 cases, 1 seed, 96 trials (a few minutes).
#   --pretrains LIST: the pre-training sizes to run (default "0 N").
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=160 PRETRAIN=128 SEEDS="1 2 3 4 5 6" QUICK=0 PRETRAINS="" COUNT=0 REF=1000
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; TRIALS=96; SEEDS="1" ;;
    --trials) TRIALS=$2; shift ;;
    --seeds) SEEDS=$2; shift ;;
    --pretrain) PRETRAIN=$2; shift ;;
    --pretrains) PRETRAINS=$2; shift ;;
    --reference) REF=$2; shift ;;
    --count) COUNT=1 ;;
    *) echo "usage: bench/bench_search_sim.sh [--quick] [--trials N] [--seeds LIST] [--pretrain N] [--pretrains LIST] [--reference N] [--count]" >&2; exit 2 ;;
  esac
  shift
done
SHARED=${LOOM_SHARED_DATA:-../shared/data}
LOOM=${LOOM:-build/loom}  # the loom binary (a copy keeps a long run safe from rebuilds)
OUT=build/bench/search_sim
rm -rf "$OUT" && mkdir -p "$OUT"
# name|workload|arguments
[ -z "$PRETRAINS" ] && PRETRAINS="0 $PRETRAIN"
CASES=(
  "spmm-cora500-F64|workloads/spmm.loom|--data A=data/cora500_adj.mtx --param F=64"
  "spmm-cora-F64|workloads/spmm.loom|--data A=data/cora_adj.mtx --param F=64"
  "spmm-pubmed-F64|workloads/spmm.loom|--data A=$SHARED/pubmed/pubmed_adj.mtx --param F=64"
  "gcn2-cora500-F16|workloads/gcn2.loom|--data A=data/cora500_adj.mtx --data X=data/cora500_features.mtx --param F=16 --param C=8"
  "sage2-cora500-F16|workloads/sage2.loom|--data A=data/cora500_adj.mtx --data X=data/cora500_features.mtx --param F=16 --param C=8"
  "sddmm-cora500-D64|workloads/sddmm.loom|--data M=data/cora500_adj.mtx --param D=64"
)
[ "$QUICK" = 1 ] && CASES=("${CASES[@]:0:2}")
if [ "$COUNT" = 1 ]; then
  make -s -C bench ../build/bench/bench_space_count >/dev/null
  for c in "${CASES[@]}"; do
    IFS='|' read -r name wl args <<<"$c"
    # shellcheck disable=SC2086
    echo "$name: $(build/bench/bench_space_count "$wl" $(echo $args | sed 's/--data //g; s/--param //g') --draws 1000000 | cut -d: -f2-)"
  done
fi
echo "search efficiency on the simulator (target sim:spr-2c), $TRIALS trials, batch 16, seeds: $SEEDS; pre-training: $PRETRAINS simulated schedules; reference campaign: $REF trials"
for c in "${CASES[@]}"; do
  IFS='|' read -r name wl args <<<"$c"
  if [ "$REF" -gt 0 ]; then
    # shellcheck disable=SC2086
    "$LOOM" tune "$wl" $args --target sim:spr-2c --trials "$REF" --batch 16 --strategy evolutionary \
      --seed 100 --pretrain "$PRETRAIN" --pretrain-budget 0 --remeasure 0 --db "$OUT/$name/reference" -q --json >/dev/null
  fi
  for s in evolutionary metaschedule random; do
    for seed in $SEEDS; do
      for pre in $PRETRAINS; do
        # shellcheck disable=SC2086
        "$LOOM" tune "$wl" $args --target sim:spr-2c --trials "$TRIALS" --batch 16 --strategy "$s" \
          --seed "$seed" --pretrain "$pre" --pretrain-budget 0 --remeasure 0 --db "$OUT/$name/$s-$seed-p$pre" -q --json >/dev/null
      done
    done
  done
  echo "  $name: campaigns done"
done
python3 - "$OUT" "$TRIALS" <<'PY'
import json, math, os, sys
out, budget = sys.argv[1], int(sys.argv[2])
cases = sorted(os.listdir(out))
need = {}   # (strategy, pretrain) -> list of trials
print("\n%-20s %-13s %8s %s" % ("case", "strategy", "pretrain", "search trials to 95% of the best known, per seed"))
for case in cases:
    lats, default = {}, math.inf
    for camp in sorted(os.listdir(os.path.join(out, case))):
        recs = []
        with open(os.path.join(out, case, camp, "records.jsonl")) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if "remeasure" in r:
                    continue
                recs.append(r["latency_s"] if r.get("status") == "ok" and r.get("latency_s") else math.inf)
        lats[camp] = recs[1:]  # the first record of a fresh database is the default schedule's
        if recs:
            default = min(default, recs[0])
    best = min(min(v) for v in lats.values() if v)
    ref = lats.pop("reference", None)
    rows = {}
    for camp, recs in lats.items():
        s, seed, pre = camp.rsplit("-", 2)
        t = next((i + 1 for i, l in enumerate(recs) if l <= best / 0.95), budget + 1)
        rows.setdefault((s, pre), []).append(t)
        if not case.startswith("sddmm"):  # its space is below 10^5: reported, not in the goal
            need.setdefault((s, pre), []).append(t)
    for (s, pre), ts in sorted(rows.items()):
        print("%-20s %-13s %8s %s" % (case, s, pre[1:], ", ".join(map(str, ts))))
    refnote = ""
    if ref:
        refnote = "; the reference campaign's best %.4g s (%d trials)" % (min(ref), len(ref))
    print("%-20s best known %.4g s; the default schedule %.4g s (best is %.2fx faster)%s" % ("", best, default, default / best, refnote))
def gm(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))
print("\ngeometric mean of trials to 95%% over the cases of >= 10^5 schedules (a miss counts as %d):" % (budget + 1))
for (s, pre), ts in sorted(need.items()):
    print("  %-13s pretrain %-4s %6.1f over %d campaigns" % (s, pre[1:], gm(ts), len(ts)))
for pre in sorted({p for _, p in need}):
    e, m, r = (gm(need[(s, pre)]) for s in ("evolutionary", "metaschedule", "random"))
    print("pretrain %s: evolutionary / metaschedule %.2f (goal <= 0.5: %s), evolutionary / random %.2f (goal <= 0.2: %s)"
          % (pre[1:], e / m, "met" if e / m <= 0.5 else "NOT met", e / r, "met" if e / r <= 0.2 else "NOT met"))
PY
