#!/usr/bin/env bash
# loom bench: build/loom-mpi on the simulator target (issue 31; docs/distributed.md).
#
# Trials per second of two campaigns (spmm on sim:spr-2c, evolutionary, seed 1:
# "small", Cora-500 with F = 16, ~15 ms a candidate; "cora", Cora with F = 64,
# ~50 ms a candidate) under `mpirun -np R` for R = 1, 2, 4 on this host, then
# the same figure estimated for 16, 64 and 256 ranks from the measured times:
#   S  = rank 0's search + cost model seconds per round (campaign.log),
#   tc = seconds from dispatch to result per candidate with one worker (R = 2;
#        loom-mpi's last line: the child's time on the worker plus the messages),
#   B  = candidates per round (--batch);
#   a round with W = R - 1 workers takes S + ceil(B / W) * tc, so
#   trials/s = B / (S + ceil(B / W) * tc); rank 0's search is the bottleneck
#   once ceil(B / W) * tc < S, and nothing gains past W = B (one candidate a
#   worker a round).  R = 1 has no worker: rank 0 simulates the batch itself.
#
#   bash bench/bench_mpi.sh [--trials N] [--batch B]     (defaults 96 and 32)
#
# The host has 2 cores: 4 ranks are oversubscribed, and the figures taken
# while other jobs run are noisy (say so when quoting them).
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=96
BATCH=32
while [ $# -gt 0 ]; do
  case "$1" in
    --trials) TRIALS=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    *) echo "usage: bench_mpi.sh [--trials N] [--batch B]" >&2; exit 2 ;;
  esac
done
command -v mpirun >/dev/null || { echo "bench_mpi: mpirun not found (make mpi)"; exit 1; }
[ -x build/loom-mpi ] || { echo "bench_mpi: build/loom-mpi not built (make mpi)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LOOM_CACHE=${LOOM_CACHE:-$PWD/build/cache}
TMP=$(mktemp -d /tmp/loom-bench-mpi.XXXXXX)
echo "bench_mpi: $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# run_case NAME "DATA ARGS": the table and the estimate for one campaign
run_case() {
  local name=$1 data=$2
  local args="workloads/spmm.loom $data --target sim:spr-2c --seed 1 --trials $TRIALS --batch $BATCH
              --remeasure 0 --quiet --workers mpi"
  echo
  echo "== $name: spmm $data, sim:spr-2c, evolutionary, $TRIALS trials, batch $BATCH"
  printf '%-6s %8s %10s %12s %12s %12s\n' ranks rounds 'loop s' 'search s/rd' 'tc s/cand' 'trials/s'
  local S_ALL="" TC2="" R
  for R in 1 2 4; do
    local D=$TMP/$name-np$R
    mpirun --oversubscribe --enable-recovery --mca btl_vader_single_copy_mechanism none -np $R \
      build/loom-mpi tune $args --db $D > $D.txt 2>&1
    # per round: candidates, search + cost model, measure (campaign.log)
    local ROUNDS CANDS SEARCH MEAS TC LOOP
    read -r ROUNDS CANDS SEARCH MEAS < <(awk '/ round [0-9]+: [0-9]+ candidates/ {
        n++; c += $4; for (i = 1; i <= NF; i++) { if ($i == "search") s += $(i+1); if ($i == "model") s += $(i+1);
        if ($i == "measure") m += $(i+1) } } END { printf "%d %d %.3f %.3f\n", n, c, s, m }' $D/campaign.log)
    TC=$(awk '/candidates measured by workers/ { for (i = 1; i <= NF; i++) if ($i == "dispatch") print $(i-3) }' $D.txt)
    TC=${TC:-$(awk -v m=$MEAS -v c=$CANDS 'BEGIN { printf "%.4f", m / c }')}
    LOOP=$(awk -v s=$SEARCH -v m=$MEAS 'BEGIN { printf "%.2f", s + m }')
    printf '%-6s %8d %10s %12.3f %12s %12.2f\n' $R $ROUNDS $LOOP "$(awk -v s=$SEARCH -v n=$ROUNDS 'BEGIN { print s / n }')" \
      $TC "$(awk -v c=$CANDS -v l=$LOOP 'BEGIN { print c / l }')"
    S_ALL="$S_ALL $(awk -v s=$SEARCH -v n=$ROUNDS 'BEGIN { print s / n }')"
    [ $R = 2 ] && TC2=$TC
  done
  local S
  S=$(echo $S_ALL | awk '{ t = 0; for (i = 1; i <= NF; i++) t += $i; printf "%.4f", t / NF }')
  echo "estimate: S = $S s search + cost model a round (mean of the runs above), tc = $TC2 s a candidate"
  echo "(2 ranks: one worker), B = $BATCH; a round takes S + ceil(B / W) * tc with W = ranks - 1 workers"
  printf '%-6s %12s %12s %s\n' ranks 'round s' 'trials/s' 'bottleneck'
  for R in 2 4 16 64 256; do
    awk -v R=$R -v S=$S -v tc=$TC2 -v B=$BATCH 'BEGIN {
      W = R - 1; per = int((B + W - 1) / W); round = S + per * tc
      what = per * tc < S ? "rank 0 search" : "measurement"; if (W >= B) what = what " (W >= batch: idle workers)"
      printf "%-6d %12.3f %12.2f %s\n", R, round, B / round, what }'
  done
}

run_case small "--data A=data/cora500_adj.mtx --param F=16"
run_case cora "--data A=data/cora_adj.mtx --param F=64"
echo
echo "(1 rank: no worker, rank 0 simulates in process.  Raw outputs: $TMP)"
