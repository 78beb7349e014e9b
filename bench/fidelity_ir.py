#!/usr/bin/python3
"""loom bench (issue 29): does the simulator count the instructions the
compiled kernels execute?  The simulator's instruction counts against
valgrind's (callgrind's Ir, instructions retired), per parallel region,
on the re-measured records of bench/fidelity_1t.py.

For each case, with DIR the --out of a bench/fidelity_1t.py run (its
scored database CASE.db and CASE.fidelity.json):

  1. every trace is built and run once under callgrind by
     build/bench/trace_cputime_valgrind (`make -C bench
     trace_cputime_valgrind`; one thread, one round), and each kernel's
     OpenMP regions (GCC's loom_kernel._omp_fn.N, in source order) get
     their instructions per call: callgrind's self Ir / calls;
  2. every trace is simulated with LOOM_SIM_DUMP=1 on the calibrated host
     target with "cores": T (as fidelity_1t.py scores it), and each
     parallel region gets the instructions its cores were charged
     (sim.h "Cycles": fp + ld + st + iops, summed over the cores);
  3. it prints, per case: Spearman of the measured latency against the
     simulated one, against callgrind's instruction count, and of the
     simulator's instruction count against callgrind's; the median
     callgrind / simulated instructions; and what the simulator's ranking
     would be if no parallel region ran faster than callgrind's
     instructions / (T cores x IPC) for each IPC of --ipc (an upper bound
     on what getting the counts right could give, not a model).  With
     --regions, the same per region (records with the most common number
     of regions only).

Valgrind 3.19 decodes AVX2 but not AVX-512, so the kernels are built for
256-bit vectors (LOOM_HOST_ISA=avx2, which this script sets) and the
records should be a LOOM_HOST_ISA=avx2 re-measurement (on an AVX2-only
host, its native one).  Counting takes 30 s (Cora) to a few minutes
(GEMM 512) a case; the machine need not be quiet (instruction counts do
not depend on it).

Usage: bench/fidelity_ir.py --dir DIR [--cases REGEX] [--host FILE.json]
         [--threads T] [--ipc 2.5,3,4] [--regions] [--keep] [--reuse] [--records]
Run from the repository root after `make` and
`make -C bench trace_cputime_valgrind`.
"""
import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fidelity_1t import CASES, SHARED, host_with_cores, spearman  # noqa: E402

TOOL = "build/bench/trace_cputime_valgrind"
LOOM = os.environ.get("LOOM", "build/loom")


def callgrind_regions(out_file):
    """{object basename: {function: [self Ir, calls]}} for loom's cached
    kernels in a callgrind profile (name compression and subcalls
    handled: a cost line right after calls= is the call's, not the
    caller's own)."""
    names = {"ob": {}, "fn": {}}
    own = collections.defaultdict(int)
    calls = collections.defaultdict(int)
    ob = fn = cob = None
    after_call = False

    def name(kind, v):
        m = re.match(r"\((\d+)\)(?: (.*))?$", v)
        if not m:
            return v
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), v)

    with open(out_file) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line[0].isdigit() or line[0] in "+-*":
                if after_call:
                    after_call = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    own[(ob, fn)] += int(parts[1])
                continue
            key, _, v = line.partition("=")
            if key == "ob":
                ob = name("ob", v)
            elif key == "fn":
                fn = name("fn", v)
                cob = None
            elif key == "cob":
                cob = name("ob", v)
            elif key == "cfn":
                cfn = name("fn", v)
            elif key == "calls":
                calls[(cob or ob, cfn)] += int(v.split()[0])
                after_call = True
                cob = None
    res = collections.defaultdict(dict)
    for (o, f), ir in own.items():
        if o and o.endswith(".so") and f and f.startswith("loom_kernel"):
            res[os.path.basename(o)][f] = [ir, calls.get((o, f), 0)]
    return res


def real_regions(objs):
    """Instructions per call of each OpenMP region (_omp_fn.0, .1, ...) of one kernel."""
    out = []
    while "loom_kernel._omp_fn.%d" % len(out) in objs:
        ir, n = objs["loom_kernel._omp_fn.%d" % len(out)]
        out.append(ir / max(n, 1))
    return out


def sim_regions(wl, args, trace_text, target, tmp, k):
    """The simulated parallel regions of one trace: [(instructions, cycles)]
    (instructions summed over the cores, cycles the slowest core's), and the
    serial regions' cycles."""
    path = os.path.join(tmp, "t%d.json" % k)
    with open(path, "w") as f:
        f.write(trace_text)
    env = dict(os.environ, LOOM_SIM_DUMP="1")
    p = subprocess.run([LOOM, "run", wl] + args + ["--trace", path, "--target", target, "--json"],
                       capture_output=True, text=True, env=env)
    if p.returncode:
        return None, 0.0
    regs, serial, cur = [], 0.0, None
    for line in p.stderr.splitlines():
        if not line.startswith("loom-sim-core "):
            continue
        g = {a: float(b) for a, b in (kv.split("=") for kv in line.split()[1:])}
        n = g["fp"] + g["ld"] + g["st"] + g["iops"]
        if not g["par"]:
            serial += g["cyc"]
            continue
        if g["core"] == 0:
            cur = [0.0, 0.0]
            regs.append(cur)
        cur[0] += n
        cur[1] = max(cur[1], g["cyc"])
    return regs, serial


def one_case(case, wl, args, a, target, tmp):
    base = os.path.join(a.dir, case)
    fid = json.load(open(base + ".fidelity.json"))
    # the scored database's records, in its line order (the rows' "line")
    traces = [json.dumps(json.loads(x)["trace"]) for x in open(os.path.join(base + ".db", "records.jsonl"))]
    tfile = os.path.join(tmp, case + ".traces.jsonl")
    with open(tfile, "w") as f:
        f.write("\n".join(traces) + "\n")
    rows = {r["line"]: r for r in fid["rows"]}
    tool_args = [TOOL, wl] + args + ["--rounds", "1", "--run-seconds", "1e-9", tfile]
    p = subprocess.run(tool_args, capture_output=True, text=True)
    objs = {}
    for line in p.stdout.splitlines():
        d = json.loads(line)
        if "object" in d:
            objs[d["line"]] = os.path.basename(d["object"])
    cg_out = os.path.join(a.dir if a.keep or a.reuse else tmp, case + ".callgrind.out")
    # --reuse: the count a --keep run left (the same traces, the same build)
    if not (a.reuse and os.path.exists(cg_out) and os.path.getsize(cg_out) > 0):
        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg_out] + tool_args,
                           capture_output=True, text=True)
        if p.returncode:
            print("%s: valgrind failed: %s" % (case, p.stderr.strip()[-300:]))
            return
    real = callgrind_regions(cg_out)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as ex:
        sims = list(ex.map(lambda k: sim_regions(wl, args, traces[k - 1], target, tmp, k), sorted(rows)))
    recs = []
    for line, (sregs, serial) in zip(sorted(rows), sims):
        rr = real_regions(real.get(objs.get(line), {}))
        if not sregs or not rr or len(rr) != len(sregs):
            continue
        recs.append((rows[line]["measured_s"], rows[line]["simulated_s"], sregs, serial, rr, line))
    if len(recs) < 3:
        print("%s: only %d records with matching regions" % (case, len(recs)))
        return
    meas = [r[0] for r in recs]
    sim_instr = [sum(x[0] for x in r[2]) for r in recs]
    real_instr = [sum(r[4]) for r in recs]
    bounds = []
    for ipc in a.ipc:
        est = [r[3] + sum(max(cyc, ir / (a.threads * ipc)) for (si, cyc), ir in zip(r[2], r[4])) for r in recs]
        bounds.append("%.3f" % spearman(meas, est))
    print("%-20s %7d %9.3f %9.3f %9.3f %9.2fx   %s" % (
        case, len(recs), spearman(meas, [r[1] for r in recs]), spearman(meas, real_instr),
        spearman(sim_instr, real_instr), statistics.median(b / s for b, s in zip(real_instr, sim_instr)),
        " ".join(bounds)))
    if a.records:
        with open(os.path.join(a.dir, case + ".ir.jsonl"), "w") as f:
            for r in recs:
                f.write(json.dumps({"line": r[5], "measured_s": r[0], "simulated_s": r[1],
                                    "sim_instructions": sum(x[0] for x in r[2]), "callgrind_ir": sum(r[4]),
                                    "regions": [{"sim_instructions": si, "sim_cycles": cyc, "callgrind_ir": ir}
                                                for (si, cyc), ir in zip(r[2], r[4])]}) + "\n")
    if a.regions:
        nreg = collections.Counter(len(r[2]) for r in recs).most_common(1)[0][0]
        same = [r for r in recs if len(r[2]) == nreg]
        for i in range(nreg):
            s = [r[2][i][0] for r in same]
            c = [r[4][i] for r in same]
            q = sorted(b / x for b, x in zip(c, s) if x > 0)
            print("    region %d of %d (%d records): callgrind %8.0f instructions (median), callgrind/sim "
                  "%.2f [%.2f-%.2f], Spearman(sim, callgrind) %.3f" % (
                      i, nreg, len(same), statistics.median(c), statistics.median(q), q[len(q) // 10],
                      q[len(q) * 9 // 10], spearman(s, c)))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="a bench/fidelity_1t.py --out directory")
    ap.add_argument("--cases", default="")
    ap.add_argument("--host", default="", help="the calibrated host target (default: loom calibrate --show's)")
    ap.add_argument("--threads", type=int, default=2, help="cores of the simulated target (fidelity_1t's --threads)")
    ap.add_argument("--ipc", default="2.5,3,4", help="instructions a cycle for the bound columns")
    ap.add_argument("--regions", action="store_true", help="also per parallel region")
    ap.add_argument("--keep", action="store_true", help="keep DIR/CASE.callgrind.out")
    ap.add_argument("--reuse", action="store_true", help="count from DIR/CASE.callgrind.out when a --keep run left "
                    "one (a rescoring with another simulator: no valgrind run)")
    ap.add_argument("--records", action="store_true", help="write DIR/CASE.ir.jsonl: per record its line, measured "
                    "and simulated latency, simulated instructions and callgrind's Ir, and per parallel region the "
                    "simulated instructions (over the cores), cycles (the slowest core's) and callgrind's Ir per call")
    a = ap.parse_args()
    a.ipc = [float(x) for x in a.ipc.split(",") if x]
    if not shutil.which("valgrind"):
        sys.exit("fidelity_ir.py: valgrind is not installed (apt-get install valgrind)")
    if not os.access(TOOL, os.X_OK):
        sys.exit("fidelity_ir.py: %s is missing: run make -C bench trace_cputime_valgrind" % TOOL)
    os.environ["LOOM_HOST_ISA"] = "avx2"  # valgrind decodes no AVX-512
    tmp = tempfile.mkdtemp(prefix="loom-fidelity-ir-")
    try:
        target, src = host_with_cores(a.host, tmp, a.threads)
        print("kernels built for AVX2 (LOOM_HOST_ISA=avx2), counted by callgrind on one thread; simulator: %s "
              "with cores = %d" % (src, a.threads))
        print("%-20s %7s %9s %9s %9s %10s   %s" % ("case", "records", "sp(sim)", "sp(Ir)", "sim~Ir", "Ir/sim",
                                                   "sp(sim, regions >= Ir/(T x IPC)) IPC " +
                                                   ",".join("%g" % x for x in a.ipc)))
        for case, wl, args in CASES:
            if a.cases and not re.search(a.cases, case):
                continue
            if any(SHARED in x for x in args) and not os.path.isdir(SHARED):
                print("%s: skipped (%s absent)" % (case, SHARED))
                continue
            if not os.path.exists(os.path.join(a.dir, case + ".fidelity.json")):
                print("%s: skipped (no %s/%s.fidelity.json)" % (case, a.dir, case))
                continue
            one_case(case, wl, args, a, target, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
