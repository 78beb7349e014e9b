/* Tests for runtime/measure/batch.c: many schedules compiled in parallel chunks,
 * measured one by one, a failed chunk recompiled kernel by kernel. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../modules/generic.h"
#include "../runtime/measure/batch.h"
#include "../runtime/lower/lower.h"
#include "fixture.h"

typedef struct fixture {
    loom_program *prog;
    loom_dataset *ds;
    loom_reference *ref;
} fixture;

static void load_spmm(fixture *fx)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=data/cora_adj.mtx", "F=8"};
    fx->prog = fx_bind("workloads/spmm.loom", args, 2, 5, &fx->ds);
    cr_assert_eq(loom_reference_run(fx->ds, &fx->ref, &err), LOOM_OK, "%s", err.msg);
}

static void unload(fixture *fx)
{
    loom_reference_free(fx->ref);
    loom_dataset_free(fx->ds);
    loom_program_free(fx->prog);
}

/* n distinct sampled schedules of the generic program (schedules that do
 * not lower are fine: they must come back as lowering failures). */
static loom_schedule **sample(const loom_program *prog, int n, unsigned long seed)
{
    loom_error err;
    loom_error_clear(&err);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    loom_schedule **s = calloc((size_t)n, sizeof *s);
    for (int k = 0; k < n; k++) {
        s[k] = malloc(sizeof(loom_schedule));
        cr_assert_eq(loom_schedule_init(s[k], prog, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_generic_program(s[k], &err), LOOM_OK, "%s", err.msg);
    }
    gsl_rng_free(rng);
    return s;
}

typedef struct order_log {
    int n;
    int idx[64];
    loom_status st[64];
} order_log;

static void log_result(void *ctx, int index, const loom_run_result *r)
{
    order_log *l = ctx;
    l->idx[l->n] = index;
    l->st[l->n++] = r->status;
}

static loom_run_opts quick_opts(const char *cache)
{
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0;
    o.measure.min_repeats = 1;
    o.measure.warmup = 0;
    o.build.cflags = "-O1 -march=native -fopenmp -fPIC -shared -std=c11";
    o.build.cache_dir = cache;
    return o;
}

/* Parallel chunked compilation gives the same outcome as one kernel per
 * object compiled serially, and results are reported in index order. */
Test(batch, parallel_chunks_match_serial_singles, .timeout = 300)
{
    fixture fx;
    load_spmm(&fx);
    enum { N = 10 };
    loom_schedule **s = sample(fx.prog, N, 77);
    char cache[] = "/tmp/loom-test-batch-XXXXXX";
    cr_assert_not_null(mkdtemp(cache));
    loom_run_opts o = quick_opts(cache);
    loom_run_result a[N], b[N];
    order_log log = {0};
    loom_batch_opts bo = {.chunk = 3, .jobs = 2, .on_result = log_result, .ctx = &log};
    loom_batch_stats st;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_run_batch_ex((const loom_schedule *const *)s, N, fx.ds, fx.ref, &o, &bo, a, &st, &err),
                 LOOM_OK, "%s", err.msg);
    loom_batch_opts serial = {.chunk = 1, .jobs = 1};
    cr_assert_eq(loom_run_batch_ex((const loom_schedule *const *)s, N, fx.ds, fx.ref, &o, &serial, b, NULL, &err),
                 LOOM_OK, "%s", err.msg);
    cr_assert_eq(log.n, N);
    int ok = 0;
    for (int k = 0; k < N; k++) {
        cr_assert_eq(log.idx[k], k, "results reported out of order");
        cr_assert_eq(log.st[k], a[k].status);
        cr_assert_eq(a[k].status, b[k].status, "schedule %d: %s vs %s (%s)", k, loom_status_name(a[k].status),
                     loom_status_name(b[k].status), a[k].message);
        if (a[k].status == LOOM_OK) {
            ok++;
            cr_assert(a[k].correct);
            cr_assert_gt(a[k].latency_s, 0);
        }
    }
    cr_assert_gt(ok, 0);
    cr_assert_eq(st.chunk_failures, 0);
    cr_assert_geq(st.chunks, 1);
    cr_assert_leq(st.chunks, (N + 2) / 3);
    for (int k = 0; k < N; k++)
        free(s[k]);
    free(s);
    unload(&fx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
    cr_assert_eq(system(cmd), 0);
}

/* A chunk that fails to compile is recompiled kernel by kernel: only the
 * kernel the compiler rejects fails.  The "compiler" here is a wrapper that
 * rejects any source defining loom_kernel_1. */
Test(batch, failed_chunk_falls_back_to_single_kernels, .timeout = 300)
{
    fixture fx;
    load_spmm(&fx);
    loom_error err;
    loom_error_clear(&err);
    loom_schedule *naive = malloc(sizeof *naive);
    cr_assert_eq(loom_schedule_naive(naive, fx.prog, 0, &err), LOOM_OK, "%s", err.msg);
    const loom_schedule *s[3] = {naive, naive, naive};
    char dir[] = "/tmp/loom-test-batchcc-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char cc[300];
    snprintf(cc, sizeof cc, "%s/cc", dir);
    FILE *f = fopen(cc, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *.c) if grep -q 'loom_kernel_1(' \"$a\"; then "
               "echo 'rejected: loom_kernel_1' >&2; exit 1; fi;; esac; done\nexec cc \"$@\"\n");
    fclose(f);
    chmod(cc, 0755);
    loom_run_opts o = quick_opts(dir);
    o.build.cc = cc;
    loom_run_result r[3];
    loom_batch_stats st;
    loom_batch_opts bo = {.chunk = 2, .jobs = 2};
    cr_assert_eq(loom_run_batch_ex(s, 3, fx.ds, fx.ref, &o, &bo, r, &st, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r[0].status, LOOM_OK, "%s", r[0].message);
    cr_assert_eq(r[1].status, LOOM_ERR_BUILD);
    cr_assert(strstr(r[1].message, "rejected: loom_kernel_1"), "%s", r[1].message);
    cr_assert_eq(r[2].status, LOOM_OK, "%s", r[2].message); /* next chunk: its only kernel is loom_kernel_0 */
    cr_assert_eq(st.chunk_failures, 1);
    free(naive);
    unload(&fx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
