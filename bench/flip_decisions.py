#!/usr/bin/python3
"""loom bench (issue 29): why one record is slower than another, decision by decision.

Takes two records of a database that differ in several sampling decisions -- say
the simulator's favourite (A) and the CPU's best (B) of a `loom db --fidelity`
table -- and builds, for each decision where they differ, A with that one
decision set to B's value.  All of them (A, B and the flips) are then measured
together on the CPU by build/bench/trace_cputime (interleaved rounds, the
minimum wall time over them on --threads threads: robust on a shared machine)
and simulated on the target (`loom run --target T --json`).  The table says
how much each decision costs A on the CPU and in the simulator; a flip whose
two ratios disagree (marked <==: by over 5% in opposite directions, or by over
10%) is a ranking error with its cause named.

bench/fidelity_by_decision.py --pairs finds such errors only where a campaign
happened to hold one-decision pairs; this builds the pairs it needs.  Flips
that do not replay (a decision whose value is invalid in A's context) are
reported and skipped.

Usage: bench/flip_decisions.py DB_DIR LINE_A LINE_B --target HOST.json
                               [--rounds R] [--threads T] -- WORKLOAD.loom [loom run args]
  LINE_A, LINE_B  record lines (1-based) in DB_DIR/records.jsonl
  needs build/bench/trace_cputime (make -C bench trace_cputime); LOOM (default
  build/loom) and LOOM_HOST_ISA pass through to both tools.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fidelity_by_decision import consumers  # noqa: E402


def shown(trace, idx, val):
    """a categorical decision as its candidate's value, others as recorded"""
    ins = trace["insts"][idx]
    if ins[0] == "SampleCategorical" and isinstance(val, int) and ins[2] and isinstance(ins[2][0], list) \
            and 0 <= val < len(ins[2][0]):
        return json.dumps(ins[2][0][val])
    return json.dumps(val, separators=(",", ":"))


def label(trace, idx):
    ins = trace["insts"][idx]
    used = consumers(trace["insts"])
    return "%s (%s #%d)" % (used.get(ins[3][0], "?") if ins[3] else "?", ins[0], idx)


def simulate(loom, run_args, trace_path, target):
    p = subprocess.run([loom, "run"] + run_args + ["--trace", trace_path, "--target", target, "--json"],
                       capture_output=True, text=True)
    if p.returncode or not p.stdout.strip().startswith("{"):
        return None
    return json.loads(p.stdout)["latency_s"]


def main():
    a = sys.argv[1:]
    if len(a) < 4 or "--" not in a or "--target" not in a or a[0] in ("-h", "--help"):
        print(__doc__.split("Usage:")[1].strip(), file=sys.stderr)
        sys.exit(2)
    sep = a.index("--")
    opts, run_args = a[:sep], a[sep + 1:]
    db, la, lb = opts[0], int(opts[1]), int(opts[2])
    target = opts[opts.index("--target") + 1]
    rounds = opts[opts.index("--rounds") + 1] if "--rounds" in opts else "10"
    threads = opts[opts.index("--threads") + 1] if "--threads" in opts else str(os.cpu_count() or 1)
    loom = os.environ.get("LOOM", "build/loom")
    lines = open(os.path.join(db, "records.jsonl")).read().splitlines()
    ta, tb = json.loads(lines[la - 1])["trace"], json.loads(lines[lb - 1])["trace"]
    if ta["insts"] != tb["insts"]:
        sys.exit("records %d and %d are not the same program of instructions: no decision-wise flips" % (la, lb))
    da, dbv = dict((i, v) for i, v in ta["decisions"]), dict((i, v) for i, v in tb["decisions"])
    diff = [i for i in sorted(set(da) | set(dbv)) if da.get(i) != dbv.get(i)]
    variants = [("A (record %d)" % la, ta), ("B (record %d)" % lb, tb)]
    for i in diff:
        t = json.loads(json.dumps(ta))
        t["decisions"] = [[k, dbv[k] if k == i else v] for k, v in t["decisions"]]
        variants.append(("A, %s: %s -> %s" % (label(ta, i), shown(ta, i, da.get(i)), shown(ta, i, dbv.get(i))), t))
    with tempfile.TemporaryDirectory() as tmp:
        sims, keep = [], []
        for name, t in variants:
            p = os.path.join(tmp, "t%d.json" % len(keep))
            with open(p, "w") as f:
                json.dump(t, f)
            s = simulate(loom, run_args, p, target)
            if s is None:
                print("%s: does not replay or simulate; skipped" % name)
                continue
            keep.append((name, t))
            sims.append(s)
        tl = os.path.join(tmp, "all.jsonl")
        with open(tl, "w") as f:
            for _, t in keep:
                f.write(json.dumps(t) + "\n")
        res = subprocess.run(["build/bench/trace_cputime"] + run_args + ["--rounds", rounds, "--threads", threads, tl],
                             capture_output=True, text=True)
        if res.returncode:
            sys.exit("trace_cputime failed: %s" % res.stderr.strip()[-400:])
        meas = [json.loads(l)["wall_min_s" if threads != "1" else "cpu_min_s"] for l in res.stdout.splitlines()]
    print("%d decisions differ; measured: min over %s interleaved rounds on %s threads; simulated on %s"
          % (len(diff), rounds, threads, target))
    print("%-64s %10s %7s %10s %7s" % ("variant", "measured", "vs A", "simulated", "vs A"))
    for (name, _), m, s in zip(keep, meas, sims):
        rm, rs = m / meas[0], s / sims[0]
        # the two disagree: by over 5% with opposite directions (or one flat), or by over 10%
        flag = "  <==" if abs(rm - rs) > 0.05 and (rm - 1) * (rs - 1) <= 0.0025 or abs(rm - rs) > 0.10 else ""
        print("%-64s %8.1f us %6.2fx %8.1f us %6.2fx%s" % (name[:64], m * 1e6, rm, s * 1e6, rs, flag))


if __name__ == "__main__":
    main()
