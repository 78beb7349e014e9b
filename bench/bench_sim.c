/* loom benchmark: the simulator target against the real CPU.
 *
 *   bench_sim [--schedules N] [--target NAME] [--seed S] [--min-seconds S]
 *             [--measured FILE] [--sim-only] [--threads N] [--holdout FILE]
 *             [--speed-only]
 *
 * --threads N measures with OMP_NUM_THREADS=N and simulates the target with
 * N cores: on a loaded machine (load average above the core count) a
 * 2-thread OpenMP kernel waits at its barrier for a descheduled thread and
 * its time says more about the scheduler than about the kernel; 1 thread
 * keeps the measurement meaningful.
 *
 * For each case -- SpMM (F = 32) on PubMed ($LOOM_SHARED_DATA, else
 * ../shared/data: pubmed/pubmed_adj.mtx; skipped with a message when
 * absent) and SDDMM (D = 32) on Cora (data/cora_adj.mtx):
 *   1. draw traces of the generic schedule program (modules/generic.h),
 *      gsl_rng mt19937 seeded with --seed (default 7), replay and validate
 *      them with the target's limits, keep the first N distinct valid
 *      schedules (default 240, so that >= 200 remain after failures);
 *   2. measure each on this CPU (runtime/measure/batch.h: built in chunks of 32,
 *      each run in a child process, median of >= --min-seconds (default
 *      0.02 s, >= 3 runs) after a warm-up, checked against the reference);
 *      the machine is shared, so latencies are noisy; schedules that time out
 *      (5 s) or fail are left out;
 *   3. simulate each on the target (default spr-2c) with loom_sim_run;
 *   4. print the Spearman rank correlation (gsl_stats_spearman) between
 *      simulated and measured latency over the schedules that ran, the
 *      simulator's time per schedule, and the worst rank disagreements.
 * --measured FILE keeps measured latencies (schedule hash, seconds) in FILE
 * and reuses them on the next run, so the model's parameters can be tuned
 * without re-measuring; --sim-only needs it.
 * --holdout FILE (a --measured file of the schedules the model's parameters
 * were tuned on) also prints the Spearman correlation over the schedules
 * not in FILE: run with another --seed (and more --schedules: the spaces
 * are small, so seeds share many schedules) for a held-out figure.
 * First: simulate the default and 20 sampled schedules of Cora SpMM (F = 64),
 * each 3 times (the results must agree), and print the median wall and CPU
 * time per schedule, lowering included (the goal: < 50 ms);
 * --speed-only stops after that.  LOOM_BENCH_SIM_VERBOSE=1 prints each
 * schedule's time and events, LOOM_BENCH_SIM_PRINT_SPEED=i its LIR.
 * Run from the repository root (bench/run.sh does).  Exits non-zero when a
 * case cannot be set up or a simulation fails.
 */
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../dsl/schedule/schedule.h"
#include "../dsl/ir/util.h"
#include "../modules/generic.h"
#include "../runtime/measure/batch.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "../traces/validate.h"

/* CPU seconds of the calling thread: on the shared 2-core machine the wall
 * time of a simulation includes time descheduled behind other jobs */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double median3(double a, double b, double c)
{
    return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

typedef struct opts {
    int nsched;
    const char *target;
    unsigned long seed;
    double min_seconds;
    const char *measured;
    int sim_only;
    int threads;
    int speed_only;
    const char *holdout;
} opts;

/* ---- measured-latency file: "hash seconds" lines ---- */

typedef struct mrec {
    uint64_t h;
    double s;
} mrec;

typedef struct mset {
    mrec *r;
    int n, cap;
} mset;

/* latencies reused from --measured; schedules excluded by --holdout */
static mset mfile, tuned;

static void mfile_load(mset *m, const char *path)
{
    FILE *fp = path ? fopen(path, "r") : NULL;
    if (!fp)
        return;
    unsigned long long h;
    double s;
    while (fscanf(fp, "%llx %lg", &h, &s) == 2) {
        if (m->n == m->cap) {
            m->cap = m->cap ? 2 * m->cap : 256;
            m->r = realloc(m->r, sizeof *m->r * (size_t)m->cap);
        }
        m->r[m->n++] = (mrec){h, s};
    }
    fclose(fp);
}

static int mfile_get(const mset *m, uint64_t h, double *s)
{
    for (int i = m->n - 1; i >= 0; i--)
        if (m->r[i].h == h) {
            if (s)
                *s = m->r[i].s;
            return 1;
        }
    return 0;
}

static void mfile_put(const char *path, uint64_t h, double s)
{
    FILE *fp = path ? fopen(path, "a") : NULL;
    if (fp) {
        fprintf(fp, "%016llx %.9g\n", (unsigned long long)h, s);
        fclose(fp);
    }
}

static uint64_t case_hash(uint64_t sched_hash, const char *name)
{
    return loom_fnv1a_str(sched_hash ^ 0x9e3779b97f4a7c15ULL, name);
}

/* ---- one case ---- */

static int setup(const char *workload, const char *tensor, const char *file, const char *param, int64_t value,
                 loom_program **prog, loom_dataset **ds)
{
    loom_error err;
    loom_error_clear(&err);
    if (loom_program_parse_file(workload, prog, &err) != LOOM_OK) {
        fprintf(stderr, "bench_sim: %s: %s\n", workload, err.msg);
        return -1;
    }
    loom_data_spec spec;
    snprintf(spec.tensor, sizeof spec.tensor, "%s", tensor);
    snprintf(spec.path, sizeof spec.path, "%s", file);
    loom_param_spec par;
    snprintf(par.name, sizeof par.name, "%s", param);
    par.value = value;
    if (loom_dataset_load(*prog, &spec, 1, &par, 1, 42, ds, &err) != LOOM_OK) {
        fprintf(stderr, "bench_sim: %s: %s\n", file, err.msg);
        return -1;
    }
    return 0;
}

/* the first n distinct valid schedules of the generic program */
static int sample(const loom_program *prog, const loom_limits *lim, unsigned long seed, int n, loom_schedule **out)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    loom_schedule *sch = malloc(sizeof *sch);
    uint64_t *hashes = calloc((size_t)n, sizeof *hashes);
    int k = 0;
    loom_error err;
    for (int draw = 0; draw < 200 * n && k < n; draw++) {
        if (loom_schedule_init(sch, prog, rng, &err) != LOOM_OK || loom_generic_program(sch, &err) != LOOM_OK)
            continue;
        loom_violation v;
        if (loom_validate(sch, lim, &v, NULL) != LOOM_OK)
            continue;
        uint64_t h = loom_schedule_hash(sch);
        int seen = 0;
        for (int u = 0; u < k && !seen; u++)
            seen = hashes[u] == h && loom_schedule_equal(out[u], sch);
        if (seen)
            continue;
        out[k] = malloc(sizeof(loom_schedule));
        loom_schedule_copy(out[k], sch);
        hashes[k++] = h;
    }
    free(hashes);
    free(sch);
    gsl_rng_free(rng);
    return k;
}

static int sim_one(const loom_schedule *s, const loom_dataset *ds, const loom_target *t, loom_sim_result *r,
                   double *secs, double *cpu)
{
    loom_error err;
    lir_func *f = NULL;
    double t0 = loom_now_seconds(), c0 = cpu_s();
    if (loom_lower(s, &f, &err) != LOOM_OK) {
        fprintf(stderr, "bench_sim: lowering failed: %s\n", err.msg);
        return -1;
    }
    loom_status st = loom_sim_run(f, ds, t, r, &err);
    *secs = loom_now_seconds() - t0;
    if (cpu)
        *cpu = cpu_s() - c0;
    loom_lir_func_free(f);
    if (st != LOOM_OK) {
        fprintf(stderr, "bench_sim: simulation failed: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int run_case(const char *title, const char *workload, const char *tensor, const char *file, const char *param,
                    int64_t value, const loom_target *t, const opts *o)
{
    if (access(file, R_OK)) {
        printf("%s: skipped (%s not found)\n", title, file);
        return 0;
    }
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    if (setup(workload, tensor, file, param, value, &prog, &ds))
        return -1;
    loom_limits lim = loom_target_limits(t);
    loom_limits host = loom_target_cpu_limits(); /* the CPU target's (runtime/machine/machine.h) */
    if (lim.vector_lanes > host.vector_lanes)
        lim.vector_lanes = host.vector_lanes;
    loom_schedule **sch = calloc((size_t)o->nsched, sizeof *sch);
    double t0 = loom_now_seconds();
    int n = sample(prog, &lim, o->seed, o->nsched, sch);
    double *meas = calloc((size_t)n, sizeof *meas), *sim = calloc((size_t)n, sizeof *sim);
    double *simt = calloc((size_t)n, sizeof *simt);
    int *have = calloc((size_t)n, sizeof *have);
    int nmeasured = 0;
    for (int i = 0; i < n; i++) {
        have[i] = mfile_get(&mfile, case_hash(loom_schedule_hash(sch[i]), title), &meas[i]);
        nmeasured += have[i];
    }
    double t1 = loom_now_seconds();
    int failed = 0;
    if (nmeasured < n && !o->sim_only) {
        /* measure the ones not in the file */
        loom_error err;
        loom_reference *ref = NULL;
        if (loom_reference_run(ds, &ref, &err) != LOOM_OK) {
            fprintf(stderr, "bench_sim: reference: %s\n", err.msg);
            return -1;
        }
        loom_schedule **todo = calloc((size_t)n, sizeof *todo);
        int *idx = calloc((size_t)n, sizeof *idx), nt = 0;
        for (int i = 0; i < n; i++)
            if (!have[i]) {
                idx[nt] = i;
                todo[nt++] = sch[i];
            }
        loom_run_opts ro = loom_run_defaults();
        ro.measure.min_seconds = o->min_seconds;
        ro.measure.min_repeats = 5;
        ro.measure.warmup = 1;
        ro.measure.time_limit = 5;
        loom_run_result *res = calloc((size_t)nt, sizeof *res);
        if (loom_run_batch((const loom_schedule *const *)todo, nt, ds, ref, &ro, 32, res, &err) != LOOM_OK) {
            fprintf(stderr, "bench_sim: batch: %s\n", err.msg);
            return -1;
        }
        for (int j = 0; j < nt; j++) {
            int i = idx[j];
            if (res[j].status == LOOM_OK) {
                meas[i] = res[j].latency_s;
                have[i] = 1;
                mfile_put(o->measured, case_hash(loom_schedule_hash(sch[i]), title), meas[i]);
            } else
                failed++;
        }
        free(res);
        free(todo);
        free(idx);
        loom_reference_free(ref);
    }
    double t2 = loom_now_seconds();
    /* simulate */
    double *xs = calloc((size_t)n, sizeof *xs), *ys = calloc((size_t)n, sizeof *ys);
    int m = 0, nsampled = 0;
    for (int i = 0; i < n; i++) {
        loom_sim_result r;
        if (sim_one(sch[i], ds, t, &r, &simt[i], NULL))
            return -1;
        sim[i] = r.latency_s;
        nsampled += r.sampled;
        const char *pr = getenv("LOOM_BENCH_SIM_PRINT");
        if (pr && atoi(pr) == i) {
            lir_func *f = NULL;
            loom_error e2;
            if (loom_lower(sch[i], &f, &e2) == LOOM_OK) {
                printf("schedule %d of %s: simulated %.1f us, measured %.1f us\n", i, title, 1e6 * sim[i],
                       have[i] ? 1e6 * meas[i] : -1.0);
                loom_lir_print(f, stdout);
                loom_lir_func_free(f);
            }
        }
        if (have[i]) {
            xs[m] = sim[i];
            ys[m] = meas[i];
            m++;
        }
    }
    double t3 = loom_now_seconds();
    double *work = calloc((size_t)(2 * (m ? m : 1)), sizeof *work);
    double rho = m >= 3 ? gsl_stats_spearman(xs, 1, ys, 1, (size_t)m, work) : 0;
    /* held out: the measured schedules not in the --holdout file (the
     * schedules the model's parameters were tuned on) */
    int mh = 0;
    double rho_h = 0;
    if (o->holdout) {
        double *hx = calloc((size_t)(n ? n : 1), sizeof *hx), *hy = calloc((size_t)(n ? n : 1), sizeof *hy);
        for (int i = 0; i < n; i++)
            if (have[i] && !mfile_get(&tuned, case_hash(loom_schedule_hash(sch[i]), title), NULL)) {
                hx[mh] = sim[i];
                hy[mh] = meas[i];
                mh++;
            }
        rho_h = mh >= 3 ? gsl_stats_spearman(hx, 1, hy, 1, (size_t)mh, work) : 0;
        free(hx);
        free(hy);
    }
    double med = 0;
    gsl_sort(simt, 1, (size_t)n);
    med = n ? gsl_stats_median_from_sorted_data(simt, 1, (size_t)n) : 0;
    printf("%s: %d distinct valid schedules, %d measured (%d failed or timed out), target %s\n", title, n, m, failed,
           t->name);
    printf("  Spearman(simulated, measured) = %.3f over %d schedules (goal >= 0.8)\n", rho, m);
    if (o->holdout)
        printf("  held out: Spearman = %.3f over the %d of them not in %s (the tuning set)\n", rho_h, mh, o->holdout);
    printf("  simulation: median %.2f ms per schedule, max %.2f ms, %d sampled; sampling %.1f s, measuring %.1f s, "
           "simulating %.1f s\n",
           1e3 * med, n ? 1e3 * simt[n - 1] : 0, nsampled, t1 - t0, t2 - t1, t3 - t2);
    if (getenv("LOOM_BENCH_SIM_DUMP")) {
        for (int i = 0; i < n; i++)
            if (have[i])
                printf("  dump %d sim %.17g meas %.6g\n", i, sim[i], meas[i]);
    }
    fflush(stdout);
    for (int i = 0; i < n; i++)
        free(sch[i]);
    free(sch);
    free(meas);
    free(sim);
    free(simt);
    free(have);
    free(xs);
    free(ys);
    free(work);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return 0;
}

static int sim_speed(const loom_target *t, unsigned long seed)
{
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    if (setup("workloads/spmm.loom", "A", "data/cora_adj.mtx", "F", 64, &prog, &ds))
        return -1;
    loom_limits lim = loom_target_limits(t);
    loom_schedule *sch[21];
    loom_error err;
    sch[0] = malloc(sizeof(loom_schedule));
    if (loom_schedule_naive(sch[0], prog, 0, &err) != LOOM_OK) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        return -1;
    }
    int n = 1 + sample(prog, &lim, seed, 20, sch + 1);
    double secs[21], cpus[21], def_secs = 0, def_cpu = 0;
    loom_sim_result r0;
    for (int i = 0; i < n; i++) {
        /* each schedule 3 times: the median wall and CPU time */
        loom_sim_result r;
        double w[3], c[3];
        for (int rep = 0; rep < 3; rep++) {
            loom_sim_result rr;
            if (sim_one(sch[i], ds, t, &rr, &w[rep], &c[rep]))
                return -1;
            if (rep && memcmp(&rr, &r, sizeof r)) {
                fprintf(stderr, "bench_sim: schedule %d simulated twice gave different results\n", i);
                return -1;
            }
            r = rr;
        }
        secs[i] = median3(w[0], w[1], w[2]);
        cpus[i] = median3(c[0], c[1], c[2]);
        const char *pr = getenv("LOOM_BENCH_SIM_PRINT_SPEED");
        if (pr && atoi(pr) == i) {
            lir_func *f = NULL;
            if (loom_lower(sch[i], &f, &err) == LOOM_OK) {
                loom_lir_print(f, stdout);
                loom_lir_func_free(f);
            }
        }
        if (getenv("LOOM_BENCH_SIM_VERBOSE"))
            printf("  schedule %d: %.2f ms (CPU %.2f ms), %.3g events, %.1f%% simulated, %.1f us simulated\n", i,
                   1e3 * secs[i], 1e3 * cpus[i], r.events, 100 * r.sample_fraction, 1e6 * r.latency_s);
        if (i == 0) {
            r0 = r;
            def_secs = secs[0];
            def_cpu = cpus[0];
        }
    }
    gsl_sort(secs, 1, (size_t)n);
    gsl_sort(cpus, 1, (size_t)n);
    char line[512];
    loom_sim_summary(&r0, t, line, sizeof line);
    printf("cora spmm F=64: default schedule %s\n", line);
    printf("  simulation time (lower + simulate, median of 3 runs each): default schedule %.2f ms, median of %d "
           "schedules %.2f ms, max %.2f ms (goal < 50 ms)\n",
           1e3 * def_secs, n, 1e3 * gsl_stats_median_from_sorted_data(secs, 1, (size_t)n), 1e3 * secs[n - 1]);
    printf("  CPU time of the simulating thread: default schedule %.2f ms, median %.2f ms, max %.2f ms (wall time "
           "above includes time descheduled on a loaded machine)\n",
           1e3 * def_cpu, 1e3 * gsl_stats_median_from_sorted_data(cpus, 1, (size_t)n), 1e3 * cpus[n - 1]);
    for (int i = 0; i < n; i++)
        free(sch[i]);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return 0;
}

int main(int argc, char **argv)
{
    opts o = {240, "spr-2c", 7, 0.02, NULL, 0, 0, 0, NULL};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--schedules") && i + 1 < argc)
            o.nsched = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--target") && i + 1 < argc)
            o.target = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            o.seed = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--min-seconds") && i + 1 < argc)
            o.min_seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--measured") && i + 1 < argc)
            o.measured = argv[++i];
        else if (!strcmp(argv[i], "--sim-only"))
            o.sim_only = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            o.threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--holdout") && i + 1 < argc)
            o.holdout = argv[++i];
        else if (!strcmp(argv[i], "--speed-only"))
            o.speed_only = 1;
        else {
            fprintf(stderr, "usage: bench_sim [--schedules N] [--target NAME] [--seed S] [--min-seconds S] "
                            "[--measured FILE] [--sim-only] [--threads N] [--speed-only] [--holdout FILE]\n");
            return 2;
        }
    }
    if (o.nsched < 1)
        o.nsched = 1;
    loom_target t;
    loom_error err;
    if (loom_target_load(o.target, &t, &err) != LOOM_OK) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        return 2;
    }
    if (o.threads > 0) {
        /* measured kernels run with this many OpenMP threads; the target
         * gets as many cores */
        char v[16];
        snprintf(v, sizeof v, "%d", o.threads);
        setenv("OMP_NUM_THREADS", v, 1);
        t.cores = o.threads;
    }
    mfile_load(&mfile, o.measured);
    mfile_load(&tuned, o.holdout);
    const char *shared = getenv("LOOM_SHARED_DATA");
    char pubmed[1024];
    snprintf(pubmed, sizeof pubmed, "%s/pubmed/pubmed_adj.mtx", shared && *shared ? shared : "../shared/data");
    int rc = 0;
    rc |= sim_speed(&t, o.seed);
    if (o.speed_only) {
        free(mfile.r);
        free(tuned.r);
        return rc ? 1 : 0;
    }
    char t1[64], t2[64];
    snprintf(t1, sizeof t1, "pubmed spmm F=32, %d threads", t.cores);
    snprintf(t2, sizeof t2, "cora sddmm D=32, %d threads", t.cores);
    rc |= run_case(t1, "workloads/spmm.loom", "A", pubmed, "F", 32, &t, &o);
    rc |= run_case(t2, "workloads/sddmm.loom", "M", "data/cora_adj.mtx", "D", 32, &t, &o);
    free(mfile.r);
    free(tuned.r);
    return rc ? 1 : 0;
}
