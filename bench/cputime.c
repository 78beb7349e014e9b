/* One-thread CPU-time measurement of loom kernels (cputime.h). */
#include "cputime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"

double loom_bench_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double loom_bench_wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fail(const char *who, const char *what, const loom_error *err)
{
    fprintf(stderr, "%s: %s: %s\n", who, what, err->msg);
    exit(2);
}

loom_dataset *loom_bench_load(loom_program *prog, const char *tensor, const char *mtx, const char *param,
                              int64_t value, const char *who)
{
    loom_error err;
    loom_error_clear(&err);
    loom_data_spec spec;
    snprintf(spec.tensor, sizeof spec.tensor, "%s", tensor);
    snprintf(spec.path, sizeof spec.path, "%s", mtx);
    loom_param_spec par;
    snprintf(par.name, sizeof par.name, "%s", param);
    par.value = value;
    loom_dataset *ds = NULL;
    if (loom_dataset_load(prog, &spec, 1, &par, 1, 1, &ds, &err))
        fail(who, "loading the data", &err);
    return ds;
}

loom_kernel_fn loom_bench_build_kernel(const loom_schedule *sch, loom_module *mod, const char *dump, const char *who)
{
    return loom_bench_build_kernel_opts(sch, NULL, mod, dump, who);
}

loom_kernel_fn loom_bench_build_kernel_opts(const loom_schedule *sch, const loom_build_opts *opts, loom_module *mod,
                                            const char *dump, const char *who)
{
    loom_error err;
    loom_error_clear(&err);
    lir_func *f = NULL;
    char *src = NULL;
    if (loom_lower(sch, &f, &err))
        fail(who, "lowering", &err);
    if (loom_codegen_c(f, "loom_kernel", &src, &err))
        fail(who, "generating C", &err);
    if (dump) {
        FILE *fp = fopen(dump, "w");
        if (fp) {
            fputs(src, fp);
            fclose(fp);
        }
    }
    if (loom_build(src, "loom_kernel", opts, mod, &err))
        fail(who, "compiling", &err);
    free(src);
    loom_lir_func_free(f);
    return mod->fn;
}

void loom_bench_check_kernel(loom_kernel_fn fn, loom_dataset *ds, const loom_reference *ref, const char *who,
                             const char *label)
{
    loom_dataset_fill_outputs(ds, 12345.0f);
    if (fn(ds->t) != 0) {
        fprintf(stderr, "%s: the %s kernel failed\n", who, label);
        exit(1);
    }
    loom_check chk;
    loom_reference_check(ds, ref, &chk);
    if (!chk.correct) {
        fprintf(stderr, "%s: the %s kernel is wrong (max rel err %g)\n", who, label, chk.max_rel_err);
        exit(1);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void loom_bench_cpu_times(const loom_kernel_fn *fn, int nk, loom_dataset *ds, int rounds, int reps, double *min,
                          double *median)
{
    loom_bench_times(fn, nk, ds, rounds, reps, loom_bench_cpu_now, min, median);
}

void loom_bench_times(const loom_kernel_fn *fn, int nk, loom_dataset *ds, int rounds, int reps, double (*now)(void),
                      double *min, double *median)
{
    size_t n = (size_t)rounds * (size_t)reps;
    double *t = malloc(sizeof(double) * n * (size_t)nk);
    if (!t) {
        fprintf(stderr, "loom bench: out of memory\n");
        exit(2);
    }
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < nk; k++)
            for (int q = 0; q < reps; q++) {
                double t0 = now();
                fn[k](ds->t);
                t[(size_t)k * n + (size_t)r * (size_t)reps + (size_t)q] = now() - t0;
            }
    for (int k = 0; k < nk; k++) {
        qsort(t + (size_t)k * n, n, sizeof(double), cmp_double);
        min[k] = t[(size_t)k * n];
        median[k] = t[(size_t)k * n + n / 2];
    }
    free(t);
}
