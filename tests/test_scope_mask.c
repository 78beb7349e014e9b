/* Issue 14: a bias added once (TACO's reduction scope), a mask that
 * restricts every index (masked multi-head attention), and the simulator's
 * sampled FLOPs and CPU check of a simulated best.
 *
 * Kernels and the reference are checked against small dense evaluators
 * written here, which read only the data set's arrays (no code shared with
 * the reference interpreter or the lowering). */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"
#include "../modules/module.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/pipeline.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "../search/tune/sim_check.h"
#include "../traces/validate.h"
#include "fixture.h"

/* ---- helpers -------------------------------------------------------------- */

static void near_all(const char *what, const float *got, const double *want, int64_t n)
{
    for (int64_t k = 0; k < n; k++)
        cr_assert(fabs(got[k] - want[k]) <= 1e-4 + 1e-4 * fabs(want[k]), "%s: element %lld is %.9g, want %.9g",
                  what, (long long)k, got[k], want[k]);
}

/* Run sch on ds (it must pass the reference check) and compare output t
 * with want[0..n). */
static void run_compare(const loom_schedule *sch, loom_dataset *ds, int t, const double *want, int64_t n,
                        const char *what)
{
    loom_dataset_fill_outputs(ds, 12345.0f); /* nothing left over from an earlier run */
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0;
    o.measure.min_repeats = 1;
    o.measure.time_limit = 60;
    loom_run_result res;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_pipeline_run_schedule(sch, ds, NULL, &o, &res, &err), LOOM_OK, "%s: %s", what, err.msg);
    cr_assert_eq(res.status, LOOM_OK, "%s: %s", what, res.message);
    near_all(what, ds->t[t].vals, want, n);
}

/* The reference's values of tensor t against want. */
static void reference_compare(loom_dataset *ds, int t, const double *want, int64_t n)
{
    loom_reference *ref = NULL;
    loom_error err;
    cr_assert_eq(loom_reference_run(ds, &ref, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(ref->nvals[t], n);
    for (int64_t k = 0; k < n; k++)
        cr_assert(fabs(ref->vals[t][k] - want[k]) <= 1e-6 + 1e-6 * fabs(want[k]),
                  "reference: element %lld is %.9g, want %.9g", (long long)k, ref->vals[t][k], want[k]);
    loom_reference_free(ref);
}

static void run_default_and_naive(fx_loaded *L, int t, const double *want, int64_t n)
{
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_naive(sch, L->prog, 0, &err), LOOM_OK, "%s", err.msg);
    run_compare(sch, L->ds, t, want, n, "naive loop nest");
    cr_assert_eq(loom_schedule_init(sch, L->prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_default_schedule(sch, &err), LOOM_OK, "%s", err.msg);
    run_compare(sch, L->ds, t, want, n, "default schedule");
    free(sch);
}

/* ---- the bias rule ---------------------------------------------------------- */

static const char *BIASED_SPMV = "tensor A(N, K) csr\ntensor x(K) dense\ntensor b(N) dense\n"
                                 "tensor y(N) dense output\ny(i) = A(i, k) * x(k) + b(i)\n";

/* y = A x + b, b added once per row (also for a row without entries). */
static double *spmv_bias(const loom_dataset *ds, int A, int x, int b, int64_t n)
{
    const loom_tensor_abi *a = &ds->t[A];
    double *y = calloc((size_t)n, sizeof *y);
    for (int64_t i = 0; i < n; i++) {
        double s = 0;
        for (int32_t p = a->pos[1][i]; p < a->pos[1][i + 1]; p++)
            s += (double)a->vals[p] * ds->t[x].vals[a->crd[1][p]];
        y[i] = s + ds->t[b].vals[i];
    }
    return y;
}

Test(bias_rule, the_reduction_wraps_the_product_not_the_bias)
{
    const char *data[] = {"A=tests/data/ref_spmv3.mtx", NULL}; /* row 1 is empty */
    fx_loaded L = fx_load(NULL, BIASED_SPMV, data, NULL, 7);
    const loom_program *p = L.prog;
    /* the sum became a statement of its own; y adds b once */
    cr_assert_eq(p->nstmts, 2);
    const loom_stmt *s0 = &p->stmts[0], *s1 = &p->stmts[1];
    cr_assert_str_eq(p->tensors[s0->lhs].name, "y_sum_k");
    cr_assert_eq(s0->nvars - s0->nfree, 1, "the temporary reduces k");
    cr_assert_str_eq(p->tensors[s1->lhs].name, "y");
    cr_assert_eq(s1->nvars, s1->nfree, "y reduces nothing any more");
    cr_assert_eq(p->tensors[s0->lhs].def_stmt, 0);
    cr_assert_eq(p->tensors[s1->lhs].def_stmt, 1);
    int A = loom_program_find_tensor(p, "A"), x = loom_program_find_tensor(p, "x"),
        b = loom_program_find_tensor(p, "b"), y = loom_program_find_tensor(p, "y");
    double *want = spmv_bias(L.ds, A, x, b, 3);
    cr_assert(fabs(want[1] - L.ds->t[b].vals[1]) < 1e-12, "the empty row gets b alone");
    reference_compare(L.ds, y, want, 3);
    run_default_and_naive(&L, y, want, 3);
    free(want);
    fx_unload(&L);

    const char *cora[] = {"A=data/cora500_adj.mtx", NULL};
    L = fx_load(NULL, BIASED_SPMV, cora, NULL, 8);
    want = spmv_bias(L.ds, A, x, b, 500);
    reference_compare(L.ds, y, want, 500);
    run_default_and_naive(&L, y, want, 500);
    free(want);
    fx_unload(&L);
}

Test(bias_rule, linear_factors_stay_inside_and_calls_stop_the_scope)
{
    /* a product by a factor without k is still one statement (the sum
       distributes over it): the shipped workloads keep their statements */
    fx_loaded L = fx_load("workloads/sparse_attention.loom", NULL, (const char *const[]){"A=data/cora500_adj.mtx", NULL},
                          NULL, 1);
    cr_assert_eq(L.prog->nstmts, 5);
    fx_unload(&L);
    /* the scope stops at a call: the sum of relu(A x) over k, plus c once */
    const char *text = "tensor A(N, K) csr\ntensor x(K) dense\ntensor y(N) dense output\n"
                       "y(i) = relu(A(i, k) * x(k)) + 0.5\n";
    L = fx_load(NULL, text, (const char *const[]){"A=data/cora500_adj.mtx", NULL}, NULL, 3);
    cr_assert_eq(L.prog->nstmts, 2);
    const loom_tensor_abi *a = &L.ds->t[0];
    const float *xv = L.ds->t[1].vals;
    double want[500];
    int neg = 0, mixed = 0;
    for (int i = 0; i < 500; i++) {
        double s = 0, sr = 0;
        for (int32_t p = a->pos[1][i]; p < a->pos[1][i + 1]; p++) {
            double t = (double)a->vals[p] * xv[a->crd[1][p]];
            s += t;
            sr += fmax(t, 0);
        }
        want[i] = sr + 0.5;
        neg += s < 0;
        mixed += fabs(fmax(s, 0) + 0.5 - want[i]) > 1e-3;
    }
    cr_assert_gt(neg, 0, "no negative row sum: the test could not tell the two readings apart");
    cr_assert_gt(mixed, 0);
    reference_compare(L.ds, 2, want, 500);
    run_default_and_naive(&L, 2, want, 500);
    fx_unload(&L);
}

/* ---- masked multi-head attention ---------------------------------------------- */

/* O(h, i, :) = softmax over the stored j of row i of M of
 * M(i, j) * Q(h, i, :) . K(h, j, :) * 0.177, times V(h, j, :); rows
 * without entries stay 0.  masked = 0: every j of the row enters the
 * softmax, absent ones with score 0 (what a dense S computed). */
static double *mha(const loom_dataset *ds, int M, int Q, int K, int V, int H, int N, int D, int masked)
{
    const loom_tensor_abi *m = &ds->t[M];
    const float *q = ds->t[Q].vals, *k = ds->t[K].vals, *v = ds->t[V].vals;
    double *out = calloc((size_t)H * N * D, sizeof *out), *s = malloc(sizeof *s * (size_t)N);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < N; i++) {
            int32_t lo = m->pos[1][i], hi = m->pos[1][i + 1];
            if (hi == lo)
                continue;
            for (int j = 0; j < N; j++)
                s[j] = masked ? -INFINITY : 0.0;
            for (int32_t p = lo; p < hi; p++) {
                int j = m->crd[1][p];
                double dot = 0;
                for (int d = 0; d < D; d++)
                    dot += (double)q[((int64_t)h * N + i) * D + d] * k[((int64_t)h * N + j) * D + d];
                s[j] = (double)m->vals[p] * dot * 0.177;
            }
            double mx = -INFINITY, l = 0;
            for (int j = 0; j < N; j++)
                mx = fmax(mx, s[j]);
            for (int j = 0; j < N; j++)
                l += isinf(s[j]) ? 0 : exp(s[j] - mx);
            for (int j = 0; j < N; j++) {
                if (isinf(s[j]))
                    continue;
                double w = exp(s[j] - mx) / l;
                for (int d = 0; d < D; d++)
                    out[((int64_t)h * N + i) * D + d] += w * v[((int64_t)h * N + j) * D + d];
            }
        }
    free(s);
    return out;
}

Test(masked_mha, every_head_iterates_the_mask, .timeout = 600)
{
    const char *data[] = {"M=data/cora500_adj.mtx", NULL}, *params[] = {"H=3", "D=16", NULL};
    fx_loaded L = fx_load("workloads/attention_graph_mha.loom", NULL, data, params, 11);
    const loom_program *p = L.prog;
    int M = loom_program_find_tensor(p, "M"), Q = loom_program_find_tensor(p, "Q"),
        K = loom_program_find_tensor(p, "K"), V = loom_program_find_tensor(p, "V"),
        O = loom_program_find_tensor(p, "O"), S = loom_program_find_tensor(p, "S"),
        P = loom_program_find_tensor(p, "P");
    /* inference: S and P are M's pattern below a dense h */
    for (int t = S; t >= 0; t = t == S ? P : -1) {
        cr_assert(loom_tensor_is_sparse(p, t), "%s inferred dense", p->tensors[t].name);
        cr_assert_eq(p->tensors[t].nbatch, 1);
        cr_assert_eq(p->tensors[t].pattern_of, M);
        cr_assert_eq(p->tensors[t].format.mode[0], 1);
        cr_assert_eq(p->tensors[t].format.mode[1], 2);
        cr_assert_eq(L.ds->t[t].nnz, 3 * L.ds->t[M].nnz);
    }
    int64_t n = 3 * 500 * 16;
    double *want = mha(L.ds, M, Q, K, V, 3, 500, 16, 1), *dense = mha(L.ds, M, Q, K, V, 3, 500, 16, 0);
    int differ = 0;
    for (int64_t k = 0; k < n; k++)
        differ += fabs(want[k] - dense[k]) > 1e-3;
    cr_assert_gt(differ, 100, "masking does not matter on this data: the test could not fail");
    reference_compare(L.ds, O, want, n);
    run_default_and_naive(&L, O, want, n);

    /* sampled schedules of the CPU design space, fused and unfused */
    loom_registry *r = loom_registry_new();
    loom_space *space = NULL;
    loom_error err;
    cr_assert_eq(loom_space_new(r, NULL, "cpu", &space, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *sch = malloc(sizeof *sch);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 4);
    int fused = 0, unfused = 0;
    for (int k = 0; k < 40 && (fused < 2 || unfused < 1); k++) {
        cr_assert_eq(loom_schedule_init(sch, p, rng, &err), LOOM_OK);
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
        loom_violation v;
        if (loom_validate(sch, fx_cpu_limits(), &v, NULL) != LOOM_OK)
            continue;
        int f = fx_rolled_stages(sch) > 0;
        if (f ? fused >= 2 : unfused >= 1)
            continue;
        run_compare(sch, L.ds, O, want, n, f ? "sampled, fused" : "sampled, unfused");
        *(f ? &fused : &unfused) += 1;
    }
    cr_assert_gt(fused, 0, "no fused schedule sampled");
    cr_assert_gt(unfused, 0, "no unfused schedule sampled");
    gsl_rng_free(rng);
    free(sch);
    loom_space_free(space);
    loom_registry_free(r);
    free(want);
    free(dense);
    fx_unload(&L);
}

/* ---- the simulator -------------------------------------------------------------- */

Test(sim_checks, sampled_dense_run_counts_finite_flops)
{
    fx_loaded L = fx_load("workloads/gemm.loom", NULL, NULL, NULL, 1);
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *sch = malloc(sizeof *sch);
    lir_func *f = NULL;
    const char *what[] = {"default schedule", "naive loop nest"};
    for (int k = 0; k < 2; k++) {
        if (k == 0) {
            cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
            cr_assert_eq(loom_default_schedule(sch, &err), LOOM_OK, "%s", err.msg);
        } else {
            cr_assert_eq(loom_schedule_naive(sch, L.prog, 0, &err), LOOM_OK, "%s", err.msg);
        }
        cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
        loom_sim_result r;
        cr_assert_eq(loom_sim_run(f, L.ds, &t, &r, &err), LOOM_OK, "%s", err.msg);
        loom_lir_func_free(f);
        cr_assert(r.sampled, "%s: 256^3 should be too large to simulate whole", what[k]);
        cr_assert(isfinite(r.flops) && isfinite(r.cycles) && isfinite(r.loads) && isfinite(r.dram_bytes),
                  "%s: flops %g cycles %g loads %g dram %g", what[k], r.flops, r.cycles, r.loads, r.dram_bytes);
        /* every multiply-add of C += A B counted once, scaled from the sample */
        double exact = 2.0 * 256 * 256 * 256;
        cr_assert(fabs(r.flops - exact) <= 0.02 * exact, "%s: %g FLOPs, want about %g", what[k], r.flops, exact);
    }
    free(sch);
    fx_unload(&L);
}

Test(sim_checks, a_simulated_best_is_checked_on_the_cpu)
{
    const char *data[] = {"A=data/cora500_adj.mtx", NULL}, *params[] = {"F=8", NULL};
    fx_loaded L = fx_load("workloads/spmm.loom", NULL, data, params, 2);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_default_schedule(sch, &err), LOOM_OK, "%s", err.msg);
    loom_reference *ref = NULL;
    cr_assert_eq(loom_reference_run(L.ds, &ref, &err), LOOM_OK, "%s", err.msg);
    char msg[512] = "";
    cr_assert_eq(loom_sim_best_check(sch, L.ds, ref, NULL, msg, sizeof msg), LOOM_OK, "%s", msg);
    /* a reference that disagrees with the kernel: the check says wrong */
    int C = loom_program_find_tensor(L.prog, "C");
    ref->vals[C][5] += 100;
    cr_assert_eq(loom_sim_best_check(sch, L.ds, ref, NULL, msg, sizeof msg), LOOM_ERR_WRONG);
    cr_assert(strstr(msg, "on the CPU the result is wrong"), "%s", msg);
    loom_reference_free(ref);
    free(sch);
    fx_unload(&L);
}
