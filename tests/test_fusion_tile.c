/* Tiled fused attention (runtime/lower/lower_fusion_tile.c): the rolled loop's
 * "row_tile" / "key_tile" annotations.  Every tiled kernel is checked
 * against the reference interpreter, on sizes that leave partial row tiles
 * and partial key blocks, on every mask the tiles apply to (dense, causal,
 * band), on several heads sharing a packed key operand (GQA), on scores
 * whose running max grows at every key, and on the forms the tiles do not
 * apply to (a compressed mask, split-K), which must fall back to the
 * untiled rolling update and say why.  The register tiles' shapes (one or
 * two vectors per row, an uneven last row group) are forced by the rolled
 * loop's vector_lanes / vector_registers annotations and checked the same
 * way.  The simulator must model the cyclic tile schedule a causal mask
 * gets: it balances the triangular work. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/ir/program.h"
#include "../dsl/schedule/query.h"
#include "../dsl/schedule/schedule.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/pipeline.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "../traces/validate.h"
#include "fixture.h"

typedef fx_loaded loaded;

static loaded load(const char *path, const char *text, const char *const *data, const char *const *params)
{
    return fx_load(path, text, data, params, 5);
}

static void unload(loaded *L) { fx_unload(L); }

/* the vector shape the register tiles fit (0: the target's) */
static int vec_lanes, vec_regs;

/* FlashAttention's schedule: S's reductions innermost and S computed at
 * m's key loop, P inlined, l and O rolled into that loop, m's outer row
 * loop parallel, split-K by `splitk` (0: none), the loop annotated with the
 * tiles (0: no annotation). */
static void flash(loom_schedule *sch, int rt, int kt, int splitk)
{
    loom_error err;
    int m, S, P, l, O, loops[LOOM_MAX_LOOPS], n, sl[LOOM_MAX_LOOPS], ns, order[LOOM_MAX_LOOPS], k = 0;
    cr_assert_eq(loom_get_block(sch, "m", &m, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, "S", &S, &err), LOOM_OK);
    cr_assert_eq(loom_get_block(sch, "P", &P, &err), LOOM_OK);
    cr_assert_eq(loom_get_block(sch, "l", &l, &err), LOOM_OK);
    cr_assert_eq(loom_get_block(sch, "O", &O, &err), LOOM_OK);
    cr_assert_eq(loom_get_loops(sch, m, loops, &n, &err), LOOM_OK);
    if (n > 1)
        cr_assert_eq(loom_parallel(sch, loops[0], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, S, sl, &ns, &err), LOOM_OK);
    int sstage = sch->rvs[S].stage;
    for (int red = 0; red < 2; red++)
        for (int q = 0; q < ns; q++)
            if (loom_iter_reduces(sch, sstage, sch->rvs[sl[q]].iter) == red)
                order[k++] = sl[q];
    cr_assert_eq(loom_reorder(sch, order, ns, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_compute_at(sch, S, loops[n - 1], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_compute_inline(sch, P, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_rolling_update(sch, l, loops[n - 1], -1, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_rolling_update(sch, O, loops[n - 1], -1, &err), LOOM_OK, "%s", err.msg);
    if (splitk)
        cr_assert_eq(loom_split_k_update(sch, m, loops[n - 1], -1, splitk, &err), LOOM_OK, "%s", err.msg);
    if (rt)
        cr_assert_eq(loom_annotate(sch, loops[n - 1], "row_tile", -1, rt, &err), LOOM_OK, "%s", err.msg);
    if (kt)
        cr_assert_eq(loom_annotate(sch, loops[n - 1], "key_tile", -1, kt, &err), LOOM_OK, "%s", err.msg);
    if (vec_lanes)
        cr_assert_eq(loom_annotate(sch, loops[n - 1], LOOM_ANN_VECTOR_LANES, -1, vec_lanes, &err), LOOM_OK, "%s",
                     err.msg);
    if (vec_regs)
        cr_assert_eq(loom_annotate(sch, loops[n - 1], LOOM_ANN_VECTOR_REGISTERS, -1, vec_regs, &err), LOOM_OK, "%s",
                     err.msg);
}

/* Build, run and check one tiled schedule; returns the generated C (the
 * caller frees) for structural checks. */
static char *run_tiled(loaded *L, int rt, int kt, int splitk, const char *what)
{
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_schedule_init(sch, L->prog, NULL, &err), LOOM_OK, "%s: %s", what, err.msg);
    flash(sch, rt, kt, splitk);
    loom_violation v;
    cr_assert_eq(loom_validate(sch, fx_cpu_limits(), &v, NULL), LOOM_OK, "%s: %s", what, v.msg);
    char *src = NULL;
    cr_assert_eq(loom_pipeline_schedule_source(sch, &src, &err), LOOM_OK, "%s: %s", what, err.msg);
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0.002;
    o.measure.min_repeats = 1;
    o.measure.time_limit = 60;
    loom_run_result res;
    cr_assert_eq(loom_pipeline_run_schedule(sch, L->ds, NULL, &o, &res, &err), LOOM_OK, "%s: %s", what, err.msg);
    cr_assert_eq(res.status, LOOM_OK, "%s: %s: %s", what, loom_status_name(res.status), res.message);
    cr_assert(res.correct, "%s (row_tile %d, key_tile %d): differs from the reference (max rel err %g, tol %g)", what,
              rt, kt, res.max_rel_err, res.tol);
    free(sch);
    return src;
}

static const int TILES[][2] = {{1, 16}, {3, 16}, {8, 64}, {16, 32}, {4, 0}, {0, 48}};
#define NTILES ((int)(sizeof TILES / sizeof TILES[0]))

/* every tile shape on one workload; the tiled path is taken (the key
 * operand is packed) and the rows' running max stays per row */
static void all_tiles(const char *path, const char *const *params, const char *what)
{
    loaded L = load(path, NULL, NULL, params);
    for (int k = 0; k < NTILES; k++) {
        char *src = run_tiled(&L, TILES[k][0], TILES[k][1], 0, what);
        cr_assert(strstr(src, "pk_K"), "%s: row_tile %d key_tile %d: the key operand is not packed", what,
                  TILES[k][0], TILES[k][1]);
        cr_assert_null(strstr(src, "not applied"), "%s: the tiles were not applied", what);
        cr_assert(strstr(src, "rmax_"), "%s: no per-row running max", what);
        free(src);
    }
    unload(&L);
}

/* N = 100 and 77: partial row tiles and partial key blocks */
Test(fusion_tile, dense_every_tile)
{
    const char *p[] = {"N=100", NULL};
    all_tiles("workloads/attention.loom", p, "attention N=100");
}

Test(fusion_tile, causal_every_tile)
{
    const char *p[] = {"N=77", NULL};
    all_tiles("workloads/attention_causal.loom", p, "causal N=77");
}

Test(fusion_tile, band_every_tile)
{
    const char *p[] = {"N=90", NULL};
    all_tiles("workloads/attention_band.loom", p, "band N=90");
}

Test(fusion_tile, gqa_heads_share_the_packed_keys)
{
    const char *p[] = {"N=50", NULL};
    loaded L = load("workloads/attention_gqa.loom", NULL, NULL, p);
    char *src = run_tiled(&L, 8, 32, 0, "gqa N=50");
    cr_assert(strstr(src, "pk_K"), "gqa: the key operand is not packed");
    free(src);
    unload(&L);
}

Test(fusion_tile, causal_tiles_are_dealt_cyclically)
{
    const char *p[] = {"N=200", NULL};
    loaded L = load("workloads/attention_causal.loom", NULL, NULL, p);
    char *src = run_tiled(&L, 8, 32, 0, "causal N=200");
    cr_assert(strstr(src, "schedule(static, 1)"), "causal row tiles are not dealt cyclically");
    /* the block test: blocks every row sees in full skip the mask */
    cr_assert(strstr(src, "full_hi"), "no full-block test");
    free(src);
    unload(&L);
    const char *q[] = {"N=200", NULL};
    L = load("workloads/attention.loom", NULL, NULL, q);
    src = run_tiled(&L, 8, 32, 0, "dense N=200");
    cr_assert_null(strstr(src, "schedule(static, 1)"), "dense rows carry equal work: contiguous blocks");
    free(src);
    unload(&L);
}

/* The masked fast path: a block the mask cuts (every causal row tile's
 * diagonal block) has its masked scores set to -inf and takes the fast
 * path.  Causal N=200 with 16 x 64 tiles has such blocks and is checked;
 * a band of 4 with 16-row tiles has row tiles whose last rows see no key of
 * the first block visited, where the fast path would compute exp(-inf -
 * -inf) = NaN: the guard must send that block to the per-row path (the
 * outputs are checked, so a NaN fails).  Partial row tiles and a partial
 * last key block (N = 70) stay on the per-row path. */
Test(fusion_tile, masked_blocks_take_the_fast_path)
{
    const char *p[] = {"N=200", NULL};
    loaded L = load("workloads/attention_causal.loom", NULL, NULL, p);
    char *src = run_tiled(&L, 16, 64, 0, "causal N=200");
    cr_assert(strstr(src, "a block the mask cuts"), "causal: no masked fast path");
    free(src);
    unload(&L);
    static const char *NARROW = "param D = 16\n"
                                "tensor Q(N, D) dense\n"
                                "tensor K(N, D) dense\n"
                                "tensor V(N, D) dense\n"
                                "tensor W(N, N) band(4)\n"
                                "tensor O(N, D) dense output\n"
                                "S(i, j) = W(i, j) * Q(i, d) * K(j, d) * 0.25\n"
                                "m(i) max= S(i, j)\n"
                                "P(i, j) = exp(S(i, j) - m(i))\n"
                                "l(i) += P(i, j)\n"
                                "O(i, e) += P(i, j) * V(j, e) / l(i)\n";
    const char *q[] = {"N=70", NULL};
    L = load(NULL, NARROW, NULL, q);
    static const int T2[][2] = {{16, 16}, {16, 32}, {8, 16}, {32, 16}};
    for (int k = 0; k < 4; k++) {
        src = run_tiled(&L, T2[k][0], T2[k][1], 0, "band(4) N=70");
        cr_assert(strstr(src, "a block the mask cuts"), "band(4): no masked fast path");
        free(src);
    }
    unload(&L);
}

/* A rolled block whose term does not vanish where the score is -inf (the
 * scores weighted by P: -inf x 0 would be NaN) keeps the per-row path on
 * every block the mask cuts, and stays correct. */
Test(fusion_tile, masked_fast_path_needs_terms_that_vanish)
{
    static const char *SUMS = "param D = 16\n"
                              "tensor Q(N, D) dense\n"
                              "tensor K(N, D) dense\n"
                              "tensor V(N, D) dense\n"
                              "tensor W(N, N) causal\n"
                              "tensor O(N, D) dense output\n"
                              "tensor C(N) dense output\n"
                              "S(i, j) = W(i, j) * Q(i, d) * K(j, d) * 0.25\n"
                              "m(i) max= S(i, j)\n"
                              "P(i, j) = exp(S(i, j) - m(i))\n"
                              "l(i) += P(i, j)\n"
                              "O(i, e) += P(i, j) * V(j, e) / l(i)\n"
                              "C(i) += S(i, j) * P(i, j)\n";
    const char *p[] = {"N=96", NULL};
    loaded L = load(NULL, SUMS, NULL, p);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    flash(sch, 16, 32, 0);
    int m, C, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(sch, "m", &m, &err), LOOM_OK);
    cr_assert_eq(loom_get_block(sch, "C", &C, &err), LOOM_OK);
    cr_assert_eq(loom_get_loops(sch, m, loops, &n, &err), LOOM_OK);
    cr_assert_eq(loom_rolling_update(sch, C, loops[n - 1], -1, &err), LOOM_OK, "%s", err.msg);
    loom_violation v;
    cr_assert_eq(loom_validate(sch, fx_cpu_limits(), &v, NULL), LOOM_OK, "%s", v.msg);
    char *src = NULL;
    cr_assert_eq(loom_pipeline_schedule_source(sch, &src, &err), LOOM_OK, "%s", err.msg);
    cr_assert(strstr(src, "pk_K"), "the sums: not tiled");
    cr_assert_null(strstr(src, "a block the mask cuts"), "a term that does not vanish took the masked path");
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0.002;
    o.measure.min_repeats = 1;
    loom_run_result res;
    cr_assert_eq(loom_pipeline_run_schedule(sch, L.ds, NULL, &o, &res, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(res.status, LOOM_OK, "%s", res.message);
    cr_assert(res.correct, "the sums differ from the reference (max rel err %g)", res.max_rel_err);
    free(src);
    free(sch);
    unload(&L);
}

/* The register tiles' shapes (runtime/lower/lower_fusion_regtile.c): with
 * 16 lanes and 32 registers a row tile of 8 gets 8 rows x 2 vectors (score
 * block of 32 keys, O's row of 64), one of 23 groups of 12 and 11 rows x 2
 * vectors; with 8 lanes and 16 registers two vectors would leave groups of
 * fewer than 6 rows, so it keeps one vector per row, and a row tile of 12
 * gets two groups of 6 rows x 2 vectors.  Every kernel is
 * checked against the reference (N = 100: partial row tiles and blocks). */
Test(fusion_tile, register_tiles_of_two_vectors)
{
    const char *p[] = {"N=100", NULL};
    loaded L = load("workloads/attention.loom", NULL, NULL, p);
    vec_lanes = 16;
    vec_regs = 32;
    char *src = run_tiled(&L, 8, 32, 0, "8 x 32, 16 lanes");
    cr_assert(strstr(src, "score register tile: rows 0-7 x 2 vectors from 0"), "no 8 x 2 score tile");
    cr_assert(strstr(src, "output register tile: rows 0-7 x 2 vectors from 32"), "no 8 x 2 output tile");
    free(src);
    src = run_tiled(&L, 23, 32, 0, "23 x 32, 16 lanes");
    cr_assert(strstr(src, "score register tile: rows 12-22 x 2 vectors"), "no uneven last group");
    cr_assert(strstr(src, "output register tile: rows 12-22 x 2 vectors from 32"), "no uneven last output group");
    free(src);
    vec_lanes = 8;
    vec_regs = 16;
    src = run_tiled(&L, 8, 32, 0, "8 x 32, 8 lanes");
    cr_assert(strstr(src, "score register tile: rows 0-7, one vector each"), "no one-vector tile at 16 registers");
    cr_assert_null(strstr(src, "2 vectors"), "two vectors per row at 16 registers");
    free(src);
    src = run_tiled(&L, 12, 32, 0, "12 x 32, 8 lanes");
    cr_assert(strstr(src, "score register tile: rows 6-11 x 2 vectors from 16"), "no 6 x 2 score tile");
    cr_assert(strstr(src, "output register tile: rows 6-11 x 2 vectors from 48"), "no 6 x 2 output tile");
    free(src);
    unload(&L);
}

/* scores Q(i) K(j) with K a ramp: row 0's max grows at every key, row 1's
 * falls, row 2 jumps, row 3 is flat; 6 rows, 40 keys: partial tiles */
static const char *RAMP = "param D = 1\n"
                          "tensor Q(N, D) dense\n"
                          "tensor K(M, D) dense\n"
                          "tensor V(M, E) dense\n"
                          "tensor O(N, E) dense output\n"
                          "S(i, j) = Q(i, d) * K(j, d)\n"
                          "m(i) max= S(i, j)\n"
                          "P(i, j) = exp(S(i, j) - m(i))\n"
                          "l(i) += P(i, j)\n"
                          "O(i, e) += P(i, j) * V(j, e) / l(i)\n";

Test(fusion_tile, max_changes_at_every_key)
{
    const char *d[] = {"Q=tests/data/tile_q.mtx", "K=tests/data/tile_k.mtx", NULL};
    const char *p[] = {"E=8", NULL};
    loaded L = load(NULL, RAMP, d, p);
    for (int k = 0; k < NTILES; k++) {
        char *src = run_tiled(&L, TILES[k][0], TILES[k][1], 0, "ramp scores");
        cr_assert(strstr(src, "pk_K"), "ramp: not tiled");
        free(src);
    }
    unload(&L);
}

/* forms the tiles do not apply to fall back, say why, and stay correct */
Test(fusion_tile, compressed_mask_falls_back)
{
    const char *d[] = {"A=data/cora500_adj.mtx", NULL};
    loaded L = load("workloads/sparse_attention.loom", NULL, d, NULL);
    char *src = run_tiled(&L, 8, 32, 0, "sparse_attention cora500");
    cr_assert(strstr(src, "not applied") && strstr(src, "compressed"), "no reason given for the untiled fallback");
    free(src);
    unload(&L);
}

Test(fusion_tile, split_k_falls_back)
{
    const char *p[] = {"M=300", NULL};
    loaded L = load("workloads/attention_decode.loom", NULL, NULL, p);
    char *src = run_tiled(&L, 4, 32, 4, "decode split-K");
    cr_assert(strstr(src, "not applied") && strstr(src, "split-K"), "no reason given for the untiled fallback");
    free(src);
    unload(&L);
}

/* The simulator deals a cyclic loop's iterations round-robin: on causal
 * row tiles (tile t has t + 1 key blocks) that balances the two cores, so
 * the same kernel with contiguous blocks must simulate slower. */
static lir_stmt *find_cyclic(lir_stmt *s)
{
    if (!s)
        return NULL;
    if (s->kind == LIR_S_FOR && s->loop_kind == LIR_LOOP_PARALLEL && s->par_chunk > 0)
        return s;
    if (s->kind == LIR_S_SEQ)
        for (int i = 0; i < s->nitems; i++) {
            lir_stmt *r = find_cyclic(s->items[i]);
            if (r)
                return r;
        }
    if (s->kind == LIR_S_FOR || s->kind == LIR_S_WHILE || s->kind == LIR_S_IF) {
        lir_stmt *r = find_cyclic(s->body);
        return r ? r : find_cyclic(s->els);
    }
    return NULL;
}

Test(fusion_tile, simulator_models_the_cyclic_schedule)
{
    const char *p[] = {"N=512", NULL};
    loaded L = load("workloads/attention_causal.loom", NULL, NULL, p);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK);
    flash(sch, 16, 64, 0);
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
    lir_stmt *loop = find_cyclic(f->body);
    cr_assert_not_null(loop, "no cyclic parallel loop in the causal kernel");
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_sim_result cyc, blk;
    cr_assert_eq(loom_sim_run(f, L.ds, &t, &cyc, &err), LOOM_OK, "%s", err.msg);
    loop->par_chunk = 0;
    cr_assert_eq(loom_sim_run(f, L.ds, &t, &blk, &err), LOOM_OK, "%s", err.msg);
    cr_log_info("causal N=512 simulated: cyclic %.1f us, contiguous %.1f us", cyc.latency_s * 1e6, blk.latency_s * 1e6);
    /* contiguous halves: the second core has 3/4 of the blocks */
    cr_assert_lt(cyc.latency_s, 0.9 * blk.latency_s, "cyclic %g s, contiguous %g s", cyc.latency_s, blk.latency_s);
    loom_lir_func_free(f);
    free(sch);
    unload(&L);
}

/* The register tiles are outer-loop vectors: `for jj vectorized` holds the
 * serial loop over d (scores) or over the block's keys (output) with a
 * float local per row and vector as accumulator -- GCC vectorizes the outer
 * loop, each inner iteration a vector FMA per accumulator, the accumulators
 * independent chains.  The simulator runs such a body once per vector
 * (sim.h "Outer-loop vectors", model 20): its compute is at least the
 * vector FMAs over the FMA pipes and within twice that (before model 20 it
 * counted the inner loop's FMAs once, and every accumulation as a whole FMA
 * latency: 9.4x the measured time of such a tile on Emerald Rapids). */
Test(fusion_tile, simulator_counts_the_register_tiles_inner_loop)
{
    const char *p[] = {"N=512", NULL};
    loaded L = load("workloads/attention.loom", NULL, NULL, p);
    loom_error err;
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    vec_lanes = t.vector_bits / 32;
    vec_regs = t.vector_registers;
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK);
    flash(sch, 8, 64, 0);
    vec_lanes = vec_regs = 0;
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
    loom_sim_result r;
    cr_assert_eq(loom_sim_run(f, L.ds, &t, &r, &err), LOOM_OK, "%s", err.msg);
    double n = 512, d = 64, fma = 2 * n * n * d / (t.vector_bits / 32), bound = fma / t.fma_units;
    cr_log_info("attention 512 x 64, 8 x 64 tiles: %.3g compute cycles, FMA bound %.3g, %.3g FLOP", r.compute_cycles,
                bound, r.flops);
    cr_expect_geq(r.flops, 4 * n * n * d, "%g FLOP simulated, 4 N^2 D = %g", r.flops, 4 * n * n * d);
    cr_expect_geq(r.compute_cycles, bound, "%g compute cycles under the FMA bound %g", r.compute_cycles, bound);
    cr_expect_leq(r.compute_cycles, 2 * bound, "%g compute cycles over twice the FMA bound %g", r.compute_cycles,
                  bound);
    loom_lir_func_free(f);
    free(sch);
    unload(&L);
}
