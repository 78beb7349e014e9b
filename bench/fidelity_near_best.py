#!/usr/bin/python3
"""loom bench (issue 29): where the simulator's ranking is lost -- among the
schedules near the best.

For each case of a re-measured fidelity directory (bench/fidelity_1t.py's
OUT: CASE.fidelity.json and the measurement sessions CASE.wallT.jsonl or
CASE.cpu.jsonl), print Spearman over all records and over the records within
RATIO (default 1.1x) of the measured best, each for the measurement against
itself (the last two sessions: the ceiling a simulator can reach) and for
the simulator.  Most of a campaign's records sit near its best, so a case's
Spearman is mostly decided by differences of a few percent.

Usage: bench/fidelity_near_best.py DIR [--ratio R]
"""
import argparse
import glob
import json
import os

from scipy.stats import spearmanr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--ratio", type=float, default=1.1)
    a = ap.parse_args()
    print("%-20s %7s %9s %9s | %8s %9s %9s" % ("case", "records", "repeat", "simulator", "near", "repeat", "simulator"))
    for fid in sorted(glob.glob(os.path.join(a.dir, "*.fidelity.json"))):
        name = os.path.basename(fid)[: -len(".fidelity.json")]
        rows = {r["schedule"]: r for r in json.load(open(fid))["rows"]}
        sess = {}
        for m in glob.glob(os.path.join(a.dir, name + ".wall*.jsonl")) + glob.glob(os.path.join(a.dir, name + ".cpu.jsonl")):
            for line in open(m):
                r = json.loads(line)
                v = r.get("wall_min_s", r.get("cpu_min_s"))
                if v:
                    sess.setdefault(r["schedule"], []).append(v)
        ks = [k for k in rows if len(sess.get(k, [])) >= 2]
        if len(ks) < 4:
            print("%-20s fewer than 4 records measured twice" % name)
            continue
        meas = [rows[k]["measured_s"] for k in ks]
        sim = [rows[k]["simulated_s"] for k in ks]
        s1 = [sess[k][-2] for k in ks]
        s2 = [sess[k][-1] for k in ks]
        best = min(meas)
        near = [i for i, m in enumerate(meas) if m <= a.ratio * best]

        def rho(x, y, idx):
            return spearmanr([x[i] for i in idx], [y[i] for i in idx])[0] if len(idx) > 3 else float("nan")
        every = list(range(len(ks)))
        print("%-20s %7d %9.3f %9.3f | %8d %9.3f %9.3f" % (name, len(ks), rho(s1, s2, every), rho(meas, sim, every),
                                                          len(near), rho(s1, s2, near), rho(meas, sim, near)))


if __name__ == "__main__":
    main()
