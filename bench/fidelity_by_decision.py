#!/usr/bin/python3
"""loom bench (issue 29): where the simulator's ranking goes wrong, decision by decision.

Joins `loom db DIR --fidelity --json` rows (schedule, record line, measured and
simulated seconds) with the records' traces (DIR/records.jsonl) and, for every
sampling decision with two or more values among the records, prints per value:
how many records, the median measured and simulated latency, and the median of
simulated / measured.  A decision whose values move the measured median but not
the simulated one (or the other way) is a model error; the ratio column says
which value the simulator gets wrong.  bench/fidelity.sh writes the inputs
(OUT/CASE/ and OUT/CASE.fidelity.json).

Each decision is named by the instruction that consumes the sampled value
(e.g. `CacheWrite`, `Annotate balance`, `PosSplit A`), then its position.

--pairs: instead, the records that differ in exactly one decision, paired:
for every decision and change of its value (a -> b), the median over the
pairs of measured(b) / measured(a) and of simulated(b) / simulated(a).  A
per-value median mixes the other decisions' values; a pair does not, so
this is where a model error shows cleanly (marked <== when the two ratios
differ by more than 15%).  With 128 records of a campaign most changes have
2-30 pairs (local exploration draws one-decision neighbours).

--effects: which decision is worth fixing.  Both log latencies, measured
and simulated, are fitted on the records' decisions (one indicator per
decision value, ridge-regularised least squares, numpy), so each value gets
an effect measured and an effect simulated with the other decisions held
apart.  Printed: the values whose two effects differ most, and per decision
the Spearman between simulated and measured latency if the simulator got
that decision's effects right (its simulated effects replaced by the
measured ones), and if it got every decision right (what the fit itself
explains; the rest is noise and interactions).  On issue 29's GCN2 records
(AVX2, 2026-12-02) the T2 tile's rows alone took 0.643 to 0.806.

Usage: bench/fidelity_by_decision.py DB_DIR FIDELITY_JSON [--min N] [--pairs | --effects]
  --min N   leave out values with fewer than N records, or changes with
            fewer than N pairs with --pairs (default 3; 2 with --pairs;
            with --effects, values held by fewer than N records or by all
            but N are not listed)
"""
import json
import math
import os
import statistics
import sys


def consumers(insts):
    """output variable -> label of the first instruction that reads it"""
    used = {}
    for k, ins in enumerate(insts):
        name, inputs, attrs = ins[0], ins[1], ins[2]
        label = name
        if name == "Annotate" and attrs and isinstance(attrs[0], str):
            label += " " + attrs[0]
        elif name in ("PosSplit",) and attrs:
            label += " " + str(attrs[0])
        for v in inputs:
            if isinstance(v, str) and v not in used:
                used[v] = "%s@%d" % (label, k)
    return used


def decision_values(trace):
    insts = trace["insts"]
    used = consumers(insts)
    out = {}
    for idx, val in trace.get("decisions", []):
        ins = insts[idx]
        name, attrs, outs = ins[0], ins[2], ins[3]
        if name == "SampleCategorical" and isinstance(val, int) and attrs and isinstance(attrs[0], list):
            shown = attrs[0][val] if 0 <= val < len(attrs[0]) else val
        else:
            shown = val
        who = used.get(outs[0], "?") if outs else "?"
        out["%s (%s #%d)" % (who, name, idx)] = json.dumps(shown, separators=(",", ":"))
    return out


def pairs(rows, traces, nmin):
    """one-decision pairs: per (decision, a -> b) the medians of the two ratios"""
    recs = []
    for row in rows:
        t = traces.get(row["schedule"])
        if t and row.get("measured_s") and row.get("simulated_s"):
            recs.append((decision_values(t), row["measured_s"], row["simulated_s"]))
    ratios = {}
    for key in sorted({k for d, _, _ in recs for k in d}):
        groups = {}
        for d, m, sim in recs:
            rest = json.dumps(sorted((k, v) for k, v in d.items() if k != key))
            groups.setdefault(rest, []).append((d.get(key), m, sim))
        for g in groups.values():
            for i, (va, ma, sa) in enumerate(g):
                for vb, mb, sb in g[i + 1:]:
                    if va == vb:
                        continue
                    if (vb or "") < (va or ""):
                        va, ma, sa, vb, mb, sb = vb, mb, sb, va, ma, sa
                    ratios.setdefault((key, va, vb), []).append((mb / ma, sb / sa))
    print("one-decision pairs: decision, change a -> b, pairs, median measured b/a, median simulated b/a")
    for (key, va, vb), r in sorted(ratios.items()):
        if len(r) < nmin:
            continue
        fm = statistics.median(x for x, _ in r)
        fs = statistics.median(y for _, y in r)
        flag = "  <==" if abs(math.log(fs / fm)) > math.log(1.15) else ""
        print("  %-40s %10s -> %-10s %3d  measured x%5.2f  simulated x%5.2f%s"
              % (key[:40], (va or "-")[:10], (vb or "-")[:10], len(r), fm, fs, flag))


def effects(rows, traces, nmin):
    """ridge fits of log measured and log simulated latency on one-hot decisions"""
    import numpy as np
    from fidelity_1t import spearman  # the same Spearman the fidelity tables use (this folder)
    recs = []
    for row in rows:
        t = traces.get(row["schedule"])
        if t and row.get("measured_s") and row.get("simulated_s"):
            recs.append((decision_values(t), row["measured_s"], row["simulated_s"]))
    if len(recs) < 8:
        sys.exit("--effects: %d records with both latencies; need 8 or more" % len(recs))
    feats = sorted({(k, v) for d, _, _ in recs for k, v in d.items()})
    x = np.array([[1.0 if d.get(k) == v else 0.0 for k, v in feats] for d, _, _ in recs])
    ym = np.log([m for _, m, _ in recs])
    ys = np.log([s for _, _, s in recs])
    a = x.T @ x + np.eye(len(feats))  # ridge 1: decisions that always move together share their effect
    bm = np.linalg.solve(a, x.T @ (ym - ym.mean()))
    bs = np.linalg.solve(a, x.T @ (ys - ys.mean()))
    held = x.sum(0)
    print("%d records: Spearman %.3f as simulated, %.3f with every decision's effects measured"
          % (len(recs), spearman(list(ys), list(ym)), spearman(list(ys + x @ (bm - bs)), list(ym))))
    print("per decision, Spearman if its simulated effects were the measured ones (the 12 that move it most):")
    base = spearman(list(ys), list(ym))
    fixed = {}
    for key in {k for k, _ in feats}:
        mask = np.array([1.0 if f[0] == key else 0.0 for f in feats])
        fixed[key] = spearman(list(ys + x @ ((bm - bs) * mask)), list(ym))
    for key in sorted(fixed, key=lambda k: -abs(fixed[k] - base))[:12]:
        print("  %-48s %.3f (%+.3f)" % (key[:48], fixed[key], fixed[key] - base))
    print("values whose effects differ most (log latency against the mean; records holding the value):")
    order = sorted(range(len(feats)), key=lambda i: -abs(bm[i] - bs[i]))
    shown = 0
    for i in order:
        if held[i] < nmin or held[i] > len(recs) - nmin:
            continue
        print("  %-40s %-14s %4d  measured %+.3f  simulated %+.3f"
              % (feats[i][0][:40], feats[i][1][:14], held[i], bm[i], bs[i]))
        shown += 1
        if shown == 12:
            break


def main():
    args = sys.argv[1:]
    if len(args) < 2 or args[0] in ("-h", "--help"):
        print(__doc__.split("Usage:")[1].strip(), file=sys.stderr)
        sys.exit(2)
    db, fid = args[0], args[1]
    paired = "--pairs" in args
    eff = "--effects" in args
    nmin = int(args[args.index("--min") + 1]) if "--min" in args else (2 if paired else 3)
    rows = json.load(open(fid))["rows"]
    traces = {}
    with open(os.path.join(db, "records.jsonl")) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if "trace" in r and "schedule" in r:
                traces.setdefault(r["schedule"], r["trace"])
    if paired:
        return pairs(rows, traces, nmin)
    if eff:
        return effects(rows, traces, nmin)
    groups = {}
    for row in rows:
        t = traces.get(row["schedule"])
        if not t or not row.get("measured_s") or not row.get("simulated_s"):
            continue
        for key, val in decision_values(t).items():
            groups.setdefault(key, {}).setdefault(val, []).append((row["measured_s"], row["simulated_s"]))
    print("%d rows of %s; per decision value: records, median measured, median simulated, "
          "median simulated / measured" % (len(rows), fid))
    for key in sorted(groups):
        vals = {v: r for v, r in groups[key].items() if len(r) >= nmin}
        if len(vals) < 2:
            continue
        print(key)
        for v, r in sorted(vals.items(), key=lambda kv: statistics.median(m for m, _ in kv[1])):
            mm = statistics.median(m for m, _ in r)
            ms = statistics.median(s for _, s in r)
            lr = statistics.median(math.log(s / m) for m, s in r)
            print("  %-24s %4d  measured %9.1f us  simulated %9.1f us  sim/measured %5.2fx"
                  % (v[:24], len(r), mm * 1e6, ms * 1e6, math.exp(lr)))


if __name__ == "__main__":
    main()
