/* loom benchmark (issue 29): the one-thread CPU time of given schedules --
 * the ground truth of bench/fidelity_1t.py, robust to a shared machine.
 *
 *   trace_cputime WORKLOAD.loom [--data NAME=FILE]... [--param NAME=INT]...
 *                 [--rounds R] [--run-seconds S] [--threads T] [--cflags-b FLAGS] TRACES.jsonl
 *
 * TRACES.jsonl holds one trace (JSON, the "trace" object of a tuning
 * record) per line.  Each is replayed on the workload, lowered and compiled
 * by loom (bench/cputime.h), checked against loom's reference, then all run
 * in this process on ONE thread (OMP_NUM_THREADS=1), interleaved: R rounds
 * (default 10), in each round every kernel runs reps times, reps chosen per
 * kernel from a run after a warm-up one, so that one round of it lasts about
 * S seconds (default 0.01, at least 1 run).  Prints one line per trace, in input order:
 *   {"line": L, "cpu_min_s": ..., "cpu_median_s": ..., "runs": N, "object": "..."}
 * (the minimum and median CPU time of the thread per run,
 * CLOCK_THREAD_CPUTIME_ID, which other processes disturb far less than wall
 * time: a descheduled thread's clock stops), or
 *   {"line": L, "error": "..."} for a trace that does not replay or build.
 * With --threads T (T > 1) the kernels run on T threads (OMP_NUM_THREADS=T)
 * and are timed by the wall clock (CLOCK_MONOTONIC), the same interleaved
 * rounds: the re-measurement of a campaign's records on its own thread
 * count, each figure the least disturbed of many runs spread over the whole
 * measurement instead of one window at the time the campaign ran.  The
 * lines then read {"line": L, "wall_min_s": ..., "wall_median_s": ...,
 * "runs": N, "threads": T, "object": "..."}.  "object" is the kernel's shared
 * object in loom's cache (bench/fidelity_ir.py finds each trace's kernel
 * in callgrind's profile by it).
 * With --cflags-b FLAGS every trace is built twice, with loom's default
 * flags (variant "a") and with FLAGS appended to them (variant "b"), and
 * both kernels run in the same interleaved rounds: an A/B of compiler
 * flags that the machine's drift between two processes does not blur
 * (on the shared VM of 2026-12-02 the same kernels' minimum moved 10-30%
 * from one process to the next).  Each line then also has "variant".
 * At most 128 traces with --cflags-b, 256 without.
 * Exits 2 on bad arguments or when the workload or data do not load, 1 when
 * a kernel is wrong. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"
#include "../runtime/data/dataset.h"
#include "../runtime/machine/machine.h"
#include "../runtime/measure/build.h"
#include "../runtime/measure/measure.h"
#include "../runtime/measure/reference.h"
#include "../traces/trace.h"
#include "cputime.h"

#define WHO "trace_cputime"
#define MAXT 256
#define MAXIN 8

typedef struct args {
    const char *workload, *traces, *cflags_b;
    loom_data_spec data[MAXIN];
    loom_param_spec param[MAXIN];
    int ndata, nparam, rounds, threads;
    double run_s;
} args;

static void usage(void)
{
    fprintf(stderr, "usage: trace_cputime WORKLOAD.loom [--data NAME=FILE]... [--param NAME=INT]... [--rounds R] "
                    "[--run-seconds S] [--threads T] [--cflags-b FLAGS] TRACES.jsonl\n");
    exit(2);
}

static void split_eq(const char *s, char *name, size_t n, const char **val)
{
    const char *eq = strchr(s, '=');
    if (!eq || eq == s || (size_t)(eq - s) >= n)
        usage();
    memcpy(name, s, (size_t)(eq - s));
    name[eq - s] = 0;
    *val = eq + 1;
}

static void parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    a->rounds = 10;
    a->run_s = 0.01;
    a->threads = 1;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--data") && i + 1 < argc && a->ndata < MAXIN) {
            loom_data_spec *d = &a->data[a->ndata++];
            split_eq(argv[++i], d->tensor, sizeof d->tensor, &v);
            snprintf(d->path, sizeof d->path, "%s", v);
        } else if (!strcmp(argv[i], "--param") && i + 1 < argc && a->nparam < MAXIN) {
            loom_param_spec *p = &a->param[a->nparam++];
            split_eq(argv[++i], p->name, sizeof p->name, &v);
            p->value = atoll(v);
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            a->rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            a->threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cflags-b") && i + 1 < argc)
            a->cflags_b = argv[++i];
        else if (!strcmp(argv[i], "--run-seconds") && i + 1 < argc)
            a->run_s = atof(argv[++i]);
        else if (argv[i][0] != '-' && !a->workload)
            a->workload = argv[i];
        else if (argv[i][0] != '-' && !a->traces)
            a->traces = argv[i];
        else
            usage();
    }
    if (!a->workload || !a->traces || a->rounds < 1 || !(a->run_s > 0) || a->threads < 1 || a->threads > 1024)
        usage();
}

/* Replay trace text on prog and build it: the kernel, or NULL with *why. */
static loom_kernel_fn build_trace(const char *text, const loom_program *prog, const loom_build_opts *opts,
                                  loom_module *mod, char *why, size_t n)
{
    loom_trace *tr = NULL;
    loom_error e;
    loom_error_clear(&e);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_kernel_fn fn = NULL;
    if (!sch)
        snprintf(why, n, "out of memory");
    else if (loom_trace_from_json(text, NULL, &tr, &e) || loom_schedule_init(sch, prog, NULL, &e) ||
             loom_trace_replay(tr, sch, NULL, &e))
        snprintf(why, n, "%.250s", e.msg);
    else
        fn = loom_bench_build_kernel_opts(sch, opts, mod, NULL, WHO);
    free(sch);
    loom_trace_free(tr);
    return fn;
}

/* Runs of fn per round so that a round lasts about run_s, timed after a
 * warm-up run: a cold first run (page faults, OpenMP's threads starting,
 * a cold cache) can take 100x a warm one and left a kernel with a handful
 * of runs in all. */
static int reps_for(loom_kernel_fn fn, loom_dataset *ds, double run_s, double (*now)(void))
{
    fn(ds->t);
    double t0 = now();
    fn(ds->t);
    double t = now() - t0;
    int r = t > 0 ? (int)(run_s / t) : 1000;
    return r < 1 ? 1 : r > 1000 ? 1000 : r;
}

int main(int argc, char **argv)
{
    args a;
    parse_args(argc, argv, &a);
    char nthr[16];
    snprintf(nthr, sizeof nthr, "%d", a.threads);
    setenv("OMP_NUM_THREADS", nthr, 1); /* before the first kernel starts OpenMP */
    double (*now)(void) = a.threads > 1 ? loom_bench_wall_now : loom_bench_cpu_now;
    loom_error err;
    loom_error_clear(&err);
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    loom_reference *ref = NULL;
    if (loom_program_parse_file(a.workload, &prog, &err) ||
        loom_dataset_load(prog, a.data, a.ndata, a.param, a.nparam, 1, &ds, &err) ||
        loom_reference_run(ds, &ref, &err)) {
        fprintf(stderr, WHO ": %s: %s\n", a.workload, err.msg);
        return 2;
    }
    FILE *f = fopen(a.traces, "r");
    if (!f) {
        fprintf(stderr, WHO ": cannot open %s\n", a.traces);
        return 2;
    }
    static loom_module mod[MAXT];
    static loom_kernel_fn fn[MAXT];
    static char why[MAXT][300];
    static int reps[MAXT];
    int nt = 0;
    size_t cap = 0;
    char *line = NULL;
    /* variant b: the default flags of the kernels' ISA (loom_build's), then FLAGS */
    static char flags_b[4096];
    loom_build_opts ob;
    memset(&ob, 0, sizeof ob);
    if (a.cflags_b) {
        snprintf(flags_b, sizeof flags_b, "%s %s",
                 loom_build_default_cflags(loom_target_cpu_limits().vector_lanes * 32), a.cflags_b);
        ob.cflags = flags_b;
    }
    int nv = a.cflags_b ? 2 : 1; /* slots per trace: k * nv + variant */
    while (nt + nv <= MAXT && getline(&line, &cap, f) > 0) {
        for (int v = 0; v < nv; v++, nt++) {
            why[nt][0] = 0;
            fn[nt] = build_trace(line, prog, v ? &ob : NULL, &mod[nt], why[nt], sizeof why[nt]);
            if (fn[nt]) {
                char label[48];
                snprintf(label, sizeof label, "line %d%s", nt / nv + 1, nv == 1 ? "" : v ? " (b)" : " (a)");
                loom_bench_check_kernel(fn[nt], ds, ref, WHO, label);
                reps[nt] = reps_for(fn[nt], ds, a.run_s, now);
            }
        }
    }
    free(line);
    fclose(f);
    double *mn = calloc((size_t)nt + 1, sizeof *mn), *md = calloc((size_t)nt + 1, sizeof *md);
    for (int k = 0; k < nt; k++)
        if (fn[k]) /* one kernel at a time, rounds interleaved across kernels below */
            mn[k] = INFINITY;
    /* the machine's state in each round (runtime/measure/measure.h loom_measure_core_line_ns), probed
       after a pause that lets libgomp's spinning workers go to sleep; a kernel's figure is the round
       of its minimum (docs/tuning.md "The machine's state") */
    double *lns = calloc((size_t)nt + 1, sizeof *lns), lmin = INFINITY, lmax = 0;
    for (int r = 0; r < a.rounds; r++) {
        usleep(5000);
        double ln = loom_measure_core_line_ns();
        if (ln > 0) {
            lmin = fmin(lmin, ln);
            lmax = fmax(lmax, ln);
        }
        for (int k = 0; k < nt; k++) {
            if (!fn[k])
                continue;
            double m1, med1;
            loom_bench_times(&fn[k], 1, ds, 1, reps[k], now, &m1, &med1);
            if (m1 < mn[k])
                lns[k] = ln;
            mn[k] = fmin(mn[k], m1);
            md[k] += med1 / a.rounds; /* mean over rounds of each round's median */
        }
    }
    if (lmax > 0)
        fprintf(stderr, WHO ": a cache line between two cores took %.0f-%.0f ns a round trip over the %d rounds%s\n",
                lmin, lmax, a.rounds,
                loom_measure_core_line_moved(lmin, lmax) ? " -- the machine's state moved: kernels whose threads share "
                                                           "data measured differently from round to round"
                                                         : "");
    for (int k = 0; k < nt; k++) {
        char var[32] = "";
        if (nv == 2)
            snprintf(var, sizeof var, ", \"variant\": \"%s\"", k % 2 ? "b" : "a");
        if (fn[k] && a.threads > 1)
            printf("{\"line\": %d, \"wall_min_s\": %.9g, \"wall_median_s\": %.9g, \"runs\": %d, \"threads\": %d, "
                   "\"core_line_ns\": %.1f, \"object\": \"%s\"%s}\n",
                   k / nv + 1, mn[k], md[k], a.rounds * reps[k], a.threads, lns[k], mod[k].so_path, var);
        else if (fn[k])
            printf("{\"line\": %d, \"cpu_min_s\": %.9g, \"cpu_median_s\": %.9g, \"runs\": %d, \"object\": \"%s\"%s}\n",
                   k / nv + 1, mn[k], md[k], a.rounds * reps[k], mod[k].so_path, var);
        else
        {
            for (char *c = why[k]; *c; c++)
                if (*c == '"' || *c == '\\' || (unsigned char)*c < 32)
                    *c = ' ';
            printf("{\"line\": %d, \"error\": \"%s\"%s}\n", k / nv + 1, why[k], var);
        }
        if (fn[k])
            loom_module_close(&mod[k]);
    }
    free(mn);
    free(md);
    free(lns);
    loom_reference_free(ref);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return 0;
}
