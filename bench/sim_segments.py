#!/usr/bin/python3
"""loom bench (issue 29, model 24): score rules that overlap restarted latency chains, offline.

The simulator charges a core's accumulation chains (runtime/sim/sim.h "Latency
chain"); model 24 (bench/sim_model24_reorder_window_2026-12-01.patch, measured
and not merged: it ranks the attention campaigns worse) lets a buffer's chain
that restarts overlap the next ones in the reorder window.  Finding that rule
took scoring many variants on the re-measured fidelity records.  This script
does it without simulating again:

  collect  runs every record of the fidelity cases on an experiment build
           (bench/sim_chain_segments_dump_2026-12-01.patch applied to commit
           00f8654, model 23, so nothing is overlapped yet) with LOOM_SIM_DUMP
           set, keeping each core's terms (sim.h "Cycles") and its
           `loom-sim-segs` line: every restarted segment's chain cycles, binned
           by its period (instructions since the last restart, half-log2 bins),
           its chain (half-log2 bins) and what restarted it (0 a float local's
           plain assignment, 1 a plain store to the buffer, 2 a new element at
           the store site, 3 a fill);
  score    recombines the terms with bench/sim_terms.py's copy of the cycle
           formula after taking from the chain what a rule overlaps: a segment
           of period P restarted by one of --sources keeps min(1, max(P, 1) / W)
           of its chain, at most --cap segments at once, and a segment shorter
           than --min-period instructions keeps all of it; prints Spearman,
           top-1 regret and the median simulated / measured per case and ISA.

The records are those of bench/fidelity.sh --remeasure (DB_ROOT/remeasured, as
bench/fidelity_1t.py leaves them); the hosts are the calibrated target files
they were scored with (their issue_width and issue_chain_norm matter).

Usage:
  LOOM=DUMP_BUILD/loom bench/sim_segments.py collect OUT_DIR --db-root ISA=DIR --host ISA=HOST.json ...
  bench/sim_segments.py score OUT_DIR --db-root ISA=DIR --host ISA=HOST.json ... [--sources 23] [--window 512] [--cap 0]
      [--min-period 0]

ISA is a label (512, avx2); `avx2` sets LOOM_HOST_ISA=avx2 while collecting.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_terms  # noqa: E402

SHARED = os.environ.get("SHARED", "../shared/data")
CORA = ["--data", "A=data/cora_adj.mtx"]
CASES = {  # as bench/fidelity.sh
    "spmm-cora-F32": ["workloads/spmm.loom"] + CORA + ["--param", "F=32"],
    "spmm-pubmed-F128": ["workloads/spmm.loom", "--data", "A=%s/pubmed/pubmed_adj.mtx" % SHARED, "--param", "F=128"],
    "spmm-bcsstk16-F32": ["workloads/spmm.loom", "--data", "A=%s/suitesparse/bcsstk16.mtx" % SHARED,
                          "--param", "F=32"],
    "spmm-mbeacxc-F128": ["workloads/spmm.loom", "--data", "A=%s/suitesparse/mbeacxc.mtx" % SHARED,
                          "--param", "F=128"],
    "spmm-facebook-F128": ["workloads/spmm.loom", "--data", "A=%s/facebook/facebook_adj.mtx" % SHARED,
                           "--param", "F=128"],
    "sddmm-cora-D64": ["workloads/sddmm.loom", "--data", "M=data/cora_adj.mtx", "--param", "D=64"],
    "gcn2-cora": ["workloads/gcn2.loom"] + CORA + ["--data", "X=data/cora_features.mtx", "--param", "F=16",
                                                   "--param", "C=7"],
    "gemm-512": ["workloads/gemm.loom", "--param", "M=512", "--param", "N=512", "--param", "K=512"],
}


def collect_case(db, out, host, args, isa):
    """sim_terms.collect (which keeps the segments lines) under the ISA's LOOM_HOST_ISA"""
    if isa == "avx2":
        os.environ["LOOM_HOST_ISA"] = "avx2"
    else:
        os.environ.pop("LOOM_HOST_ISA", None)
    sim_terms.collect(db, out, host, args)


def overlap_combine(sources, window, cap, min_period=0):
    base = sim_terms.combine

    def combine(d, t, knob):
        red = 0.0
        for pb, _lb, v, q in d.get("segs", []):
            if q not in sources or window <= 0:
                continue
            period = max(2 ** ((pb + 0.5) / 2), 1)
            if period < min_period:
                continue
            k = max(1.0, window / period)
            if cap > 0:
                k = min(k, cap)
            red += v * (1 - 1 / k)
        d2 = dict(d)
        d2["chain"] = d["chain"] - red
        return base(d2, t, knob)
    return combine


def score(out_dir, roots, hosts, sources, window, cap, min_period):
    """sim_terms.score per case and ISA, its combine() wrapped by the rule"""
    sim_terms.combine = overlap_combine(sources, window, cap, min_period)
    for isa in roots:
        rows = []
        for case in CASES:
            path = os.path.join(out_dir, "%s.%s.json" % (case, isa))
            fid = os.path.join(roots[isa], "remeasured", case + ".fidelity.json")
            if os.path.exists(path) and os.path.exists(fid):
                rows.append((case,) + sim_terms.score(path, fid, hosts[isa], {}, quiet=True))
        print("%s (sources %s, window %g, cap %g, min period %g)" % (isa, "".join(map(str, sorted(sources))), window,
                                                                    cap, min_period))
        for case, rho, regret, units in rows:
            print("  %-20s %.3f  %.2fx  %.2fx" % (case, rho, regret, units))
        if rows:
            print("  %-20s %.3f" % ("mean", statistics.mean(r[1] for r in rows)))


def pairs(a, flag):
    out = {}
    for i, v in enumerate(a):
        if v == flag and i + 1 < len(a):
            k, p = a[i + 1].split("=", 1)
            out[k] = p
    return out


def opt(a, flag, default):
    return a[a.index(flag) + 1] if flag in a else default


def main():
    a = sys.argv[1:]
    if len(a) < 2 or a[0] not in ("collect", "score"):
        print(__doc__.split("Usage:")[1].strip(), file=sys.stderr)
        sys.exit(2)
    roots, hosts = pairs(a, "--db-root"), pairs(a, "--host")
    if not roots or set(roots) != set(hosts):
        sys.exit("give --db-root ISA=DIR and --host ISA=HOST.json for the same ISAs")
    if a[0] == "collect":
        os.makedirs(a[1], exist_ok=True)
        for isa in roots:
            for case, args in CASES.items():
                db = os.path.join(roots[isa], "remeasured", case + ".db")
                if os.path.isdir(db):
                    collect_case(db, os.path.join(a[1], "%s.%s.json" % (case, isa)), hosts[isa], args, isa)
        return
    score(a[1], roots, hosts, {int(c) for c in opt(a, "--sources", "23")}, float(opt(a, "--window", "512")),
          float(opt(a, "--cap", "0")), float(opt(a, "--min-period", "0")))


if __name__ == "__main__":
    main()
