/* The dense-contraction space (modules/dense.c) and what it needs from the
 * lowering: a K-blocked register tile (CacheWrite with a reduction loop
 * outside its loop: the copy-out accumulates), whose outer tiles sit in a
 * fused parallel loop.  Kernels are checked against a naive triple loop
 * written here (double precision), which shares no code with loom. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../modules/builtin.h"
#include "../modules/module.h"
#include "../runtime/measure/pipeline.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "../runtime/machine/machine.h"
#include "fixture.h"

/* C = A B by the triple loop, from the data set's A and B */
static double *naive_gemm(const loom_dataset *ds, const loom_program *prog)
{
    const loom_tensor_abi *A = &ds->t[loom_program_find_tensor(prog, "A")];
    const loom_tensor_abi *B = &ds->t[loom_program_find_tensor(prog, "B")];
    int64_t M = A->dims[0], K = A->dims[1], N = B->dims[1];
    double *C = calloc((size_t)(M * N), sizeof *C);
    cr_assert_not_null(C);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += (double)A->vals[i * K + k] * B->vals[k * N + j];
            C[i * N + j] = s;
        }
    return C;
}

/* Run sch and compare C with the triple loop. */
static void run_against_naive(const loom_schedule *sch, fx_loaded *L, const char *what)
{
    loom_dataset_fill_outputs(L->ds, 12345.0f); /* a copy-out that forgot to add would keep it */
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0;
    o.measure.min_repeats = 1;
    o.measure.time_limit = 60;
    loom_run_result res;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_pipeline_run_schedule(sch, L->ds, NULL, &o, &res, &err), LOOM_OK, "%s: %s", what, err.msg);
    cr_assert_eq(res.status, LOOM_OK, "%s: %s", what, res.message);
    double *want = naive_gemm(L->ds, L->prog);
    const loom_tensor_abi *C = &L->ds->t[loom_program_find_tensor(L->prog, "C")];
    int64_t n = C->dims[0] * C->dims[1];
    for (int64_t e = 0; e < n; e++)
        cr_assert(fabs(C->vals[e] - want[e]) <= 1e-4 * (1 + fabs(want[e])), "%s: C[%lld] = %.7g, want %.7g", what,
                  (long long)e, C->vals[e], want[e]);
    free(want);
}

static fx_loaded gemm(const char *M, const char *N, const char *K)
{
    const char *params[] = {M, N, K, NULL};
    const char *data[] = {NULL};
    return fx_load("workloads/gemm.loom", NULL, data, params, 7);
}

static void expect_valid(const loom_schedule *s)
{
    loom_limits lim = loom_target_cpu_limits();
    loom_violation v;
    cr_assert_eq(loom_validate(s, &lim, &v, NULL), LOOM_OK, "%s", v.msg);
}

/* The register-tiled, K-blocked kernel by hand, with tiles that do not
 * divide the extents (guards): i 37 = ?x2x4, j 45 = ?x2x16, k 29 = ?x8. */
Test(dense, k_blocked_cache_write_kernel_matches_the_triple_loop, .timeout = 120)
{
    fx_loaded L = gemm("M=37", "N=45", "K=29");
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int b, l[LOOM_MAX_LOOPS], n, ti[3], tj[3], tk[2], par;
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    cr_assert_eq(loom_get_loops(s, b, l, &n, NULL), LOOM_OK); /* i, k, j */
    const int64_t fi[3] = {0, 2, 4}, fj[3] = {0, 2, 16}, fk[2] = {0, 8};
    cr_assert_eq(loom_split(s, l[0], 3, NULL, fi, ti, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_split(s, l[2], 3, NULL, fj, tj, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_split(s, l[1], 2, NULL, fk, tk, &err), LOOM_OK, "%s", err.msg);
    int order[8] = {ti[0], tj[0], tk[0], ti[1], tj[1], tk[1], ti[2], tj[2]};
    cr_assert_eq(loom_reorder(s, order, 8, &err), LOOM_OK, "%s", err.msg);
    /* the workspace at j.1 with k.0 outside: valid now (it accumulates) */
    cr_assert_eq(loom_cache_write(s, b, tj[1], &err), LOOM_OK, "%s", err.msg);
    int pair[2] = {ti[0], tj[0]};
    cr_assert_eq(loom_fuse(s, pair, 2, &par, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_parallel(s, par, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_unroll(s, ti[2], 4, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_vectorize(s, tj[2], &err), LOOM_OK, "%s", err.msg);
    expect_valid(s);
    cr_assert_eq(loom_workspace_elems(s, 0), 4 * 16, "the workspace is the 4 x 16 register tile");
    run_against_naive(s, &L, "k-blocked register tile");
    /* the generated C adds each partial into C (filled with 0 first) */
    char *src = NULL;
    cr_assert_eq(loom_pipeline_schedule_source(s, &src, &err), LOOM_OK, "%s", err.msg);
    cr_assert(strstr(src, "memset(C_vals"), "C is not zeroed before the partials are added:\n%s", src);
    cr_assert(strstr(src, "= (C_vals["), "the copy-out does not accumulate:\n%s", src);
    free(src);
    free(s);
    fx_unload(&L);
}

/* cache-write-partial still refuses a workspace at a reduction loop (it
 * would be copied out at every step); moved to a free loop it is valid. */
Test(dense, cache_write_at_a_reduction_loop_is_refused)
{
    fx_loaded L = gemm("M=16", "N=16", "K=16");
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int b, l[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    cr_assert_eq(loom_get_loops(s, b, l, &n, NULL), LOOM_OK); /* i, k, j */
    cr_assert_eq(loom_cache_write(s, b, l[1], &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_cpu_limits();
    loom_violation v;
    cr_assert_eq(loom_validate(s, &lim, &v, NULL), LOOM_ERR_SEMANTIC);
    cr_assert_str_eq(v.rule, "cache-write-partial");
    cr_assert(strstr(v.msg, "is a reduction loop"), "%s", v.msg);
    cr_assert_eq(loom_cache_write(s, b, l[0], &err), LOOM_OK, "%s", err.msg);
    expect_valid(s);
    free(s);
    fx_unload(&L);
}

Test(dense, the_space_applies_to_dense_contractions_only)
{
    fx_loaded L = gemm("M=32", "N=32", "K=32");
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom__dense_applies(s, 0), "GEMM is a dense contraction");
    int b, l[LOOM_MAX_LOOPS], n, t[2];
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    cr_assert_eq(loom_get_loops(s, b, l, &n, NULL), LOOM_OK);
    const int64_t f[2] = {0, 8};
    cr_assert_eq(loom_split(s, l[0], 2, NULL, f, t, &err), LOOM_OK, "%s", err.msg);
    cr_assert(!loom__dense_applies(s, 0), "a tiled block is left alone");
    free(s);
    fx_unload(&L);
    /* SpMM: a sparse operand */
    const char *data[] = {"A=data/cora500_adj.mtx", NULL}, *params[] = {"F=16", NULL};
    fx_loaded S = fx_load("workloads/spmm.loom", NULL, data, params, 7);
    s = malloc(sizeof *s);
    cr_assert_eq(loom_schedule_init(s, S.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert(!loom__dense_applies(s, 0), "SpMM reads a sparse A");
    free(s);
    fx_unload(&S);
}

/* The default tiles fit the register file and divide the extents; the
 * default schedule of GEMM is the dense kernel, valid and correct. */
Test(dense, default_schedule_is_a_register_tiled_kernel, .timeout = 120)
{
    fx_loaded L = gemm("M=96", "N=128", "K=80");
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    const loom_limits avx2 = {.vector_lanes = 8, .max_vector_factor = 16, .cores = 2,
                              .max_workspace_bytes = 65536, .vector_registers = 16};
    const loom_limits avx512 = {.vector_lanes = 16, .max_vector_factor = 16, .cores = 2,
                                .max_workspace_bytes = 65536, .vector_registers = 32};
    int64_t i3[3], j3[3], k2[2];
    loom__dense_default_tiles(s, 0, &avx2, i3, j3, k2);
    cr_assert_geq(i3[0] * i3[1] * i3[2], 96);
    cr_assert_lt((i3[0] - 1) * i3[1] * i3[2], 96, "a whole i.0 tile past the rows");
    cr_assert_eq(j3[0] * j3[1] * j3[2], 128);
    cr_assert_eq(k2[0] * k2[1], 80);
    int nv = (int)(j3[2] / 8);
    cr_assert(j3[2] % 8 == 0 && i3[2] * nv + nv + 1 <= 16, "AVX2 tile %lld x %lld spills", (long long)i3[2],
              (long long)j3[2]);
    cr_assert_geq(i3[2] * nv, 8, "AVX2 tile %lld x %lld has too few accumulators", (long long)i3[2],
                  (long long)j3[2]);
    loom__dense_default_tiles(s, 0, &avx512, i3, j3, k2);
    nv = (int)(j3[2] / 16);
    cr_assert(j3[2] % 16 == 0 && i3[2] * nv <= 32 && i3[2] * nv >= 8, "AVX-512 tile %lld x %lld", (long long)i3[2],
              (long long)j3[2]);
    cr_assert_eq(loom_default_schedule_for(s, &avx2, &err), LOOM_OK, "%s", err.msg);
    cr_assert_geq(s->stages[0].cache_iter, 0, "the default has no register tile");
    cr_assert(loom__dense_owned(s, 0));
    expect_valid(s);
    run_against_naive(s, &L, "default schedule");
    free(s);
    fx_unload(&L);
}

/* Issue 12: the register tile's rows need not divide the extent.  At 1024
 * rows AVX2's best tile, 6 x 16 (12 ymm accumulators), is the default; the
 * kernel of an overhanging tile (here 6 rows at 50: the last tile has 2)
 * reads clamped operand rows, has no guard inside the tile, drops the extra
 * rows in the copy-out, and matches the triple loop. */
Test(dense, overhanging_register_tile_is_clamped_and_correct, .timeout = 120)
{
    const loom_limits avx2 = {.vector_lanes = 8, .max_vector_factor = 16, .cores = 2,
                              .max_workspace_bytes = 65536, .vector_registers = 16};
    fx_loaded big = gemm("M=1024", "N=1024", "K=1024");
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, big.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int64_t i3[3], j3[3], k2[2];
    loom__dense_default_tiles(s, 0, &avx2, i3, j3, k2);
    cr_assert_eq(i3[2], 6, "AVX2's register tile at 1024 rows has %lld rows, want 6", (long long)i3[2]);
    cr_assert_eq(j3[2], 16, "AVX2's register tile at 1024 columns is %lld wide, want 16", (long long)j3[2]);
    cr_assert_geq(i3[0] * i3[1] * 6, 1024);
    fx_unload(&big);

    fx_loaded L = gemm("M=50", "N=32", "K=24");
    cr_assert_eq(loom_schedule_init(s, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int b;
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    const int64_t ti[3] = {0, 2, 6}, tj[3] = {1, 2, 16}, tk[2] = {3, 8};
    cr_assert_eq(loom__dense_schedule(s, b, &avx2, ti, tj, tk, &err), LOOM_OK, "%s", err.msg);
    expect_valid(s);
    cr_assert_eq(loom_workspace_elems(s, 0), 6 * 16);
    char *src = NULL;
    cr_assert_eq(loom_pipeline_schedule_source(s, &src, &err), LOOM_OK, "%s", err.msg);
    cr_assert(strstr(src, "LOOM_MIN(i, 49)"), "the operand rows are not clamped:\n%s", src);
    cr_assert(strstr(src, "if (((base_i + w_i) < C_d0))"), "the copy-out does not drop the extra rows:\n%s", src);
    cr_assert_null(strstr(src, " < 50)"), "a guard inside the register tile:\n%s", src);
    free(src);
    run_against_naive(s, &L, "overhanging 6 x 16 tile");
    free(s);
    fx_unload(&L);
}

/* Draws of the space with the module list: valid, and each distinct one
 * correct (a few; tests/test_property.c covers the space at large). */
Test(dense, sampled_schedules_are_valid_and_correct, .timeout = 300)
{
    fx_loaded L = gemm("M=40", "N=48", "K=24");
    loom_registry *reg = loom_registry_new();
    loom_space *sp = NULL;
    loom_error err;
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &sp, &err), LOOM_OK, "%s", err.msg);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 3);
    loom_schedule *s = malloc(sizeof *s);
    int ws = 0;
    for (int k = 0; k < 6; k++) {
        cr_assert_eq(loom_schedule_init(s, L.prog, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_space_apply(sp, s, &err), LOOM_OK, "%s", err.msg);
        expect_valid(s);
        ws += s->stages[0].cache_iter >= 0;
        run_against_naive(s, &L, "a sampled schedule");
    }
    cr_assert_eq(ws, 6, "every draw accumulates in a register tile");
    free(s);
    gsl_rng_free(rng);
    loom_space_free(sp);
    loom_registry_free(reg);
    fx_unload(&L);
}

/* AddRFactor: a dense reduction with fewer free iterations than cores
 * (here 2 rows of 512 for 4 cores) gets its reduction split, the outer tile
 * rfactored and parallel; the kernel matches a loop written here. */
Test(dense, add_rfactor_parallelizes_a_short_reduction, .timeout = 120)
{
    static const char *SRC = "tensor A(R, N) dense\ntensor r(R) dense output\nr(i) += A(i, k) * A(i, k)\n";
    const char *params[] = {"R=2", "N=512", NULL}, *data[] = {NULL};
    fx_loaded L = fx_load(NULL, SRC, data, params, 5);
    const loom_limits lim = {.vector_lanes = 8, .max_vector_factor = 16, .cores = 4, .max_workspace_bytes = 65536,
                             .vector_registers = 16};
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom__dense_rfactor_applies(s, 0, &lim));
    const loom_limits many = {.vector_lanes = 8, .max_vector_factor = 16, .cores = 2, .max_workspace_bytes = 65536};
    cr_assert(!loom__dense_rfactor_applies(s, 0, &many), "2 rows already feed 2 cores");
    loom_registry *reg = loom_registry_new();
    loom_space *sp = NULL;
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &sp, &err), LOOM_OK, "%s", err.msg);
    loom_space_set_limits(sp, &lim);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 9);
    int t = loom_program_find_tensor(L.prog, "r"), a = loom_program_find_tensor(L.prog, "A");
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(loom_schedule_init(s, L.prog, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_space_apply(sp, s, &err), LOOM_OK, "%s", err.msg);
        const loom_stage *S = &s->stages[0];
        cr_assert_geq(S->rfactor_iter, 0, "no RFactor");
        cr_assert(S->loops[0].iter == S->rfactor_iter && S->loops[0].kind == LOOM_LOOP_PARALLEL,
                  "the partials' loop is not the outer parallel loop");
        loom_violation v;
        cr_assert_eq(loom_validate(s, &lim, &v, NULL), LOOM_OK, "%s", v.msg);
        loom_dataset_fill_outputs(L.ds, 12345.0f);
        loom_run_opts o = loom_run_defaults();
        o.measure.min_seconds = 0;
        o.measure.min_repeats = 1;
        loom_run_result res;
        cr_assert_eq(loom_pipeline_run_schedule(s, L.ds, NULL, &o, &res, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(res.status, LOOM_OK, "%s", res.message);
        for (int i = 0; i < 2; i++) {
            double want = 0;
            for (int j = 0; j < 512; j++)
                want += (double)L.ds->t[a].vals[i * 512 + j] * L.ds->t[a].vals[i * 512 + j];
            cr_assert(fabs(L.ds->t[t].vals[i] - want) <= 1e-4 * (1 + want), "r[%d] = %g, want %g", i,
                      L.ds->t[t].vals[i], want);
        }
    }
    gsl_rng_free(rng);
    loom_space_free(sp);
    loom_registry_free(reg);
    free(s);
    fx_unload(&L);
}
