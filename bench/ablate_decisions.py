#!/usr/bin/python3
"""Which decisions separate two schedules of one workload (issue 26: why a campaign's best
misses the best known).

    bench/ablate_decisions.py WORKLOAD.loom BASE.json BETTER.json [--target T] [loom run args...]

BASE and BETTER are traces of the same design space (a record's "trace" from records.jsonl, or
`loom sample` / `loom replay` output).  Runs BASE, BETTER, then BASE with each decision where the
two differ set to BETTER's, one at a time, each with `loom run --trace --json` on the target
(default sim:spr-2c: deterministic), and prints the latencies in microseconds: the decisions whose
move alone closes most of the gap are what the search did not try.  Traces of different
structures (an instruction list that differs) are compared decision by decision where the
instruction index exists in both; a move that no longer replays prints the error.  Extra
arguments go to `loom run` (--data, --param).  LOOM sets the loom binary (default build/loom).
"""
import copy
import json
import os
import subprocess
import sys
import tempfile


def main(argv):
    if len(argv) < 3 or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    wl, base_p, better_p = argv[:3]
    rest = argv[3:]
    target = "sim:spr-2c"
    if "--target" in rest:
        i = rest.index("--target")
        target = rest[i + 1]
        del rest[i:i + 2]
    loom = os.environ.get("LOOM", "build/loom")
    try:
        base, better = (json.load(open(p)) for p in (base_p, better_p))
    except (OSError, ValueError) as e:
        print("ablate_decisions: %s" % e, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")

        def run(t):
            with open(path, "w") as f:
                json.dump(t, f)
            r = subprocess.run([loom, "run", wl, "--trace", path, "--target", target, "--json"] + rest,
                               capture_output=True, text=True)
            try:
                return "%.1f us" % (json.loads(r.stdout)["latency_s"] * 1e6)
            except (ValueError, KeyError):
                return "failed: " + (r.stderr.strip().splitlines() or ["(no message)"])[-1][:160]

        print("%s on %s" % (wl, target))
        print("  base   %s: %s" % (base_p, run(base)))
        print("  better %s: %s" % (better_p, run(better)))
        if base.get("insts") != better.get("insts"):
            print("  (the traces' instruction lists differ: moves are by instruction index)")
        want = {d[0]: d[1] for d in better.get("decisions", [])}
        for i, (k, v) in enumerate(base.get("decisions", [])):
            if k in want and want[k] != v:
                t = copy.deepcopy(base)
                t["decisions"][i][1] = want[k]
                print("  instruction %-4d %s -> %s: %s" % (k, json.dumps(v), json.dumps(want[k]), run(t)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
