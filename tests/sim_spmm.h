/* A SpMM campaign record with its decisions left open (SPMM_TILE_TRACE) and
 * its replay on a matrix file: shared by tests/test_sim_cycles.c and
 * tests/test_sim_stores.c. */
#ifndef LOOM_TEST_SIM_SPMM_H
#define LOOM_TEST_SIM_SPMM_H

#include <stdio.h>

#include "sim_replay.h"

/* A bcsstk16 F = 32 campaign record of the Zen 5 host (seed-3 AVX2 set,
 * line 40 of docs/simulator.md "Model 68"): SpMM with the nonzeros in chunks
 * of one position and F's tile (instruction 5) chosen below; the decisions
 * follow. */
static const char *SPMM_TILE_TRACE =
    "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"91308e78da51d397\", \"insts\": [[\"GetB"
    "lock\", [], [\"C\"], [\"b0\"]], [\"SampleLoopOrder\", [\"b0\"], [0, 0.5], [\"v1\"]], [\"GetLoops\", "
    "[\"b0\"], [], [\"l2\", \"l3\", \"l4\"]], [\"SampleCategorical\", [], [[0, 1, 2, 4, 8, 16, 32], [1, 1"
    ", 1, 1, 1, 1, 1]], [\"v5\"]], [\"PosSplit\", [\"l3\", \"v5\"], [\"A\"], [\"l6\", \"l7\"]], [\"Sample"
    "PerfectTile\", [\"l4\"], [4, 128], [\"v8\", \"v9\", \"v10\", \"v11\"]], [\"Split\", [\"l4\", \"v8\","
    " \"v9\", \"v10\", \"v11\"], [], [\"l12\", \"l13\", \"l14\", \"l15\"]], [\"GetLoops\", [\"b0\"], [], "
    "[\"l16\", \"l17\", \"l18\", \"l19\", \"l20\", \"l21\", \"l22\"]], [\"Reorder\", [\"l16\", \"l19\", \""
    "l20\", \"l17\", \"l21\", \"l18\", \"l22\"], [], []], [\"GetLoops\", [\"b0\"], [], [\"l23\", \"l24\","
    " \"l25\", \"l26\", \"l27\", \"l28\", \"l29\"]], [\"SampleCategorical\", [], [[0, 1, 2], [1, 1, 1]], "
    "[\"v30\"]], [\"CacheWrite\", [\"b0\", \"l25\", \"v30\"], [], []], [\"Annotate\", [\"l25\", \"v30\"],"
    " [\"stream\"], []], [\"GetLoops\", [\"b0\"], [], [\"l31\", \"l32\", \"l33\", \"l34\", \"l35\", \"l36"
    "\", \"l37\"]], [\"Parallel\", [\"l31\"], [], []], [\"SampleCategorical\", [], [[0, 2, 8, 32], [1, 1,"
    " 1, 1]], [\"v38\"]], [\"Annotate\", [\"l31\", \"v38\"], [\"balance\"], []], [\"Vectorize\", [\"l37\""
    "], [], []], [\"SampleCategorical\", [], [[1, 4, 16], [1, 1, 1]], [\"v39\"]], [\"Annotate\", [\"l36\""
    ", \"v39\"], [\"unroll\"], []], [\"GetLoops\", [\"b0\"], [], [\"l40\", \"l41\", \"l42\", \"l43\", \"l"
    "44\", \"l45\", \"l46\"]], [\"SampleCategorical\", [], [[0, 4, 16, 64], [1, 1, 1, 1]], [\"v47\"]], [\""
    "Annotate\", [\"l45\", \"v47\"], [\"prefetch\"], []]], ";

/* SPMM_TILE_TRACE with F columns over the pattern at mtx: the nonzeros in
 * PosSplit chunks (instruction 3's categorical index), F's tile (5), the
 * rows in nonzero-balanced chunks (15's index; 0: none), the chunk loop (or
 * the nonzero loop, unsplit) under `#pragma GCC unroll` 1, 4 or 16 (18's
 * index), C's rows in a workspace copied out with ordinary stores (cw 1,
 * instruction 10's index) or non-temporal ones (2), on tg. */
static inline loom_sim_result spmm_run_f(const char *mtx, int F, int chunk, const char *tile, int cw, int balance,
                                         int unroll, const loom_target *tg)
{
    char json[8192];
    snprintf(json, sizeof json, "%s\"decisions\": [[1, 0], [3, %d], [5, %s], [10, %d], [15, %d], [18, %d], [21, 0]]}",
             SPMM_TILE_TRACE, chunk, tile, cw, balance, unroll);
    loom_data_spec spec;
    snprintf(spec.tensor, sizeof spec.tensor, "A");
    snprintf(spec.path, sizeof spec.path, "%s", mtx);
    loom_param_spec par = {"F", F};
    return replay_workload("workloads/spmm.loom", &spec, 1, &par, 1, json, 15, balance, tg);
}

static inline loom_sim_result spmm_run_cw(const char *mtx, int chunk, const char *tile, int cw, int balance,
                                          int unroll, const loom_target *tg)
{
    return spmm_run_f(mtx, 32, chunk, tile, cw, balance, unroll, tg);
}

static inline loom_sim_result spmm_run_u(const char *mtx, int chunk, const char *tile, int balance, int unroll,
                                         const loom_target *tg)
{
    return spmm_run_cw(mtx, chunk, tile, 1, balance, unroll, tg);
}

static inline loom_sim_result spmm_run(const char *mtx, int chunk, const char *tile, int balance, const loom_target *tg)
{
    return spmm_run_u(mtx, chunk, tile, balance, 0, tg);
}

#endif
