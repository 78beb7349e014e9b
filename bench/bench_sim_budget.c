/* loom bench (issue 26): what a smaller simulator event budget costs in
 * ranking and saves in time.  Draws N valid schedules of a workload's
 * design space (gsl mt19937 seed 1, as bench_space_count), lowers each, and
 * simulates it with the default event budget (LOOM_SIM_EVENT_BUDGET) and
 * with that budget divided by each DIV given; prints the CPU seconds per
 * simulation of each budget and Spearman's rank correlation of its
 * simulated latencies with the default budget's.
 *   bench_sim_budget WORKLOAD.loom [NAME=VALUE ...] [--schedules N] [--div D]... [--target T] [--dump FILE]
 * --dump FILE writes the default budget's latencies, one a line (to compare
 * two builds of the simulator).
 * Deterministic figures except the seconds (CPU time of this thread). */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../dsl/schedule/schedule.h"
#include "../modules/module.h"
#include "../runtime/data/dataset.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "../traces/validate.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const double *g_key;
static int cmp_idx(const void *a, const void *b)
{
    double x = g_key[*(const int *)a], y = g_key[*(const int *)b];
    return x < y ? -1 : x > y;
}

/* ranks (ties: average) of x[0..n) into r */
static void ranks(const double *x, int n, double *r)
{
    int *idx = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        idx[i] = i;
    g_key = x;
    qsort(idx, (size_t)n, sizeof(int), cmp_idx);
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && x[idx[j]] == x[idx[i]])
            j++;
        for (int k = i; k < j; k++)
            r[idx[k]] = 0.5 * (i + j - 1);
        i = j;
    }
    free(idx);
}

static double spearman(const double *a, const double *b, int n)
{
    double *ra = malloc(sizeof(double) * (size_t)n), *rb = malloc(sizeof(double) * (size_t)n);
    ranks(a, n, ra);
    ranks(b, n, rb);
    double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++)
        ma += ra[i] / n, mb += rb[i] / n;
    for (int i = 0; i < n; i++) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    free(ra);
    free(rb);
    return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : NAN;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_sim_budget WORKLOAD.loom [NAME=VALUE ...] [--schedules N] [--div D]... "
                        "[--target T]\n");
        return 2;
    }
    loom_error err;
    loom_error_clear(&err);
    loom_data_spec specs[LOOM_MAX_TENSORS];
    loom_param_spec params[LOOM_MAX_SIZES];
    memset(specs, 0, sizeof specs);
    memset(params, 0, sizeof params);
    int ns = 0, np = 0, n = 24, ndiv = 0;
    double div[8];
    const char *tname = "spr-2c", *dump = NULL;
    for (int k = 2; k < argc; k++) {
        const char *a = argv[k], *eq = strchr(a, '=');
        if (!strcmp(a, "--schedules") && k + 1 < argc) {
            n = atoi(argv[++k]);
            continue;
        }
        if (!strcmp(a, "--div") && k + 1 < argc && ndiv < 8) {
            div[ndiv++] = atof(argv[++k]);
            continue;
        }
        if (!strcmp(a, "--dump") && k + 1 < argc) {
            dump = argv[++k];
            continue;
        }
        if (!strcmp(a, "--target") && k + 1 < argc) {
            tname = argv[++k];
            continue;
        }
        if (!eq || ns >= LOOM_MAX_TENSORS || np >= LOOM_MAX_SIZES) {
            fprintf(stderr, "bench_sim_budget: '%s' is not NAME=VALUE\n", a);
            return 2;
        }
        size_t vl = strlen(eq + 1);
        if (strchr(eq + 1, '/') || (vl > 4 && !strcmp(eq + 1 + vl - 4, ".mtx"))) {
            snprintf(specs[ns].tensor, sizeof specs[ns].tensor, "%.*s", (int)(eq - a), a);
            snprintf(specs[ns].path, sizeof specs[ns].path, "%s", eq + 1);
            ns++;
        } else {
            snprintf(params[np].name, sizeof params[np].name, "%.*s", (int)(eq - a), a);
            params[np].value = atoll(eq + 1);
            np++;
        }
    }
    if (!ndiv)
        div[ndiv++] = 8;
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    loom_target t;
    if (loom_program_parse_file(argv[1], &prog, &err) || loom_dataset_load(prog, specs, ns, params, np, 42, &ds, &err) ||
        loom_target_load(tname, &t, &err)) {
        fprintf(stderr, "bench_sim_budget: %s\n", err.msg);
        return 2;
    }
    loom_limits lim = loom_target_limits(&t);
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    if (!reg || loom_space_new(reg, NULL, "sim", &space, &err)) {
        fprintf(stderr, "bench_sim_budget: %s\n", err.msg);
        return 2;
    }
    loom_space_set_limits(space, &lim);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1);
    loom_schedule *sch = malloc(sizeof *sch);
    double *lat = calloc((size_t)n * (size_t)(ndiv + 1), sizeof(double)), secs[9] = {0}, events[9] = {0};
    int got = 0;
    for (int d = 0; got < n && d < 100 * n; d++) {
        loom_violation v;
        lir_func *f = NULL;
        if (loom_schedule_init(sch, prog, rng, &err) || loom_space_apply(space, sch, &err) ||
            loom_validate(sch, &lim, &v, NULL) != LOOM_OK || loom_lower(sch, &f, &err))
            continue;
        int ok = 1;
        if (getenv("BENCH_SIM_LIR") && atoi(getenv("BENCH_SIM_LIR")) == got)
            loom_lir_print(f, stderr);
        for (int b = 0; b <= ndiv && ok; b++) {
            loom_sim_result r;
            double c0 = cpu_now();
            ok = !loom_sim_run_budget(f, ds, &t, b ? LOOM_SIM_EVENT_BUDGET / div[b - 1] : 0, &r, &err);
            secs[b] += cpu_now() - c0;
            events[b] += r.events;
            lat[(size_t)b * (size_t)n + (size_t)got] = r.latency_s;
            if (getenv("BENCH_SIM_VERBOSE"))
                fprintf(stderr, "schedule %d budget %d: %.6g s, %.3g events, sampled %.3f\n", got, b, r.latency_s,
                        r.events, r.sample_fraction);
        }
        loom_lir_func_free(f);
        got += ok;
    }
    printf("%s: %d schedules; default budget (%.3g events): %.3f s CPU, %.3g events per simulation\n", argv[1],
           got, LOOM_SIM_EVENT_BUDGET, secs[0] / (got ? got : 1), events[0] / (got ? got : 1));
    for (int b = 1; b <= ndiv; b++)
        printf("  budget / %g: %.3f s CPU, %.3g events per simulation (%.1fx faster), Spearman with the default "
               "budget %.4f\n",
               div[b - 1], secs[b] / (got ? got : 1), events[b] / (got ? got : 1), secs[0] / (secs[b] > 0 ? secs[b] : 1),
               spearman(lat, lat + (size_t)b * (size_t)n, got));
    for (int b = 1; b <= ndiv; b++) {
        /* |latency at this budget / at the default budget - 1|: median and max */
        double *e = malloc(sizeof(double) * (size_t)(got ? got : 1));
        for (int i = 0; i < got; i++)
            e[i] = fabs(lat[(size_t)b * (size_t)n + (size_t)i] / lat[i] - 1);
        g_key = e;
        int *ix = malloc(sizeof(int) * (size_t)(got ? got : 1));
        for (int i = 0; i < got; i++)
            ix[i] = i;
        qsort(ix, (size_t)got, sizeof(int), cmp_idx);
        if (got)
            printf("  budget / %g: relative difference from the default budget: median %.3f, max %.3f\n", div[b - 1],
                   e[ix[got / 2]], e[ix[got - 1]]);
        free(ix);
        free(e);
    }
    FILE *df = dump ? fopen(dump, "w") : NULL;
    for (int i = 0; df && i < got; i++)
        fprintf(df, "%.17g\n", lat[i]);
    if (df)
        fclose(df);
    return 0;
}
