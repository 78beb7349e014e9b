/* PackPanel (issue 12, dsl/schedule/pack.c): an operand's panel copied into a
 * contiguous local buffer at a loop of the block.  Kernels are checked
 * against a naive triple loop written here (double precision), which
 * shares no code with loom; each validator rule is broken once. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../modules/builtin.h"
#include "../runtime/measure/pipeline.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "fixture.h"

static fx_loaded gemm(const char *M, const char *N, const char *K)
{
    const char *params[] = {M, N, K, NULL};
    const char *data[] = {NULL};
    return fx_load("workloads/gemm.loom", NULL, data, params, 5);
}

static void run_against_naive(const loom_schedule *sch, fx_loaded *L)
{
    loom_dataset_fill_outputs(L->ds, 12345.0f);
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0;
    o.measure.min_repeats = 1;
    o.measure.time_limit = 60;
    loom_run_result res;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_pipeline_run_schedule(sch, L->ds, NULL, &o, &res, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(res.status, LOOM_OK, "%s", res.message);
    const loom_tensor_abi *A = &L->ds->t[loom_program_find_tensor(L->prog, "A")];
    const loom_tensor_abi *B = &L->ds->t[loom_program_find_tensor(L->prog, "B")];
    const loom_tensor_abi *C = &L->ds->t[loom_program_find_tensor(L->prog, "C")];
    int64_t M = A->dims[0], K = A->dims[1], N = B->dims[1];
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += (double)A->vals[i * K + k] * B->vals[k * N + j];
            cr_assert(fabs(C->vals[i * N + j] - s) <= 1e-4 * (1 + fabs(s)), "C[%lld][%lld] = %.7g, want %.7g",
                      (long long)i, (long long)j, C->vals[i * N + j], s);
        }
}

static const loom_limits AVX2 = {.vector_lanes = 8, .max_vector_factor = 16, .cores = 2,
                                 .max_workspace_bytes = 65536, .vector_registers = 16, .fma = 1};

/* The dense kernel by hand: i 3-level, j 3-level, k 2-level, the workspace
 * at j.1; returns the loops (i0 j0 k0 i1 j1 k1 i2 j2) in l. */
static void tiled(loom_schedule *s, const int64_t *fi, const int64_t *fj, const int64_t *fk, int *l)
{
    loom_error err;
    int b, g[LOOM_MAX_LOOPS], n, ti[3], tj[3], tk[2];
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    cr_assert_eq(loom_get_loops(s, b, g, &n, NULL), LOOM_OK); /* i, k, j */
    cr_assert_eq(loom_split(s, g[0], 3, NULL, fi, ti, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_split(s, g[2], 3, NULL, fj, tj, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_split(s, g[1], 2, NULL, fk, tk, &err), LOOM_OK, "%s", err.msg);
    int order[8] = {ti[0], tj[0], tk[0], ti[1], tj[1], tk[1], ti[2], tj[2]};
    cr_assert_eq(loom_reorder(s, order, 8, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_cache_write(s, b, tj[1], &err), LOOM_OK, "%s", err.msg);
    memcpy(l, order, sizeof order);
}

/* B's k.1 x (j.1 x j.2) panel packed at k.0, with tiles that overhang
 * (j 45 = 2 x 2 x 16 = 64, k 29 = 4 x 8 = 32): the kernel copies the panel
 * (clamped at the edges) into ws_B, reads B only from it, and matches. */
Test(pack, packed_panel_kernel_matches_the_triple_loop, .timeout = 120)
{
    fx_loaded L = gemm("M=37", "N=45", "K=29");
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int l[8], b;
    const int64_t fi[3] = {0, 2, 4}, fj[3] = {0, 2, 16}, fk[2] = {0, 8};
    tiled(s, fi, fj, fk, l);
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    cr_assert_eq(loom_pack_panel(s, b, l[2], "B", -1, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_pack_panel_elems(s, 0), 8 * 32, "the panel is k.1 x (j.1 x j.2)");
    cr_assert_eq(loom_vectorize(s, l[7], &err), LOOM_OK, "%s", err.msg);
    loom_violation v;
    cr_assert_eq(loom_validate(s, &AVX2, &v, NULL), LOOM_OK, "%s", v.msg);
    char *src = NULL;
    cr_assert_eq(loom_pipeline_schedule_source(s, &src, &err), LOOM_OK, "%s", err.msg);
    cr_assert(strstr(src, "float ws_B_["), "no panel buffer:\n%s", src);
    /* read through a restrict pointer (gcc then keeps the register tile in
     * registers), copied in nr-wide column blocks: contiguous stores, no
     * division in the copy's index */
    cr_assert(strstr(src, "float *restrict ws_B = ws_B_;"), "no restrict pointer to the panel:\n%s", src);
    cr_assert(strstr(src, "ws_B[((p_jo * 128) + ((p_k * 16) + p_j))] = B_vals["), "the copy is not blocked:\n%s", src);
    cr_assert_null(strstr(src, "p_j / 16"), "the copy divides:\n%s", src);
    cr_assert(strstr(src, "ws_B[") && strstr(src, "= B_vals["), "the panel is not copied from B:\n%s", src);
    cr_assert_null(strstr(src, "* B_vals["), "the product still reads B itself:\n%s", src);
    /* the register tile's vector order: [j.1][k.1][j.2], read at j.2 itself */
    cr_assert(strstr(src, "ws_B[((j_1 * 128) + (((k - pbase_k) * 16) + j_2))]"),
              "the panel is not in vector order:\n%s", src);
    free(src);
    run_against_naive(s, &L);
    free(s);
    fx_unload(&L);
}

/* pack-panel-too-large: the whole of B (1024 x 1024 floats, 4 MiB) packed
 * at the outermost loop; at k.0 the 64 x 64 panel is fine. */
Test(pack, a_panel_over_the_stack_budget_is_refused)
{
    fx_loaded L = gemm("M=64", "N=1024", "K=1024");
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int l[8], b;
    const int64_t fi[3] = {1, 8, 8}, fj[3] = {16, 4, 16}, fk[2] = {16, 64};
    tiled(s, fi, fj, fk, l);
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    cr_assert_eq(loom_pack_panel(s, b, l[0], "B", -1, &err), LOOM_OK, "%s", err.msg);
    loom_violation v;
    cr_assert_eq(loom_validate(s, &AVX2, &v, NULL), LOOM_ERR_SEMANTIC);
    cr_assert_str_eq(v.rule, "pack-panel-too-large");
    cr_assert(strstr(v.msg, "4194304 bytes"), "%s", v.msg);
    cr_assert_eq(loom_pack_panel(s, b, l[2], "B", -1, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_validate(s, &AVX2, &v, NULL), LOOM_OK, "%s", v.msg);
    free(s);
    fx_unload(&L);
}

/* pack-panel-loop: j's tiles inside the pack loop are j.0 and j.2 but not
 * j.1 (not the innermost tiles of its split): no region of tiles. */
Test(pack, a_panel_that_is_no_region_of_tiles_is_refused)
{
    fx_loaded L = gemm("M=32", "N=64", "K=32");
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int b, g[LOOM_MAX_LOOPS], n, tj[3];
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    cr_assert_eq(loom_get_loops(s, b, g, &n, NULL), LOOM_OK); /* i, k, j */
    const int64_t fj[3] = {2, 2, 16};
    cr_assert_eq(loom_split(s, g[2], 3, NULL, fj, tj, &err), LOOM_OK, "%s", err.msg);
    int order[5] = {tj[1], g[0], g[1], tj[0], tj[2]};
    cr_assert_eq(loom_reorder(s, order, 5, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_pack_panel(s, b, g[0], "B", -1, &err), LOOM_OK, "%s", err.msg);
    loom_violation v;
    cr_assert_eq(loom_validate(s, &AVX2, &v, NULL), LOOM_ERR_SEMANTIC);
    cr_assert_str_eq(v.rule, "pack-panel-loop");
    /* the output, and a tensor the block does not read, are not packed */
    cr_assert_eq(loom_pack_panel(s, b, g[0], "C", -1, &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "pack-panel-tensor"), "%s", err.msg);
    cr_assert_eq(loom_pack_panel(s, b, g[0], "Z", -1, &err), LOOM_ERR_SEMANTIC);
    free(s);
    fx_unload(&L);
}

/* The dense space offers the pack as a sampled decision; a trace with it
 * on round-trips through JSON and replays to the same schedule. */
Test(pack, the_dense_space_samples_it_and_traces_replay_it, .timeout = 120)
{
    fx_loaded L = gemm("M=40", "N=48", "K=24");
    loom_schedule *s = malloc(sizeof *s), *r = malloc(sizeof *r);
    loom_error err;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int on = 0, off = 0;
    for (int seed = 1; seed <= 24 && !(on && off); seed++) {
        gsl_rng_set(rng, (unsigned long)seed);
        loom_trace *t = loom_trace_new();
        cr_assert_eq(loom_schedule_init(s, L.prog, rng, &err), LOOM_OK, "%s", err.msg);
        s->recorder = loom_trace_recorder;
        s->recorder_ctx = t;
        int b;
        cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
        cr_assert_eq(loom__dense_schedule(s, b, &AVX2, NULL, NULL, NULL, &err), LOOM_OK, "%s", err.msg);
        *(s->stages[0].pack_iter >= 0 ? &on : &off) += 1;
        char *json = NULL;
        cr_assert_eq(loom_trace_to_json(t, L.prog, &json), LOOM_OK);
        if (s->stages[0].pack_iter >= 0)
            cr_assert(strstr(json, "PackPanel"), "%s", json);
        loom_trace *back = NULL;
        cr_assert_eq(loom_trace_from_json(json, "draw", &back, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_schedule_init(r, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_trace_replay(back, r, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert(loom_schedule_equal(s, r), "the replayed schedule differs");
        if (s->stages[0].pack_iter >= 0 && on <= 3)
            run_against_naive(r, &L);
        free(json);
        loom_trace_free(back);
        loom_trace_free(t);
    }
    cr_assert(on > 0 && off > 0, "24 draws gave %d packed and %d unpacked", on, off);
    gsl_rng_free(rng);
    free(r);
    free(s);
    fx_unload(&L);
}

/* The panel order (modules/dense.c, GotoBLAS's loop order): when j.0 gives
 * every core a column panel, the default runs j.0 (parallel) k.0 i.0 .. with
 * B's panel packed at k.0, so each panel is copied once and read by every
 * row block; the kernel matches the triple loop.  With one column panel
 * (a GCN layer's 16 columns) the default keeps the fused i.0 x j.0 loop and
 * packs nothing. */
Test(pack, the_default_packs_b_once_per_column_panel, .timeout = 120)
{
    fx_loaded L = gemm("M=37", "N=256", "K=40");
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int64_t i3[3], j3[3], k2[2];
    loom__dense_default_tiles(s, 0, &AVX2, i3, j3, k2);
    cr_assert_geq(j3[0], AVX2.cores, "the test needs a column panel per core (j.0 = %lld)", (long long)j3[0]);
    int b;
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    cr_assert_eq(loom__dense_schedule(s, b, &AVX2, i3, j3, k2, &err), LOOM_OK, "%s", err.msg);
    const loom_stage *S = &s->stages[0];
    cr_assert_geq(S->pack_iter, 0, "the default does not pack B");
    cr_assert_eq(S->loops[0].kind, LOOM_LOOP_PARALLEL);
    cr_assert_eq(loom_iter_var(S, S->loops[0].iter), loom_iter_var(S, S->loops[S->nloops - 1].iter),
                 "the parallel loop is not a tile of j");
    cr_assert_eq(S->loops[1].iter, S->pack_iter, "B is not packed right inside the column panel loop");
    loom_violation v;
    cr_assert_eq(loom_validate(s, &AVX2, &v, NULL), LOOM_OK, "%s", v.msg);
    char *src = NULL;
    cr_assert_eq(loom_pipeline_schedule_source(s, &src, &err), LOOM_OK, "%s", err.msg);
    const char *copy = strstr(src, "= B_vals["), *rows = strstr(src, "for (int64_t i_0 = 0");
    cr_assert(copy && rows && copy < rows, "the panel is not copied outside the row blocks:\n%s", src);
    free(src);
    run_against_naive(s, &L);

    fx_loaded G = gemm("M=37", "N=16", "K=40");
    cr_assert_eq(loom_schedule_init(s, G.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    loom__dense_default_tiles(s, 0, &AVX2, i3, j3, k2);
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    cr_assert_eq(loom__dense_schedule(s, b, &AVX2, i3, j3, k2, &err), LOOM_OK, "%s", err.msg);
    cr_assert_lt(s->stages[0].pack_iter, 0, "one column panel: nothing to reuse, yet B is packed");
    cr_assert_eq(s->stages[0].loops[0].kind, LOOM_LOOP_PARALLEL);

    /* K = 2053 (prime): one k block, a 2053 x 128 panel over the pack's 1 MiB: no pack, so no panel
     * order either (it would only lose the fused parallel loop) */
    fx_loaded H = gemm("M=37", "N=256", "K=2053");
    cr_assert_eq(loom_schedule_init(s, H.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    loom__dense_default_tiles(s, 0, &AVX2, i3, j3, k2);
    cr_assert_geq(j3[0], AVX2.cores);
    cr_assert_gt(k2[1] * j3[1] * j3[2] * 4, LOOM_MAX_PACK_BYTES, "the test needs a panel over the budget");
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    cr_assert_eq(loom__dense_schedule(s, b, &AVX2, i3, j3, k2, &err), LOOM_OK, "%s", err.msg);
    cr_assert_lt(s->stages[0].pack_iter, 0);
    int fused = 0;
    for (int p = 0; p < s->stages[0].nloops; p++)
        fused |= s->stages[0].iters[s->stages[0].loops[p].iter].kind == LOOM_ITER_FUSE;
    cr_assert(fused, "the default left the fused i.0 x j.0 parallel loop without packing");
    fx_unload(&H);
    free(s);
    fx_unload(&G);
    fx_unload(&L);
}
