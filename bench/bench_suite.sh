#!/usr/bin/env bash
# loom bench (issue 26): the suite the campaign's defaults are chosen on.
# For every workload family -- SpMM (Cora and PubMed from ../shared/data,
# bcsstk16 from SuiteSparse; F = 32 and 128), SDDMM, GCN2, SAGE2, GEMM
# 512^3 and a GNN-shaped GEMM (2708 x 1433 x 16: Cora's features times a
# 16-wide weight), attention non-causal (12 heads and 1 head), causal and
# band -- campaigns of each strategy (evolutionary, metaschedule, random)
# over 3 seeds, then per campaign: the search trials (records in database
# order, the default schedule's record -- the first of a fresh database --
# left out) until a record within 95% of the best known (latency <= best /
# 0.95; a miss counts as the budget + 1), and tuned / default (the
# default's latency over the campaign's best).  The best known of a case is
# the best of the default, of every campaign and of a longer reference campaign
# (evolutionary, seed 100, --reference N trials), as bench_search_sim.sh
# does.  Prints a table, geometric means per family and overall, and the
# issue's goals (evolutionary <= 1/2 of metaschedule's trials and <= 1/5
# of random's over all families; no family where evolutionary is worse
# than metaschedule).
#
# On the simulator (the default, target sim:spr-2c, deterministic: the
# figures do not depend on the machine's load) the attention sizes are
# scaled down -- the simulator walks every score of a dense attention, and
# 17 trials of 12 x 512 x 64 took over ten minutes on this 2-core machine
# -- to 12 x 64 x 64, 1 x 512 x 64, causal and band (32) 512 x 64; GEMM and
# the sparse cases keep the issue's sizes.  --cpu runs the issue's sizes
# (12 x 512 x 64, 1 x 4096 x 64, causal and band 4096 x 64) on the real CPU,
# each campaign re-measured (tune's --remeasure default), tuned / default
# from the re-measured figures; run it on a quiet machine.
#
# --variant 'NAME:ARGS' (repeatable) adds an evolutionary campaign per seed
# with extra `loom tune` arguments (e.g. 'cold0:--fresh-share-cold 0'),
# reported as strategy evolutionary/NAME: how the defaults were chosen.
# Usage: bench/bench_suite.sh [--cpu] [--trials N] [--seeds LIST] [--reference N] [--pretrain N] [--pretrain-target T]
#        [--strategies LIST] [--variant NAME:ARGS]... [--cases REGEX] [--jobs J] [--report DIR]
#   --report DIR: only the table of the campaigns already in DIR (FAMILY/CASE/STRATEGY-SEED/),
#   e.g. several partial runs linked into one directory
#   defaults: 48 trials, batch 16, seeds "1 2 3", reference 128, pretrain 0
#   (--pretrain N: N simulated schedules first, with no time budget on the
#   simulator target so the figures stay deterministic; --pretrain-target T
#   pre-trains on another simulator target, e.g. sim:zen3-2c for a campaign on
#   sim:spr-2c: a model that knows a different machine, as the host's
#   simulated model stands for the real CPU), all three
#   strategies, every case, 2 campaigns at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=48 SEEDS="1 2 3" REF=128 PRETRAIN=0 CPU=0 JOBS=2 CASEF="" STRATS="evolutionary metaschedule random"
VARIANTS=() REPORT="" PTARGET=""
usage() { sed -n '/^# Usage/,/every case/p' "$0" | sed 's/^# //' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) CPU=1 ;;
    --trials) TRIALS=$2; shift ;;
    --seeds) SEEDS=$2; shift ;;
    --reference) REF=$2; shift ;;
    --pretrain) PRETRAIN=$2; shift ;;
    --pretrain-target) PTARGET="--pretrain-target $2"; shift ;;
    --strategies) STRATS=$2; shift ;;
    --variant) VARIANTS+=("$2"); shift ;;
    --cases) CASEF=$2; shift ;;
    --jobs) JOBS=$2; shift ;;
    --report) REPORT=$2; shift ;;
    *) usage ;;
  esac
  shift
done
SHARED=${LOOM_SHARED_DATA:-../shared/data}
LOOM=${LOOM:-build/loom}  # the loom binary (a copy keeps a long run safe from rebuilds)
OUT=${OUT:-build/bench/suite}
[ -n "$REPORT" ] && OUT=$REPORT
[ -z "$REPORT" ] && rm -rf "$OUT" && mkdir -p "$OUT"
mh() {  # multi-head attention, H x N x 64
  cat >"$OUT/attention_h$1_n$2.loom" <<EOF
param H = $1
param N = $2
param D = 64
tensor Q(H, N, D) dense
tensor K(H, N, D) dense
tensor V(H, N, D) dense
tensor O(H, N, D) dense output
S(h, i, j) = Q(h, i, d) * K(h, j, d) * 0.125
m(h, i) max= S(h, i, j)
P(h, i, j) = exp(S(h, i, j) - m(h, i))
l(h, i) += P(h, i, j)
O(h, i, e) += P(h, i, j) * V(h, j, e) / l(h, i)
EOF
  echo "$OUT/attention_h$1_n$2.loom"
}
if [ "$CPU" = 1 ]; then
  TARGET=cpu REMEASURE="" MHN=512 AN=4096
else
  TARGET=sim:spr-2c REMEASURE="--remeasure 0" MHN=64 AN=512
fi
# pre-training on the simulator target: no time budget (a budget in seconds
# would make the simulated figures depend on the machine's load)
PBUDGET=""
[ "$CPU" = 0 ] && [ "$PRETRAIN" -gt 0 ] && PBUDGET="--pretrain-budget 0"
CORA="--data A=data/cora_adj.mtx"
PUBMED="--data A=$SHARED/pubmed/pubmed_adj.mtx"
BCS="--data A=$SHARED/suitesparse/bcsstk16.mtx"
GNN="--data A=data/cora500_adj.mtx --data X=data/cora500_features.mtx --param F=16 --param C=8"
# family|name|workload|arguments (the slow simulations first: a cut-short run still covers every family)
CASES=(
  "attention|attention-12x${MHN}x64|$(mh 12 $MHN)|"
  "attention|attention-1x${AN}x64|workloads/attention.loom|--param N=$AN"
  "causal|causal-${AN}x64|workloads/attention_causal.loom|--param N=$AN"
  "band|band32-${AN}x64|workloads/attention_band.loom|--param N=$AN"
  "gemm|gemm-2708x1433x16|workloads/gemm.loom|--param M=2708 --param K=1433 --param N=16"
  "gcn2|gcn2-cora500|workloads/gcn2.loom|$GNN"
  "sage2|sage2-cora500|workloads/sage2.loom|$GNN"
  "sddmm|sddmm-cora-D64|workloads/sddmm.loom|--data M=data/cora_adj.mtx --param D=64"
  "gemm|gemm-512|workloads/gemm.loom|--param M=512 --param N=512 --param K=512"
  "spmm|spmm-cora-F32|workloads/spmm.loom|$CORA --param F=32"
  "spmm|spmm-cora-F128|workloads/spmm.loom|$CORA --param F=128"
  "spmm|spmm-pubmed-F32|workloads/spmm.loom|$PUBMED --param F=32"
  "spmm|spmm-pubmed-F128|workloads/spmm.loom|$PUBMED --param F=128"
  "spmm|spmm-bcsstk16-F32|workloads/spmm.loom|$BCS --param F=32"
  "spmm|spmm-bcsstk16-F128|workloads/spmm.loom|$BCS --param F=128"
)
echo "suite on $TARGET: $TRIALS trials, batch 16, seeds: $SEEDS, pre-training $PRETRAIN${PTARGET:+ ($PTARGET)}, reference campaign $REF trials; strategies: $STRATS${VARIANTS[*]:+; variants: ${VARIANTS[*]}}; $(date -u +%Y-%m-%dT%H:%MZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
CMDS="$OUT/commands"
: >"$CMDS"
for c in "${CASES[@]}"; do
  IFS='|' read -r fam name wl args <<<"$c"
  [ -n "$CASEF" ] && ! [[ "$name" =~ $CASEF ]] && continue
  [[ "$args$wl" == *"$SHARED"* ]] && [ ! -d "$SHARED" ] && { echo "  $name: skipped ($SHARED absent)"; continue; }
  mkdir -p "$OUT/$fam/$name"
  common="$LOOM tune $wl $args --target $TARGET --batch 16 --pretrain $PRETRAIN $PTARGET $PBUDGET $REMEASURE -q --json"
  [ "$REF" -gt 0 ] && echo "$common --trials $REF --strategy evolutionary --seed 100 --db $OUT/$fam/$name/reference" >>"$CMDS"
  for s in $STRATS; do
    for seed in $SEEDS; do
      echo "$common --trials $TRIALS --strategy $s --seed $seed --db $OUT/$fam/$name/$s-$seed" >>"$CMDS"
    done
  done
  for v in "${VARIANTS[@]}"; do
    for seed in $SEEDS; do
      echo "$common --trials $TRIALS --strategy evolutionary ${v#*:} --seed $seed --db $OUT/$fam/$name/evolutionary~${v%%:*}-$seed" >>"$CMDS"
    done
  done
done
t0=$(date +%s)
[ -n "$REPORT" ] && : >"$CMDS"
xargs -P "$JOBS" -I{} sh -c '{} >/dev/null 2>&1 || echo "failed: {}" >&2' <"$CMDS"
echo "  $(wc -l <"$CMDS") campaigns in $(( $(date +%s) - t0 )) s"
/usr/bin/python3 - "$OUT" "$TRIALS" "$CPU" <<'PY'
import json, math, os, sys
out, budget, cpu = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def gm(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")
def load(path):
    recs, rem = [], {}
    with open(os.path.join(path, "records.jsonl")) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if "remeasure" in r:   # re-measured (--cpu): median of the rounds
                s = sorted(x for x in r["remeasure"].get("samples", []) if x is not None)
                if s:
                    rem["default" if r["remeasure"].get("default") else r["schedule"]] = s[len(s) // 2]
                continue
            recs.append(r["latency_s"] if r.get("status") == "ok" and r.get("latency_s") else math.inf)
    return recs, rem
need, fam_need, speed = {}, {}, {}
print("\n%-10s %-22s %-22s %-24s %s" % ("family", "case", "strategy", "trials to 95% per seed", "tuned / default per seed"))
for fam in sorted(d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d))):
    for case in sorted(os.listdir(os.path.join(out, fam))):
        camps, default = {}, math.inf
        for camp in sorted(os.listdir(os.path.join(out, fam, case))):
            p = os.path.join(out, fam, case, camp)
            logp = os.path.join(p, "campaign.log")
            if not os.path.exists(logp) or "done:" not in open(logp).read():
                continue  # not run, or cut short: left out
            recs, rem = load(p)
            if recs:
                default = min(default, recs[0])
            camps[camp] = (recs[1:], rem)
        if not camps:
            continue
        # the best known includes the default: where no searched schedule beats it, a strategy's
        # trials count to a schedule within 95% of the default (the 2026-11-28c run took the best
        # *searched* there, and a strategy could "reach" a schedule slower than the default)
        best = min(min((min(r) for r, _ in camps.values() if r), default=math.inf), default)
        ref = camps.pop("reference", None)
        rows = {}
        for camp, (recs, rem) in camps.items():
            s, seed = camp.rsplit("-", 1)
            t = next((i + 1 for i, l in enumerate(recs) if l <= best / 0.95), budget + 1)
            if cpu and rem.get("default") and len(rem) > 1:
                # what tune ends with and replay ships: the re-measurement's winner, the default
                # included (a default that re-measures fastest is the tuned schedule: 1.00x)
                sp = rem["default"] / min(rem.values())
            else:
                sp = default / min(recs + [default])
            rows.setdefault(s, []).append((t, sp))
            need.setdefault(s, []).append(t)
            fam_need.setdefault((fam, s), []).append(t)
            speed.setdefault(s, []).append(sp)
        for s, v in sorted(rows.items()):
            print("%-10s %-22s %-22s %-24s %s" % (fam, case, s, ", ".join(str(t) for t, _ in v),
                                                 ", ".join("%.2fx" % sp for _, sp in v)))
        print("%-10s %-22s best known %.4g s, default %.4g s: best / default %.2fx%s" %
              ("", "", best, default, default / best if best > 0 else float("nan"),
               "; reference %d trials, its best %.4g s" % (len(ref[0]), min(ref[0])) if ref and ref[0] else ""))
fams = sorted({f for f, _ in fam_need})
strats = sorted(need)
print("\ngeometric mean of trials to 95%% of the best known (a miss counts as %d), per family:" % (budget + 1))
print("%-22s %s" % ("strategy", " ".join("%9s" % f for f in fams + ["all"])))
for s in strats:
    print("%-22s %s" % (s, " ".join("%9.1f" % gm(fam_need.get((f, s), [])) for f in fams) + " %9.1f" % gm(need[s])))
print("geometric mean tuned / default: " + ", ".join("%s %.2fx" % (s, gm(speed[s])) for s in strats))
# the time split of every finished campaign (campaign.log's "done:" line):
# issue 26 asks pre-training + cost model <= 10% of the wall time on every case
import re
split_re = re.compile(r"wall ([0-9.]+) s: search ([0-9.]+) s, cost model ([0-9.]+) s, compile ([0-9.]+) s, measure ([0-9.]+) s")
shares = []
print("\ntime split (campaign.log's done: line; wall includes the reference, the baselines and the re-measurement):")
for fam in sorted(d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d))):
    for case in sorted(os.listdir(os.path.join(out, fam))):
        for camp in sorted(os.listdir(os.path.join(out, fam, case))):
            logp = os.path.join(out, fam, case, camp, "campaign.log")
            if not os.path.exists(logp) or camp == "reference":
                continue
            done = [l for l in open(logp) if " done: " in l]
            m = split_re.search(done[-1]) if done else None
            if not m:
                continue
            wall, search, cm, comp, meas = (float(x) for x in m.groups())
            shares.append((cm / wall if wall > 0 else 0.0, case, camp))
            print("  %-22s %-22s wall %6.1f s: search %5.1f s, cost model %5.1f s (%4.1f%%), compile %5.1f s, measure %6.1f s"
                  % (case, camp, wall, search, cm, 100 * cm / wall if wall > 0 else 0, comp, meas))
if shares:
    worst = max(shares)
    print("largest cost-model share: %.1f%% (%s %s); goal <= 10%%: %s"
          % (100 * worst[0], worst[1], worst[2], "met" if worst[0] <= 0.10 else "NOT met"))
if all(k in need for k in ("evolutionary", "metaschedule", "random")):
    e, m, r = (gm(need[k]) for k in ("evolutionary", "metaschedule", "random"))
    worse = [f for f in fams if gm(fam_need.get((f, "evolutionary"), [])) > gm(fam_need.get((f, "metaschedule"), []))]
    print("evolutionary / metaschedule %.2f (goal <= 0.5: %s), evolutionary / random %.2f (goal <= 0.2: %s); "
          "families where evolutionary is worse than metaschedule: %s"
          % (e / m, "met" if e / m <= 0.5 else "NOT met", e / r, "met" if e / r <= 0.2 else "NOT met",
             ", ".join(worse) or "none"))
PY
