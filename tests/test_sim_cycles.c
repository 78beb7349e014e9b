/* Tests of how the simulator combines a core's counters into cycles
 * (runtime/sim/sim.h "Cycles"): a packed panel's copy counted as a phase of
 * its own (model 64, runtime/sim/sim_phase.c) and a chunk loop's exits that
 * branch memory does not learn (model 65, runtime/sim/sim_chunk.c), each on
 * the Zen 5 host's calibration.  What the compiler makes of a kernel is in
 * tests/test_sim_kernels.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"

#include "sim_fixture.h"
#include "sim_replay.h"

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

/* A 2,048 x 2,048 pattern whose row i holds len(i) nonzeros, written as a
 * Matrix Market file: the path. */
static const char *rows_mtx(const char *name, int (*len)(int))
{
    enum { N = 2048 };
    size_t cap = 64 + (size_t)N * 16 * 24, k = 0;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    int nnz = 0;
    for (int i = 0; i < N; i++)
        nnz += len(i);
    k += (size_t)snprintf(text + k, cap - k, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n", N, N, nnz);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < len(i); j++) /* distinct, spread columns */
            k += (size_t)snprintf(text + k, cap - k, "%d %d 1.0\n", i + 1, (i * 37 + j * 131) % N + 1);
    const char *path = write_tmp(name, text);
    free(text);
    return path;
}

static int len_multiple_of_4(int i)
{
    return 4 + 4 * (i * 7 % 3 == 0);
}

static int len_with_remainder(int i)
{
    return 5 + i * 7 % 3;
}

/* SDDMM_CHUNK_TRACE's simulated seconds on tg over the pattern at mtx, in
 * chunks of 4 (chunked) or the unsplit row. */
static double sddmm_chunk_seconds(const char *mtx, int chunked, const loom_target *tg)
{
    loom_data_spec spec;
    snprintf(spec.tensor, sizeof spec.tensor, "M");
    snprintf(spec.path, sizeof spec.path, "%s", mtx);
    loom_param_spec par = {"D", 64};
    return replay_workload("workloads/sddmm.loom", &spec, 1, &par, 1, SDDMM_CHUNK_TRACE, 3, chunked ? 3 : 0, tg)
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
    double r4 = sddmm_chunk_seconds(m4, 1, &t) / sddmm_chunk_seconds(m4, 0, &t);
    double rr = sddmm_chunk_seconds(mr, 1, &t) / sddmm_chunk_seconds(mr, 0, &t);
    cr_expect_gt(r4, 0.9, "chunks of 4 / unsplit, rows of multiples of 4: %g", r4);
    cr_expect_geq(rr, r4 + 0.05, "chunks of 4 / unsplit with remainders %g, without %g", rr, r4);
}
