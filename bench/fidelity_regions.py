#!/usr/bin/python3
"""loom bench (issue 29): the simulator against the CPU, region by region.

A whole kernel's latency hides which of its statements the simulator gets
wrong: GCN2's four statements (T1 = X W1, H1 = relu(A T1), T2 = H1 W2,
H2 = A T2) sum to within 10% of the measured total while one is simulated
at 1.8x its time and the other three at 0.4-0.5x.  This script times each
top-level statement of the generated C on the CPU and sets it beside the
simulator's cycles for the same statement.

For each record of a campaign's database (the traces of DB/records.jsonl,
or --traces FILE.jsonl, one trace per line), in record order:
  - `loom run --trace` with LOOM_CC pointing at a wrapper that inserts a
    timer (omp_get_wtime) before each top-level statement of loom_kernel
    (the `/* line N: ... */` comments codegen writes) and after the last,
    then compiles with gcc as loom would; the kernel keeps each region's
    time for up to 4,096 runs and writes the 10th percentile per region to
    a file every 128 runs (the measuring child exits without running
    destructors).  Two runs, the lower figure kept.  The timers add two
    clock reads per region, well under 1% of a region here;
  - `loom run --trace --target TARGET` with LOOM_SIM_DUMP=1: the
    simulator's per-core counters per region (sim_cycles.c), a statement's
    simulated time = its serial part before its parallel loop + the slowest
    core's cycles + the target's parallel_overhead_ns.
Printed: per region the measured and simulated 10th/50th/90th
percentiles, Spearman between the two over the records, the median
simulated / measured, and the Spearman of the simulated total against the
measured total if that region alone were simulated right (its measured
time scaled by the median simulated / measured of the whole).  Records
whose statement count differs from the majority (another fusion plan) are
left out.

Also printed: a core-to-core cache line round trip (two threads passing
a line, the ping-pong of pingpong_ns()), before and after: on a VM whose
two vCPUs are sometimes on one core complex and sometimes not, statements
that read what another core wrote (GCN2's A T1 and A T2 after the
statements producing T1 and T2) run 3x slower in the second state
(docs/simulator.md "Per-region ground truth").

Usage: bench/fidelity_regions.py --workload W.loom [--data N=F]... [--param N=V]...
          --target TARGET.json (--db DIR | --traces FILE.jsonl) [--out DIR] [--n N]
Run from the repository root after `make`; uses build/loom and gcc.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from scipy.stats import spearmanr

TIMERS = r'''
#include <stdio.h>
#include <omp.h>
static double loom__rt_t, loom__rt_s[64][4096];
static int loom__rt_n[64];
static void loom__rt_dump(void);
static void loom__rt_mark(int k)
{
    double now = omp_get_wtime();
    if (k > 0 && loom__rt_n[k - 1] < 4096)
        loom__rt_s[k - 1][loom__rt_n[k - 1]++] = now - loom__rt_t;
    loom__rt_t = now;
}
static void loom__rt_end(int k)
{
    loom__rt_mark(k);
    if (loom__rt_n[0] % 128 == 0)
        loom__rt_dump();
}
static int loom__rt_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static void loom__rt_dump(void)
{
    const char *f = getenv("LOOM_REGION_OUT");
    FILE *o = fopen(f ? f : "/dev/null", "w");
    if (!o)
        return;
    static double tmp[4096];
    for (int k = 0; k < 64 && loom__rt_n[k]; k++) {
        memcpy(tmp, loom__rt_s[k], sizeof(double) * loom__rt_n[k]);
        qsort(tmp, loom__rt_n[k], sizeof(double), loom__rt_cmp);
        fprintf(o, "region %d n=%d p10_us=%.3f median_us=%.3f\n", k, loom__rt_n[k], tmp[loom__rt_n[k] / 10] * 1e6,
                tmp[loom__rt_n[k] / 2] * 1e6);
    }
    fclose(o);
}
'''

PINGPONG = r'''
#include <stdio.h>
#include <stdatomic.h>
#include <omp.h>
static _Alignas(64) atomic_long flag;
int main(void)
{
    long n = 200000;
    double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num();
#pragma omp barrier
        if (me == 0)
            t0 = omp_get_wtime();
        for (long i = 0; i < n; i++) {
            long want = 2 * i + me;
            while (atomic_load_explicit(&flag, memory_order_acquire) != want)
                ;
            atomic_store_explicit(&flag, want + 1, memory_order_release);
        }
#pragma omp barrier
        if (me == 0)
            t1 = omp_get_wtime();
    }
    printf("%.0f\n", (t1 - t0) / n * 1e9);
    return 0;
}
'''


def instrument(src, dst):
    """the timers before each top-level statement of loom_kernel and after the last"""
    out, k, inside, last = [], 0, False, None
    for line in open(src).read().split('\n'):
        if re.match(r'^int loom_kernel\w*\(', line):
            inside = True
        if inside and re.match(r'^    /\* line \d+:', line):
            out.append('    loom__rt_mark(%d);' % k)
            k += 1
            last = True
        if inside and last and (line.startswith('    free(') or line == '    return 0;'):
            out.append('    loom__rt_end(%d);' % k)
            last = None
        out.append(line)
        if line.startswith('#include <string.h>'):
            out.append(TIMERS)
    open(dst, 'w').write('\n'.join(out))


def pingpong_ns(tmp):
    exe = os.path.join(tmp, 'pingpong')
    if not os.path.exists(exe):
        c = os.path.join(tmp, 'pingpong.c')
        open(c, 'w').write(PINGPONG)
        subprocess.run(['gcc', '-O2', '-fopenmp', c, '-o', exe], check=True)
    return int(subprocess.run([exe], capture_output=True, text=True).stdout)


def real_regions(path):
    if not os.path.exists(path):
        return None
    v = [float(m.group(1)) for m in re.finditer(r'p10_us=([\d.]+)', open(path).read())]
    return v or None


def sim_regions(text, target):
    """per statement: serial cycles before its parallel loop + the slowest core + the region overhead, in us"""
    ghz = target['ghz']
    ovh = target.get('model', {}).get('parallel_overhead_ns', 0) * ghz
    recs = [dict(kv.split('=') for kv in l.split()[1:]) for l in text.split('\n') if l.startswith('loom-sim-core')]
    out, pend, i = [], 0.0, 0
    while i < len(recs):
        if recs[i]['par'] == '0':
            pend += float(recs[i]['cyc'])
            i += 1
            continue
        cyc = []
        while i < len(recs) and recs[i]['par'] == '1' and not (cyc and recs[i]['core'] == '0'):
            cyc.append(float(recs[i]['cyc']))
            i += 1
        out.append((pend + max(cyc) + ovh) / ghz / 1e3)
        pend = 0.0
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--workload')
    ap.add_argument('--data', action='append', default=[])
    ap.add_argument('--param', action='append', default=[])
    ap.add_argument('--target')
    ap.add_argument('--db')
    ap.add_argument('--traces')
    ap.add_argument('--out')
    ap.add_argument('--n', type=int, default=0, help='only the first N records')
    ap.add_argument('--instrument', nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.instrument:
        instrument(*a.instrument)
        return
    if not a.workload or not a.target:
        ap.error('--workload and --target are required')
    if bool(a.db) == bool(a.traces):
        ap.error('one of --db and --traces')
    if a.db:
        traces = [json.dumps(json.loads(l)['trace']) for l in open(os.path.join(a.db, 'records.jsonl'))
                  if '"trace"' in l]
    else:
        traces = [l.strip() for l in open(a.traces) if l.strip()]
    if a.n:
        traces = traces[:a.n]
    out = a.out or tempfile.mkdtemp(prefix='loom-regions-')
    os.makedirs(out, exist_ok=True)
    wrap = os.path.join(out, 'cc.sh')
    me = os.path.abspath(__file__)
    open(wrap, 'w').write('#!/bin/bash\nargs=()\nfor x in "$@"; do if [[ "$x" == *.c ]]; then '
                          '/usr/bin/python3 %s --instrument "$x" "$x.t.c" || exit 1; args+=("$x.t.c"); '
                          'else args+=("$x"); fi; done\nexec gcc "${args[@]}"\n' % me)
    os.chmod(wrap, 0o755)
    target = json.load(open(a.target))
    args = [a.workload] + sum((['--data', d] for d in a.data), []) + sum((['--param', p] for p in a.param), [])
    before = pingpong_ns(out)
    rows = []
    for n, tr in enumerate(traces, 1):
        tf = os.path.join(out, '%d.json' % n)
        open(tf, 'w').write(tr + '\n')
        real = None
        for k in (1, 2):
            rf = os.path.join(out, '%d.real%d' % (n, k))
            env = dict(os.environ, LOOM_CC=wrap, LOOM_CACHE=os.path.join(out, 'cache'), LOOM_REGION_OUT=rf)
            subprocess.run(['build/loom', 'run'] + args + ['--trace', tf, '--min-time', '0.15'], env=env,
                           capture_output=True)
            v = real_regions(rf)
            if v and real and len(v) == len(real):
                real = [min(x, y) for x, y in zip(real, v)]
            elif v:
                real = v
        env = dict(os.environ, LOOM_SIM_DUMP='1')
        p = subprocess.run(['build/loom', 'run'] + args + ['--trace', tf, '--target', a.target], env=env,
                           capture_output=True, text=True)
        sim = sim_regions(p.stderr + p.stdout, target)
        if real and len(real) == len(sim):
            rows.append((n, real, sim))
        print('\r%d/%d records' % (n, len(traces)), end='', file=sys.stderr, flush=True)
    print(file=sys.stderr)
    after = pingpong_ns(out)
    print('core-to-core round trip of a cache line: %d ns before, %d ns after' % (before, after))
    if not rows:
        sys.exit('no record with timed and simulated regions (see %s)' % out)
    counts = {}
    for r in rows:
        counts[len(r[1])] = counts.get(len(r[1]), 0) + 1
    R = max(counts, key=counts.get)
    rows = [r for r in rows if len(r[1]) == R]
    real = np.array([r[1] for r in rows])
    sim = np.array([r[2] for r in rows])
    print('%d records with %d statements (%s); per-record files in %s' % (len(rows), R, counts, out))
    print('total: Spearman(simulated, measured) %.3f, median simulated / measured %.2f' %
          (spearmanr(sim.sum(1), real.sum(1))[0], np.median(sim.sum(1) / real.sum(1))))
    scale = np.median(sim.sum(1) / real.sum(1))
    print('%-8s %22s %22s %9s %9s %12s' % ('region', 'measured us p10/50/90', 'simulated us p10/50/90',
                                          'Spearman', 'sim/meas', 'if right'))
    for k in range(R):
        s2 = sim.copy()
        s2[:, k] = real[:, k] * scale
        print('%-8d %22s %22s %9.3f %9.2f %12.3f' % (
            k, '%.1f %.1f %.1f' % tuple(np.percentile(real[:, k], [10, 50, 90])),
            '%.1f %.1f %.1f' % tuple(np.percentile(sim[:, k], [10, 50, 90])),
            spearmanr(real[:, k], sim[:, k])[0], np.median(sim[:, k] / real[:, k]),
            spearmanr(s2.sum(1), real.sum(1))[0]))


if __name__ == '__main__':
    main()
