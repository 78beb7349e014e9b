/* Tests of how the simulator combines a core's counters into cycles
 * (runtime/sim/sim.h "Cycles"): a packed panel's copy counted as a phase of
 * its own (model 64, runtime/sim/sim_phase.c) and a chunk loop's exits that
 * branch memory does not learn (model 65, runtime/sim/sim_chunk.c), each on
 * the Zen 5 host's calibration.  What the compiler makes of a kernel is in
 * tests/test_sim_kernels.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"

#include "sim_fixture.h"
#include "sim_replay.h"
#include "sim_spmm.h"
#include "sim_targets.h"

/* ---- a packed panel's copy, a phase of its own (model 64) ---- */

/* The target loom calibrate wrote on the Zen 5 host of issue 29 (2 cores,
 * AVX-512; its figures without their sources). */
static const char *ZEN5_2C =
    "{\"name\": \"zen5-2c\", \"cores\": 2, \"vector_bits\": 512, \"vector_registers\": 32, "
    "\"fma\": true, \"fma_units\": 2, \"ghz\": 3.657, \"issue_width\": 5, \"load_ports\": 2, "
    "\"store_ports\": 1, \"caches\": [{\"name\": \"L1d\", \"size\": 49152, \"assoc\": 12, "
    "\"line\": 64, \"latency\": 4, \"shared\": false}, {\"name\": \"L2\", \"size\": 1048576, "
    "\"assoc\": 8, \"line\": 64, \"latency\": 14, \"shared\": false, \"miss_cost\": 1.46, "
    "\"bandwidth\": 167522000000}, {\"name\": \"L3\", \"size\": 16777216, \"assoc\": 16, \"line\": 64, "
    "\"latency\": 48, \"shared\": true, \"miss_cost\": 2.24, \"bandwidth\": 103904000000}], "
    "\"memory\": {\"bandwidth\": 116957000000, \"core_bandwidth\": 54716000000, \"latency_ns\": 173, "
    "\"miss_cost_ns\": 4.68}, \"model\": {\"mlp\": 32, \"overlap\": 0.5, "
    "\"gather_cycles_per_lane\": 1.39, \"masked_lane_cycles\": 2, \"exp_cycles\": 8, "
    "\"div_cycles\": 4, \"branch_miss_cycles\": 24.7, \"parallel_overhead_ns\": 2785, "
    "\"autovectorize\": true, \"warm_caches\": true, \"shared_load_copies\": 3, \"peel_times\": 16, "
    "\"issue_chain_norm\": 2, \"stream_lines\": 8, \"stride_prefetch_lines\": 4097, "
    "\"sample_budget\": 5000000, \"branch_memory\": [[4096, 0.005], [16384, 0.039], [65536, 0.669], "
    "[131072, 0.911], [262144, 1], [1048576, 1]]}}";

/* ZEN5_2C parsed (a test's failure when it does not parse). */
static loom_target zen5_2c(void)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_parse(ZEN5_2C, "<zen5-2c>", &t, &err), LOOM_OK, "%s", err.msg);
    return t;
}

/* GEMM_TRACE for M x 512 x 512 as a campaign on that host sampled it:
 * 8-row tiles of 32 columns (instruction 4), k unsplit, 8 column panels of
 * 64 (the parallel loop), each copied into a packed 512 x 64 panel when
 * instruction 13 chooses 1.  Returns the simulated seconds on tg. */
static double gemm_panel_seconds(int m, int pack, const loom_target *tg)
{
    char json[4096];
    const char *d = strstr(GEMM_TRACE, "\"decisions\"");
    cr_assert_not_null(d);
    snprintf(json, sizeof json, "%.*s\"decisions\": [[2, 0], [3, 0], [4, 7], [6, [1, 512]], [8, [8, 2, 32]], "
                                "[10, 1], [13, 1]]}", (int)(d - GEMM_TRACE), GEMM_TRACE);
    loom_param_spec par[3] = {{"M", m}, {"N", 512}, {"K", 512}};
    return replay_workload("workloads/gemm.loom", NULL, 0, par, 3, json, 13, pack, tg).latency_s;
}

/* Model 64 (sim.h "Phases"): each column panel's tiles wait for the copy of
 * B's 512 x 64 panel, so the copy costs the same with 8 rows of A as with
 * 64: on the Zen 5 host GEMM 512 x 512 ran 10.0 us slower packed than
 * unpacked with 8 rows, 10.5 us with 16.  Counted with the tiles' FMAs the
 * copy's loads, stores and misses hid under them as the rows grew
 * (simulated 3.1 us more at 8 rows, 2.0 at 64); as a phase of its own it
 * costs 6.6 and 7.6. */
Test(sim, a_packed_panel_copy_does_not_hide_under_the_fmas)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_parse(ZEN5_2C, "<zen5-2c>", &t, &err), LOOM_OK, "%s", err.msg);
    double d8 = gemm_panel_seconds(8, 1, &t) - gemm_panel_seconds(8, 0, &t);
    double d64 = gemm_panel_seconds(64, 1, &t) - gemm_panel_seconds(64, 0, &t);
    cr_expect_gt(d8, 0, "packing with 8 rows: %g s more", d8);
    cr_expect_geq(d64, 0.8 * d8, "packing with 64 rows: %g s more, with 8 rows %g", d64, d8);
}

/* Model 87 (sim_machine.h "Shared pages"): GEMM 512 x 512 x 512 in 8-row
 * tiles of 32 columns, k unsplit, the 8 column panels of 64 the parallel
 * loop -- each core writes one half of every 2 KiB row of C, so every page
 * of C is stored to by both.  A core's L1 misses on C's pages are its
 * stores' write-allocate misses, one a line: 512 x 512 x 4 / 64 = 16,384
 * for both cores.  The simulator samples the k loop, whose misses (A's and
 * B's) are scaled by its sampling; C's, after it, by the tiles'.  Model
 * 22 scaled C's misses as all of them together and counted 1.9x as many
 * transfers; each buffer's are scaled on their own now. */
Test(sim, shared_page_misses_scale_with_their_own_blocks)
{
    char json[4096];
    const char *d = strstr(GEMM_TRACE, "\"decisions\"");
    cr_assert_not_null(d);
    snprintf(json, sizeof json, "%.*s\"decisions\": [[2, 0], [3, 0], [4, 7], [6, [1, 512]], [8, [8, 2, 32]], "
                                "[10, 1], [13, 0]]}", (int)(d - GEMM_TRACE), GEMM_TRACE);
    loom_param_spec par[3] = {{"M", 512}, {"N", 512}, {"K", 512}};
    loom_target t = zen4_2c(1);
    loom_sim_result r = replay_workload("workloads/gemm.loom", NULL, 0, par, 3, json, 13, 0, &t);
    cr_log_info("%g page transfers, sampled %d", r.page_transfers, r.sampled);
    cr_expect(r.sampled, "the kernel was simulated whole: the test does not sample");
    cr_expect_lt(fabs(r.page_transfers / 16384 - 1), 0.03, "%g page transfers, not 16,384", r.page_transfers);
}

/* ---- a chunk loop's exits, which branch memory does not learn (model 65) ---- */

/* An SDDMM campaign's schedule on the Zen 5 host (workloads/sddmm.loom, D =
 * 64, AVX-512, seed-4 record 46): M's positions in PosSplit chunks of
 * instruction 3's categorical (index 3: 4; index 0: unsplit), nnz-balanced
 * rows, the dot product's 64 lanes vectorized. */
static const char *SDDMM_CHUNK_TRACE =
    "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"268b4cc62212b7e7\", "
    "\"insts\": [[\"GetBlock\", [], [\"S\"], [\"b0\"]], [\"SampleLoopOrder\", [\"b0\"], [0, 0.5], "
    "[\"v1\"]], [\"GetLoops\", [\"b0\"], [], [\"l2\", \"l3\", \"l4\"]], [\"SampleCategorical\", [], "
    "[[0, 1, 2, 4, 8, 16, 32], [1, 1, 1, 1, 1, 1, 1]], [\"v5\"]], [\"PosSplit\", [\"l3\", \"v5\"], "
    "[\"M\"], [\"l6\", \"l7\"]], [\"SamplePerfectTile\", [\"l4\"], [2, 64], [\"v8\", \"v9\"]], "
    "[\"Split\", [\"l4\", \"v8\", \"v9\"], [], [\"l10\", \"l11\"]], [\"GetLoops\", [\"b0\"], [], "
    "[\"l12\", \"l13\", \"l14\", \"l15\", \"l16\"]], [\"Reorder\", [\"l12\", \"l13\", \"l14\", "
    "\"l15\", \"l16\"], [], []], [\"GetLoops\", [\"b0\"], [], [\"l17\", \"l18\", \"l19\", \"l20\", "
    "\"l21\"]], [\"Parallel\", [\"l17\"], [], []], [\"SampleCategorical\", [], [[0, 2, 8, 32], [1, 1, "
    "1, 1]], [\"v22\"]], [\"Annotate\", [\"l17\", \"v22\"], [\"balance\"], []], [\"Vectorize\", "
    "[\"l21\"], [], []], [\"SampleCategorical\", [], [[1, 4, 16], [1, 1, 1]], [\"v23\"]], "
    "[\"Annotate\", [\"l20\", \"v23\"], [\"unroll\"], []], [\"GetLoops\", [\"b0\"], [], [\"l24\", "
    "\"l25\", \"l26\", \"l27\", \"l28\"]], [\"SampleCategorical\", [], [[0, 4, 16, 64], [1, 1, 1, 1]], "
    "[\"v29\"]], [\"Annotate\", [\"l26\", \"v29\"], [\"prefetch\"], []], [\"GetLoops\", [\"b0\"], [], "
    "[\"l30\", \"l31\", \"l32\", \"l33\", \"l34\"]], [\"SampleCategorical\", [], [[0, 1], [1, 1]], "
    "[\"v35\"]], [\"Annotate\", [\"l34\", \"v35\"], [\"partial_sums\"], []]], \"decisions\": [[1, 0], "
    "[3, 3], [5, [1, 64]], [11, 1], [14, 0], [17, 0], [20, 0]]}";

/* A 2,048 x 2,048 pattern whose row i holds len(i) nonzeros, the j-th at
 * column col(i, j) (mod 2,048; distinct within a row), written as a Matrix
 * Market file: the path. */
static const char *pattern_mtx(const char *name, int (*len)(int), int (*col)(int, int))
{
    enum { N = 2048 };
    int nnz = 0;
    for (int i = 0; i < N; i++)
        nnz += len(i);
    size_t cap = 64 + (size_t)nnz * 24, k = 0;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    k += (size_t)snprintf(text + k, cap - k, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n", N, N, nnz);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < len(i); j++)
            k += (size_t)snprintf(text + k, cap - k, "%d %d 1.0\n", i + 1, col(i, j) % N + 1);
    const char *path = write_tmp(name, text);
    free(text);
    return path;
}

/* distinct columns spread 131 apart from 37 i */
static int spread_col(int i, int j)
{
    return i * 37 + j * 131;
}

/* pattern_mtx with spread columns */
static const char *rows_mtx(const char *name, int (*len)(int))
{
    return pattern_mtx(name, len, spread_col);
}

static int len_multiple_of_4(int i)
{
    return 4 + 4 * (i * 7 % 3 == 0);
}

static int len_with_remainder(int i)
{
    return 5 + i * 7 % 3;
}

static int len_over_16(int i)
{
    return 17 + i * 7 % 5;
}

/* SDDMM_CHUNK_TRACE's simulated seconds on tg over the pattern at mtx, the
 * positions in chunks of instruction 3's choice (0: the unsplit row; 2: 2;
 * 3: 4). */
static double sddmm_chunk_seconds(const char *mtx, int choice, const loom_target *tg)
{
    loom_data_spec spec;
    snprintf(spec.tensor, sizeof spec.tensor, "M");
    snprintf(spec.path, sizeof spec.path, "%s", mtx);
    loom_param_spec par = {"D", 64};
    return replay_workload("workloads/sddmm.loom", &spec, 1, &par, 1, SDDMM_CHUNK_TRACE, 3, choice, tg)
        .latency_s;
}

/* Model 65 (sim_chunk.c "Exposed chunk exits"): on the Zen 5 host this
 * SDDMM ran 1.15-1.31x its unsplit schedule in chunks of 4 on Cora, and
 * 0.97-1.07x on a copy of Cora whose rows all hold multiples of 4 nonzeros:
 * the remainder chunk's exits, which the predictor does not learn, are the
 * whole penalty.  Here rows of 4 or 8 against rows of 5-7 (about the same
 * work): chunks of 4 cost at least 0.05 more of the unsplit time with
 * remainders than without (1.46x against 1.01x; under model 64, whose
 * branch memory learned those exits, 1.02x against 1.01x). */
Test(sim, a_chunk_loops_remainder_exits_are_not_learned)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_parse(ZEN5_2C, "<zen5-2c>", &t, &err), LOOM_OK, "%s", err.msg);
    const char *m4 = rows_mtx("rows4.mtx", len_multiple_of_4), *mr = rows_mtx("rows5.mtx", len_with_remainder);
    double r4 = sddmm_chunk_seconds(m4, 3, &t) / sddmm_chunk_seconds(m4, 0, &t);
    double rr = sddmm_chunk_seconds(mr, 3, &t) / sddmm_chunk_seconds(mr, 0, &t);
    cr_expect_gt(r4, 0.9, "chunks of 4 / unsplit, rows of multiples of 4: %g", r4);
    cr_expect_geq(rr, r4 + 0.05, "chunks of 4 / unsplit with remainders %g, without %g", rr, r4);
}

/* Model 101 (sim_constants.h LOOM_SIM_PEEL_TREE_STEP): cc copies a chunk
 * of 2 SDDMM positions, each with its dot product's tree reduction, and
 * keeps a chunk of 4 a loop (GCC 12's assembly, Zen 4, both ISAs).  The
 * Zen 4 host's held-out SDDMM Cora records measured 1.05x unsplit in
 * chunks of 2 (23 pairs) and 1.18x in chunks of 4 (6), simulated 1.32x and
 * 1.23x while the 2 stayed a loop whose remainder exits model 65 exposes.
 * On Cora: AVX-512, chunks of 2 under 1.15x the unsplit time and chunks of
 * 4 (a loop still) at least 0.08 over them (model 100: 1.31x and 1.22x);
 * AVX2, chunks of 2 under 1.075x (model 100: 1.086x; now 1.059x). */
Test(sim, a_chunk_of_two_dot_products_is_copied)
{
    const char *cora = "data/cora_adj.mtx";
    for (int w = 0; w < 2; w++) {
        loom_target t = zen4_2c(w);
        double u = sddmm_chunk_seconds(cora, 0, &t), r2 = sddmm_chunk_seconds(cora, 2, &t) / u,
               r4 = sddmm_chunk_seconds(cora, 3, &t) / u;
        cr_expect_lt(r2, w ? 1.15 : 1.075, "%s: chunks of 2 / unsplit %g", w ? "AVX-512" : "AVX2", r2);
        if (w)
            cr_expect_geq(r4, r2 + 0.08, "AVX-512: chunks of 4 / unsplit %g, of 2 %g", r4, r2);
    }
}

static int len_96(int i)
{
    return 96 + 0 * i;
}

static int len_97_to_99(int i)
{
    return 97 + i * 7 % 3;
}

/* Model 100 (sim_chunk.c): a chunk loop cc keeps whose positions accumulate
 * into the row's workspace hides its remainder exits under the row's chain
 * only as far as the chain outlasts the core's other bounds.  mbeacxc F =
 * 128 on Zen 4 (AVX-512; rows of about 100 nonzeros, 8 zmm FMAs and loads a
 * position, bound by the pipes and L2, not by the 4-cycle chain): chunks of
 * 8-32 measured 1.008-1.011x unsplit over 30 pairs of records, simulated
 * 0.997-1.002x; Cora F = 32 (2 zmm a position, chain-bound) measured the
 * exits hidden.  Here rows of 96 nonzeros (whole chunks of 8: the chunk
 * loop's trip never changes) against 97-99 (a remainder every row: two trip
 * changes a row, 2,048 a core): at F = 128 chunks of 8 cost about those
 * exits at branch_miss_cycles over unsplit; at F = 32 the chain hides most
 * of them. */
Test(sim, a_throughput_bound_rows_remainder_exits_are_exposed)
{
    loom_target t = zen4_2c(1);
    const char *m96 = rows_mtx("rows96.mtx", len_96), *mr = rows_mtx("rows97.mtx", len_97_to_99);
    double d128[2], d32[2]; /* chunks of 8 minus unsplit, seconds */
    for (int m = 0; m < 2; m++) {
        const char *x = m ? mr : m96;
        d128[m] = spmm_run_f(x, 128, 4, "[1, 1, 1, 128]", 1, 0, 0, &t).latency_s -
                  spmm_run_f(x, 128, 0, "[1, 1, 1, 128]", 1, 0, 0, &t).latency_s;
        d32[m] = spmm_run_f(x, 32, 4, "[1, 1, 1, 32]", 1, 0, 0, &t).latency_s -
                 spmm_run_f(x, 32, 0, "[1, 1, 1, 32]", 1, 0, 0, &t).latency_s;
    }
    double exits = 2.0 * 1024 * t.branch_miss_cycles / (t.ghz * 1e9); /* a core's, at full cost */
    cr_log_info("chunks of 8 - unsplit: F = 128 %.2f us (whole chunks) %.2f us (remainders); F = 32 %.2f %.2f; "
                "the exits %.2f us", d128[0] * 1e6, d128[1] * 1e6, d32[0] * 1e6, d32[1] * 1e6, exits * 1e6);
    cr_expect_lt(fabs(d128[0]), 0.1 * exits, "F = 128, whole chunks: %g s", d128[0]);
    cr_expect(d128[1] > 0.6 * exits && d128[1] < 1.2 * exits, "F = 128, remainders: %g s against %g s of exits",
              d128[1], exits);
    cr_expect_lt(d32[1] - d32[0], 0.3 * exits, "F = 32: %g s with remainders, %g without", d32[1], d32[0]);
}

/* X W on the pattern at mtx (X(N, G) csr, F = 16), its nonzero loop in
 * PosSplit chunks of chunk (0: unsplit), serial, the rest naive, simulated
 * on one core of the Zen 5 target: into an intermediate T then relu'd into
 * the output (temp 1), or straight into the output (temp 0). */
static loom_sim_result xw_chunk_sim(const char *mtx, int temp, int chunk)
{
    const char *text = temp ? "param F = 16\ntensor X(N, G) csr\ntensor W(G, F) dense\ntensor Y(N, F) dense output\n"
                              "T(i, f) = X(i, g) * W(g, f)\nY(i, f) = relu(T(i, f))\n"
                            : "param F = 16\ntensor X(N, G) csr\ntensor W(G, F) dense\ntensor Y(N, F) dense output\n"
                              "Y(i, f) = X(i, g) * W(g, f)\n";
    const char *wl = write_tmp(temp ? "xw_temp.loom" : "xw_out.loom", text);
    char arg[600];
    snprintf(arg, sizeof arg, "X=%s", mtx);
    const char *args[] = {arg};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind(wl, args, 1, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_not_null(sch);
    loom_error err;
    loom_error_clear(&err);
    int b, loops[LOOM_MAX_LOOPS], n, out[2];
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, temp ? "T" : "Y", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    if (chunk)
        cr_assert_eq(loom_pos_split(sch, loops[1], "X", chunk, -1, out, &err), LOOM_OK, "%s", err.msg);
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
    loom_target t;
    cr_assert_eq(loom_target_parse(ZEN5_2C, "<zen5-2c>", &t, &err), LOOM_OK, "%s", err.msg);
    t.cores = 1;
    loom_sim_result r;
    cr_assert_eq(loom_sim_run(f, ds, &t, &r, &err), LOOM_OK, "%s", err.msg);
    loom_lir_func_free(f);
    free(sch);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return r;
}

/* Model 73 (sim_chunk.c): a chunk loop whose positions accumulate into a
 * kernel-internal intermediate -- a row cc keeps in registers across the
 * positions (model 54), as gcn2's T1 = X W1 -- hides its exits under the
 * row's chain, as a workspace's does.  gcn2 Cora seed-3 AVX2, T1 in chunks
 * of 16 against unsplit (records 36 and 3, 10 and 25): measured 0.98-1.01x,
 * simulated 1.09x with those exits exposed (model 65), 1.05x now.  Rows of
 * 17-21 nonzeros in chunks of 16: the intermediate's branch misses stay under
 * a quarter of the output's, which model 65 still charges a remainder exit
 * each row (on model 72 the two were the same). */
Test(sim, a_chunk_loop_accumulating_into_an_intermediate_hides_its_exits)
{
    const char *mr = rows_mtx("rows17.mtx", len_over_16);
    double t = xw_chunk_sim(mr, 1, 16).branch_misses, o = xw_chunk_sim(mr, 0, 16).branch_misses;
    cr_log_info("branch misses: intermediate %g, output %g", t, o);
    cr_expect_gt(o, 2048 * 0.5, "output: %g misses over 2,048 rows", o);
    cr_expect_lt(t, 0.25 * o, "intermediate %g, output %g misses", t, o);
}

static int len_1_to_9(int i)
{
    return 1 + i * 7 % 9;
}

/* Model 75 (sim_exec.c, SS_WORK): cc keeps an intermediate's row in a
 * register across the positions of one chunk only -- GCC 12's code for
 * gcn2's T1 = X W1 in PosSplit chunks of 2 loads T1's row (`vmovups
 * (%r14), %zmm1`) at every chunk and stores it at every position -- where
 * model 54 kept it across the chunks of a row.  Such pairs (unsplit -> chunks
 * of 2) measured 1.12-1.16x on the Zen 5 host, simulated 1.03-1.08x, now
 * 1.11x.  T = X W on rows of 1-9 nonzeros, AVX-512 (a row of 16 floats is
 * one vector): in chunks of 2 the row is loaded once more at each chunk
 * after a row's first -- at least 0.9x that many more loads than unsplit
 * (about none more on model 74). */
Test(sim, an_intermediates_row_is_reloaded_at_each_chunk)
{
    const char *m = rows_mtx("rows1to9.mtx", len_1_to_9);
    double chunks = 0, rows = 0;
    for (int i = 0; i < 2048; i++) {
        chunks += (len_1_to_9(i) + 1) / 2;
        rows += 1;
    }
    loom_sim_result split = xw_chunk_sim(m, 1, 2), whole = xw_chunk_sim(m, 1, 0);
    cr_log_info("loads: chunks of 2 %g, unsplit %g; chunks %g, rows %g", split.loads, whole.loads, chunks, rows);
    cr_expect_geq(split.loads - whole.loads, 0.9 * (chunks - rows), "chunks of 2: %g loads, unsplit %g (%g chunks, %g rows)",
                  split.loads, whole.loads, chunks, rows);
}

/* ---- lines another core modified (model 67) ---- */

/* GCN2 Cora's seed-3 AVX-512 campaign favourite on the Zen 5 host (line 84
 * of docs/simulator.md "Model 67"): H2 = A T2 with PosSplit chunks of 2
 * (instruction 4, categorical index 2; 0 unsplit) under unroll 16, which
 * cc peels into two guarded copies -- more instructions a nonzero, fewer
 * nonzeros' loads in the reorder window. */
static const char *GCN2_TRACE =
    "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"bb3f24794e89b9db\", \"insts\": [[\"GetBloc"
    "k\", [], [\"H2\"], [\"b0\"]], [\"SampleFusionGroup\", [\"b0\"], [], [\"v1\"]], [\"SampleLoopOrder\", [\""
    "b0\"], [0, 0.5], [\"v2\"]], [\"GetLoops\", [\"b0\"], [], [\"l3\", \"l4\", \"l5\"]], [\"SampleCategorical"
    "\", [], [[0, 1, 2, 4, 8, 16, 32], [1, 1, 1, 1, 1, 1, 1]], [\"v6\"]], [\"PosSplit\", [\"l4\", \"v6\""
    "], [\"A\"], [\"l7\", \"l8\"]], [\"SamplePerfectTile\", [\"l5\"], [4, 128], [\"v9\", \"v10\", \"v11\", \"v12"
    "\"]], [\"Split\", [\"l5\", \"v9\", \"v10\", \"v11\", \"v12\"], [], [\"l13\", \"l14\", \"l15\", \"l16\"]], [\"Get"
    "Loops\", [\"b0\"], [], [\"l17\", \"l18\", \"l19\", \"l20\", \"l21\", \"l22\", \"l23\"]], [\"Reorder\", [\"l17\""
    ", \"l20\", \"l21\", \"l18\", \"l22\", \"l19\", \"l23\"], [], []], [\"GetLoops\", [\"b0\"], [], [\"l24\", \"l2"
    "5\", \"l26\", \"l27\", \"l28\", \"l29\", \"l30\"]], [\"SampleCategorical\", [], [[0, 1, 2], [1, 1, 1]],"
    " [\"v31\"]], [\"CacheWrite\", [\"b0\", \"l26\", \"v31\"], [], []], [\"Annotate\", [\"l26\", \"v31\"], [\"st"
    "ream\"], []], [\"GetLoops\", [\"b0\"], [], [\"l32\", \"l33\", \"l34\", \"l35\", \"l36\", \"l37\", \"l38\"]], "
    "[\"Parallel\", [\"l32\"], [], []], [\"SampleCategorical\", [], [[0, 2, 8, 32], [1, 1, 1, 1]], [\""
    "v39\"]], [\"Annotate\", [\"l32\", \"v39\"], [\"balance\"], []], [\"Vectorize\", [\"l38\"], [], []], [\"S"
    "ampleCategorical\", [], [[1, 4, 16], [1, 1, 1]], [\"v40\"]], [\"Annotate\", [\"l37\", \"v40\"], [\"u"
    "nroll\"], []], [\"GetBlock\", [], [\"T2\"], [\"b41\"]], [\"SampleComputeLocation\", [\"b41\"], [], [\""
    "v42\"]], [\"GetLoops\", [\"b41\"], [], [\"l43\", \"l44\", \"l45\"]], [\"SampleCategorical\", [], [[0], "
    "[1]], [\"v46\"]], [\"SampleCategorical\", [], [[1, 2, 4, 8, 16, 32, 64], [1, 1, 1, 1, 1, 1, 1]"
    "], [\"v47\"]], [\"SampleCategorical\", [], [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15"
    ", 16], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]], [\"v48\"]], [\"Split\", [\"l43"
    "\", \"v46\", \"v47\", \"v48\"], [], [\"l49\", \"l50\", \"l51\"]], [\"SamplePerfectTile\", [\"l44\"], [2, -1"
    "], [\"v52\", \"v53\"]], [\"Split\", [\"l44\", \"v52\", \"v53\"], [], [\"l54\", \"l55\"]], [\"SamplePerfectT"
    "ile\", [\"l45\"], [3, 64], [\"v56\", \"v57\", \"v58\"]], [\"Split\", [\"l45\", \"v56\", \"v57\", \"v58\"], []"
    ", [\"l59\", \"l60\", \"l61\"]], [\"SampleCategorical\", [], [[0, 1], [0.5, 0.5]], [\"v62\"]], [\"Reor"
    "der\", [\"l49\", \"l59\", \"l54\", \"l50\", \"l60\", \"l55\", \"l51\", \"l61\"], [], []], [\"CacheWrite\", [\""
    "b41\", \"l60\"], [], []], [\"SampleCategorical\", [], [[0, 1], [0.5, 0.5]], [\"v63\"]], [\"PackPan"
    "el\", [\"b41\", \"l54\", \"v63\"], [\"W2\"], []], [\"Fuse\", [\"l49\", \"l59\"], [], [\"l64\"]], [\"Parallel"
    "\", [\"l64\"], [], []], [\"Annotate\", [\"l51\", \"v48\"], [\"unroll\"], []], [\"Vectorize\", [\"l61\"], "
    "[], []], [\"GetBlock\", [], [\"H1\"], [\"b65\"]], [\"SampleComputeLocation\", [\"b65\"], [], [\"v66\"]"
    "], [\"SampleLoopOrder\", [\"b65\"], [0, 0.5], [\"v67\"]], [\"GetLoops\", [\"b65\"], [], [\"l68\", \"l69"
    "\"]], [\"GetLoops\", [\"b65\"], [], [\"l70\", \"l71\"]], [\"Reorder\", [\"l70\", \"l71\"], [], []], [\"Get"
    "Loops\", [\"b65\"], [], [\"l72\", \"l73\"]], [\"Parallel\", [\"l72\"], [], []], [\"Vectorize\", [\"l73\"]"
    ", [], []], [\"GetBlock\", [], [\"Z1\"], [\"b74\"]], [\"SampleComputeLocation\", [\"b74\"], [], [\"v75"
    "\"]], [\"SampleLoopOrder\", [\"b74\"], [0, 0.5], [\"v76\"]], [\"GetLoops\", [\"b74\"], [], [\"l77\", \"l"
    "78\", \"l79\"]], [\"SampleCategorical\", [], [[0, 1, 2, 4, 8, 16, 32], [1, 1, 1, 1, 1, 1, 1]], "
    "[\"v80\"]], [\"PosSplit\", [\"l78\", \"v80\"], [\"A\"], [\"l81\", \"l82\"]], [\"SamplePerfectTile\", [\"l79"
    "\"], [4, 128], [\"v83\", \"v84\", \"v85\", \"v86\"]], [\"Split\", [\"l79\", \"v83\", \"v84\", \"v85\", \"v86\"]"
    ", [], [\"l87\", \"l88\", \"l89\", \"l90\"]], [\"GetLoops\", [\"b74\"], [], [\"l91\", \"l92\", \"l93\", \"l94\""
    ", \"l95\", \"l96\", \"l97\"]], [\"Reorder\", [\"l91\", \"l94\", \"l95\", \"l92\", \"l96\", \"l93\", \"l97\"], []"
    ", []], [\"GetLoops\", [\"b74\"], [], [\"l98\", \"l99\", \"l100\", \"l101\", \"l102\", \"l103\", \"l104\"]], "
    "[\"SampleCategorical\", [], [[0, 1, 2], [1, 1, 1]], [\"v105\"]], [\"CacheWrite\", [\"b74\", \"l100\""
    ", \"v105\"], [], []], [\"Annotate\", [\"l100\", \"v105\"], [\"stream\"], []], [\"SampleCategorical\", "
    "[], [[0, 1], [1, 1]], [\"v106\"]], [\"Annotate\", [\"l100\", \"v106\"], [\"epilogue\"], []], [\"GetLo"
    "ops\", [\"b74\"], [], [\"l107\", \"l108\", \"l109\", \"l110\", \"l111\", \"l112\", \"l113\"]], [\"Parallel\","
    " [\"l107\"], [], []], [\"SampleCategorical\", [], [[0, 2, 8, 32], [1, 1, 1, 1]], [\"v114\"]], [\""
    "Annotate\", [\"l107\", \"v114\"], [\"balance\"], []], [\"Vectorize\", [\"l113\"], [], []], [\"SampleCa"
    "tegorical\", [], [[1, 4, 16], [1, 1, 1]], [\"v115\"]], [\"Annotate\", [\"l112\", \"v115\"], [\"unrol"
    "l\"], []], [\"GetBlock\", [], [\"H1\"], [\"b116\"]], [\"GetBlock\", [], [\"T1\"], [\"b117\"]], [\"Sample"
    "ComputeLocation\", [\"b117\"], [], [\"v118\"]], [\"SampleLoopOrder\", [\"b117\"], [0, 0.5], [\"v119\""
    "]], [\"GetLoops\", [\"b117\"], [], [\"l120\", \"l121\", \"l122\"]], [\"SampleCategorical\", [], [[0, 1"
    ", 2, 4, 8, 16, 32], [1, 1, 1, 1, 1, 1, 1]], [\"v123\"]], [\"PosSplit\", [\"l121\", \"v123\"], [\"X\""
    "], [\"l124\", \"l125\"]], [\"SamplePerfectTile\", [\"l122\"], [4, 128], [\"v126\", \"v127\", \"v128\", \""
    "v129\"]], [\"Split\", [\"l122\", \"v126\", \"v127\", \"v128\", \"v129\"], [], [\"l130\", \"l131\", \"l132\", "
    "\"l133\"]], [\"GetLoops\", [\"b117\"], [], [\"l134\", \"l135\", \"l136\", \"l137\", \"l138\", \"l139\", \"l14"
    "0\"]], [\"Reorder\", [\"l134\", \"l137\", \"l138\", \"l135\", \"l139\", \"l136\", \"l140\"], [], []], [\"Get"
    "Loops\", [\"b117\"], [], [\"l141\", \"l142\", \"l143\", \"l144\", \"l145\", \"l146\", \"l147\"]], [\"Paralle"
    "l\", [\"l141\"], [], []], [\"SampleCategorical\", [], [[0, 2, 8, 32], [1, 1, 1, 1]], [\"v148\"]],"
    " [\"Annotate\", [\"l141\", \"v148\"], [\"balance\"], []], [\"Vectorize\", [\"l147\"], [], []], [\"Sampl"
    "eCategorical\", [], [[1, 4, 16], [1, 1, 1]], [\"v149\"]], [\"Annotate\", [\"l146\", \"v149\"], [\"un"
    "roll\"], []], [\"GetLoops\", [\"b117\"], [], [\"l150\", \"l151\", \"l152\", \"l153\", \"l154\", \"l155\", \""
    "l156\"]], [\"SampleCategorical\", [], [[0, 4, 16, 64], [1, 1, 1, 1]], [\"v157\"]], [\"Annotate\","
    " [\"l155\", \"v157\"], [\"prefetch\"], []]], \"decisions\": [[1, 0], [2, 0], [4, 2], [6, [1, 1, 1,"
    " 7]], [11, 1], [16, 0], [19, 2], [22, -1], [24, 0], [25, 0], [26, 6], [28, [1, 16]], [30, "
    "[1, 1, 7]], [32, 0], [35, 0], [42, -1], [43, 0], [51, -1], [52, 0], [54, 0], [56, [1, 1, 1"
    ", 16]], [61, 2], [64, 1], [68, 2], [71, 0], [75, -1], [76, 0], [78, 0], [80, [1, 1, 1, 16]"
    "], [86, 0], [89, 0], [92, 0]]}";

static double gcn2_seconds(int chunk_choice, const loom_target *tg)
{
    loom_data_spec spec[2] = {{"A", "data/cora_adj.mtx"}, {"X", "data/cora_features.mtx"}};
    return replay_workload("workloads/gcn2.loom", spec, 2, NULL, 0, GCN2_TRACE, 4, chunk_choice, tg).latency_s;
}

/* Model 67 (sim_cycles.c "Core-to-core lines"): A T1 and A T2 read rows of
 * T1 and T2 the other core wrote; with core_transfer_ns those loads cost
 * the transfer, exposed by the window rule -- the kernel is slower, and the
 * peeled chunks of 2, whose nonzeros take more instructions, lose more to
 * it than the unsplit loop.  GEMM, whose cores read nothing the other
 * wrote, moves by its memset's transfers alone (model 80). */
Test(sim, lines_another_core_wrote_cost_their_transfer)
{
    loom_target t0, t1;
    loom_error err;
    cr_assert_eq(loom_target_parse(ZEN5_2C, "<zen5-2c>", &t0, &err), LOOM_OK, "%s", err.msg);
    t1 = t0;
    t1.core_transfer_ns = 212.8;
    double u0 = gcn2_seconds(0, &t0), c0 = gcn2_seconds(2, &t0);
    double u1 = gcn2_seconds(0, &t1), c1 = gcn2_seconds(2, &t1);
    cr_log_info("unsplit %g -> %g us, chunks of 2 %g -> %g us", u0 * 1e6, u1 * 1e6, c0 * 1e6, c1 * 1e6);
    cr_expect_gt(u1, u0, "unsplit: %g s with transfers, %g without", u1, u0);
    cr_expect_gt(c1 - c0, u1 - u0, "chunks of 2 lose %g s to the transfers, unsplit %g", c1 - c0, u1 - u0);
    cr_expect_eq(gcn2_seconds(2, &t1), c1, "not deterministic");
    /* GEMM's cores read nothing the other wrote; only the serial memset of
     * its 16 KB C moves (model 80: half its lines a transfer, not DRAM) */
    double g0 = gemm_panel_seconds(8, 0, &t0), g1 = gemm_panel_seconds(8, 0, &t1);
    cr_expect_lt(fabs(g1 - g0), 0.02 * g0, "GEMM 8 x 512: %g s with transfers, %g without", g1, g0);
}

/* ---- a literal loop cc unrolls completely (model 68) ---- */

/* SPMM_TILE_TRACE on Cora with F = 32 in one vector loop ([1, 1, 1, 32]) or
 * a loop of 4 copies of an 8-lane vector ([1, 1, 4, 8], the copies inside
 * the nonzero loop, the one-position chunk loop inside them), on tg. */
static loom_sim_result spmm_tile(int copies, const loom_target *tg)
{
    return spmm_run("data/cora_adj.mtx", 1, copies ? "[1, 1, 4, 8]" : "[1, 1, 1, 32]", 0, tg);
}

/* Model 68 (sim.h "Unrolled copies"): GCC 12 unrolls the 4-copy loop
 * completely and computes the position, its column index and A's broadcast
 * once for the 4 copies -- the same assembly as the one vector loop (a load
 * of crd, a broadcast and 4 FMAs a nonzero).  On the Zen 5 host (AVX2) the
 * two ran 137.7 and 139.5 us on bcsstk16; simulated as a rolled loop that
 * reloads them in every copy, 271.7 and 147.0.  Here: the same loads, and
 * the copies within 10% of the vector loop's time (1.5x without the rule). */
Test(sim, a_literal_loop_cc_unrolls_shares_its_copies_loads)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_parse(ZEN5_2C, "<zen5-2c>", &t, &err), LOOM_OK, "%s", err.msg);
    t.vector_bits = 256; /* the host with LOOM_HOST_ISA=avx2 */
    t.vector_registers = 16;
    loom_sim_result v = spmm_tile(0, &t), c = spmm_tile(1, &t);
    cr_log_info("vector loop %g us, %g loads; 4 copies %g us, %g loads", v.latency_s * 1e6, v.loads,
                c.latency_s * 1e6, c.loads);
    cr_expect_leq(c.loads, v.loads * 1.001, "4 copies load %g elements, the vector loop %g", c.loads, v.loads);
    cr_expect_lt(c.latency_s, v.latency_s * 1.10, "4 copies %g s, the vector loop %g s", c.latency_s, v.latency_s);
    cr_expect_eq(spmm_tile(1, &t).latency_s, c.latency_s, "not deterministic");
}

/* ---- the exits of unrolled run-time loops (model 94) ---- */

/* Model 94 (sim_chunk.c): GCC 12 leaves Cora's nonzero loop rolled under
 * `#pragma GCC unroll 4` or 16 (one copy of its 2 zmm FMAs in the
 * assembly), and unrolls a PosSplit chunk of 4 into 4 copies with an exit
 * test after each but the last.  So the pragma on the unsplit loop changes
 * nothing (it saved 3/4 and 15/16 of the loop test before), and a chunk of
 * 8 under unroll 4 (rolled: a test a position) issues more than the same
 * chunk unrolled by model 63 (7 tests in 8 positions). */
Test(sim, an_unroll_pragma_on_a_run_time_loop_leaves_it_rolled)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_parse(ZEN4_2C_AVX512, "<zen4-2c-avx512>", &t, &err), LOOM_OK, "%s", err.msg);
    loom_sim_result u1 = spmm_run_u("data/cora_adj.mtx", 0, "[1, 1, 1, 32]", 0, 0, &t),
                    u4 = spmm_run_u("data/cora_adj.mtx", 0, "[1, 1, 1, 32]", 0, 1, &t),
                    u16 = spmm_run_u("data/cora_adj.mtx", 0, "[1, 1, 1, 32]", 0, 2, &t);
    cr_log_info("unsplit, unroll 1 / 4 / 16: %g / %g / %g instructions", u1.instructions, u4.instructions,
                u16.instructions);
    cr_expect_eq(u4.instructions, u1.instructions, "unroll 4: %g instructions, none %g", u4.instructions,
                 u1.instructions);
    cr_expect_eq(u16.latency_s, u1.latency_s, "unroll 16: %g s, none %g s", u16.latency_s, u1.latency_s);
    loom_sim_result c8 = spmm_run_u("data/cora_adj.mtx", 4, "[1, 1, 1, 32]", 0, 0, &t),
                    c8u4 = spmm_run_u("data/cora_adj.mtx", 4, "[1, 1, 1, 32]", 0, 1, &t);
    cr_log_info("chunks of 8: %g instructions unrolled, %g under unroll 4", c8.instructions, c8u4.instructions);
    cr_expect_gt(c8u4.instructions, c8.instructions, "a chunk of 8 under unroll 4 %g, unrolled %g",
                 c8u4.instructions, c8.instructions);
}

/* ---- a balanced row split's chunks, sampled by their rows' work (model 69) ---- */

static int len_few_long_rows(int i)
{
    return (unsigned)i * 2654435761u >> 27 == 3 ? 512 : 2; /* 1 row in 32, at hashed places */
}

/* Model 69 (sim.h "Sampling"): a balanced chunk's iteration starts with
 * the binary searches for its rows; the work scale now runs them (integer
 * book-keeping) and weighs each chunk by its rows' nonzeros.  Before, it
 * gave up at the while loop and scaled by the chunks' count: mbeacxc F =
 * 128 on the Zen 5 host simulated 1.22-1.35e7 FLOPs for 1.28e7, and the
 * schedules' simulated times moved 10% with the sampling.  Here rows of 2
 * nonzeros and one in 32 (at hashed places) of 512, SPMM_TILE_TRACE
 * unsplit with F in one vector loop and the rows in 32 balanced chunks,
 * sampled at 12.5%: the FLOPs within 2% of the whole run's (0.4% when
 * written; 18% over without the rule). */
Test(sim, a_balanced_chunk_is_sampled_by_its_rows_work)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_parse(ZEN5_2C, "<zen5-2c>", &t, &err), LOOM_OK, "%s", err.msg);
    const char *m = rows_mtx("rows_long.mtx", len_few_long_rows);
    t.sample_budget = 1e9;
    loom_sim_result full = spmm_run(m, 0, "[1, 1, 1, 32]", 3, &t);
    t.sample_budget = 1e5;
    loom_sim_result part = spmm_run(m, 0, "[1, 1, 1, 32]", 3, &t);
    cr_log_info("whole %g FLOPs, sampled %g (fraction %g)", full.flops, part.flops, part.sample_fraction);
    cr_assert_eq(full.sampled, 0);
    cr_expect_eq(part.sampled, 1);
    cr_expect_lt(fabs(part.flops - full.flops), 0.02 * full.flops, "sampled %g FLOPs, whole %g", part.flops,
                 full.flops);
}

/* ---- adds beside the FMAs (model 70) ---- */

/* SDDMM_CHUNK_TRACE unsplit on Cora with instruction inst's decision set
 * to choice, on tg: the simulated seconds. */
static double sddmm_unsplit_seconds(int inst, int choice, const loom_target *tg)
{
    char json[8192];
    snprintf(json, sizeof json, "%s", SDDMM_CHUNK_TRACE);
    char *chunk = strstr(json, "[3, 3]");
    cr_assert_not_null(chunk);
    chunk[4] = '0'; /* unsplit */
    loom_data_spec spec = {"M", "data/cora_adj.mtx"};
    loom_param_spec par = {"D", 64};
    return replay_workload("workloads/sddmm.loom", &spec, 1, &par, 1, json, inst, choice, tg).latency_s;
}

/* The dot product's 64 lanes as one vector loop or in a workspace of
 * partial sums (instruction 20's categorical), on tg. */
static double sddmm_psum_seconds(int psum, const loom_target *tg)
{
    return sddmm_unsplit_seconds(20, psum, tg);
}

/* Model 70 (sim_cycles.c): a Zen core's vector adds and shuffles go to its
 * add pipes as well as to the FMA pipes.  On the Zen 5 host (AVX-512) the
 * partial sums -- 4 more adds a nonzero beside 8 multiplies and FMAs --
 * measured 0.94-1.05x the plain dot product; with every FP operation on
 * the 2 FMA pipes they simulated 1.05-1.13x, with the add pipes 1.06x.
 * Since model 84 each nonzero's K row is on its dot product's chain, and
 * on that calibration both kernels are bound by their chains (the partial
 * sums 1.20x with or without add pipes; docs/simulator.md "Model 84").  On
 * the Zen 4 host (one 512-bit FMA pipe and one add pipe; measured 21.6-24
 * us plain, the partial sums 1.07-1.10x) the FP pipes bound both: here
 * each runs at least 15% faster with its add pipe than with none, and on
 * Zen 5's calibration the plain product is no slower with add pipes. */
Test(sim, adds_and_shuffles_also_run_on_the_add_pipes)
{
    loom_target t = zen4_2c(1);
    t.fadd_units = 0;
    double p0 = sddmm_psum_seconds(0, &t), s0 = sddmm_psum_seconds(1, &t);
    t.fadd_units = 1;
    double p1 = sddmm_psum_seconds(0, &t), s1 = sddmm_psum_seconds(1, &t);
    cr_log_info("Zen 4, no add pipe: plain %g us, partial sums %g; one: %g, %g", p0 * 1e6, s0 * 1e6, p1 * 1e6,
                s1 * 1e6);
    cr_expect_leq(p1, 0.85 * p0, "the plain product with an add pipe %g s, without %g s", p1, p0);
    cr_expect_leq(s1, 0.85 * s0, "the partial sums with an add pipe %g s, without %g s", s1, s0);
    loom_target z = zen5_2c();
    z.fadd_units = 0;
    double z0 = sddmm_psum_seconds(0, &z);
    z.fadd_units = 2;
    double z2 = sddmm_psum_seconds(0, &z);
    cr_expect_leq(z2, z0, "Zen 5: the plain product with add pipes %g s, without %g s", z2, z0);
}

/* ---- a chain segment waits for its first loads (model 84) ---- */

/* K's rows prefetched 4 nonzeros ahead (instruction 17's categorical: 1)
 * or not (0), on tg. */
static double sddmm_prefetch_seconds(int prefetch, const loom_target *tg)
{
    return sddmm_unsplit_seconds(17, prefetch, tg);
}

/* Model 84 (sim.h "Independent chains"): a chain segment's first
 * accumulation waits for the loads it reads.  Each nonzero's dot product
 * begins with K's row, from L2 or L3; prefetched 4 nonzeros ahead it is in
 * L1.  On the Zen 4 host's AVX2 build the prefetch measured 0.85-0.88x
 * the same kernel without (one-decision pairs of the seed-3 and seed-4
 * AVX2 records, 2026-12-06), simulated 0.99x by model 83, whose segments
 * began with their FMAs, and 0.88x now: here under 0.95x. */
Test(sim, a_chain_segment_waits_for_its_first_loads)
{
    loom_target t = zen4_2c(0);
    double none = sddmm_prefetch_seconds(0, &t), ahead = sddmm_prefetch_seconds(1, &t);
    cr_log_info("Zen 4 AVX2: %g us without a prefetch, %g with (%.3fx)", none * 1e6, ahead * 1e6, ahead / none);
    cr_expect_lt(ahead, 0.95 * none, "prefetched %g s, not %g s", ahead, none);
}

/* Model 89 (sim_constants.h LOOM_SIM_LOAD_WAIT_SCALE_*): on 512-bit
 * vectors the wait counts a quarter of the serving level's latency past
 * L1's, on narrower ones three times it.  On the Zen 4 host (both seeds'
 * one-decision pairs) the same prefetch measured 1.004-1.056x the kernel
 * without on AVX-512 and 0.85-0.86x on AVX2, where model 84 simulated
 * 0.96-0.97x and 0.92x: here the AVX-512 prefetch saves under 2% (7.7% on
 * model 88) and the AVX2 one over 14% (11% on model 88). */
Test(sim, the_load_wait_depends_on_the_vector_width)
{
    loom_target w = zen4_2c(1), n = zen4_2c(0);
    cr_assert(w.vector_bits == 512 && n.vector_bits == 256);
    double wn = sddmm_prefetch_seconds(0, &w), wa = sddmm_prefetch_seconds(1, &w);
    double nn = sddmm_prefetch_seconds(0, &n), na = sddmm_prefetch_seconds(1, &n);
    cr_log_info("Zen 4 AVX-512: %g / %g us (%.3fx); AVX2: %g / %g us (%.3fx)", wn * 1e6, wa * 1e6, wa / wn, nn * 1e6,
                na * 1e6, na / nn);
    cr_expect_gt(wa, 0.98 * wn, "AVX-512: prefetched %g s, not %g s", wa, wn);
    cr_expect_lt(na, 0.86 * nn, "AVX2: prefetched %g s, not %g s", na, nn);
}

/* Model 102 (sim_exec.c exec_prefetch): a software prefetch of a range
 * shorter than LOOM_SIM_PAIR_RUN_LINES from L2 waits for each 128-byte pair
 * of it, as model 77's demand run does, not for its first line only.
 * SDDMM Cora D = 64 (K's 256-byte rows, two pairs, in L2) prefetching 4
 * nonzeros ahead measured 1.08-1.10x the kernel without on the Zen 4 host's
 * held-out AVX-512 records (16 pairs; 1.05x on seed 5) and 0.85-0.86x on
 * AVX2, simulated 0.99x and 0.77x by model 101 -- the simulator's
 * favourite prefetched, 1.11x the measured best.  Here the AVX-512
 * prefetch costs over 2% (model 101: 0.988x) and the AVX2 one saves at
 * least 10% but under 17% (0.819x). */
Test(sim, a_short_prefetched_range_waits_for_each_pair)
{
    loom_target w = zen4_2c(1), n = zen4_2c(0);
    double wr = sddmm_prefetch_seconds(1, &w) / sddmm_prefetch_seconds(0, &w);
    double nr = sddmm_prefetch_seconds(1, &n) / sddmm_prefetch_seconds(0, &n);
    cr_expect_gt(wr, 1.02, "AVX-512: prefetched %.3fx the kernel without", wr);
    cr_expect(nr > 0.83 && nr < 0.9, "AVX2: prefetched %.3fx the kernel without", nr);
}

/* ---- a prefetch's L2 fills overlap the core on narrower vectors (model 90) ---- */

/* SPMM_TILE_TRACE over the pattern at mtx with F in one vector loop ([1, 1,
 * 1, F]), unsplit, the cache write cw (instruction 10's categorical: 0 none,
 * C accumulated in memory after a memset; 1 a row workspace) and B's rows
 * prefetched (instruction 21's: 0 none; 1, 2, 3 for 4, 16, 64 nonzeros
 * ahead), on tg. */
static loom_sim_result spmm_one_loop(const char *mtx, int F, int cw, int prefetch, const loom_target *tg)
{
    char json[8192];
    snprintf(json, sizeof json, "%s\"decisions\": [[1, 0], [3, 0], [5, [1, 1, 1, %d]], [10, %d], [15, 0], [18, 0], "
                                "[21, %d]]}", SPMM_TILE_TRACE, F, cw, prefetch);
    loom_data_spec spec = {"A", ""};
    snprintf(spec.path, sizeof spec.path, "%s", mtx);
    loom_param_spec par = {"F", F};
    return replay_workload("workloads/spmm.loom", &spec, 1, &par, 1, json, 10, cw, tg);
}

/* spmm_one_loop on Cora. */
static loom_sim_result spmm_cora(int F, int cw, int prefetch, const loom_target *tg)
{
    return spmm_one_loop("data/cora_adj.mtx", F, cw, prefetch, tg);
}

/* Cora F = 64 (B's 693 KB in the Zen 4 fixture's 1 MiB L2) with a row
 * workspace, prefetched or not, on tg. */
static double spmm_l2_prefetch_seconds(int prefetch, const loom_target *tg)
{
    return spmm_cora(64, 1, prefetch, tg).latency_s;
}

/* Model 90 (sim_constants.h LOOM_SIM_PREFETCH_OVERLAP_BITS): on a target of
 * vectors narrower than 512 bits the lines a software prefetch looked up in
 * L2 bound the core as a max after model 27's norm, not inside it.  On the
 * Zen 4 host mbeacxc F = 128 (B in L2) prefetching 4 nonzeros ahead
 * measured 0.94-0.98x the kernel without on AVX2 and 1.00x on AVX-512,
 * simulated 1.07x and 1.02x.  Here, with B in L2, the AVX-512 prefetch
 * costs at least 0.04 of the kernel more than the AVX2 one (model 89:
 * 6.1% and 7.4%; model 90: 2.3% and 7.4%; model 102, whose prefetch of a
 * row of two pairs waits for each pair, 10.6% and 15.6%). */
Test(sim, a_prefetch_from_l2_overlaps_the_core_on_narrower_vectors)
{
    loom_target n = zen4_2c(0), w = zen4_2c(1);
    double nn = spmm_l2_prefetch_seconds(0, &n), na = spmm_l2_prefetch_seconds(1, &n);
    double wn = spmm_l2_prefetch_seconds(0, &w), wa = spmm_l2_prefetch_seconds(1, &w);
    cr_log_info("Cora F = 64: AVX2 %g / %g us (%.3fx), AVX-512 %g / %g us (%.3fx)", nn * 1e6, na * 1e6, na / nn,
                wn * 1e6, wa * 1e6, wa / wn);
    cr_expect_gt(wa / wn, na / nn + 0.04, "AVX-512: prefetched %.3fx the kernel without, AVX2 %.3fx", wa / wn, na / nn);
}

static int len_8(int i)
{
    return 8 + 0 * i;
}

/* consecutive columns from 37 i: B's rows read one after another */
static int band_col(int i, int j)
{
    return i * 37 + j;
}

/* columns 131 j^2 from 37 i: no constant stride */
static int quadratic_col(int i, int j)
{
    return i * 37 + 131 * j * j;
}

/* Model 103 (sim_prefetch.c continues_stride): a prefetched range that
 * continues its prefetch's constant stride waits for its first line only,
 * the hardware stride prefetcher having followed it (model 49), where a
 * short range off any stride waits for each pair (model 102).  mbeacxc F
 * = 128 (consecutive columns) in two passes of 64, each prefetching its
 * 4-line half row 4 nonzeros ahead, measured 1.008x the one pass on the
 * Zen 4 host (AVX2, seed 6) and simulated 1.22x with every range's pairs,
 * 1.15x now.  Here SpMM F = 64 (B 512 KB, in the zen4-2c L2) prefetching
 * 4 ahead: the banded pattern's memory cycles under 0.75x the spread
 * one's (model 102: alike). */
Test(sim, a_prefetch_on_a_followed_stride_waits_for_its_first_line)
{
    loom_target t = zen4_2c(0);
    double band = spmm_one_loop(pattern_mtx("band8.mtx", len_8, band_col), 64, 1, 1, &t).memory_cycles;
    double spread = spmm_one_loop(pattern_mtx("spread8.mtx", len_8, quadratic_col), 64, 1, 1, &t).memory_cycles;
    cr_log_info("SpMM F = 64 prefetched: memory cycles banded %.0f, spread %.0f", band, spread);
    cr_expect_lt(band, 0.75 * spread, "banded %.0f, spread %.0f memory cycles", band, spread);
}

/* ---- a prefetch that leaves L1 before its use (model 91) ---- */

/* An n x n pattern of 8 nonzeros a row at hashed columns (no stride a
 * prefetcher could follow), as a Matrix Market file: the path. */
static const char *hashed_mtx(const char *name, int n)
{
    size_t cap = 64 + (size_t)n * 8 * 24, k = 0;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    k += (size_t)snprintf(text + k, cap - k, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n", n, n, n * 8);
    for (uint64_t i = 0; i < (uint64_t)n; i++)
        for (uint64_t j = 0; j < 8; j++) /* Knuth's multiplicative hash of the position */
            k += (size_t)snprintf(text + k, cap - k, "%d %d 1.0\n", (int)i + 1,
                                  (int)(((i * 8 + j) * 2654435761u >> 7) % (uint64_t)n) + 1);
    const char *path = write_tmp(name, text);
    free(text);
    return path;
}

/* spmm_one_loop with F = 128 and a row workspace over hashed_mtx's 8,192
 * rows (B's 4 MiB past the Zen 4 fixture's L2; the file written once), B's
 * rows prefetched as instruction 21's categorical says, on tg: the
 * simulated seconds. */
static double spmm_prefetch_ahead_seconds(int prefetch, const loom_target *tg)
{
    static char path[4096];
    if (!path[0])
        snprintf(path, sizeof path, "%s", hashed_mtx("hashed8192.mtx", 8192));
    return spmm_one_loop(path, 128, 1, prefetch, tg).latency_s;
}

/* Model 91 (sim_machine.h pf_arrival): a line a software prefetch brought
 * from L3 or memory that left L1 before its demand access is charged as
 * though it had not been prefetched.  64 nonzeros ahead, B's rows of 128
 * floats keep 512 lines -- Zen 4's whole L1 -- in flight; on the Zen 4 host
 * Facebook and PubMed F = 128 measured that prefetch 0.98-1.16x the kernel
 * without and 1.12-1.47x the ones 4 or 16 ahead (2026-12-07), where model
 * 90 simulated 0.75-1.08x the kernel without.  Here, on both widths, the
 * prefetch 64 ahead costs at least 97% of none (model 90: 81% on AVX2;
 * model 91 1.21x and 1.28x, over the measured ratios)
 * while 16 ahead still hides over 15%. */
Test(sim, a_prefetch_evicted_before_its_use_hides_nothing)
{
    for (int avx512 = 0; avx512 <= 1; avx512++) {
        loom_target t = zen4_2c(avx512);
        double none = spmm_prefetch_ahead_seconds(0, &t), a16 = spmm_prefetch_ahead_seconds(2, &t),
               a64 = spmm_prefetch_ahead_seconds(3, &t);
        cr_log_info("Zen 4 %s: none %g us, 16 ahead %g (%.3fx), 64 ahead %g (%.3fx)", avx512 ? "AVX-512" : "AVX2",
                    none * 1e6, a16 * 1e6, a16 / none, a64 * 1e6, a64 / none);
        cr_expect_gt(a64, 0.97 * none, "%d-bit: 64 ahead %g s, none %g s", t.vector_bits, a64, none);
        cr_expect_lt(a16, 0.85 * none, "%d-bit: 16 ahead %g s, none %g s", t.vector_bits, a16, none);
    }
}

/* ---- a sum over fewer lanes than the vector's (model 79) ---- */

/* SDDMM_CHUNK_TRACE unsplit on Cora with the dot product's 64 lanes split
 * as tile ("[16, 4]": 16 loops of 4 lanes), on tg. */
static loom_sim_result sddmm_split(const char *tile, const loom_target *tg)
{
    char json[8192];
    snprintf(json, sizeof json, "%s", SDDMM_CHUNK_TRACE);
    char *chunk = strstr(json, "[3, 3]"), *split = strstr(json, "[5, [1, 64]]");
    cr_assert(chunk && split && strlen(tile) == strlen("[1, 64]"));
    chunk[4] = '0'; /* unsplit */
    memcpy(split + 4, tile, strlen(tile));
    loom_data_spec spec = {"M", "data/cora_adj.mtx"};
    loom_param_spec par = {"D", 64};
    return replay_workload("workloads/sddmm.loom", &spec, 1, &par, 1, json, 20, 0, tg);
}

/* Model 79 (sim_exec.c run_vector): a sum's per-loop charge -- lanes - 1
 * adds and shuffles, cc's in-order or tree combining -- counts the lanes the
 * loop fills: codegen's tree over a 4-lane loop is 4 wide (LOOM_RW), not
 * the zmm's 16.  On Zen 4 (AVX-512, 2026-12-06) SDDMM Cora D = 64 split
 * [16, 4] measured 1.6-1.8x the [4, 16] split, simulated 3.9x while each
 * of its 16 loops a nonzero was charged 15 adds and 15 shuffles: here its
 * instructions stay under 1.5x those of [4, 16] (3 adds and 3 shuffles a
 * loop of 16, against 15 and 15 a loop of 4; 3.9x before), and its time
 * under 2.5x (3.7x before). */
Test(sim, a_short_sum_combines_only_its_lanes)
{
    loom_target t = zen5_2c();
    cr_assert_eq(t.vector_bits, 512);
    loom_sim_result narrow = sddmm_split("[16, 4]", &t), wide = sddmm_split("[4, 16]", &t);
    cr_log_info("[16, 4]: %g instructions, %g us; [4, 16]: %g, %g us", narrow.instructions, narrow.latency_s * 1e6,
                wide.instructions, wide.latency_s * 1e6);
    cr_expect_lt(narrow.instructions, 1.5 * wide.instructions, "[16, 4]: %g instructions, [4, 16]: %g",
                 narrow.instructions, wide.instructions);
    cr_expect_lt(narrow.latency_s, 2.5 * wide.latency_s, "[16, 4]: %g s, [4, 16]: %g s", narrow.latency_s,
                 wide.latency_s);
}

/* ---- a serial fill's lines from the other cores' caches (model 80) ---- */

/* Cora F = 32 with the cache write cw, not prefetched, on tg. */
static loom_sim_result spmm_cache_write(int cw, const loom_target *tg)
{
    return spmm_cora(32, cw, 0, tg);
}

/* Model 80 (sim.h "Fills"): with core_transfer_ns (model 67) the memset of
 * C before the parallel loop fetches the other core's half of C's lines
 * from its cache, a transfer each, not DRAM traffic.  On Zen 4 (2026-12-06)
 * Cora F = 32 without a cache write measured 1.45-1.56x the cache-written
 * schedule; its 346 KB of C at one core's DRAM bandwidth alone had
 * simulated 1.5x the whole cache-written kernel (3.2x in all).  Here, with
 * Zen 4's calibrated 25.4 ns a transfer, none of C goes to DRAM and the
 * kernel without a cache write stays under 2.2x the one with (2.5x as
 * DRAM traffic). */
Test(sim, a_serial_fill_takes_the_other_cores_lines_from_their_caches)
{
    loom_target t = zen5_2c();
    t.core_transfer_ns = 25.4;
    loom_sim_result mem = spmm_cache_write(0, &t), ws = spmm_cache_write(1, &t);
    double bytes = 2708.0 * 32 * 4;
    cr_log_info("without a cache write %g us, with %g us; DRAM bytes %g", mem.latency_s * 1e6, ws.latency_s * 1e6,
                mem.dram_bytes);
    cr_expect_lt(mem.dram_bytes, 0.1 * bytes, "%g DRAM bytes", mem.dram_bytes);
    cr_expect_lt(mem.latency_s, 2.2 * ws.latency_s, "without a cache write %g s, with %g s", mem.latency_s,
                 ws.latency_s);
}
