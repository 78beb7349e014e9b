#!/usr/bin/python3
"""loom bench (issue 29): the simulator's cycle terms per record, and other ways to combine them.

The simulator turns each core's counters in a region into cycles by one formula
(runtime/sim/sim.h "Cycles"; runtime/sim/sim_cycles.c).  Trying another formula
on a campaign's records normally means simulating every record again.  This
script keeps the terms instead:

  collect  runs every record of a database on the simulator with LOOM_SIM_DUMP
           set (sim.h "Cycles": one line per core and region on stderr) and
           writes the terms, with the simulated cycles, to a JSON file;
  score    recombines the terms with combine() below -- a copy of
           sim_cycles.c's formula -- and prints, against the measured
           latencies of a `loom db --fidelity --json` file (bench/fidelity.sh,
           or fidelity_1t.py's re-measured CASE.fidelity.json): Spearman,
           top-1 regret, the median simulated / measured, and the median of
           recombined / simulated cycles (1.0000 while combine() is the
           simulator's own formula: the check that the copy is exact).

Edit combine() (or pass --set NAME=VALUE for the knobs it reads) to score a
variant in seconds; a variant worth keeping then goes into sim_cycles.c and is
rescored for real (docs/simulator.md).  Not exact: the chip's DRAM-bandwidth
bound of a region is not in the terms (it binds only kernels that stream from
memory on every core).

Usage:
  bench/sim_terms.py collect DB_DIR OUT.json --target HOST.json -- WORKLOAD.loom [loom run args]
  bench/sim_terms.py score TERMS.json FIDELITY.json --target HOST.json [--set NAME=VALUE]...
"""
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fidelity_1t import spearman  # noqa: E402


def collect(db, out, target, run_args):
    loom = os.environ.get("LOOM", "build/loom")
    recs = []
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(db, "records.jsonl")) as f:
            for line_no, line in enumerate(f, 1):
                r = json.loads(line)
                if r.get("status") != "ok" or "trace" not in r:
                    continue
                tp = os.path.join(tmp, "t.json")
                with open(tp, "w") as t:
                    json.dump(r["trace"], t)
                p = subprocess.run([loom, "run"] + run_args + ["--trace", tp, "--target", target, "--json"],
                                   capture_output=True, text=True, env=dict(os.environ, LOOM_SIM_DUMP="1"))
                if p.returncode:
                    sys.exit("record %d: loom run failed: %s" % (line_no, p.stderr.strip()[-300:]))
                cores = []
                for l in p.stderr.splitlines():
                    if l.startswith("loom-sim-core "):
                        cores.append({k: float(v) for k, v in (kv.split("=") for kv in l.split()[1:])})
                    elif l.startswith("loom-sim-segs") and cores:  # the segments dump (bench/sim_segments.py)
                        cores[-1]["segs"] = [[int(a), int(b), float(c), int(q)]
                                             for a, b, c, q in (x.split(":") for x in l.split()[1:])]
                recs.append({"line": line_no, "schedule": r["schedule"], "cycles": json.loads(p.stdout)["cycles"],
                             "cores": cores})
    with open(out, "w") as f:
        json.dump(recs, f)
    print("%s: %d records" % (out, len(recs)))


def regions(cores):
    """the dump's lines grouped by region: a region's cores come in order 0, 1, ..."""
    out, cur = [], []
    for c in cores:
        if cur and c["core"] <= cur[-1]["core"]:
            out.append(cur)
            cur = []
        cur.append(c)
    if cur:
        out.append(cur)
    return out


def combine(d, t, knob):
    """one core's cycles in a region from its terms d; t the target file (a
    copy of loom__sim_flush's formula; knob: --set values)"""
    m = t["model"]
    instr = d["fp"] + d["ld"] + d["st"] + d["iops"]
    a, b = instr / t["issue_width"], d["chain"] * knob.get("chain", 1.0)
    p = m.get("issue_chain_norm", 0)
    ic = max(a, b) if p <= 0 or max(a, b) <= 0 else (a ** p + b ** p) ** (1 / p)
    comp = max(d["fp"] / t["fma_units"], d["ld"] / t["load_ports"], d["st"] / t["store_ports"], ic)
    bm = d["bmiss"]  # miss cycles after branch memory
    if p > 0 and d.get("braw", 0) > 0:  # model 23 "Hidden misses": only the cycles past the chain
        bm = d["bmiss"] / d["braw"] * max(0.0, d["braw"] - b)
    comp += d["extra"] + bm * knob.get("bmiss", 1.0)
    memc = d["memc"]
    ov = m.get("overlap", 0.5)
    cyc = max(comp, memc) + (1 - ov) * min(comp, memc)
    lp = knob.get("l2p", 4.0)  # model 27 "Level bandwidth": a 4-norm (0: model 19's max)
    top = max(cyc, d["l2b"])
    if lp > 0 and d["l2b"] > 0 and top > 0:
        cyc = top * ((cyc / top) ** lp + (d["l2b"] / top) ** lp) ** (1 / lp)
    else:
        cyc = top
    if d["shb"] > 0:
        cyc = math.hypot(cyc, d["shb"])
    return cyc


def score(terms, fidelity, target, knob, quiet=False):
    """Spearman, top-1 regret and the median simulated / measured of the
    records recombined with combine() (printed unless quiet)"""
    t = json.load(open(target))
    measured = {r["line"]: r["measured_s"] for r in json.load(open(fidelity))["rows"]}
    recs = [r for r in json.load(open(terms)) if r["line"] in measured]
    if len(recs) < 3:
        sys.exit("score: fewer than 3 records have both terms and a measurement (the same database?)")
    over = t["model"].get("parallel_overhead_ns", 0) * t["ghz"]
    sim, ms, check = [], [], []
    for r in recs:
        cyc = 0.0
        for reg in regions(r["cores"]):
            cyc += max(combine(d, t, knob) for d in reg) + (over if reg[0]["par"] else 0)
        sim.append(cyc / (t["ghz"] * 1e9))
        ms.append(measured[r["line"]])
        check.append(cyc / r["cycles"] if r["cycles"] > 0 else 1.0)
    best = min(range(len(ms)), key=lambda i: ms[i])
    fav = min(range(len(sim)), key=lambda i: sim[i])
    fig = (spearman(sim, ms), ms[fav] / ms[best], statistics.median(s / m for s, m in zip(sim, ms)))
    if not quiet:
        print("records %d  spearman %.3f  regret %.2fx  simulated/measured %.2fx  (recombined/simulated %.4f)"
              % ((len(recs),) + fig + (statistics.median(check),)))
    return fig


def main():
    a = sys.argv[1:]
    if len(a) < 3 or a[0] not in ("collect", "score") or "--target" not in a:
        print(__doc__.split("Usage:")[1].strip(), file=sys.stderr)
        sys.exit(2)
    i = a.index("--target")
    target = a[i + 1]
    if a[0] == "collect":
        if "--" not in a:
            sys.exit("collect: the loom run arguments follow --")
        return collect(a[1], a[2], target, a[a.index("--") + 1:])
    knob = {}
    for k, v in enumerate(a):
        if v == "--set" and k + 1 < len(a):
            name, val = a[k + 1].split("=", 1)
            knob[name] = float(val)
    return score(a[1], a[2], target, knob)


if __name__ == "__main__":
    main()
