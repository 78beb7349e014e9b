#!/usr/bin/python3
"""loom bench (issue 29): the shipped winners of two or more CPU suite runs, head to head.

`bench/bench_suite.sh --cpu` reports tuned / default from each campaign's own
re-measurement (5 interleaved rounds of the top schedules and the default, at
the end of the campaign).  On a shared VM the machine's capacity changes
between campaigns run minutes apart, so two suite runs -- say one on each
simulator model, whose cost model pre-trains on the simulator -- cannot be
compared by their tables: on 2026-12-01 the same 12 x 512 x 64 attention
schedules re-measured at 3.5 ms in one run and 5.5 ms in the next.

This takes the winner (the re-measurement's `winner`, what tune ships) and the
default schedule of every case the runs share, and measures them all in ONE
process, interleaved (build/bench/trace_cputime --threads T: the minimum wall
time over R rounds), so every winner of a case sees the same machine.  Prints
per case each run's default / winner and the winners' ratio to the first run's,
and the geometric means.

Usage: bench/suite_winners.py RUN_DIR [RUN_DIR...] [--rounds R] [--threads T] [--cases REGEX]
  RUN_DIR: a bench_suite.sh --cpu output directory (its `commands` file names
  each case's workload arguments and database).  Needs build/bench/trace_cputime
  (make -C bench trace_cputime).  Run it on a quiet machine.
"""
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def cases(run):
    """{case name: (workload args for trace_cputime, database dir)} from RUN/commands"""
    out = {}
    for line in open(os.path.join(run, "commands")):
        a = shlex.split(line)
        if len(a) < 3 or a[1] != "tune" or "--db" not in a:
            continue
        db = a[a.index("--db") + 1]
        if os.path.basename(db) == "reference" or not os.path.basename(db).startswith("evolutionary"):
            continue
        wl = [a[2]]
        i = 3
        while i < len(a):
            if a[i] in ("--data", "--param") and i + 1 < len(a):
                wl += [a[i], a[i + 1]]
                i += 2
            else:
                i += 1
        out.setdefault(os.path.basename(os.path.dirname(db)), (wl, db))  # a case's first evolutionary campaign
    return out


def picks(db):
    """(winner trace, default trace) of a campaign's re-measurement, or None"""
    win = dflt = None
    for line in open(os.path.join(db, "records.jsonl")):
        r = json.loads(line)
        rem = r.get("remeasure")
        if not rem or "trace" not in r:
            continue
        if rem.get("winner"):
            win = r["trace"]
        if rem.get("default"):
            dflt = r["trace"]
    return (win, dflt) if win and dflt else None


def main():
    a = sys.argv[1:]
    runs, rounds, threads, pat = [], 10, 2, None
    i = 0
    while i < len(a):
        if a[i] == "--rounds":
            rounds = int(a[i + 1])
            i += 2
        elif a[i] == "--threads":
            threads = int(a[i + 1])
            i += 2
        elif a[i] == "--cases":
            pat = re.compile(a[i + 1])
            i += 2
        elif a[i] in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            runs.append(a[i])
            i += 1
    if len(runs) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    tool = os.path.join(ROOT, "build/bench/trace_cputime")
    if not os.access(tool, os.X_OK):
        print("suite_winners: %s not built (make -C bench trace_cputime)" % tool, file=sys.stderr)
        return 2
    per = [cases(r) for r in runs]
    names = sorted(set.intersection(*(set(p) for p in per)))
    if pat:
        names = [n for n in names if pat.search(n)]
    print("runs: " + ", ".join("%d = %s" % (k + 1, r) for k, r in enumerate(runs)))
    print("%d threads, min wall time over %d interleaved rounds (trace_cputime)" % (threads, rounds))
    print("%-40s %s %s" % ("case", " ".join("dflt/win%-3d" % (k + 1) for k in range(len(runs))),
                          " ".join("win%d/win1" % (k + 1) for k in range(1, len(runs)))))
    logs = [[] for _ in runs]
    for n in names:
        got = [picks(p[n][1]) for p in per]
        if not all(got):
            print("%-40s skipped: a run has no re-measured winner" % n)
            continue
        wl = per[0][n][0]
        # the default of the first run, then each run's winner
        traces = [got[0][1]] + [g[0] for g in got]
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for t in traces:
                f.write(json.dumps(t) + "\n")
            path = f.name
        cmd = [tool] + wl + ["--rounds", str(rounds), "--threads", str(threads), path]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        os.unlink(path)
        lat = []
        for line in p.stdout.splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            lat.append(r.get("wall_min_s", r.get("cpu_min_s")))
        if len(lat) != len(traces) or not all(lat):
            print("%-40s failed: %s" % (n, (p.stderr.strip().splitlines() or ["no output"])[-1]))
            continue
        d = lat[0]
        for k in range(len(runs)):
            logs[k].append(math.log(d / lat[1 + k]))
        print("%-40s %s %s" % (n, " ".join("%10.2fx" % (d / lat[1 + k]) for k in range(len(runs))),
                              " ".join("%8.3fx" % (lat[1 + k] / lat[1]) for k in range(1, len(runs)))),
              flush=True)
    if logs[0]:
        g = [math.exp(sum(v) / len(v)) for v in logs]
        print("%-40s %s %s" % ("geometric mean", " ".join("%10.2fx" % x for x in g),
                              " ".join("%8.3fx" % (g[0] / g[k]) for k in range(1, len(runs)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
