/* Cost-model features (costmodel/features.h) on real workloads: schedules
 * that differ in one way must differ in the features that describe it; the
 * FLOPs estimated from the features agree with the reference evaluator's
 * count; every value is finite, extraction is deterministic and
 * thread-safe, the row has a fixed width and unique names. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../costmodel/features.h"
#include "../dsl/ir/util.h"
#include "../dsl/schedule/schedule.h"
#include "../modules/generic.h"
#include "../runtime/data/dataset.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/reference.h"
#include "../traces/validate.h"
#include "../runtime/machine/machine.h"

/* Estimated FLOPs of a naive schedule (sum.flops, before scaling) must be
 * within this factor of the reference's count.  Exact for loops over dense
 * extents and compressed levels (the mean entries per row times the rows is
 * the nonzero count); band(w) loops are estimated at the mean row, which
 * ignores the clipped rows at both ends (7% over for N=256, w=32). */
#define FLOPS_FACTOR 1.25

typedef struct fixture {
    loom_program *prog;
    loom_dataset *ds;
    loom_reference *ref;
    loom_data_stats st;
    loom_schedule sch;
} fixture;

/* data: "T=file" entries, params "NAME=INT"; NULL-terminated lists */
static fixture *setup(const char *path, const char *const *data, const char *const *params)
{
    fixture *fx = calloc(1, sizeof *fx);
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_program_parse_file(path, &fx->prog, &err), LOOM_OK, "%s", err.msg);
    loom_data_spec spec[4];
    loom_param_spec par[4];
    int ns = 0, np = 0;
    for (; data && data[ns]; ns++) {
        const char *eq = strchr(data[ns], '=');
        snprintf(spec[ns].tensor, sizeof spec[ns].tensor, "%.*s", (int)(eq - data[ns]), data[ns]);
        snprintf(spec[ns].path, sizeof spec[ns].path, "%s", eq + 1);
    }
    for (; params && params[np]; np++) {
        const char *eq = strchr(params[np], '=');
        snprintf(par[np].name, sizeof par[np].name, "%.*s", (int)(eq - params[np]), params[np]);
        par[np].value = atoll(eq + 1);
    }
    cr_assert_eq(loom_dataset_load(fx->prog, spec, ns, par, np, 3, &fx->ds, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_reference_run(fx->ds, &fx->ref, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_data_stats_compute(fx->ds, &fx->st, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_schedule_naive(&fx->sch, fx->prog, 1, &err), LOOM_OK, "%s", err.msg);
    return fx;
}

static fixture *setup_spmm(int F)
{
    static const char *const data[] = {"A=data/cora_adj.mtx", NULL};
    char p[32];
    snprintf(p, sizeof p, "F=%d", F);
    const char *const params[] = {p, NULL};
    return setup("workloads/spmm.loom", data, params);
}

static void teardown(fixture *fx)
{
    loom_reference_free(fx->ref);
    loom_dataset_free(fx->ds);
    loom_program_free(fx->prog);
    free(fx);
}

static int loops(fixture *fx, const char *block, int *out)
{
    loom_error err;
    int b, n;
    cr_assert_eq(loom_get_block(&fx->sch, block, &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(&fx->sch, b, out, &n, &err), LOOM_OK, "%s", err.msg);
    return n;
}

/* Raw (unscaled) features of fx's current schedule into out. */
static void raw_features(fixture *fx, double *out)
{
    loom_error err;
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(&fx->sch, &f, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_features_extract_raw(f, &fx->st, out, &err), LOOM_OK, "%s", err.msg);
    loom_lir_func_free(f);
}

static double F(const double *v, const char *name)
{
    int k = loom_feature_find(name);
    cr_assert(k >= 0, "no feature named %s", name);
    return v[k];
}

static void assert_close(double got, double want, double rel, const char *what)
{
    cr_assert(fabs(got - want) <= rel * fmax(fabs(want), 1e-12), "%s: got %.6g, want %.6g", what, got, want);
}

#define MAXD 512

Test(features, names_unique_and_width_fixed)
{
    int D = loom_feature_count();
    cr_assert(D >= 150 && D <= 260 && D <= MAXD, "D = %d", D);
    cr_assert_eq(loom_feature_count(), D);
    for (int k = 0; k < D; k++) {
        const char *n = loom_feature_name(k);
        cr_assert(n && *n, "feature %d has no name", k);
        cr_assert_eq(loom_feature_find(n), k, "name %s is not unique (or find is wrong)", n);
    }
    cr_assert_null(loom_feature_name(D));
    cr_assert_null(loom_feature_name(-1));
    cr_assert_eq(loom_feature_find("no.such.feature"), -1);
    /* the groups the brief names are all there */
    const char *must[] = {"s0.flops", "s0.f_math", "s0.vec_prod", "s0.par_pos",
                          "s0.b0.bytes", "s0.b2.unique_lines", "s0.b1.reuse_dis_bytes", "s0.ai9",
                          "s0.alloc_bytes", "s0.outer_prod", "s0.pos_loops", "s0.gathers", "s2.flops",
                          "sum.bytes_read", "kernel.op_intensity", "sp0.nnz_cv", "sp1.nnz_mean"};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        cr_assert(loom_feature_find(must[i]) >= 0, "missing %s", must[i]);
    /* ordinals and flags are not log-scaled, counts are */
    cr_assert_eq(loom_feature_is_log(loom_feature_find("s0.vec_pos")), 0);
    cr_assert_eq(loom_feature_is_log(loom_feature_find("s0.b0.gather")), 0);
    cr_assert_eq(loom_feature_is_log(loom_feature_find("s0.flops")), 1);
}

/* Row statistics of Cora computed here from the coordinates, independently
 * of the pos arrays. */
Test(features, data_stats_of_cora)
{
    fixture *fx = setup_spmm(16);
    loom_coo coo;
    loom_error err;
    cr_assert_eq(loom_mtx_read("data/cora_adj.mtx", &coo, &err), LOOM_OK, "%s", err.msg);
    int64_t *cnt = calloc((size_t)coo.nrows, sizeof *cnt);
    for (int64_t e = 0; e < coo.nnz; e++)
        cnt[coo.row[e]]++;
    double mean = (double)coo.nnz / (double)coo.nrows, mx = 0, ss = 0;
    for (int64_t r = 0; r < coo.nrows; r++) {
        mx = fmax(mx, (double)cnt[r]);
        ss += ((double)cnt[r] - mean) * ((double)cnt[r] - mean);
    }
    double cv = sqrt(ss / (double)coo.nrows) / mean;
    int A = loom_program_find_tensor(fx->prog, "A"), B = loom_program_find_tensor(fx->prog, "B");
    const loom_tensor_stats *ta = &fx->st.t[A];
    cr_assert(ta->sparse);
    cr_assert_eq(ta->row_level, 1);
    cr_assert_eq(ta->nnz, coo.nnz);
    cr_assert_eq(ta->level[1].segments, coo.nrows);
    cr_assert_eq(ta->level[1].extent, coo.ncols);
    assert_close(ta->level[1].mean, mean, 1e-12, "nnz/row mean");
    assert_close(ta->level[1].max, mx, 0, "nnz/row max");
    assert_close(ta->level[1].cv, cv, 1e-9, "nnz/row cv");
    const loom_tensor_stats *tb = &fx->st.t[B];
    cr_assert_not(tb->sparse);
    cr_assert_eq(tb->row_level, -1);
    cr_assert_eq(tb->nnz, coo.ncols * 16);
    /* the kernel-level sparse features describe A */
    double v[MAXD];
    raw_features(fx, v);
    assert_close(F(v, "sp0.segments"), (double)coo.nrows, 0, "sp0.segments");
    assert_close(F(v, "sp0.nnz_max"), mx, 0, "sp0.nnz_max");
    assert_close(F(v, "sp0.nnz_cv"), cv, 1e-6, "sp0.nnz_cv");
    cr_assert_eq(F(v, "sp1.nnz"), 0, "SpMM reads one sparse tensor");
    free(cnt);
    loom_coo_free(&coo);
    teardown(fx);
}

static void check_flops(const char *path, const char *const *data, const char *const *params)
{
    fixture *fx = setup(path, data, params);
    double v[MAXD];
    raw_features(fx, v);
    double est = F(v, "sum.flops"), ref = fx->ref->flops;
    cr_assert(ref > 0);
    cr_assert(est >= ref / FLOPS_FACTOR && est <= ref * FLOPS_FACTOR,
              "%s: estimated %.6g FLOPs, reference %.6g (ratio %.3f)", path, est, ref, est / ref);
    printf("features: %-32s naive FLOPs estimated / reference = %.4f\n", path, est / ref);
    teardown(fx);
}

Test(features, naive_flops_agree_with_reference)
{
    const char *cora[] = {"A=data/cora_adj.mtx", NULL}, *mask[] = {"M=data/cora_adj.mtx", NULL};
    const char *gcn[] = {"A=data/cora_adj.mtx", "X=data/cora_features.mtx", NULL};
    const char *f16[] = {"F=16", NULL}, *d8[] = {"D=8", NULL}, *small[] = {"N=64", "D=16", NULL};
    const char *band[] = {"N=256", "D=16", NULL};
    check_flops("workloads/spmm.loom", cora, f16);
    check_flops("workloads/spmv.loom", cora, NULL);
    check_flops("workloads/sddmm.loom", mask, d8);
    check_flops("workloads/gcn.loom", gcn, NULL);
    check_flops("workloads/sparse_attention.loom", cora, d8);
    check_flops("workloads/attention.loom", NULL, small);
    check_flops("workloads/attention_causal.loom", NULL, small);
    check_flops("workloads/attention_band.loom", NULL, band);
}

Test(features, vectorize_innermost_sets_vector_features)
{
    fixture *fx = setup_spmm(16);
    double a[MAXD], b[MAXD];
    raw_features(fx, a);
    int l[LOOM_MAX_LOOPS];
    loom_error err;
    loops(fx, "C", l); /* i, k, f */
    cr_assert_eq(loom_vectorize(&fx->sch, l[2], &err), LOOM_OK, "%s", err.msg);
    raw_features(fx, b);
    cr_assert_eq(F(a, "s0.vec_prod"), 0);
    cr_assert_eq(F(a, "s0.vec_pos"), 0);
    cr_assert_eq(F(a, "kernel.vec_loops"), 0);
    cr_assert_eq(F(b, "s0.vec_prod"), 16, "the f loop, 16 long");
    cr_assert_eq(F(b, "s0.vec_pos"), 1, "innermost, spatial");
    cr_assert_eq(F(b, "kernel.vec_loops"), 1);
    cr_assert_eq(F(a, "sum.flops"), F(b, "sum.flops"), "vectorizing does not change the work");
    teardown(fx);
}

Test(features, parallel_outer_sets_parallel_extent)
{
    fixture *fx = setup_spmm(16);
    double a[MAXD], b[MAXD];
    raw_features(fx, a);
    int l[LOOM_MAX_LOOPS];
    loom_error err;
    loops(fx, "C", l);
    cr_assert_eq(loom_parallel(&fx->sch, l[0], &err), LOOM_OK, "%s", err.msg);
    raw_features(fx, b);
    double N = (double)fx->st.t[0].dims[0];
    cr_assert_eq(F(a, "kernel.par_extent"), 0);
    cr_assert_eq(F(a, "s0.par_prod"), 0);
    cr_assert_eq(F(b, "kernel.par_extent"), N, "the i loop over %g rows", N);
    cr_assert_eq(F(b, "s0.par_prod"), N);
    cr_assert_eq(F(b, "s0.par_pos"), 3, "outermost, spatial");
    cr_assert_eq(F(b, "kernel.par_loops"), 1);
    /* the scaled row differs exactly there */
    float fa[MAXD], fb[MAXD];
    loom_schedule naive;
    cr_assert_eq(loom_schedule_naive(&naive, fx->prog, 1, &err), LOOM_OK);
    cr_assert_eq(loom_features_of_schedule(&naive, &fx->st, fa, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_features_of_schedule(&fx->sch, &fx->st, fb, &err), LOOM_OK, "%s", err.msg);
    int k = loom_feature_find("kernel.par_extent");
    assert_close(fb[k], log2(1 + N), 1e-6, "log2(1 + par_extent)");
    for (int j = 0; j < loom_feature_count(); j++)
        if (fa[j] != fb[j])
            cr_assert(strstr(loom_feature_name(j), "par_") != NULL, "%s changed with the loop kind",
                      loom_feature_name(j));
    teardown(fx);
}

Test(features, unroll_sddmm_vector_reduction_gcn_parallel)
{
    /* unroll an inner tile of SpMM's f */
    fixture *fx = setup_spmm(16);
    double a[MAXD], b[MAXD];
    int l[LOOM_MAX_LOOPS], t[2];
    loom_error err;
    loops(fx, "C", l);
    int64_t fac[2] = {0, 4};
    cr_assert_eq(loom_split(&fx->sch, l[2], 2, NULL, fac, t, &err), LOOM_OK, "%s", err.msg);
    raw_features(fx, a);
    cr_assert_eq(loom_unroll(&fx->sch, t[1], 4, &err), LOOM_OK, "%s", err.msg);
    raw_features(fx, b);
    cr_assert_eq(F(a, "s0.unroll_max"), 0);
    cr_assert_eq(F(b, "s0.unroll_max"), 4);
    cr_assert_eq(F(b, "s0.unroll_pos"), 1, "innermost, spatial");
    teardown(fx);

    /* SDDMM: vectorizing d vectorizes a reduction into the accumulator */
    const char *mask[] = {"M=data/cora_adj.mtx", NULL}, *d8[] = {"D=8", NULL};
    fx = setup("workloads/sddmm.loom", mask, d8);
    raw_features(fx, a);
    loops(fx, "S", l); /* i, j, d */
    cr_assert_eq(loom_vectorize(&fx->sch, l[2], &err), LOOM_OK, "%s", err.msg);
    raw_features(fx, b);
    cr_assert_eq(F(a, "s0.vec_pos"), 0);
    cr_assert_eq(F(b, "s0.vec_pos"), 4, "innermost, reduce: the accumulator is declared outside d");
    cr_assert_eq(F(b, "s0.vec_prod"), 8);
    cr_assert_eq(F(b, "s0.alloc_kind"), 4, "the busiest store is the scalar accumulator");
    cr_assert_eq(F(b, "s0.n_reduce_loops"), 1);
    teardown(fx);

    /* GCN: the first statement's rows in parallel */
    const char *gcn[] = {"A=data/cora_adj.mtx", "X=data/cora_features.mtx", NULL};
    fx = setup("workloads/gcn.loom", gcn, NULL);
    raw_features(fx, a);
    loops(fx, "T", l); /* i, g, f */
    cr_assert_eq(loom_parallel(&fx->sch, l[0], &err), LOOM_OK, "%s", err.msg);
    raw_features(fx, b);
    cr_assert_eq(F(a, "kernel.par_loops"), 0);
    cr_assert_eq(F(b, "kernel.par_loops"), 1);
    cr_assert_eq(F(b, "kernel.par_extent"), (double)fx->st.t[0].dims[0]);
    cr_assert_eq(F(b, "sum.flops"), F(a, "sum.flops"));
    teardown(fx);
}

/* Attention: inlining P = exp(S - m) into its two readers (l and O)
 * recomputes exp where they read P and drops P's temporary. */
Test(features, attention_inline_recomputes_exp)
{
    const char *small[] = {"N=64", "D=16", NULL};
    fixture *fx = setup("workloads/attention.loom", NULL, small);
    double a[MAXD], b[MAXD];
    loom_error err;
    raw_features(fx, a);
    int blk;
    cr_assert_eq(loom_get_block(&fx->sch, "P", &blk, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_compute_inline(&fx->sch, blk, &err), LOOM_OK, "%s", err.msg);
    raw_features(fx, b);
    cr_assert_eq(F(a, "sum.f_math"), 64.0 * 64, "one exp per (i, j)");
    /* l evaluates it once per (i, j); O inside its e loop, once per (i, j, e) */
    cr_assert_eq(F(b, "sum.f_math"), 64.0 * 64 * (1 + 16), "recomputed in l and in O's e loop");
    cr_assert_eq(F(b, "kernel.temp_count"), F(a, "kernel.temp_count") - 1, "P is no longer allocated");
    cr_assert_eq(F(b, "kernel.temp_bytes"), F(a, "kernel.temp_bytes") - 4.0 * 64 * 64);
    cr_assert_eq(F(b, "sum.n_stores"), F(a, "sum.n_stores") - 1);
    teardown(fx);
}

/* The slot of store 0's buffer with the given access and gather flags. */
static int buf_slot(const double *v, int access, int gather)
{
    char n[64];
    for (int b = 0; b < 3; b++) {
        snprintf(n, sizeof n, "s0.b%d.access", b);
        double ac = F(v, n);
        snprintf(n, sizeof n, "s0.b%d.gather", b);
        if (ac == access && F(v, n) == gather)
            return b;
    }
    cr_assert_fail("no buffer slot with access %d gather %d", access, gather);
    return -1;
}

static double bf(const double *v, int slot, const char *what)
{
    char n[64];
    snprintf(n, sizeof n, "s0.b%d.%s", slot, what);
    return F(v, n);
}

/* SpMM with f split by t and its tile loop outside the nonzeros:
 * for i, f.0, p in row i, f.1 < t. */
Test(features, tile_size_changes_reuse_and_locality)
{
    double v[2][MAXD];
    const int64_t tiles[2] = {4, 16};
    double N = 0, nnz = 0;
    for (int r = 0; r < 2; r++) {
        fixture *fx = setup_spmm(64);
        int l[LOOM_MAX_LOOPS], t[2];
        loom_error err;
        loops(fx, "C", l);
        int64_t fac[2] = {0, tiles[r]};
        cr_assert_eq(loom_split(&fx->sch, l[2], 2, NULL, fac, t, &err), LOOM_OK, "%s", err.msg);
        int order[4] = {l[0], t[0], l[1], t[1]};
        cr_assert_eq(loom_reorder(&fx->sch, order, 4, &err), LOOM_OK, "%s", err.msg);
        raw_features(fx, v[r]);
        N = (double)fx->st.t[0].level[1].segments;
        nnz = (double)fx->st.t[0].nnz;
        teardown(fx);
    }
    for (int r = 0; r < 2; r++) {
        double t = (double)tiles[r], tilesn = 64 / t;
        /* A's value is reused across the f.1 tile (MetaSchedule: loop-multiple-read) */
        int a = buf_slot(v[r], 0, 0);
        cr_assert_eq(bf(v[r], a, "reuse_type"), 1);
        assert_close(bf(v[r], a, "reuse_ct"), t, 1e-12, "A reuse count = tile");
        /* C (read-modify-write) is reused across the nonzeros of a row; in between
         * the store touches t elements of C and of B and one of A */
        int c = buf_slot(v[r], 2, 0);
        assert_close(bf(v[r], c, "reuse_dis_bytes"), 4 * (2 * t + 1), 1e-12, "C reuse distance");
        /* every f.0 tile walks the row's positions again: its bounds (2 pos
         * loads per row) and a crd load per nonzero */
        assert_close(F(v[r], "sum.index_loads"), tilesn * (2 * N + nnz), 1e-9, "index loads");
    }
    cr_assert_eq(F(v[0], "sum.flops"), F(v[1], "sum.flops"));
    cr_assert(F(v[0], "s0.ai0") != F(v[1], "s0.ai0") || F(v[0], "s0.ai5") != F(v[1], "s0.ai5"),
              "the arithmetic intensity curve depends on the tile");
}

Test(features, cache_write_workspace_sets_allocation)
{
    fixture *fx = setup_spmm(64);
    double a[MAXD], b[MAXD];
    int l[LOOM_MAX_LOOPS], t[2], blk;
    loom_error err;
    loops(fx, "C", l);
    int64_t fac[2] = {0, 16};
    cr_assert_eq(loom_split(&fx->sch, l[2], 2, NULL, fac, t, &err), LOOM_OK, "%s", err.msg);
    int order[4] = {l[0], t[0], l[1], t[1]};
    cr_assert_eq(loom_reorder(&fx->sch, order, 4, &err), LOOM_OK, "%s", err.msg);
    raw_features(fx, a);
    cr_assert_eq(loom_get_block(&fx->sch, "C", &blk, &err), LOOM_OK);
    cr_assert_eq(loom_cache_write(&fx->sch, blk, t[0], &err), LOOM_OK, "%s", err.msg);
    raw_features(fx, b);
    double N = (double)fx->st.t[0].level[1].segments;
    cr_assert_eq(F(a, "kernel.ws_count"), 0);
    cr_assert_eq(F(a, "s0.alloc_kind"), 0, "accumulates into C's values");
    cr_assert_eq(F(b, "kernel.ws_count"), 1);
    cr_assert_eq(F(b, "kernel.ws_bytes"), 16 * 4, "16 floats");
    cr_assert_eq(F(b, "s0.alloc_kind"), 2, "the busiest store accumulates into the workspace");
    cr_assert_eq(F(b, "s0.alloc_bytes"), 64);
    assert_close(F(b, "s0.alloc_count"), N * 4, 1e-12, "one workspace per (i, f.0)");
    cr_assert_eq(F(b, "sum.n_stores"), 2, "accumulate, then copy out");
    assert_close(F(b, "sum.flops"), F(a, "sum.flops"), 1e-9, "same arithmetic");
    teardown(fx);

    /* RFactor's partials are an allocation too */
    const char *gp[] = {"M=24", NULL};
    fx = setup("workloads/gemm.loom", NULL, gp);
    loops(fx, "C", l); /* i, k, j */
    int64_t f2[2] = {4, 0};
    cr_assert_eq(loom_split(&fx->sch, l[1], 2, NULL, f2, t, &err), LOOM_OK, "%s", err.msg);
    int o2[4] = {t[0], l[0], t[1], l[2]};
    cr_assert_eq(loom_reorder(&fx->sch, o2, 4, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_rfactor(&fx->sch, t[0], &err), LOOM_OK, "%s", err.msg);
    raw_features(fx, b);
    cr_assert_eq(F(b, "kernel.partial_count"), 1);
    cr_assert_eq(F(b, "kernel.partial_bytes"), 4.0 * 4 * 24 * 256, "4 partial copies of C (24 x 256)");
    cr_assert_eq(F(b, "s0.alloc_kind"), 3);
    teardown(fx);
}

Test(features, pos_split_is_a_position_split_guarded_only_when_vectorized)
{
    fixture *fx = setup_spmm(16);
    double a[MAXD], b[MAXD];
    int l[LOOM_MAX_LOOPS], t[2];
    loom_error err;
    raw_features(fx, a);
    loops(fx, "C", l);
    cr_assert_eq(loom_pos_split(&fx->sch, l[1], "A", 4, -1, t, &err), LOOM_OK, "%s", err.msg);
    raw_features(fx, b);
    cr_assert_eq(F(a, "s0.pos_loops"), 1);
    cr_assert_eq(F(a, "s0.possplit_loops"), 0);
    assert_close(F(a, "s0.pos_trip"), (double)fx->st.t[0].nnz / 2708, 1e-12, "nonzeros per row");
    cr_assert_eq(F(a, "s0.guard_prob"), 1);
    cr_assert_eq(F(b, "s0.pos_loops"), 0);
    cr_assert_eq(F(b, "s0.possplit_loops"), 2, "chunk loop and position loop");
    /* a serial chunk loop is bounded by the segment's end: no guard */
    cr_assert_eq(F(b, "s0.guard_prob"), 1);
    /* the chunk loop's trip min(4, end - p) is estimated from the means of
     * its two sides (costmodel/features_eval.c), not exactly: within 10% */
    assert_close(F(b, "sum.flops"), F(a, "sum.flops"), 0.10, "the same nonzeros are visited");
    /* a vectorized one keeps its constant extent and guards each lane */
    double c[MAXD];
    int l2[LOOM_MAX_LOOPS];
    loops(fx, "C", l2);
    cr_assert_eq(loom_vectorize(&fx->sch, l2[2], &err), LOOM_OK, "%s", err.msg);
    raw_features(fx, c);
    double m = fx->st.t[0].level[1].mean;
    assert_close(F(c, "s0.guard_prob"), m / (m + 3), 1e-9, "p < end passes len / (chunks * 4)");
    teardown(fx);
}

Test(features, coiteration_is_a_merge_loop)
{
    const char *src = "tensor A(N, K) csr\ntensor B(N, K) dcsr\ntensor C(N, K) dense output\n"
                      "C(i, k) = A(i, k) * B(i, k)\n";
    fixture *fx = calloc(1, sizeof *fx);
    loom_error err;
    cr_assert_eq(loom_program_parse_string(src, "<coiter>", &fx->prog, &err), LOOM_OK, "%s", err.msg);
    loom_data_spec spec[2] = {{"A", "data/cora_adj.mtx"}, {"B", "data/cora_adj.mtx"}};
    cr_assert_eq(loom_dataset_load(fx->prog, spec, 2, NULL, 0, 3, &fx->ds, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_reference_run(fx->ds, &fx->ref, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_data_stats_compute(fx->ds, &fx->st, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_schedule_naive(&fx->sch, fx->prog, 0, &err), LOOM_OK, "%s", err.msg);
    double v[MAXD];
    raw_features(fx, v);
    cr_assert_eq(F(v, "s0.coiter_loops"), 1);
    cr_assert_eq(F(v, "s0.pos_loops"), 1, "DCSR's row level");
    cr_assert(F(v, "s0.guard_prob") > 0 && F(v, "s0.guard_prob") < 1, "only matching coordinates store");
    cr_assert(F(v, "sp1.nnz") > 0, "two sparse tensors described");
    teardown(fx);
}

/* A union merge (A + B, runtime/lower/lower_merge.c) is a merge loop too;
 * its trips are estimated as the union of two independent rows: between
 * the larger row (nnz of one operand) and the sum of both. */
Test(features, union_is_a_merge_loop)
{
    const char *src = "tensor A(N, K) csr\ntensor B(N, K) csr\ntensor C(N, K) dense output\n"
                      "C(i, k) = A(i, k) + B(i, k)\n";
    fixture *fx = calloc(1, sizeof *fx);
    loom_error err;
    cr_assert_eq(loom_program_parse_string(src, "<union>", &fx->prog, &err), LOOM_OK, "%s", err.msg);
    loom_data_spec spec[2] = {{"A", "data/cora_adj.mtx"}, {"B", "data/cora_adj.mtx"}};
    cr_assert_eq(loom_dataset_load(fx->prog, spec, 2, NULL, 0, 3, &fx->ds, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_reference_run(fx->ds, &fx->ref, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_data_stats_compute(fx->ds, &fx->st, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_schedule_naive(&fx->sch, fx->prog, 0, &err), LOOM_OK, "%s", err.msg);
    double v[MAXD];
    raw_features(fx, v);
    double nnz = (double)fx->st.t[0].nnz;
    cr_assert_eq(F(v, "s0.coiter_loops"), 1);
    cr_assert(F(v, "sum.flops") >= 0.99 * nnz && F(v, "sum.flops") <= 2.01 * nnz,
              "one add per point of the union: %g for %g stored entries a side", F(v, "sum.flops"), nnz);
    teardown(fx);
}

/* ---- every value finite, deterministic, thread-safe ------------------ */

typedef struct job {
    const loom_schedule *sch;
    const loom_data_stats *st;
    int n;
    float *out; /* n rows */
} job;

static void *run_job(void *p)
{
    job *j = p;
    loom_error err;
    for (int i = 0; i < j->n; i++)
        if (loom_features_of_schedule(&j->sch[i], j->st, j->out + (size_t)i * MAXD, &err) != LOOM_OK)
            return (void *)1;
    return NULL;
}

static void random_schedules(const char *path, const char *const *data, const char *const *params, int want)
{
    fixture *fx = setup(path, data, params);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 42);
    loom_schedule *s = malloc((size_t)want * sizeof *s);
    loom_limits lim = loom_target_cpu_limits();
    loom_error err;
    int n = 0;
    for (int tries = 0; tries < 20 * want && n < want; tries++) {
        cr_assert_eq(loom_schedule_init(&s[n], fx->prog, rng, &err), LOOM_OK);
        if (loom_generic_program(&s[n], &err) != LOOM_OK)
            continue;
        loom_violation vi;
        if (loom_validate(&s[n], &lim, &vi, NULL) == LOOM_OK)
            n++;
    }
    cr_assert(n >= want / 2, "%s: only %d valid schedules", path, n);
    int D = loom_feature_count();
    float *a = calloc((size_t)n * MAXD, sizeof *a), *b = calloc((size_t)n * MAXD, sizeof *b);
    /* sequential, then the same from two threads at once */
    job j0 = {s, &fx->st, n, a};
    cr_assert_null(run_job(&j0));
    int h = n / 2;
    job j1 = {s, &fx->st, h, b}, j2 = {s + h, &fx->st, n - h, b + (size_t)h * MAXD};
    pthread_t t1, t2;
    void *r1, *r2;
    pthread_create(&t1, NULL, run_job, &j1);
    pthread_create(&t2, NULL, run_job, &j2);
    pthread_join(t1, &r1);
    pthread_join(t2, &r2);
    cr_assert(r1 == NULL && r2 == NULL);
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        const float *x = a + (size_t)i * MAXD;
        for (int k = 0; k < D; k++)
            cr_assert(isfinite(x[k]), "%s: schedule %d: %s = %g", path, i, loom_feature_name(k), x[k]);
        cr_assert(memcmp(x, b + (size_t)i * MAXD, (size_t)D * sizeof *x) == 0,
                  "%s: schedule %d: features differ between runs", path, i);
        if (i > 0 && memcmp(x, a, (size_t)D * sizeof *x) != 0)
            distinct++;
        /* extract on the lowered kernel gives the same row as of_schedule */
        lir_func *f = NULL;
        float y[MAXD];
        cr_assert_eq(loom_lower(&s[i], &f, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_features_extract(f, &fx->st, y, &err), LOOM_OK, "%s", err.msg);
        loom_lir_func_free(f);
        cr_assert(memcmp(x, y, (size_t)D * sizeof *x) == 0);
    }
    cr_assert(distinct > 0, "%s: random schedules all got the same features", path);
    printf("features: %-32s %d random schedules: finite, deterministic, thread-safe\n", path, n);
    free(a);
    free(b);
    free(s);
    gsl_rng_free(rng);
    teardown(fx);
}

Test(features, random_schedules_finite_deterministic_threadsafe, .timeout = 120)
{
    const char *cora[] = {"A=data/cora_adj.mtx", NULL}, *mask[] = {"M=data/cora_adj.mtx", NULL};
    const char *gcn[] = {"A=data/cora_adj.mtx", "X=data/cora_features.mtx", NULL};
    const char *f16[] = {"F=16", NULL}, *d8[] = {"D=8", NULL}, *small[] = {"N=64", "D=16", NULL};
    random_schedules("workloads/spmm.loom", cora, f16, 40);
    random_schedules("workloads/sddmm.loom", mask, d8, 40);
    random_schedules("workloads/gcn.loom", gcn, NULL, 30);
    random_schedules("workloads/sparse_attention.loom", cora, d8, 30);
    random_schedules("workloads/attention.loom", NULL, small, 30);
    random_schedules("workloads/attention_causal.loom", NULL, small, 30);
}

/* ---- errors ---------------------------------------------------------- */

Test(features, errors_are_returned)
{
    fixture *fx = setup_spmm(16);
    loom_error err;
    float out[MAXD];
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(&fx->sch, &f, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_features_extract(NULL, &fx->st, out, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_features_extract(f, NULL, out, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_data_stats_compute(NULL, &fx->st, &err), LOOM_ERR_INVALID);
    loom_data_stats other = fx->st;
    other.ntensors = 1;
    out[0] = 7;
    cr_assert_eq(loom_features_extract(f, &other, out, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "tensors") != NULL, "%s", err.msg);
    cr_assert_eq(out[0], 0, "out is zeroed on error");
    loom_lir_func_free(f);
    /* lowering errors pass through: a parallel loop over the reduced index */
    int l[LOOM_MAX_LOOPS];
    loops(fx, "C", l);
    cr_assert_eq(loom_parallel(&fx->sch, l[1], &err), LOOM_OK);
    cr_assert_eq(loom_features_of_schedule(&fx->sch, &fx->st, out, &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "parallel-reduction") != NULL, "%s", err.msg);
    teardown(fx);
}

/* ---- time per candidate (printed, not asserted) ---------------------- */

Test(features, time_per_candidate_on_cora_spmm)
{
    fixture *fx = setup_spmm(16);
    loom_error err;
    float out[MAXD];
    int reps = 2000;
    double t0 = loom_now_seconds();
    for (int r = 0; r < reps; r++)
        cr_assert_eq(loom_features_of_schedule(&fx->sch, &fx->st, out, &err), LOOM_OK);
    double naive = (loom_now_seconds() - t0) / reps;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    loom_schedule *s = malloc(sizeof *s);
    double tsum = 0;
    int n = 0;
    for (int k = 0; k < 300; k++) {
        cr_assert_eq(loom_schedule_init(s, fx->prog, rng, &err), LOOM_OK);
        if (loom_generic_program(s, &err) != LOOM_OK)
            continue;
        double t1 = loom_now_seconds();
        loom_status st = loom_features_of_schedule(s, &fx->st, out, &err);
        tsum += loom_now_seconds() - t1;
        n += st == LOOM_OK;
    }
    cr_assert(n > 0);
    printf("features: Cora SpMM (F=16), lower + extract, D=%d: naive %.1f us, random schedules %.1f us "
           "(mean of %d; goal < 500 us)\n",
           loom_feature_count(), naive * 1e6, tsum / n * 1e6, n);
    free(s);
    gsl_rng_free(rng);
    teardown(fx);
}
