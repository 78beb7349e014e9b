/* Tests of the simulator's rules for accumulation chains that restart
 * and overlap (runtime/sim/sim.h "Independent chains"): a float local
 * assigned afresh (model 26), across a calibrated core's reorder window
 * (model 34), a dense tile's zeroed workspace (model 38; its zeroing
 * folded into the first FMAs, model 46); a CSR row's (models 56, 62, 82,
 * 83) is in tests/test_sim_rows.c.  The chain itself and register tiles'
 * chains side by side are in tests/test_sim_kernels.c and tests/test_sim.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../dsl/schedule/query.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../runtime/sim/sim_constants.h"
#include "../runtime/target/target.h"

#include "sim_fixture.h"

/* ---- independent chains (model 26) ---------------------------------------------- */

/* T(i) = X(4 i) + ... + X(4 i + 3) for 64 rows i, scalar, written as LIR
 * by hand: a float local summed by an inner loop of 4 (a chain of 4 x 4
 * cycles a row).  fresh: the local is assigned 0 in each row, so the rows'
 * chains are independent; else it is assigned once, before the rows, and
 * the rows' sums form one chain.  vary: the inner loop runs 3 and 4 times
 * in turn (its exit mispredicted in every row).  norm: the target's
 * issue_chain_norm (0: none, as a hand-written target; > 0: a calibrated
 * one, model 34).  Returns the compute cycles (without a norm the longer
 * of issue and chain). */
static double row_sums(int fresh, int vary, double norm)
{
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    t.autovectorize = 0;
    t.branch_miss_cycles = 0;
    t.issue_chain_norm = norm;
    lir_kern k = lir_kern_new("rows.loom", "param J = 256\ntensor X(J) dense\ntensor T(J) dense output\nT(j) = X(j)\n");
    lir_func *f = k.f;
    int X = loom_lir_buffer_get(f, LIR_BUF_VALS, 0, 0), T = loom_lir_buffer_get(f, LIR_BUF_VALS, 1, 0);
    int vi = loom_lir_new_var(f, "i", LIR_I64), vk = loom_lir_new_var(f, "k", LIR_I64);
    int vs = loom_lir_new_var(f, "sum", LIR_F32);
    lir_stmt *li = loom_lir_for(f, vi, loom_lir_int(f, 0), loom_lir_int(f, 64), LIR_LOOP_SERIAL);
    /* vary: 3 + i - 2 (i / 2), 3 and 4 in turn */
    lir_expr *half = loom_lir_bin(f, LIR_DIV, loom_lir_var_ref(f, vi), loom_lir_int(f, 2));
    lir_expr *odd = loom_lir_bin(f, LIR_SUB, loom_lir_var_ref(f, vi), loom_lir_bin(f, LIR_MUL, half, loom_lir_int(f, 2)));
    lir_expr *hi = vary ? loom_lir_bin(f, LIR_ADD, odd, loom_lir_int(f, 3)) : loom_lir_int(f, 4);
    lir_stmt *lk = loom_lir_for(f, vk, loom_lir_int(f, 0), hi, LIR_LOOP_SERIAL);
    cr_assert(li && lk);
    lir_expr *at = loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, vi), loom_lir_int(f, 4)),
                                loom_lir_var_ref(f, vk));
    lir_expr *v = loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, vs), loom_lir_load(f, X, at));
    cr_assert_not_null(v);
    v->type = LIR_F32;
    loom_lir_append(f, lk->body, loom_lir_assign(f, vs, v));
    if (fresh)
        loom_lir_append(f, li->body, loom_lir_let(f, vs, loom_lir_float(f, 0)));
    else
        loom_lir_append(f, f->body, loom_lir_let(f, vs, loom_lir_float(f, 0)));
    loom_lir_append(f, li->body, lk);
    loom_lir_append(f, li->body, loom_lir_store(f, T, loom_lir_var_ref(f, vi), loom_lir_var_ref(f, vs)));
    loom_lir_append(f, f->body, li);
    return lir_sim(&k, &t).compute_cycles;
}

/* Model 26 ("Independent chains"): a float local assigned afresh in each
 * row starts a chain that does not wait for the previous row's, and the
 * core runs the chains of rows within LOOM_SIM_CHAIN_OVERLAP_INSTRUCTIONS
 * of each other side by side -- unless a mispredicted branch lies between
 * them.  SDDMM's dot product a nonzero ran at 20.4 us on Emerald Rapids
 * (2 threads) where model 25, which chained the nonzeros, simulated 34.8. */
Test(sim, independent_chains_of_a_fresh_local_overlap)
{
    double carried = row_sums(0, 0, 0), fresh = row_sums(1, 0, 0), missed = row_sums(1, 1, 0);
    cr_expect_float_eq(carried, 64 * 4 * 4.0, 1e-6, "one chain through the rows: %g cycles, not 64 x 16", carried);
    cr_expect_lt(fresh, 0.6 * carried, "a fresh sum in each row: %g cycles, chained %g", fresh, carried);
    cr_expect_float_eq(missed, 32 * 3 * 4.0 + 32 * 4 * 4.0, 1e-6,
                       "a mispredicted exit in every row: %g cycles, not the rows' chains one after another", missed);
}

/* Model 34 ("Independent chains" on a calibrated target, one with an
 * issue_chain_norm): the rows' fresh chains overlap across a whole reorder
 * buffer (LOOM_SIM_REORDER_WINDOW_INSTRUCTIONS), and a mispredicted exit
 * does not end the overlap -- the rows already in flight keep executing
 * through the refill (model 23).  SDDMM's AVX2 nonzero on Zen 5 (8 FMAs a
 * chain, a row exit mispredicted every 4.5 nonzeros) measured about 11.6
 * cycles where model 26 simulated 22. */
Test(sim, a_calibrated_core_overlaps_fresh_chains_across_mispredicts)
{
    double carried = row_sums(0, 0, 2), fresh = row_sums(1, 0, 2), missed = row_sums(1, 1, 2);
    double missed26 = row_sums(1, 1, 0);
    cr_expect_gt(carried, 64 * 4 * 4.0, "one chain through the rows still counts whole: %g cycles", carried);
    cr_expect_lt(fresh, 0.35 * carried, "fresh sums within a reorder window: %g cycles, chained %g", fresh, carried);
    cr_expect_lt(missed, 0.35 * carried, "a mispredicted exit in every row: %g cycles, chained %g", missed, carried);
    cr_expect_lt(missed, 0.5 * missed26, "model 34 %g cycles against model 26's %g (each exit ends its groups)", missed,
                 missed26);
}

/* ---- a dense tile's zeroed workspace restarts its chain (model 38) ---- */

/* Schedule s lowered and simulated with ds on one core of tg. */
static loom_sim_result lower_sim_one(const loom_schedule *s, const loom_dataset *ds, const loom_target *tg)
{
    loom_error err;
    lir_func *f;
    cr_assert_eq(loom_lower(s, &f, &err), LOOM_OK, "%s", err.msg);
    loom_target one = *tg;
    one.cores = 1;
    loom_sim_result r;
    cr_assert_eq(loom_sim_run(f, ds, &one, &r, &err), LOOM_OK, "%s", err.msg);
    loom_lir_func_free(f);
    return r;
}

/* lower_sim_one, then the schedule (malloc'd), the data and the program freed. */
static loom_sim_result lower_sim_free(loom_schedule *s, loom_dataset *ds, loom_program *prog, const loom_target *tg)
{
    loom_sim_result r = lower_sim_one(s, ds, tg);
    free(s);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return r;
}

/* T(i, c) = H(i, f) * W(f, c), I rows, F = 16, C columns: i split [?, 4, 1]
 * (guarded when 4 does not divide I), the loops i_0 i_1 f i_2 c with a
 * workspace of one row at i_1 (filled, 16 FMAs of one vector, stored), c
 * vectorized: GCN2's T2 = H1 W2 tile of one row (a campaign's
 * `Split@27` = 1).  The tile guard `i < I` is tested inside f and i_2.
 * Simulated on one core of tg. */
static loom_sim_result tile_sim(int64_t rows, int64_t tile, int64_t cols, const loom_target *tg);
static loom_sim_result row_tile_sim(int64_t rows, int64_t cols, const loom_target *tg)
{
    return tile_sim(rows, 1, cols, tg);
}

/* The same with tiles of `tile` rows, their loop unrolled completely (GCN2's
 * `Split@27` = tile, `Annotate unroll` = tile): the tile's copies each
 * update their row of the workspace and share W's row; pack: W packed into
 * a panel at i_0 (GCN2's `PackPanel@36` = 1). */
static loom_sim_result tile_sim_pack(int64_t rows, int64_t tile, int64_t cols, int pack, const loom_target *tg);
static loom_sim_result tile_sim(int64_t rows, int64_t tile, int64_t cols, const loom_target *tg)
{
    return tile_sim_pack(rows, tile, cols, 0, tg);
}

static loom_sim_result tile_sim_pack(int64_t rows, int64_t tile, int64_t cols, int pack, const loom_target *tg)
{
    char text[320];
    snprintf(text, sizeof text,
             "param I = %lld\nparam F = 16\nparam C = %lld\ntensor H(I, F) dense\ntensor W(F, C) dense\n"
             "tensor T(I, C) dense output\nT(i, c) = H(i, f) * W(f, c)\n",
             (long long)rows, (long long)cols);
    loom_error err;
    loom_program *prog;
    loom_dataset *ds;
    int b, loops[8], n = 8;
    loom_schedule *s = naive_dense("rowtile.loom", text, "T", &prog, &ds, &b, loops, &n);
    cr_assert_eq(n, 3);
    int64_t fi[3] = {0, 4, tile}, ff[2] = {1, 16}, fc[2] = {1, cols};
    int il[3], fl[2], cl[2];
    cr_assert_eq(loom_split(s, loops[0], 3, NULL, fi, il, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_split(s, loops[1], 2, NULL, ff, fl, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_split(s, loops[2], 2, NULL, fc, cl, &err), LOOM_OK, "%s", err.msg);
    int order[7] = {il[0], cl[0], il[1], fl[0], fl[1], il[2], cl[1]};
    cr_assert_eq(loom_reorder(s, order, 7, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_cache_write(s, b, il[1], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_vectorize(s, cl[1], &err), LOOM_OK, "%s", err.msg);
    if (tile > 1)
        cr_assert_eq(loom_unroll(s, il[2], (int)tile, &err), LOOM_OK, "%s", err.msg);
    if (pack)
        cr_assert_eq(loom_pack_panel(s, b, il[0], "W", -1, &err), LOOM_OK, "%s", err.msg);
    return lower_sim_free(s, ds, prog, tg);
}

/* Model 38: each row's 16 FMAs wait for one another, but the next row's
 * chain starts from its zeroed workspace, not from this row's result: on a
 * calibrated target (issue_chain_norm, as loom calibrate writes) the rows'
 * chains run side by side within the reorder window, and the core's cycles
 * are well under the summed chain (rows x 16 x FP_LATENCY; issue binds).  On a target
 * without the key the chain is summed, as before (model 14).  GCN2 Cora's
 * one-row T2 tile (GCC 12, AVX-512: three accumulators of 4 + 2 + 1 lanes
 * zeroed per row, 16 FMAs each) measured 1.04x the time of its 9-row tile
 * on the Zen 5 host where model 37 simulated 1.31x (docs/simulator.md
 * "Model 38"). */
Test(sim, a_dense_tiles_zeroed_workspace_restarts_its_chain)
{
    loom_target cal = avx2_calibrated();
    loom_target plain = cal;
    plain.issue_chain_norm = 0;
    const int64_t rows = 4002;
    loom_sim_result r = row_tile_sim(rows, 8, &cal), summed = row_tile_sim(rows, 8, &plain);
    double chain = (double)rows * 16 * 4; /* FP_LATENCY: 4 cycles (runtime/sim/sim_machine.h) */
    cr_expect_lt(r.compute_cycles, 0.75 * chain, "restarted: %g compute cycles, the summed chain %g", r.compute_cycles,
                 chain);
    cr_expect_geq(summed.compute_cycles, chain, "without issue_chain_norm: %g compute cycles, the summed chain %g",
                  summed.compute_cycles, chain);
    cr_expect_eq(r.flops, summed.flops);
}

/* Model 46: the one-row tile's workspace (8 floats, one ymm) is zeroed
 * before a block of literal loops only, so cc unrolls them and the first
 * FMA of each row takes a zero register kept outside the loops as its
 * addend: on a calibrated target the fill issues no instruction, on a
 * target without issue_chain_norm one register zeroing a row.  The tile's
 * loops all have literal bounds, so no other rule that issue_chain_norm
 * turns on (model 44's loop set-up) changes the instruction count: the two
 * differ by one instruction a row (the fill sits inside the tile's guard:
 * a row past I fills nothing). */
Test(sim, a_register_workspace_zeroed_before_literal_loops_costs_no_instruction)
{
    loom_target cal = avx2_calibrated();
    loom_target plain = cal;
    plain.issue_chain_norm = 0;
    const int64_t rows = 4002;
    loom_sim_result r = row_tile_sim(rows, 8, &cal), zeroed = row_tile_sim(rows, 8, &plain);
    cr_expect_eq(zeroed.instructions - r.instructions, (double)rows,
                 "instructions %.0f with the zero folded, %.0f with a zeroing per row: %lld rows", r.instructions,
                 zeroed.instructions, (long long)rows);
    cr_expect_eq(r.flops, zeroed.flops);
}

/* Model 39: a vector loop of literal trip 7 on 8 lanes is not one masked
 * vector but GCC's pieces, a vector of 4 lanes, one of 2 and a scalar --
 * three FMAs where C = 8 has one (GCN2 Cora's 7 classes: the assembly of
 * its T2 = H1 W2 tile, docs/simulator.md "Model 39").  On a calibrated
 * target (peel_times, as loom calibrate writes) each of the rows' 16 f
 * steps issues at least two instructions more with C = 7 than with C = 8;
 * on a target without the key the two run the same one vector. */
Test(sim, a_vector_loop_of_seven_lanes_runs_as_pieces)
{
    loom_target cal = avx2_calibrated();
    loom_target plain = cal;
    plain.peel_times = 0;
    const int64_t rows = 4000;
    loom_sim_result c7 = row_tile_sim(rows, 7, &cal), c8 = row_tile_sim(rows, 8, &cal);
    loom_sim_result p7 = row_tile_sim(rows, 7, &plain), p8 = row_tile_sim(rows, 8, &plain);
    double extra = 2.0 * (double)rows * 16;
    cr_expect_geq(c7.instructions - c8.instructions, extra,
                  "C = 7: %g instructions, C = 8: %g; the pieces' FMAs alone are %g more", c7.instructions,
                  c8.instructions, extra);
    cr_expect_lt(fabs(p7.instructions - p8.instructions), 0.05 * p8.instructions,
                 "without peel_times: C = 7 %g instructions, C = 8 %g", p7.instructions, p8.instructions);
    cr_expect_lt(c7.flops, c8.flops);
}

/* Model 40: a register tile's copies need their vector loop's registers.
 * A row of 7 classes is three pieces (model 39), so on AVX2 (16 registers)
 * 3 rows take 3 x 3 + W's row (3) + the broadcast's 1 = 13 and fit, with
 * room for model 71's packing (4 rows, 16 of 16, no longer fit: the next
 * test): the tile stores only its write-back, three pieces a row.  6 rows take 22: its
 * accumulators go through memory every f step (GCN2 Cora's 13- and 14-row
 * T2 tiles on AVX-512, 39-42 of 32 registers: GCC 12's assembly stores and
 * reloads a third of them a step, docs/simulator.md "Model 40").  Counted
 * as 42 floats in 6 packed vectors (model 39) the 6-row tile fitted.  With
 * 8 classes, one vector a row, 6 rows fit. */
Test(sim, a_tiles_rows_of_seven_lanes_take_three_registers_each)
{
    loom_target cal = avx2_calibrated();
    const int64_t rows = 4800;
    loom_sim_result three = tile_sim(rows, 3, 7, &cal), six = tile_sim(rows, 6, 7, &cal), six8 = tile_sim(rows, 6, 8, &cal);
    cr_expect_leq(three.stores, 3.0 * rows, "3 x 7 fits: %g stores for %lld rows", three.stores, (long long)rows);
    cr_expect_geq(six.stores, 16.0 * rows, "6 x 7 spills: %g stores for %lld rows of 16 f steps", six.stores,
                  (long long)rows);
    cr_expect_leq(six8.stores, 1.0 * rows, "6 x 8 fits: %g stores for %lld rows", six8.stores, (long long)rows);
    cr_expect_eq(six.flops, six8.flops * 7 / 8);
}

/* Model 71: GCC 12's SLP vectorizer packs the narrow pieces of a tile's
 * neighbouring rows and takes LOOM_SIM_SLP_TEMP_REGISTERS for it.  4 rows
 * of 7 classes on AVX2 count 4 x 3 + W's row (3) + the broadcast's 1 = 16
 * of 16 and fitted; GCC 12 stores 3 vectors of GCN2 Cora's 4-row T2 tile to
 * the stack and reloads them every f step (its assembly, Zen 5, 2026-12-06;
 * docs/simulator.md "Model 71"): on a calibrated target the tile now goes
 * through memory every f step.  4 rows of 8 classes (one vector a row, no
 * pieces to pack) still fit, and so do 4 rows of 7 without peel_times (the
 * calibrated-only rules off).  Fails on model 70 (the 4 x 7 tile fitted). */
Test(sim, a_tile_of_pieces_that_fits_only_unpacked_spills)
{
    loom_target cal = avx2_calibrated();
    loom_target plain = cal;
    plain.peel_times = 0;
    const int64_t rows = 4800;
    loom_sim_result four = tile_sim(rows, 4, 7, &cal), four8 = tile_sim(rows, 4, 8, &cal);
    loom_sim_result four_plain = tile_sim(rows, 4, 7, &plain);
    cr_expect_geq(four.stores, 16.0 * rows, "4 x 7 spills: %g stores for %lld rows of 16 f steps", four.stores,
                  (long long)rows);
    cr_expect_leq(four8.stores, 1.0 * rows, "4 x 8 fits: %g stores for %lld rows", four8.stores, (long long)rows);
    cr_expect_leq(four_plain.stores, 3.0 * rows, "4 x 7 without peel_times fits: %g stores for %lld rows",
                  four_plain.stores, (long long)rows);
}

/* Model 47: 5 rows of 7 classes on AVX2 take 5 x 3 piece registers; W's
 * row is folded into the FMAs (5 copies, too few to keep it: model 13) and
 * the broadcast takes 1 -- 16 of 16, which fitted.  GCC 12 keeps W's narrow
 * pieces in registers of their own and spills the tile, storing it to the
 * stack every f step (GCN2 Cora's 5-row T2 tile, docs/simulator.md "Model
 * 47"): on a calibrated target the tile now goes through memory every f
 * step.  5 rows of 8 classes (one vector a row, no pieces) still fit. */
Test(sim, a_tile_of_pieces_with_folded_shared_loads_needs_a_register_more)
{
    loom_target cal = avx2_calibrated();
    cal.shared_load_copies = 3; /* as loom calibrate wrote on the Zen 5 host (GCC's Zen tuning folds) */
    const int64_t rows = 4800;
    loom_sim_result five = tile_sim(rows, 5, 7, &cal), five8 = tile_sim(rows, 5, 8, &cal);
    cr_expect_geq(five.stores, 16.0 * rows, "5 x 7 spills: %g stores for %lld rows of 16 f steps", five.stores,
                  (long long)rows);
    cr_expect_leq(five8.stores, 1.0 * rows, "5 x 8 fits: %g stores for %lld rows", five8.stores, (long long)rows);
}

/* Model 60 (sim.h "Register-resident workspaces"): a packed panel is read
 * from memory.  GCN2's T2 = H1 W2 with W2 (16 x 7) packed: GCC 12 loads the
 * panel's pieces at every f step as it loads W2's (Zen 5, AVX2), and
 * packing measured 0.995-1.012x; on model 59 the panel (112 floats, 14 ymm)
 * counted as register-resident and its loads as free.  One-row tiles on a
 * calibrated AVX2 core: the packed kernel loads what the unpacked one does
 * and the panel's copy on top; fails on model 59 (about 0.55x). */
Test(sim, a_packed_panel_is_read_from_memory)
{
    loom_target cal = avx2_calibrated();
    const int64_t rows = 4800;
    loom_sim_result plain = tile_sim_pack(rows, 1, 7, 0, &cal), packed = tile_sim_pack(rows, 1, 7, 1, &cal);
    cr_log_info("T = H W, 16 x 7 W: %g loads unpacked, %g packed", plain.loads, packed.loads);
    cr_expect_geq(packed.loads, plain.loads, "packed %g loads, unpacked %g", packed.loads, plain.loads);
    /* the copy: 16 rows of 4 + 2 + 1 lanes (48 loads) at each of rows / 4 i_0 iterations */
    cr_expect_leq(packed.loads, plain.loads + 48.0 * rows / 4, "packed %g loads, unpacked %g", packed.loads,
                  plain.loads);
    cr_expect_eq(packed.flops, plain.flops);
}

/* The X W product on Cora's features (F = 16) into an intermediate T,
 * then relu'd into the output Y (*kt), and straight into Y (*ko), naive
 * serial schedules; *cal a calibrated AVX2 core, *plain the same without
 * issue_chain_norm (the calibrated-only rules off), one core each. */
static void xw_kernels(kern *kt, kern *ko, loom_target *cal, loom_target *plain)
{
    const char *head = "param F = 16\ntensor X(N, G) csr\ntensor W(G, F) dense\ntensor Y(N, F) dense output\n";
    char temp[512], out[512];
    snprintf(temp, sizeof temp, "%sT(i, f) = X(i, g) * W(g, f)\nY(i, f) = relu(T(i, f))\n", head);
    snprintf(out, sizeof out, "%sY(i, f) = X(i, g) * W(g, f)\n", head);
    *cal = avx2_calibrated();
    cal->cores = 1;
    *plain = *cal;
    plain->issue_chain_norm = 0;
    load(kt, temp, "X", "data/cora_features.mtx", 1);
    load(ko, out, "X", "data/cora_features.mtx", 1);
}

/* The stored entries of xw_kernels' sparse X (*nnz) and its nonempty rows (*rows). */
static void x_rows(const kern *k, double *nnz, double *rows)
{
    const loom_tensor_abi *X = NULL;
    for (int t = 0; t < k->ds->ntensors; t++)
        if (k->ds->t[t].pos[1])
            X = &k->ds->t[t];
    cr_assert_not_null(X);
    *nnz = (double)X->pos[1][X->dims[0]];
    *rows = 0;
    for (int64_t i = 0; i < X->dims[0]; i++)
        *rows += X->pos[1][i + 1] > X->pos[1][i];
}

/* Model 41: an accumulation into a kernel-internal intermediate restarts
 * its chain at each new element, and the segments overlap within the
 * reorder window, as a float local's (model 34); an output keeps its
 * summed chain.  GCN2 Cora's T1 = X W1 (X's rows 18 nonzeros long):
 * simulated 1.81x its measured time with the chain summed, 1.00x with
 * it restarted (Zen 5, AVX-512; docs/simulator.md "Model 41").  The same
 * X W product into an intermediate (then relu'd into the output) and
 * straight into the output, serial, naive loops (i, f, g: each T(i, f)
 * accumulates over row i's nonzeros): on a calibrated target the
 * intermediate's chain overlaps and the output's compute cycles are over
 * 1.25x the intermediate's (1.44x here; the relu statement on the
 * intermediate's side); without issue_chain_norm both sum their chains
 * and take the same cycles. */
Test(sim, an_intermediates_accumulation_chain_restarts_per_element)
{
    loom_target cal, plain;
    kern kt, ko;
    xw_kernels(&kt, &ko, &cal, &plain);
    loom_sim_result t = sim(&kt, &cal), o = sim(&ko, &cal), tp = sim(&kt, &plain), op = sim(&ko, &plain);
    cr_log_info("compute cycles: intermediate %g, output %g (calibrated); %g, %g (plain)", t.compute_cycles,
                o.compute_cycles, tp.compute_cycles, op.compute_cycles);
    cr_expect_gt(o.compute_cycles, 1.25 * t.compute_cycles, "output %g, intermediate %g compute cycles",
                 o.compute_cycles, t.compute_cycles);
    cr_expect_lt(fabs(tp.compute_cycles / op.compute_cycles - 1), 0.1,
                 "without issue_chain_norm: intermediate %g, output %g", tp.compute_cycles, op.compute_cycles);
    unload(&kt);
    unload(&ko);
}

/* Model 44 (sim.h "Loop set-up"): on a calibrated core (issue_chain_norm
 * > 0) a loop of run-time bounds costs LOOM_SIM_LOOP_ENTRY_IOPS an entry,
 * one whose body holds such a loop LOOM_SIM_NEST_ENTRY_IOPS more an entry
 * and LOOM_SIM_NEST_ITER_IOPS an iteration.  SpMM on skew_rows (F = 16,
 * serial, loops i, k, f), its nonzero loop k whole and split by PosSplit
 * into chunks of 16 (more positions than cc peels, model 63): the split's
 * extra instructions over the whole loop's,
 * counted on the calibrated core less on a hand-written one (where the rule
 * is off), are, per row, the outer chunk loop's entry set-up and, per
 * chunk, the inner loop's entry and the outer loop's iteration -- computed
 * here from the matrix's row lengths.  Fails on model 43 (no difference). */
Test(sim, a_split_nonzero_loop_costs_its_loop_set_up)
{
    loom_error err;
    loom_error_clear(&err);
    loom_dataset *ds;
    loom_schedule *sch;
    loom_target t;
    loom_program *prog = spmm_open("A=tests/data/skew_rows.mtx", "F=16", &ds, &sch, &t);
    double extra[2]; /* 0: k whole, 1: k split into chunks of 16 */
    for (int split = 0; split < 2; split++) {
        int k = spmm_nonzero_loop(sch, prog), out[2];
        if (split)
            cr_assert_eq(loom_pos_split(sch, k, "A", 16, -1, out, &err), LOOM_OK, "%s", err.msg);
        lir_func *f = NULL;
        cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
        loom_sim_result r[2];
        for (int cal = 0; cal < 2; cal++) {
            t.issue_chain_norm = cal ? 2 : 0;
            cr_assert_eq(loom_sim_run(f, ds, &t, &r[cal], &err), LOOM_OK, "%s", err.msg);
        }
        loom_lir_func_free(f);
        extra[split] = r[1].instructions - r[0].instructions;
        cr_assert_gt(extra[split], 0, "no loop set-up counted (split %d)", split);
    }
    const loom_tensor_abi *A = &ds->t[0];
    double want = 0;
    for (int64_t i = 0; i < A->dims[0]; i++) {
        int64_t d = A->pos[1][i + 1] - A->pos[1][i], chunks = (d + 15) / 16;
        want += LOOM_SIM_NEST_ENTRY_IOPS + (double)chunks * (LOOM_SIM_LOOP_ENTRY_IOPS + LOOM_SIM_NEST_ITER_IOPS);
    }
    cr_log_info("sim: skew_rows SpMM, the chunked nonzero loop's set-up %.0f instructions (whole loop %.0f more "
                "on the calibrated core, split %.0f)", want, extra[0], extra[1]);
    cr_assert_float_eq(extra[1] - extra[0], want, 1e-6 * want, "split %.1f - whole %.1f, want %.1f", extra[1],
                       extra[0], want);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* ---- a scalar accumulation in memory restarts per element (model 52) ---- */

/* Workload text (written to a file called name) parsed, its tensor A read
 * from Matrix Market file mtx, its dense inputs generated. */
static void load_with_a(const char *name, const char *text, const char *mtx, loom_program **prog, loom_dataset **ds)
{
    loom_error err;
    cr_assert_eq(loom_program_parse_file(write_tmp(name, text), prog, &err), LOOM_OK, "%s", err.msg);
    loom_data_spec spec;
    snprintf(spec.tensor, sizeof spec.tensor, "A");
    snprintf(spec.path, sizeof spec.path, "%s", mtx);
    cr_assert_eq(loom_dataset_load(*prog, &spec, 1, NULL, 0, 1, ds, &err), LOOM_OK, "%s", err.msg);
}

/* Y(i, c) = A(i, j) * T(j, c) on Cora's adjacency, C = 7 classes, serial,
 * on one core of tg: GCN2's H2 = A T2 with the nonzeros inside the class
 * loop.  inner 0: the loops (i, c, j) -- the lowering sums a row's class
 * into a float local; 1: c split [7, 1] and the loops (i, c_0, j, c_1) --
 * the loop of one below the nonzeros keeps the accumulation in Y's memory,
 * one element a row and class (GCN2's `c_3` loop of one under its split
 * class loop).  Returns the result; *nnz and *rows the adjacency's
 * nonzeros and non-empty rows.  class_sums_of: the same on matrix mtx. */
static loom_sim_result class_sums_of(const char *mtx, int inner, const loom_target *tg, double *nnz, double *rows)
{
    const char *text = "param C = 7\ntensor A(N, N) csr\ntensor T(N, C) dense\ntensor Y(N, C) dense output\n"
                       "Y(i, c) = A(i, j) * T(j, c)\n";
    loom_error err;
    loom_program *prog;
    loom_dataset *ds;
    load_with_a("classes.loom", text, mtx, &prog, &ds);
    loom_schedule *s = malloc(sizeof *s);
    cr_assert_eq(loom_schedule_naive(s, prog, 1, &err), LOOM_OK, "%s", err.msg);
    int b, loops[8], n = 8;
    cr_assert_eq(loom_get_block(s, "Y", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(s, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(n, 3); /* i, j, c */
    if (inner) {
        int64_t fc[2] = {7, 1};
        int cl[2];
        cr_assert_eq(loom_split(s, loops[2], 2, NULL, fc, cl, &err), LOOM_OK, "%s", err.msg);
        int order[4] = {loops[0], cl[0], loops[1], cl[1]};
        cr_assert_eq(loom_reorder(s, order, 4, &err), LOOM_OK, "%s", err.msg);
    } else {
        int order[3] = {loops[0], loops[2], loops[1]};
        cr_assert_eq(loom_reorder(s, order, 3, &err), LOOM_OK, "%s", err.msg);
    }
    loom_sim_result r = lower_sim_one(s, ds, tg);
    const loom_tensor_abi *A = &ds->t[0];
    *nnz = (double)A->pos[1][A->dims[0]];
    *rows = 0;
    for (int64_t i = 0; i < A->dims[0]; i++)
        *rows += A->pos[1][i + 1] > A->pos[1][i];
    free(s);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return r;
}

static loom_sim_result class_sums(int inner, const loom_target *tg, double *nnz, double *rows)
{
    return class_sums_of("data/cora_adj.mtx", inner, tg, nnz, rows);
}

/* Model 52: an accumulation into memory in scalar code -- an output's, not
 * only an intermediate's (model 41) -- restarts its site's chain at an
 * element the site has not accumulated into lately, and the segments
 * overlap within the reorder window.  GCC 12 does not keep Y[i, c] in a
 * register here (a load, vmulss, vaddss and a store a nonzero), yet the
 * (i, c) elements' chains, 3.9 nonzeros long on Cora, run side by side:
 * measured 45.5 us on one core of the Zen 5 host (about 2.1 cycles an
 * accumulation, not the 7 of its add and store forwarding), simulated
 * 122.0 us by model 51 and 54.6 us by model 52 (docs/simulator.md
 * "Model 52").  On a calibrated core the memory accumulation's compute
 * cycles are under 0.7x its chain summed (each element's accumulations
 * after its first: FP_LATENCY + LOOM_SIM_STORE_FORWARD_CYCLES each) and
 * within 1.5x the float local's; on a target without issue_chain_norm the
 * chain is summed, as before.  Fails on model 51 (2.57x the float local). */
Test(sim, a_scalar_accumulation_in_memory_restarts_per_element)
{
    loom_target cal = avx2_calibrated(), plain = cal;
    plain.issue_chain_norm = 0;
    double nnz, rows;
    loom_sim_result lf = class_sums(0, &cal, &nnz, &rows), mem = class_sums(1, &cal, &nnz, &rows);
    loom_sim_result memp = class_sums(1, &plain, &nnz, &rows);
    double chain = (nnz - rows) * 7 * (4 + LOOM_SIM_STORE_FORWARD_CYCLES); /* FP_LATENCY: 4 (sim_machine.h) */
    cr_log_info("compute cycles: float local %g, memory %g (calibrated), memory %g (plain); summed chain %g",
                lf.compute_cycles, mem.compute_cycles, memp.compute_cycles, chain);
    cr_expect_lt(mem.compute_cycles, 0.7 * chain, "memory accumulation: %g compute cycles, its chain summed %g",
                 mem.compute_cycles, chain);
    cr_expect_lt(mem.compute_cycles, 1.5 * lf.compute_cycles, "memory %g, float local %g compute cycles",
                 mem.compute_cycles, lf.compute_cycles);
    cr_expect_geq(memp.compute_cycles, chain, "without issue_chain_norm: %g compute cycles, the summed chain %g",
                  memp.compute_cycles, chain);
    cr_expect_eq(mem.flops, lf.flops);
}

/* ---- a float sum over a row's nonzeros, vectorized by cc (model 53) ---- */

/* Y(i, c) = A(i, j) * T(j, c), C = 7, on a matrix of 512 rows of `len`
 * nonzeros each (columns i + 16 k mod 512, written here), loops (i, c, j):
 * each class's sum over the row's nonzeros in a float local (class_sums_of's
 * first schedule), serial, on one core of tg. */
static loom_sim_result row_sums_of_len(int len, const loom_target *tg)
{
    static char mtx[600000];
    int at = snprintf(mtx, sizeof mtx, "%%%%MatrixMarket matrix coordinate real general\n512 512 %d\n", 512 * len);
    for (int i = 0; i < 512; i++)
        for (int k = 0; k < len; k++)
            at += snprintf(mtx + at, sizeof mtx - (size_t)at, "%d %d 1.5\n", i + 1, (i + 16 * k) % 512 + 1);
    char name[32];
    snprintf(name, sizeof name, "rows%d.mtx", len);
    double nnz, rows;
    return class_sums_of(write_tmp(name, mtx), 0, tg, &nnz, &rows);
}

/* Model 53 (sim.h "Vectors"): on a calibrated target cc's vector code of a
 * float sum over a row's nonzeros gathers every lane of its full vectors
 * (AVX2: rows of 32 all 4 vectors of 8; rows of 12 one vector, the 4 left
 * scalar, 16-lane targets only having a half-width epilogue; rows of 3 no
 * vector), and its gathers, lane-by-lane adds and trip tests make it
 * slower than the scalar loop (autovectorize off): on the Zen 5 host GCC
 * 12's AVX2 code ran 1.46x (rows of 32) and 1.19x (rows of 3) the same
 * code built with -fno-tree-vectorize (docs/simulator.md "Model 53").
 * Fails on model 52 (no gathered lane; the same cycles). */
Test(sim, a_float_sum_over_a_rows_nonzeros_runs_as_gccs_vectors)
{
    loom_target cal = avx2_calibrated(), scalar = cal;
    scalar.autovectorize = 0;
    loom_sim_result v32 = row_sums_of_len(32, &cal), s32 = row_sums_of_len(32, &scalar);
    loom_sim_result v3 = row_sums_of_len(3, &cal), s3 = row_sums_of_len(3, &scalar);
    loom_sim_result v12 = row_sums_of_len(12, &cal);
    cr_log_info("rows of 32: %g cycles vectorized (%g gathered lanes), %g scalar; rows of 3: %g, %g (%g gathered); "
                "rows of 12: %g gathered", v32.cycles, v32.gathers, s32.cycles, v3.cycles, s3.cycles, v3.gathers,
                v12.gathers);
    const double inst = 512.0 * 7; /* rows x classes: the sum's instances */
    cr_expect_eq(v32.gathers, inst * 32, "rows of 32: %g gathered lanes", v32.gathers);
    cr_expect_eq(v12.gathers, inst * 8, "rows of 12: %g gathered lanes", v12.gathers);
    cr_expect_eq(v3.gathers, 0, "rows of 3: %g gathered lanes", v3.gathers);
    cr_expect_eq(s32.gathers, 0, "autovectorize off: %g gathered lanes", s32.gathers);
    cr_expect_gt(v32.cycles, 1.3 * s32.cycles, "rows of 32: %g cycles vectorized, %g scalar", v32.cycles, s32.cycles);
    cr_expect_gt(v3.cycles, 1.05 * s3.cycles, "rows of 3: %g cycles vectorized, %g scalar", v3.cycles, s3.cycles);
    cr_expect_eq(v32.flops, s32.flops);
}

/* ---- an intermediate's row stays in registers across the nonzeros (model 54) ---- */

/* Model 54 (sim.h "Independent chains"): in vector code an accumulation
 * into a kernel-internal intermediate whose loop instance accumulates into
 * the elements of the site's previous instance loads nothing -- cc keeps
 * the row in registers across the loop around it (GCC 12's AVX2 code for
 * GCN2's T1 = X W1: T1's row loaded before X's nonzero loop, stored every
 * nonzero).  T(i, f) = X(i, g) * W(g, f), F = 16, then relu'd into Y, naive
 * loops (i, g, f) on Cora's features, serial, one calibrated AVX2 core
 * (8 lanes: a row is 2 vectors): T's loads inside the g loop are gone but
 * for each row's first nonzero -- 2 x (nonzeros - non-empty rows) fewer
 * loads than with issue_chain_norm 0 (the rule off), the stores the same.
 * The output Y = X W accumulated directly keeps its loads.  Fails on model
 * 53 (the same loads). */
Test(sim, an_intermediates_row_stays_in_registers_across_the_nonzeros)
{
    loom_target cal, plain;
    kern kt, ko;
    xw_kernels(&kt, &ko, &cal, &plain);
    loom_sim_result t = sim(&kt, &cal), tp = sim(&kt, &plain), o = sim(&ko, &cal), op = sim(&ko, &plain);
    double nnz, rows;
    x_rows(&kt, &nnz, &rows);
    cr_log_info("loads: intermediate %g (calibrated), %g (plain); output %g, %g; stores %g, %g; nnz %g, rows %g",
                t.loads, tp.loads, o.loads, op.loads, t.stores, tp.stores, nnz, rows);
    /* within 0.5%: the other calibrated-only rules move a few accesses */
    double want = 2 * (nnz - rows);
    cr_expect_lt(fabs(tp.loads - t.loads - want), 0.005 * want, "intermediate: %g loads calibrated, %g plain, want %g fewer",
                 t.loads, tp.loads, want);
    cr_expect_lt(fabs(t.stores - tp.stores), 0.005 * tp.stores, "stores: %g calibrated, %g plain", t.stores, tp.stores);
    cr_expect_lt(fabs(o.loads - op.loads), 0.005 * op.loads, "output: %g loads calibrated, %g plain", o.loads, op.loads);
    unload(&kt);
    unload(&ko);
}

/* Model 72 (sim.h "Independent chains"): an intermediate's row kept in a
 * register across X's nonzeros and stored every nonzero (model 54) is one
 * chain a row, and the rows' chains overlap within the reorder window, as
 * a register workspace's do: the lowering prints that position loop as an
 * offset from the row's start, and on the Zen 5 host GCC 12's code for it
 * ran 2.1-2.3 cycles a nonzero over rows of 1-16 in random order, as the
 * workspace did (bench/bench_branch_rows; 4.7-5.0 in the plain form, which
 * model 59 summed).  T = X W on Cora's features (F = 16, the calibrated AVX2
 * core of xw_kernels): the compute cycles stay under 0.9x the Euclidean
 * norm of the issue slots and the rows' summed chain, FP_LATENCY (4) x
 * (nonzeros - rows) ("Cycles"), and over the issue slots alone.  Fails on
 * models 59-71 (0.97-1.1x that norm). */
Test(sim, an_intermediates_stored_rows_chains_overlap)
{
    loom_target cal, plain;
    kern kt, ko;
    xw_kernels(&kt, &ko, &cal, &plain);
    loom_sim_result t = sim(&kt, &cal);
    double nnz, rows;
    x_rows(&kt, &nnz, &rows);
    double chain = 4.0 * (nnz - rows), issue = t.instructions / cal.issue_width, summed = hypot(issue, chain);
    cr_log_info("T = X W then relu: %g compute cycles; the rows' summed chain %g and the issue slots %g: %g "
                "(%g nonzeros, %g rows)",
                t.compute_cycles, chain, issue, summed, nnz, rows);
    cr_expect_lt(t.compute_cycles, 0.9 * summed, "compute %g cycles, the summed chain's norm %g", t.compute_cycles,
                 summed);
    cr_expect_gt(t.compute_cycles, issue, "compute %g cycles, the issue slots %g", t.compute_cycles, issue);
    unload(&kt);
    unload(&ko);
}

/* ---- a sum of two iterations keeps two partial sums (model 55) ---- */

/* y(i) = A(i, k) * x(k) on 512 rows of 32 nonzeros each (written here),
 * serial, on one core of tg: chunk 0 -- the row's positions in one serial
 * loop (the whole-row sum, one FMA chain); chunk 2 -- PosSplit 2 with the
 * chunk's loop of two vectorized, which codegen emits with safelen(2). */
static loom_sim_result spmv_chunks(int chunk, const loom_target *tg)
{
    static char mtx[400000];
    int at = snprintf(mtx, sizeof mtx, "%%%%MatrixMarket matrix coordinate real general\n512 512 %d\n", 512 * 32);
    for (int i = 0; i < 512; i++)
        for (int k = 0; k < 32; k++)
            at += snprintf(mtx + at, sizeof mtx - (size_t)at, "%d %d 0.5\n", i + 1, (i + 16 * k) % 512 + 1);
    const char *text = "tensor A(N, K) csr\ntensor x(K) dense\ntensor y(N) dense output\ny(i) = A(i, k) * x(k)\n";
    loom_error err;
    loom_program *prog;
    loom_dataset *ds;
    load_with_a("spmv.loom", text, write_tmp("rows32.mtx", mtx), &prog, &ds);
    loom_schedule *s = malloc(sizeof *s);
    cr_assert_eq(loom_schedule_naive(s, prog, 1, &err), LOOM_OK, "%s", err.msg);
    int b, loops[8], n = 8, parts[2];
    cr_assert_eq(loom_get_block(s, "y", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(s, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(n, 2); /* i, k */
    if (chunk) {
        cr_assert_eq(loom_pos_split(s, loops[1], "A", chunk, -1, parts, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_vectorize(s, parts[1], &err), LOOM_OK, "%s", err.msg);
    }
    return lower_sim_free(s, ds, prog, tg);
}

/* Model 55 (sim.h "Vectors"): a VECTORIZED sum of two iterations, which
 * codegen emits with safelen(2), runs as scalar code whose pair of FMAs is
 * a chain of its own, one add a pair on the row's sum: on a calibrated
 * target SpMV in chunks of 2 simulates faster than the whole-row loop (one
 * FMA a nonzero on the row's chain) and gathers nothing; on bcsstk16 the
 * Zen 5 host ran it 0.59x (AVX-512) / 0.79x (AVX2) the whole-row loop's
 * best time (bench/codegen_ab_zen5_2026-12-04s54.txt).  Fails on model 54
 * (a 2-lane vector a pair, its lane sum on the row's chain). */
Test(sim, a_sum_of_two_iterations_keeps_two_partial_sums)
{
    loom_target cal = avx2_calibrated();
    loom_sim_result whole = spmv_chunks(0, &cal), pairs = spmv_chunks(2, &cal);
    cr_log_info("SpMV rows of 32: whole row %g cycles (%g compute), chunks of 2 %g (%g compute, %g gathered lanes)",
                whole.cycles, whole.compute_cycles, pairs.cycles, pairs.compute_cycles, pairs.gathers);
    cr_expect_eq(pairs.gathers, 0, "a pair runs as scalars: %g gathered lanes", pairs.gathers);
    cr_expect_lt(pairs.cycles, 0.85 * whole.cycles, "chunks of 2 %g cycles, the whole row %g", pairs.cycles,
                 whole.cycles);
    cr_expect_eq(pairs.flops, whole.flops);
}

/* Model 57 (sim.h "Single iterations"): cc removes a serial loop of
 * literal bounds that runs once.  SpMM on Cora (F = 16, serial, the row in
 * a register workspace, f vectorized) with its nonzero loop whole and split
 * by PosSplit into chunks of one position -- a loop [0, 1) a nonzero
 * (lower_loops.c), which GCC 12 compiles to the whole loop's code: on a
 * calibrated core (issue_chain_norm > 0) the two simulate within 1% and
 * with the same branches; on a hand-written core (the rule off) the chunks
 * of one cost their loop's guard, counter and branch a nonzero.  Fails on
 * model 56 (1.5x the branches on the calibrated core too). */
Test(sim, a_loop_of_one_literal_iteration_is_no_loop)
{
    loom_error err;
    loom_error_clear(&err);
    loom_dataset *ds;
    loom_schedule *sch;
    loom_target t;
    loom_program *prog = spmm_open("A=data/cora_adj.mtx", "F=16", &ds, &sch, &t);
    loom_sim_result r[2][2];
    for (int chunked = 0; chunked < 2; chunked++) {
        int k = spmm_nonzero_loop(sch, prog), parts[2];
        if (chunked)
            cr_assert_eq(loom_pos_split(sch, k, "A", 1, -1, parts, &err), LOOM_OK, "%s", err.msg);
        spmm_row_sim_both(sch, ds, &t, r[chunked]);
    }
    for (int cal = 0; cal < 2; cal++)
        cr_log_info("%s core: whole %g cycles %g branches, chunks of one %g cycles %g branches",
                    cal ? "calibrated" : "hand-written", r[0][cal].cycles, r[0][cal].branches, r[1][cal].cycles,
                    r[1][cal].branches);
    cr_expect_leq(r[1][1].branches, r[0][1].branches * 1.001, "calibrated: chunks of one %g branches, whole %g",
                  r[1][1].branches, r[0][1].branches);
    cr_expect_leq(fabs(r[1][1].cycles / r[0][1].cycles - 1), 0.01, "calibrated: chunks of one %g cycles, whole %g",
                  r[1][1].cycles, r[0][1].cycles);
    cr_expect_gt(r[1][0].branches, r[0][0].branches * 1.3, "hand-written: chunks of one %g branches, whole %g",
                 r[1][0].branches, r[0][0].branches);
    cr_expect_eq(r[1][1].flops, r[0][1].flops);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}
