#!/usr/bin/python3
"""Fidelity of the simulator on bench_attention's campaigns (issue 29, model 20).

bench_attention --keep-db DIR keeps its campaigns' databases (DIR/<case>-{all,unfused});
their data is drawn by the bench, so `loom db --fidelity` (which regenerates the data
and matches its fingerprint) finds none of their records.  Dense attention's simulated
latency does not depend on the values, so this script re-simulates each record's trace
with `loom run --trace T --target HOST` on loom's own data of the same shape, and prints
per database: Spearman(simulated, measured), top-1 regret (measured latency of the
simulator's favourite / the measured best) and the median simulated / measured, for
each loom binary given.

usage: bench/fidelity_attention.py LOOM[,LOOM2...] HOST.json DB...
  LOOM: loom binaries (comma-separated: one column each); HOST.json: the simulator target;
  DB: bench_attention's kept databases (their name carries N: 1x1024x64-all)."""
import json, os, subprocess, sys, tempfile

from scipy.stats import spearmanr


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    bins, host, dbs = sys.argv[1].split(","), sys.argv[2], sys.argv[3:]
    tmp = tempfile.mkdtemp(prefix="loom-fid-att-")
    for db in dbs:
        name = os.path.basename(db.rstrip("/"))
        n = name.split("x")[1]
        recs = {}
        with open(os.path.join(db, "records.jsonl")) as f:
            for line in f:
                r = json.loads(line)
                if r.get("status") == "ok" and "trace" in r and r["target"].startswith("cpu"):
                    recs.setdefault(r["schedule"], r)
        if len(recs) < 2:
            print("%s: fewer than 2 measured records" % name)
            continue
        wl = os.path.join(tmp, name + ".loom")
        with open(wl, "w") as f:
            f.write(next(iter(recs.values()))["workload_text"])
        meas, sims = [], [[] for _ in bins]
        for s, r in recs.items():
            tr = os.path.join(tmp, s + ".json")
            with open(tr, "w") as f:
                json.dump(r["trace"], f)
            meas.append(r["latency_s"])
            for k, b in enumerate(bins):
                o = subprocess.run([b, "run", wl, "--param", "N=" + n, "--trace", tr, "--target", host, "--json"],
                                   capture_output=True, text=True)
                try:
                    sims[k].append(json.loads(o.stdout)["latency_s"])
                except (ValueError, KeyError):
                    sys.exit("%s: %s: %s" % (name, s, o.stderr.strip()[-300:]))
        best = min(meas)
        cols = []
        for k in range(len(bins)):
            fav = min(range(len(meas)), key=lambda i: sims[k][i])
            ratio = sorted(x / m for x, m in zip(sims[k], meas))[len(meas) // 2]
            cols.append("%.3f / %.2fx / %.2fx" % (spearmanr(meas, sims[k]).correlation, meas[fav] / best, ratio))
        print("%-24s %2d records  %s" % (name, len(meas), "   |   ".join(cols)), flush=True)
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
