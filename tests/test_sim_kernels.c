/* Tests of the simulator's rules for what the compiler makes of a kernel
 * (runtime/sim/sim.h "Register-resident workspaces", "Unrolled copies",
 * "Latency chain", "Vectors", "Cycles"): workspaces and the unroll pragma,
 * loads shared by unrolled copies, register tiles, micro-kernel chains,
 * peeled vector loops, the issue slots with the chain.  The hand-computable
 * cases, determinism and sampling are in tests/test_sim.c; the chains that
 * restart and overlap (models 26, 34, 38) in tests/test_sim_chains.c. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/ir/util.h"
#include "../modules/generic.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "../runtime/target/target.h"

#include "sim_fixture.h"
#include "sim_replay.h"

/* ---- register-resident workspaces and the unroll pragma (model 7) ---- */

/* A schedule of a tuning campaign (SpMM, mbeacxc F = 128): the row in a
 * 128-float workspace, the feature loop innermost and vectorized (8 vector
 * iterations of 16 lanes), then `unroll` on it (instruction 17: 1, 4 or 16). */
static const char *UNROLL_TRACE = "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"91308e78da51d397\", \"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"SampleLoopOrder\", [\"b0\"], [0, 0.5], [\"v1\"]], [\"GetLoops\", [\"b0\"], [], [\"l2\", \"l3\", \"l4\"]], [\"SampleCategorical\", [], [[0, 1, 2, 4, 8, 16, 32], [1, 1, 1, 1, 1, 1, 1]], [\"v5\"]], [\"PosSplit\", [\"l3\", \"v5\"], [\"A\"], [\"l6\", \"l7\"]], [\"SamplePerfectTile\", [\"l4\"], [4, 128], [\"v8\", \"v9\", \"v10\", \"v11\"]], [\"Split\", [\"l4\", \"v8\", \"v9\", \"v10\", \"v11\"], [], [\"l12\", \"l13\", \"l14\", \"l15\"]], [\"GetLoops\", [\"b0\"], [], [\"l16\", \"l17\", \"l18\", \"l19\", \"l20\", \"l21\", \"l22\"]], [\"Reorder\", [\"l16\", \"l19\", \"l20\", \"l17\", \"l21\", \"l18\", \"l22\"], [], []], [\"GetLoops\", [\"b0\"], [], [\"l23\", \"l24\", \"l25\", \"l26\", \"l27\", \"l28\", \"l29\"]], [\"SampleCategorical\", [], [[0, 1, 2], [1, 1, 1]], [\"v30\"]], [\"CacheWrite\", [\"b0\", \"l25\", \"v30\"], [], []], [\"Annotate\", [\"l25\", \"v30\"], [\"stream\"], []], [\"GetLoops\", [\"b0\"], [], [\"l31\", \"l32\", \"l33\", \"l34\", \"l35\", \"l36\", \"l37\"]], [\"Parallel\", [\"l31\"], [], []], [\"SampleCategorical\", [], [[0, 2, 8, 32], [1, 1, 1, 1]], [\"v38\"]], [\"Annotate\", [\"l31\", \"v38\"], [\"balance\"], []], [\"SampleCategorical\", [], [[1, 4, 16], [1, 1, 1]], [\"v39\"]], [\"Annotate\", [\"l37\", \"v39\"], [\"unroll\"], []], [\"GetLoops\", [\"b0\"], [], [\"l40\", \"l41\", \"l42\", \"l43\", \"l44\", \"l45\", \"l46\"]], [\"SampleCategorical\", [], [[0, 4, 16, 64], [1, 1, 1, 1]], [\"v47\"]], [\"Annotate\", [\"l45\", \"v47\"], [\"prefetch\"], []]], \"decisions\": [[1, 0], [3, 5], [5, [1, 1, 1, 128]], [10, 1], [15, 1], [17, 1], [20, 0]]}";

/* replay_sim of json (instruction inst's decision set to choice) on SpMM
 * Cora F = 128 */
static loom_sim_result cora128_sim(const char *json, int inst, int choice, const loom_target *tg)
{
    loom_data_spec spec = {"A", "data/cora_adj.mtx"};
    loom_param_spec par = {"F", 128};
    return replay_workload("workloads/spmm.loom", &spec, 1, &par, 1, json, inst, choice, tg);
}

static loom_sim_result unroll_sim(int choice)
{
    loom_target tg = spr();
    return cora128_sim(UNROLL_TRACE, 17, choice, &tg);
}

/* GCC keeps the workspace in 8 vector registers when it unrolls the
 * vector loop completely (no pragma, or `unroll 16`), and in memory under
 * `#pragma GCC unroll 4`, which leaves a loop of 8 iterations: a load and a
 * store per vector per stored entry (measured on mbeacxc F = 128, AVX-512:
 * 1.83x the time of the other two on Emerald Rapids, 1.92x on Zen 5).  So
 * the lowering drops the "unroll" annotation of a loop codegen vectorizes
 * (lower.c drop_unroll_hints): unroll 4 on SpMM's feature loop gives the C
 * and the simulated counts of no unroll.  The simulator's rule for a loop
 * that keeps the pragma (model 7) still charges the workspace's loads and
 * stores: the same LIR with the pragma put back. */
Test(sim, an_unroll_hint_on_a_vector_loop_is_dropped)
{
    want_c = 1;
    loom_sim_result u1 = unroll_sim(0);
    char *c1 = last_c;
    loom_sim_result u4 = unroll_sim(1);
    char *c4 = last_c;
    want_c = 0;
    loom_sim_result u16 = unroll_sim(2);
    cr_assert_not_null(strstr(c1, "#pragma omp simd"), "%s", c1);
    cr_expect_null(strstr(c4, "#pragma GCC unroll"), "unroll 4 kept its pragma:\n%s", c4);
    cr_expect_str_eq(c4, c1, "unroll 4 and no unroll generate different C");
    free(c1), free(c4);
    cr_expect_eq(u4.stores, u1.stores, "unroll 4 %g stores, none %g", u4.stores, u1.stores);
    cr_expect_eq(u4.loads, u1.loads, "unroll 4 %g loads, none %g", u4.loads, u1.loads);
    cr_expect_eq(u16.stores, u1.stores, "unroll 16 %g stores, none %g", u16.stores, u1.stores);
    reunroll = 1;
    loom_sim_result kept = unroll_sim(1);
    reunroll = 0;
    cr_expect_gt(kept.stores, u1.stores + 8 * 10000, "the pragma kept: %g stores, none %g", kept.stores, u1.stores);
    cr_expect_gt(kept.loads, u1.loads + 8 * 10000, "the pragma kept: %g loads, none %g", kept.loads, u1.loads);
}

/* ---- workspaces indexed by a rolled loop, and the broadcast's register (model 25) ---- */

/* UNROLL_TRACE with the feature tile (instruction 5) set to tile and no
 * unroll pragma, simulated on Cora F = 128 on tg */
static loom_sim_result tile_sim(const char *tile, const loom_target *tg)
{
    char *json = strdup(UNROLL_TRACE);
    const char *from = "[5, [1, 1, 1, 128]], [10, 1], [15, 1], [17, 1]";
    char *at = strstr(json, from);
    cr_assert(at != NULL);
    char *out = malloc(strlen(json) + 64);
    snprintf(out, strlen(json) + 64, "%.*s[5, %s], [10, 1], [15, 1], [17, 0]%s", (int)(at - json), json, tile,
             at + strlen(from));
    loom_sim_result r = cora128_sim(out, 0, 0, tg); /* instruction 0 has no decision */
    free(out);
    free(json);
    return r;
}

/* [1, 2, 4, 16] declares a 64-float workspace per half row and runs the
 * row's stored entries once per 16 of its columns (the serial loop f_2
 * between the workspace and the vector loop): GCC 12 indexes the workspace
 * by f_2 at run time and keeps it on the stack, a load and a store per
 * vector per stored entry.  [1, 2, 1, 64] indexes it by the vector loop
 * alone and keeps it in registers.  Cora has 13,264 stored entries; on
 * AVX-512 [1, 2, 4, 16] stores 2 x 4 vectors for each. */
Test(sim, a_workspace_indexed_by_a_rolled_loop_is_memory)
{
    loom_target tg = spr();
    loom_sim_result rolled = tile_sim("[1, 2, 4, 16]", &tg), whole = tile_sim("[1, 2, 1, 64]", &tg);
    cr_expect_gt(rolled.stores, whole.stores + 8 * 13000, "[1, 2, 4, 16] %g stores, [1, 2, 1, 64] %g", rolled.stores,
                 whole.stores);
    cr_expect_gt(rolled.loads, whole.loads + 8 * 13000, "[1, 2, 4, 16] %g loads, [1, 2, 1, 64] %g", rolled.loads,
                 whole.loads);
}

/* A 128-float row is 16 ymm: on a target of 16 such registers it fits the
 * register file alone but not with the register A's broadcast goes
 * through, and its 16 FMAs (8 cycles on 2 pipes) are faster than a spilled
 * vector's round trip -- memory (GCC 12 on AVX2 keeps 2 of them on the
 * stack).  With 32 registers, or as 2 passes of 8 ymm, it stays. */
Test(sim, a_row_that_leaves_no_register_for_the_broadcast_is_memory)
{
    loom_target avx2 = spr();
    avx2.vector_bits = 256;
    avx2.vector_registers = 16;
    avx2.fma_units = 2;
    loom_target wide = avx2;
    wide.vector_registers = 32;
    loom_sim_result full = tile_sim("[1, 1, 1, 128]", &avx2), roomy = tile_sim("[1, 1, 1, 128]", &wide),
                    halves = tile_sim("[1, 2, 1, 64]", &avx2);
    cr_expect_gt(full.stores, roomy.stores + 16 * 13000, "16 registers %g stores, 32 registers %g", full.stores,
                 roomy.stores);
    cr_expect_lt(halves.stores, roomy.stores + 1000, "two passes of 8 ymm %g stores, one of 16 in 32 registers %g",
                 halves.stores, roomy.stores);
}

/* Model 37: on a calibrated target (peel_times) the 16-ymm row's vector
 * loop is unrolled completely (16 <= peel_times vectors) and cc keeps 15
 * vectors in registers, spilling the last: a store (and a reload) per
 * stored entry, not 16 (as memory: 16 of each).  The spilled vector's round trip is a chain of
 * LOOM_SIM_SPILL_ROUND_TRIP_CYCLES a stored entry beside the FMAs (on the
 * Zen 5 host, AVX2, B in L1: 12.8 cycles a stored entry against 11.0 for
 * two passes of 8 ymm, bench/bench_spill_row; GCC 12 spills 2 of the 16).
 * Every stored entry reloads the spilled vector. */
Test(sim, a_row_one_register_short_spills_its_last_vector)
{
    loom_target cal = spr();
    cal.vector_bits = 256;
    cal.vector_registers = 16;
    cal.fma_units = 2;
    cal.peel_times = 16;
    loom_target wide = cal, memory = cal;
    wide.vector_registers = 32;
    memory.peel_times = 0;
    loom_sim_result part = tile_sim("[1, 1, 1, 128]", &cal), roomy = tile_sim("[1, 1, 1, 128]", &wide),
                    mem = tile_sim("[1, 1, 1, 128]", &memory);
    /* the stored entries the simulated rows touched (scaled from the sampled ones): as memory each
       stores the row's 16 vectors, spilled only the last */
    double entries = (mem.stores - roomy.stores) / 16;
    cr_expect_gt(entries, 13264 * 0.5, "as memory %g stores, in registers %g", mem.stores, roomy.stores);
    cr_expect_float_eq(part.loads - roomy.loads, entries, entries * 0.02, "spilled %g loads, in registers %g",
                       part.loads, roomy.loads);
    cr_expect_gt(part.stores, roomy.stores, "spilled %g stores, in registers %g", part.stores, roomy.stores);
    cr_expect_leq(part.stores - roomy.stores, entries * 1.02, "spilled %g stores, in registers %g", part.stores,
                  roomy.stores);
    cr_expect_geq(part.compute_cycles, entries * LOOM_SIM_SPILL_ROUND_TRIP_CYCLES, "spilled: %g compute cycles",
                  part.compute_cycles);
    cr_expect_gt(part.compute_cycles, roomy.compute_cycles, "spilled %g compute cycles, in registers %g",
                 part.compute_cycles, roomy.compute_cycles);
}

/* ---- unrolled copies (model 9) ---- */

/* T(i, j) = X(i, j) * W(j), I = 6, J = 64, serial nest with j vectorized
 * (4 vector iterations of 16 lanes) and i unrolled `factor` times.  Loads
 * per i: W 4 and X 4 vectors.  Unrolled completely (factor 6), the six
 * copies of the j loop load W's same 4 vectors and cc loads them once
 * (sim.h "Unrolled copies"): 4 + 6 x 4 = 28 loads; unrolled twice the loop
 * stays (i advances by 2), so every i loads W again: 6 x 8 = 48. */
static double unrolled_copy_loads(int factor)
{
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    loom_error err;
    loom_program *prog;
    loom_dataset *ds;
    int b, loops[8], n = 8;
    loom_schedule *s = naive_dense("uc.loom",
                                   "param I = 6\nparam J = 64\ntensor W(J) dense\ntensor X(I, J) dense\n"
                                   "tensor T(I, J) dense output\nT(i, j) = X(i, j) * W(j)\n",
                                   "T", &prog, &ds, &b, loops, &n);
    cr_assert_eq(n, 2);
    cr_assert_eq(loom_unroll(s, loops[0], factor, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_vectorize(s, loops[1], &err), LOOM_OK, "%s", err.msg);
    lir_func *f;
    cr_assert_eq(loom_lower(s, &f, &err), LOOM_OK, "%s", err.msg);
    loom_sim_result r;
    cr_assert_eq(loom_sim_run(f, ds, &t, &r, &err), LOOM_OK, "%s", err.msg);
    loom_lir_func_free(f);
    free(s);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return r.loads;
}

Test(sim, unrolled_copies_share_their_loads)
{
    double full = unrolled_copy_loads(6), part = unrolled_copy_loads(2);
    cr_expect_eq(full, 4 + 6 * 4, "unrolled completely: %g loads", full);
    cr_expect_eq(part, 6 * 8, "unrolled twice: %g loads", part);
}

/* ---- a completely unrolled loop's copies (model 93) ---- */

/* UNROLL_TRACE with the nonzeros in chunks of one position (instruction 3),
 * F's tile (5), the rows in balanced chunks of 2 (15), no unroll pragma
 * (17) and the nonzero loop prefetching 16 entries ahead (20: 2) or not
 * (0), on Cora F = 128 on spr-2c as loom calibrate writes a host (peel_times
 * and issue_chain_norm: the calibrated-target rules). */
static loom_sim_result copies_sim(const char *tile, int prefetch)
{
    loom_target tg = spr();
    tg.peel_times = 16;
    tg.issue_chain_norm = 2;
    char json[8192];
    const char *end = strstr(UNROLL_TRACE, "\"decisions\"");
    cr_assert(end != NULL);
    snprintf(json, sizeof json, "%.*s\"decisions\": [[1, 0], [3, 1], [5, %s], [10, 1], [15, 1], [17, 0], [20, %d]]}",
             (int)(end - UNROLL_TRACE), UNROLL_TRACE, tile, prefetch);
    return cora128_sim(json, 0, 0, &tg);
}

/* Model 93 (sim_regs.c cc_unrolls): F's tile [1, 1, 4, 32] puts 4 copies of
 * a 32-float vector loop (2 zmm) inside the nonzero loop; GCC 12 unrolls
 * them and keeps the 128-float workspace in 8 registers, as for [1, 1, 1,
 * 128] (the assembly of issue 29's mbeacxc records: 110.9 us both).  Counted
 * in floats, the 32 made the copies a rolled loop and the workspace memory:
 * 8 stores a nonzero (Cora's 13,264: 106,000 more). */
Test(sim, copies_of_a_vector_loop_keep_the_workspace_in_registers)
{
    loom_sim_result v = copies_sim("[1, 1, 1, 128]", 0), c = copies_sim("[1, 1, 4, 32]", 0);
    cr_log_info("[1, 1, 1, 128] %g stores, %g us; [1, 1, 4, 32] %g stores, %g us", v.stores, v.latency_s * 1e6,
                c.stores, c.latency_s * 1e6);
    cr_expect_lt(c.stores, v.stores + 1000, "4 copies store %g vectors, the vector loop %g", c.stores, v.stores);
}

/* Model 93 (sim_chunk.c literal_copies): [1, 1, 16, 8] is 16 copies of a
 * half-zmm FMA a nonzero, which GCC 12 unrolls (16: its
 * max-completely-peel-times), the position and its column index computed
 * once.  Measured on mbeacxc (Zen 4) 1.21x the vector loop's time (narrow
 * vectors), simulated 3.7x as a rolled loop of 16 iterations, 1.06x now.
 * Here under twice the vector loop's instructions (16 narrow FMAs and
 * loads a nonzero against 8; 4.3x as a rolled loop) and 1.3x its time. */
Test(sim, sixteen_literal_copies_are_unrolled)
{
    loom_sim_result v = copies_sim("[1, 1, 1, 128]", 0), c = copies_sim("[1, 1, 16, 8]", 0);
    cr_log_info("[1, 1, 1, 128] %g instructions, %g us; [1, 1, 16, 8] %g, %g us", v.instructions,
                v.latency_s * 1e6, c.instructions, c.latency_s * 1e6);
    cr_expect_lt(c.instructions, 2 * v.instructions, "16 copies %g instructions, the vector loop %g",
                 c.instructions, v.instructions);
    cr_expect_lt(c.latency_s, 1.3 * v.latency_s, "16 copies %g s, the vector loop %g s", c.latency_s, v.latency_s);
}

/* Model 93 (sim_hoist.c "Merged prefetches"): [1, 1, 8, 16] prefetching 16
 * entries ahead is 8 copies each prefetching its 16 floats of B's row;
 * GCC 12 emits the 128-wide loop's assembly -- one index load, 8
 * prefetcht0s at constant offsets (mbeacxc, Zen 4: 110.6 us against
 * 110.9; simulated 196.6 against 115.3 before, 8 index loads and 8 first
 * lines a nonzero).  Here the same loads and within 5% of the time. */
Test(sim, the_copies_prefetches_of_one_row_merge)
{
    loom_sim_result v = copies_sim("[1, 1, 1, 128]", 2), c = copies_sim("[1, 1, 8, 16]", 2);
    cr_log_info("[1, 1, 1, 128] %g loads, %g us; [1, 1, 8, 16] %g loads, %g us", v.loads, v.latency_s * 1e6,
                c.loads, c.latency_s * 1e6);
    cr_expect_lt(fabs(c.loads / v.loads - 1), 0.01, "8 copies %g loads, the vector loop %g", c.loads, v.loads);
    cr_expect_lt(fabs(c.latency_s / v.latency_s - 1), 0.05, "8 copies %g s, the vector loop %g s", c.latency_s,
                 v.latency_s);
    cr_expect_eq(copies_sim("[1, 1, 8, 16]", 2).latency_s, c.latency_s, "not deterministic");
}

/* ---- register tiles and folded shared loads (model 13) ---- */


/* GEMM_TRACE with instruction inst's decision set to choice, M = m and
 * N = K = 64 (m = 512: N = K = 512), simulated on tg. */
static loom_sim_result gemm_replay(int m, const loom_target *tg, int inst, int choice)
{
    int nk = m == 512 ? 512 : 64;
    loom_param_spec par[3] = {{"M", m}, {"N", nk}, {"K", nk}};
    return replay_workload("workloads/gemm.loom", NULL, 0, par, 3, GEMM_TRACE, inst, choice, tg);
}

/* shared_load_copies < 0: -shared_load_copies with "shared_load_fixed";
 * peel_times > 0: a calibrated target's key (models 15, 32, 33) */
static loom_sim_result gemm_tile_issue(int rows, int shared_load_copies, int fma_units, int vector_bits, int peel_times,
                                       int registers, int issue_width)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"name\": \"avx2ish\", \"cores\": 1, \"vector_bits\": %d, \"vector_registers\": %d, \"fma_units\": %d,"
             " \"ghz\": 1.0, \"issue_width\": %d, \"load_ports\": 2, \"store_ports\": 1,"
             " \"caches\": [{\"name\": \"L1d\", \"size\": 32768, \"assoc\": 8, \"line\": 64, \"latency\": 4,"
             " \"shared\": false}, {\"name\": \"L2\", \"size\": 1048576, \"assoc\": 8, \"line\": 64,"
             " \"latency\": 14, \"shared\": false}],"
             " \"memory\": {\"bandwidth\": 1.28e11, \"core_bandwidth\": 6.4e10, \"latency_ns\": 100},"
             " \"model\": {\"shared_load_copies\": %d, \"shared_load_fixed\": %s, \"peel_times\": %d}}",
             vector_bits, registers, fma_units, issue_width, abs(shared_load_copies),
             shared_load_copies < 0 ? "true" : "false", peel_times);
    loom_target tg;
    loom_error err;
    cr_assert_eq(loom_target_parse(json, "<avx2ish>", &tg, &err), LOOM_OK, "%s", err.msg);
    return gemm_replay(48, &tg, 4, rows - 1);
}

static loom_sim_result gemm_tile_regs(int rows, int shared_load_copies, int fma_units, int vector_bits, int peel_times,
                                      int registers)
{
    return gemm_tile_issue(rows, shared_load_copies, fma_units, vector_bits, peel_times, registers, 4);
}

static loom_sim_result gemm_tile_peel(int rows, int shared_load_copies, int fma_units, int vector_bits, int peel_times)
{
    return gemm_tile_regs(rows, shared_load_copies, fma_units, vector_bits, peel_times, 16);
}

static loom_sim_result gemm_tile_width(int rows, int shared_load_copies, int fma_units, int vector_bits)
{
    return gemm_tile_peel(rows, shared_load_copies, fma_units, vector_bits, 0);
}

static loom_sim_result gemm_tile_fma(int rows, int shared_load_copies, int fma_units)
{
    return gemm_tile_width(rows, shared_load_copies, fma_units, 256);
}

static loom_sim_result gemm_tile_sim(int rows, int shared_load_copies)
{
    return gemm_tile_fma(rows, shared_load_copies, 2);
}

/* 6 rows x 2 vectors: 12 accumulators and B's 2 shared vectors fit 16
 * registers; 8 rows: 16 + 2 do not -- GCC 12 spills (a store and a reload
 * per k), and the simulator charges that tile as memory: a store per
 * vector FMA, 48 x 64 x 64 / 8 of them, where the 6-row tile stores only C. */
Test(sim, register_tile_leaves_room_for_the_shared_loads)
{
    loom_sim_result r6 = gemm_tile_sim(6, 0), r8 = gemm_tile_sim(8, 0);
    double fmas = 48.0 * 64 * 64 / 8;
    cr_expect_geq(r8.stores, fmas, "8 x 16 tile: %g stores for %g vector FMAs", r8.stores, fmas);
    cr_expect_lt(r6.stores, fmas / 10, "6 x 16 tile: %g stores", r6.stores);
    cr_expect_gt(r8.latency_s, r6.latency_s, "8 rows %g s, 6 rows %g s", r8.latency_s, r6.latency_s);
    /* one FMA pipe: the 16 FMAs of a k take 16 cycles, more than a spilled
     * accumulator's round trip -- the spills hide behind them, and the tile
     * is charged as registers (Zen 4's AVX-512 8 x 64 tile, measured) */
    loom_sim_result slow = gemm_tile_fma(8, 0, 1);
    cr_expect_lt(slow.stores, fmas / 10, "8 x 16 tile, one FMA pipe: %g stores", slow.stores);
}

/* Model 33: where the FMAs outlast the round trip, cc spills only what does
 * not fit and keeps the rest of the tile in registers.  The 8 x 16 tile on
 * one FMA pipe needs 16 + 2 + 1 registers of 16: 3 of its 16 vectors go
 * to the stack, a store (and a reload) each per k, and each such update
 * costs LOOM_SIM_SPILL_UPDATE_CYCLES more (GEMM 512's 8-10 x 64 tiles on
 * Zen 5 spill 5-13 zmm and ran 1.13-1.57x the 6 x 32 tile's time per FMA).
 * Only on calibrated targets (peel_times): a hand-written one keeps the
 * whole tile in registers, as above. */
Test(sim, a_register_tile_spills_only_what_does_not_fit)
{
    double fmas = 48.0 * 64 * 64 / 8, spilled = fmas * 3 / 16;
    loom_sim_result all = gemm_tile_peel(8, 0, 1, 256, 0), part = gemm_tile_peel(8, 0, 1, 256, 16);
    cr_expect_lt(all.stores, fmas / 10, "no peel_times: %g stores", all.stores);
    cr_expect_geq(part.stores - all.stores, spilled, "peel_times: %g stores, %g without; 3 vectors of 16 spilled",
                  part.stores, all.stores);
    cr_expect_lt(part.stores - all.stores, spilled * 1.01, "peel_times: %g stores, %g without", part.stores,
                 all.stores);
    /* model 78: the spilled updates' cycles are issued beside the other
     * instructions.  Four a cycle, the tile's 16 FMAs a k on the one pipe
     * outlast its instructions and those cycles together; model 97: the 3
     * spilled vectors' round trips, side by side (14 cycles a k for 256-bit
     * vectors), contend with those 16 as a 4-norm, 1.12x (Zen 5's 8 x 64
     * AVX-512 tile, 16 cycles of FMAs and of round trip: 19.3 a k) */
    cr_expect_gt(part.compute_cycles, all.compute_cycles * 1.05, "compute cycles %g with the spills, %g without",
                 part.compute_cycles, all.compute_cycles);
    cr_expect_lt(part.compute_cycles, all.compute_cycles * 1.2, "compute cycles %g with the spills, %g without",
                 part.compute_cycles, all.compute_cycles);
    /* two a cycle, the issue slots bind, and each spilled update adds its
     * cycle to them: past the FMAs, which take as long as before */
    loom_sim_result part2 = gemm_tile_issue(8, 0, 1, 256, 16, 16, 2);
    cr_expect_geq(part2.compute_cycles, part2.instructions / 2 + spilled * LOOM_SIM_SPILL_UPDATE_CYCLES,
                  "issue width 2: %g compute cycles, %g instructions", part2.compute_cycles, part2.instructions);
    cr_expect_gt(part2.compute_cycles, part.compute_cycles * 1.1, "issue width 2: %g compute cycles, 4: %g",
                 part2.compute_cycles, part.compute_cycles);
}

/* Model 81: past LOOM_SIM_SPILL_FREE_VECTORS spilled vectors a tile pays
 * LOOM_SIM_SPILL_EXCESS_CYCLES x the excess squared each k step, after its
 * other work (Zen 4's 9-16 x 64 AVX-512 GEMM tiles: 5-126 cycles a k past
 * their FMAs).  The 8 x 16 tile on one FMA pipe with an issue width of 16
 * (its spills' issue slots hidden under the FMAs either way) and peel_times
 * 8 (its 16 vectors are model 33's tile, not model 37's row): 8 spilled
 * vectors (11 registers) cost nothing more; 11 spilled (8 registers) cost
 * (11 - 8)^2 x 0.15 cycles a k step more at least -- 6 x 4 tiles x 64 k. */
Test(sim, many_spilled_vectors_cost_more_than_their_slots)
{
    double steps = 6.0 * 4 * 64, excess = 11 - LOOM_SIM_SPILL_FREE_VECTORS;
    loom_sim_result few = gemm_tile_issue(8, 0, 1, 256, 8, 11, 16), many = gemm_tile_issue(8, 0, 1, 256, 8, 8, 16);
    cr_log_info("8 spilled: %g compute cycles; 11 spilled: %g", few.compute_cycles, many.compute_cycles);
    double want = steps * LOOM_SIM_SPILL_EXCESS_CYCLES * excess * excess;
    cr_expect_geq(many.compute_cycles - few.compute_cycles, 0.99 * want, "11 spilled: %g compute cycles, 8 spilled: %g",
                  many.compute_cycles, few.compute_cycles);
}

/* Model 14: the rows of a micro-kernel tile are independent accumulation
 * chains side by side.  With 512-bit vectors a 2-row x 16-column tile does
 * 2 FMAs a k on 2 FMA pipes, one cycle of throughput, but each row waits
 * FP_LATENCY (4 cycles) for its previous k: (48 / 2) x 4 tiles x 64 k x 4
 * cycles of chain at least (GEMM 512 so ran at 3.8 cycles a k on Emerald
 * Rapids).  Before model 14 a row found its element accumulated 2
 * accumulations back and was charged no chain at all.  8 rows do 8 FMAs a
 * k, 4 cycles, as long as their chains: a quarter of the 2 rows' time. */
Test(sim, micro_kernel_rows_are_chains_side_by_side)
{
    loom_sim_result two = gemm_tile_width(2, 0, 2, 512), eight = gemm_tile_width(8, 0, 2, 512);
    double chain = 48.0 / 2 * 4 * 64 * 4;
    cr_expect_geq(two.compute_cycles, chain, "2 rows: %g compute cycles, chain %g", two.compute_cycles, chain);
    cr_expect_gt(two.compute_cycles, 1.5 * eight.compute_cycles, "2 rows %g compute cycles, 8 rows %g",
                 two.compute_cycles, eight.compute_cycles);
}

/* Under GCC's Zen tuning (shared_load_copies 3) 4 row copies are too few
 * for 2 shared vectors (4 < 3 + 2): each copy loads B's 2 vectors itself,
 * 6 loads more per k than when the copies share them -- 12 x 4 row-column
 * tiles x 64 k; 5 copies share (5 >= 3 + 2), as on an Intel tuning. */
Test(sim, few_unrolled_copies_fold_their_shared_loads)
{
    loom_sim_result shared = gemm_tile_sim(4, 0), folded = gemm_tile_sim(4, 3);
    cr_expect_float_eq(folded.loads - shared.loads, 12.0 * 4 * 64 * 6, 0.5, "4 rows: %g loads folded, %g shared",
                       folded.loads, shared.loads);
    loom_sim_result five = gemm_tile_sim(5, 0), five_zen = gemm_tile_sim(5, 3);
    cr_expect_float_eq(five_zen.loads, five.loads, 0.5, "5 rows: %g loads under Zen tuning, %g", five_zen.loads,
                       five.loads);
    /* GCC's generic tuning (shared_load_copies 4, shared_load_fixed): 4
     * copies share 2 vectors (4 >= 4), 3 fold them: 16 x 4 tiles x 64 k x
     * (3 x 2 - 2) loads more */
    loom_sim_result four_generic = gemm_tile_sim(4, -4);
    cr_expect_float_eq(four_generic.loads, shared.loads, 0.5, "4 rows: %g loads under generic tuning, %g",
                       four_generic.loads, shared.loads);
    loom_sim_result three = gemm_tile_sim(3, 0), three_generic = gemm_tile_sim(3, -4);
    cr_expect_float_eq(three_generic.loads - three.loads, 16.0 * 4 * 64 * 4, 0.5, "3 rows: %g loads folded, %g",
                       three_generic.loads, three.loads);
}

/* Model 48: a shared load's vectors count up to 2.  With 128-bit vectors
 * the tile's 16 columns are 4 vectors a row; 32 registers hold 5 rows (20
 * accumulators, B's 4 vectors, the broadcast).  GCC 12's Zen tuning keeps
 * the 4 vectors in registers from 5 copies on, as it does 2 (AVX-512 GEMM
 * 512's 5 x 64 tile: 4 zmm of B a k, not 20): 5 rows load as an Intel
 * tuning's, 4 rows still fold -- 12 row tiles x 4 column tiles x 64 k x
 * (4 x 4 - 4) loads more.  Model 47 counted 3 + 4 = 7 and folded both. */
Test(sim, a_shared_load_of_many_vectors_needs_no_more_copies_than_two)
{
    loom_sim_result five = gemm_tile_regs(5, 0, 2, 128, 0, 32), five_zen = gemm_tile_regs(5, 3, 2, 128, 0, 32);
    cr_expect_float_eq(five_zen.loads, five.loads, 0.5, "5 rows x 4 vectors: %g loads under Zen tuning, %g",
                       five_zen.loads, five.loads);
    loom_sim_result four = gemm_tile_regs(4, 0, 2, 128, 0, 32), four_zen = gemm_tile_regs(4, 3, 2, 128, 0, 32);
    cr_expect_float_eq(four_zen.loads - four.loads, 12.0 * 4 * 64 * 12, 0.5,
                       "4 rows x 4 vectors: %g loads under Zen tuning, %g", four_zen.loads, four.loads);
}

/* ---- peeled vector loops, and the issue slots with the chain (model 15) ---- */

/* T(j) = X(j) * W(j) over J floats, one VECTORIZED loop written as LIR by
 * hand, its bound the constant J or the tensor's dimension (the same value,
 * not known to cc).  Returns the simulated instructions. */
static double vector_loop_instructions(int J, int constant, int peel_times)
{
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    t.peel_times = peel_times;
    char text[256];
    snprintf(text, sizeof text,
             "param J = %d\ntensor W(J) dense\ntensor X(J) dense\ntensor T(J) dense output\nT(j) = X(j) * W(j)\n", J);
    lir_kern k = lir_kern_new("peel.loom", text);
    lir_func *f = k.f;
    int W = loom_lir_buffer_get(f, LIR_BUF_VALS, 0, 0), X = loom_lir_buffer_get(f, LIR_BUF_VALS, 1, 0),
        T = loom_lir_buffer_get(f, LIR_BUF_VALS, 2, 0);
    int vj = loom_lir_new_var(f, "j", LIR_I64);
    lir_expr *hi = constant ? loom_lir_int(f, J) : loom_lir_dim(f, 2, 0);
    lir_stmt *lj = loom_lir_for(f, vj, loom_lir_int(f, 0), hi, LIR_LOOP_VECTORIZED);
    lir_expr *v = loom_lir_bin(f, LIR_MUL, loom_lir_load(f, X, loom_lir_var_ref(f, vj)),
                               loom_lir_load(f, W, loom_lir_var_ref(f, vj)));
    cr_assert(lj && v);
    v->type = LIR_F32;
    loom_lir_append(f, lj->body, loom_lir_store(f, T, loom_lir_var_ref(f, vj), v));
    loom_lir_append(f, f->body, lj);
    return lir_sim(&k, &t).instructions;
}

/* GCC unrolls a loop of at most 16 (max-completely-peel-times) constant
 * iterations completely: 64 floats are 4 vector iterations of 16 lanes,
 * without their 4 loop ops (the micro-kernel's rows of GEMM 512: 20 of its
 * ~23 integer ops a k were such loop ops before model 15).  A bound cc
 * does not know, or 17 vector iterations, keeps the loop.  The target's
 * peel_times (loom calibrate: 16) says how many; without it nothing is
 * peeled (a hand-written target, as before model 15). */
Test(sim, short_constant_vector_loops_are_peeled)
{
    double peeled = vector_loop_instructions(64, 1, 16), looped = vector_loop_instructions(64, 0, 16);
    cr_expect_float_eq(looped - peeled, 4.0, 1e-9, "64 floats: %g instructions with a constant bound, %g without",
                       peeled, looped);
    double c17 = vector_loop_instructions(17 * 16, 1, 16), d17 = vector_loop_instructions(17 * 16, 0, 16);
    cr_expect_float_eq(c17, d17, 1e-9, "17 vectors: %g instructions with a constant bound, %g without", c17, d17);
    double off = vector_loop_instructions(64, 1, 0);
    cr_expect_float_eq(off, looped, 1e-9, "no peel_times: %g instructions, a loop %g", off, looped);
}

/* Model 32 ("Hoisted copies"): T(i, j) += X(c, j) * W(j) under a k loop
 * of 64, i a completely unrolled loop of 6 copies, j a scalar loop of 64,
 * and c = min(row, 5) let inside the j loop.  row = i: each copy's c is a
 * constant for all k and j, computed once per copy; row = i + k: once per
 * copy and k.  Returns the simulated instructions. */
static double hoisted_copy_instructions(int with_k, int peel_times)
{
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    t.peel_times = peel_times;
    t.autovectorize = 0; /* scalar j loops */
    lir_kern k = lir_kern_new("hoist.loom", "param I = 6\nparam J = 64\ntensor W(J) dense\ntensor X(I, J) dense\n"
                                            "tensor T(I, J) dense output\nT(i, j) = X(i, j) * W(j)\n");
    lir_func *f = k.f;
    int W = loom_lir_buffer_get(f, LIR_BUF_VALS, 0, 0), X = loom_lir_buffer_get(f, LIR_BUF_VALS, 1, 0),
        T = loom_lir_buffer_get(f, LIR_BUF_VALS, 2, 0);
    int vk = loom_lir_new_var(f, "k", LIR_I64), vi = loom_lir_new_var(f, "i", LIR_I64),
        vj = loom_lir_new_var(f, "j", LIR_I64), vc = loom_lir_new_var(f, "c", LIR_I64);
    lir_stmt *lk = loom_lir_for(f, vk, loom_lir_int(f, 0), loom_lir_int(f, 64), LIR_LOOP_SERIAL);
    lir_stmt *li = loom_lir_for(f, vi, loom_lir_int(f, 0), loom_lir_int(f, 6), LIR_LOOP_UNROLLED);
    lir_stmt *lj = loom_lir_for(f, vj, loom_lir_int(f, 0), loom_lir_int(f, 64), LIR_LOOP_SERIAL);
    cr_assert(lk && li && lj);
    li->unroll = 6;
    lir_expr *row = with_k ? loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, vi), loom_lir_var_ref(f, vk))
                           : loom_lir_var_ref(f, vi);
    lir_stmt *let = loom_lir_let(f, vc, loom_lir_bin(f, LIR_MIN, row, loom_lir_int(f, 5)));
    lir_expr *ti = loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, vi), loom_lir_int(f, 64)),
                                loom_lir_var_ref(f, vj));
    lir_expr *xi = loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, vc), loom_lir_int(f, 64)),
                                loom_lir_var_ref(f, vj));
    lir_expr *v = loom_lir_bin(f, LIR_MUL, loom_lir_load(f, X, xi), loom_lir_load(f, W, loom_lir_var_ref(f, vj)));
    cr_assert_not_null(v);
    v->type = LIR_F32;
    v = loom_lir_bin(f, LIR_ADD, loom_lir_load(f, T, ti), v);
    cr_assert_not_null(v);
    v->type = LIR_F32;
    lir_stmt *st = loom_lir_store(f, T, ti, v);
    cr_assert(let && st);
    loom_lir_append(f, lj->body, let);
    loom_lir_append(f, lj->body, st);
    loom_lir_append(f, li->body, lj);
    loom_lir_append(f, lk->body, li);
    loom_lir_append(f, f->body, lk);
    return lir_sim(&k, &t).instructions;
}

/* GEMM 512's micro-kernel of 6 rows clamps each row (min(i, 511)) in the
 * unrolled row loop inside k; GCC 12 computes each copy's row address once,
 * outside k (its assembly: 3 integer ops a k, against the ~14 model 31
 * charged).  Model 32 charges such a let once per copy and instance of the
 * rolled loops it is hoisted past: 6 times here, against 6 x 64 times when
 * it reads k as well (hoisted past j only), 3.5 instructions each (the min's
 * compare and conditional move, model 36; its move; and model 35's multiply
 * of c by X's row length, which the address c * 64 + j needs).  Without
 * peel_times (a hand-written target) nothing moves. */
Test(sim, unrolled_copies_hoist_their_own_constants)
{
    double copies = hoisted_copy_instructions(0, 16), per_k = hoisted_copy_instructions(1, 16);
    cr_expect_float_eq(per_k - copies, (64 * 6 - 6) * 3.5, 1e-6, "min(i + k, 5): %.17g instructions, min(i, 5): %.17g",
                       per_k, copies);
    double off = hoisted_copy_instructions(0, 0), off_k = hoisted_copy_instructions(1, 0);
    cr_expect_float_eq(off, off_k, 1e-9, "no peel_times: %g and %g instructions", off, off_k);
    cr_expect_float_eq(off - copies, (64 * 6 * 64 - 6) * 3.5, 1e-6, "hoisted: %g instructions, per execution: %g",
                       copies, off);
}

/* C(i) += A(i, k) * B(k * stride) over Cora's adjacency, scalar, written
 * as LIR by hand: for each row i, for each stored entry p of row i, k =
 * crd[p] (a variable read from index data, not an induction variable) and
 * a load of B at k * stride.  Returns the simulated instructions and (in
 * *entries) the stored entries. */
static double crd_scaled_instructions(int stride, double *entries)
{
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    t.autovectorize = 0;
    const char *text = "tensor A(N, K) csr\ntensor B(K) dense\ntensor C(N) dense output\nC(i) += A(i, k) * B(k)\n";
    loom_data_spec spec = {"A", "data/cora_adj.mtx"};
    lir_kern k = lir_kern_new_data("crd.loom", text, &spec, 1);
    lir_func *f = k.f;
    int pos = loom_lir_buffer_get(f, LIR_BUF_POS, 0, 1), crd = loom_lir_buffer_get(f, LIR_BUF_CRD, 0, 1);
    int A = loom_lir_buffer_get(f, LIR_BUF_VALS, 0, 0), B = loom_lir_buffer_get(f, LIR_BUF_VALS, 1, 0),
        C = loom_lir_buffer_get(f, LIR_BUF_VALS, 2, 0);
    cr_assert(pos >= 0 && crd >= 0 && A >= 0 && B >= 0 && C >= 0);
    int vi = loom_lir_new_var(f, "i", LIR_I64), vp = loom_lir_new_var(f, "p", LIR_I64),
        vk = loom_lir_new_var(f, "k", LIR_I64);
    int64_t rows = k.ds->t[0].dims[0];
    *entries = (double)k.ds->t[0].nnz;
    lir_stmt *li = loom_lir_for(f, vi, loom_lir_int(f, 0), loom_lir_int(f, rows), LIR_LOOP_SERIAL);
    lir_expr *next = loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, vi), loom_lir_int(f, 1));
    lir_stmt *lp = loom_lir_for(f, vp, loom_lir_load(f, pos, loom_lir_var_ref(f, vi)), loom_lir_load(f, pos, next),
                                LIR_LOOP_SERIAL);
    cr_assert(li && lp);
    loom_lir_append(f, lp->body, loom_lir_let(f, vk, loom_lir_load(f, crd, loom_lir_var_ref(f, vp))));
    lir_expr *at = loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, vk), loom_lir_int(f, stride));
    lir_expr *v = loom_lir_bin(f, LIR_MUL, loom_lir_load(f, A, loom_lir_var_ref(f, vp)), loom_lir_load(f, B, at));
    cr_assert_not_null(v);
    v->type = LIR_F32;
    v = loom_lir_bin(f, LIR_ADD, loom_lir_load(f, C, loom_lir_var_ref(f, vi)), v);
    cr_assert_not_null(v);
    v->type = LIR_F32;
    loom_lir_append(f, lp->body, loom_lir_store(f, C, loom_lir_var_ref(f, vi), v));
    loom_lir_append(f, li->body, lp);
    loom_lir_append(f, f->body, li);
    return lir_sim(&k, &t).instructions;
}

/* Model 35 ("Address arithmetic"): an index that multiplies a variable read
 * from index data by a row length costs GCC an imul each time the variable
 * is assigned -- it cannot strength-reduce it into an induction variable,
 * as it does the loop counters' products (model 4).  SpMM's B(k, f) on
 * PubMed F = 128: `imulq %rbx, %r9` once per stored entry in GCC 12's
 * assembly.  With stride 1 the address is k itself: nothing more. */
Test(sim, a_crd_variable_scaled_by_a_row_length_costs_a_multiply)
{
    double entries = 0, plain = crd_scaled_instructions(1, &entries), scaled = crd_scaled_instructions(64, &entries);
    cr_assert_gt(entries, 1000);
    cr_expect_float_eq(scaled - plain, entries, 1e-6, "k * 64: %g instructions, k: %g, over %g entries", scaled, plain,
                       entries);
}

/* sum = sum + X(j) over 64 floats, scalar, with n integer lets a j that cc
 * cannot hoist (min(j + m, 5), m = 1..n): a chain of 64 x 4 cycles, and
 * 64 x (3 + 2.5 n) instructions on an issue width of 4 (a min is a compare
 * and a conditional move, model 36; the let's move half).  Returns the
 * compute cycles and, in *instr, the instructions. */
static double chain_and_issue(int n, double norm, double *instr)
{
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    t.issue_chain_norm = norm;
    t.autovectorize = 0;
    t.branch_miss_cycles = 0;
    lir_kern k = lir_kern_new("chain.loom", "param J = 64\ntensor X(J) dense\ntensor T(J) dense output\nT(j) = X(j)\n");
    lir_func *f = k.f;
    int X = loom_lir_buffer_get(f, LIR_BUF_VALS, 0, 0), T = loom_lir_buffer_get(f, LIR_BUF_VALS, 1, 0);
    int vj = loom_lir_new_var(f, "j", LIR_I64), vs = loom_lir_new_var(f, "sum", LIR_F32);
    loom_lir_append(f, f->body, loom_lir_let(f, vs, loom_lir_float(f, 0)));
    lir_stmt *lj = loom_lir_for(f, vj, loom_lir_int(f, 0), loom_lir_int(f, 64), LIR_LOOP_SERIAL);
    cr_assert_not_null(lj);
    for (int m = 1; m <= n; m++) {
        int vc = loom_lir_new_var(f, "c", LIR_I64);
        lir_expr *e = loom_lir_bin(f, LIR_MIN, loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, vj), loom_lir_int(f, m)),
                                   loom_lir_int(f, 5));
        loom_lir_append(f, lj->body, loom_lir_let(f, vc, e));
    }
    lir_expr *v = loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, vs), loom_lir_load(f, X, loom_lir_var_ref(f, vj)));
    cr_assert_not_null(v);
    v->type = LIR_F32;
    loom_lir_append(f, lj->body, loom_lir_assign(f, vs, v));
    loom_lir_append(f, f->body, lj);
    loom_lir_append(f, f->body, loom_lir_store(f, T, loom_lir_int(f, 0), loom_lir_var_ref(f, vs)));
    loom_sim_result r = lir_sim(&k, &t);
    *instr = r.instructions;
    return r.compute_cycles;
}

/* Model 15: the issue slots and the latency chain bound a core together,
 * as sqrt(issue^2 + chain^2), not as the longer of the two: on the
 * re-measured records of Emerald Rapids, bcsstk16 F = 32's rows (an FMA
 * chain of 4 cycles a nonzero) ran 1.39-1.47x slower with a software
 * prefetch of B's rows that the max model hid under the chain (its
 * instructions 3.3 cycles a nonzero at the issue width); Spearman 0.44 ->
 * 0.77.  Here 5 lets bring the issue to 64 x 15.5 / 4 = 248 cycles, below
 * the chain's 256 (and, model 84, the first add's wait for its load, an L1
 * hit: the chain's first segment begins with it): the longer alone is 256,
 * together 356 (the target's issue_chain_norm 2, as loom calibrate writes
 * it; without the key, the longer, as before model 15). */
Test(sim, issue_slots_and_chain_add_up)
{
    double i0, i5, im;
    double c0 = chain_and_issue(0, 2, &i0), c5 = chain_and_issue(5, 2, &i5), cmax = chain_and_issue(5, 0, &im);
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    double first = t.caches[0].latency; /* model 84, calibrated targets only */
    cr_expect_float_eq(cmax, 64.0 * 4, 1e-6, "no issue_chain_norm: compute %g cycles, the chain's 256", cmax);
    double chain = sqrt(c0 * c0 - (i0 / 4) * (i0 / 4));
    cr_expect_float_eq(chain, 64.0 * 4 + first, 1e-6, "chain %g cycles (compute %g, %g instructions)", chain, c0, i0);
    cr_expect_float_eq(i5 - i0, 64 * 5 * 2.5, 1e-6, "5 lets: %g instructions, none: %g", i5, i0);
    cr_expect_float_eq(c5, hypot(i5 / 4, chain), 1e-6, "5 lets: compute %g cycles, %g instructions", c5, i5);
    cr_expect_gt(c5, 1.2 * fmax(i5 / 4, chain), "5 lets: compute %g cycles", c5);
}

/* Model 17: a register tile needs one register beside its accumulators and
 * the shared loads -- the broadcast of A's element (LOOM_SIM_TILE_TEMP_
 * REGISTERS).  7 rows x 2 vectors: 14 + 2 + 1 > 16 registers, and 14 FMAs
 * a k take 7 cycles, less than a spilled accumulator's round trip: the
 * tile is charged as memory (a store per vector FMA).  Emerald Rapids'
 * AVX2 ran it 1.31x the 6-row tile; model 16 counted it as fitting. */
Test(sim, register_tile_needs_a_register_for_the_broadcast)
{
    loom_sim_result r6 = gemm_tile_sim(6, 0), r7 = gemm_tile_sim(7, 0);
    double fmas = 48.0 * 64 * 64 / 8;
    cr_expect_geq(r7.stores, fmas * 42 / 48, "7 x 16 tile: %g stores for %g vector FMAs", r7.stores, fmas);
    cr_expect_lt(r6.stores, fmas / 10, "6 x 16 tile: %g stores", r6.stores);
}

/* ---- guarded iterations (model 17) ---- */

/* GEMM 512 (the AVX2 record above, 6 rows): rows split 86 x 1 x 6 (516
 * rows, one tile past the end partly) or 2 x 64 x 6 (768 rows: 42 tiles of
 * the second 384 past the end, skipped by the tile guard).  The sampler
 * counts the guard's passes and samples the full tiles apart from the
 * empty ones, so both do the work of 516 rows; model 16 scaled the second
 * split's first tiles over the empty ones: 1.14x the FLOPs here (1.49x and
 * 1.44x the time on the calibrated Emerald Rapids host, where the two
 * measure within 3% of each other). */
static loom_sim_result gemm_rows_split(int mid)
{
    loom_target tg = spr();
    return gemm_replay(512, &tg, 3, mid);
}

Test(sim, guarded_iterations_are_sampled_apart)
{
    loom_sim_result whole = gemm_rows_split(0), padded = gemm_rows_split(6); /* v5 = 1, 64 */
    double work = 2.0 * 516 * 512 * 512;
    cr_expect(whole.sampled && padded.sampled, "GEMM 512 is sampled");
    cr_expect_lt(fabs(whole.flops / work - 1), 0.03, "86 x 6 rows: %g FLOPs, %g done", whole.flops, work);
    cr_expect_lt(fabs(padded.flops / work - 1), 0.03, "2 x 64 x 6 rows: %g FLOPs, %g done", padded.flops, work);
    cr_expect_lt(fabs(padded.latency_s / whole.latency_s - 1), 0.1, "%g s against %g s", padded.latency_s,
                 whole.latency_s);
}

/* ---- the loops codegen marks `omp simd` (lir.h loom_lir_is_simd_safe) ---- */

/* for j in [0, 16): T(j + off) = X(j * xs) * W(c) (+ T(j + rd) when rd >= 0; with sum, s = s + X(j)
 * instead), written as LIR by hand; returns loom_lir_is_simd_safe of the loop */
static int simd_safe(int off, int xs, int rd, int sum, lir_loop_kind kind)
{
    lir_kern k = lir_kern_new("simd.loom", "param J = 64\ntensor W(J) dense\ntensor X(J) dense\n"
                                           "tensor T(J) dense output\nT(j) = X(j) * W(j)\n");
    lir_func *f = k.f;
    int W = loom_lir_buffer_get(f, LIR_BUF_VALS, 0, 0), X = loom_lir_buffer_get(f, LIR_BUF_VALS, 1, 0),
        T = loom_lir_buffer_get(f, LIR_BUF_VALS, 2, 0);
    int vj = loom_lir_new_var(f, "j", LIR_I64), vs = loom_lir_new_var(f, "s", LIR_F32);
    lir_stmt *lj = loom_lir_for(f, vj, loom_lir_int(f, 0), loom_lir_int(f, 16), kind);
    lir_expr *x = loom_lir_load(f, X, loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, vj), loom_lir_int(f, xs)));
    cr_assert(lj && x);
    x->type = LIR_F32;
    if (sum) {
        lir_expr *v = loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, vs), x);
        v->type = LIR_F32;
        loom_lir_append(f, lj->body, loom_lir_assign(f, vs, v));
    } else {
        lir_expr *v = loom_lir_bin(f, LIR_MUL, x, loom_lir_load(f, W, loom_lir_int(f, 3)));
        v->type = LIR_F32;
        if (rd >= 0) {
            lir_expr *t = loom_lir_load(f, T, loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, vj), loom_lir_int(f, rd)));
            t->type = LIR_F32;
            v = loom_lir_bin(f, LIR_ADD, t, v);
            v->type = LIR_F32;
        }
        lir_expr *at = loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, vj), loom_lir_int(f, off));
        loom_lir_append(f, lj->body, loom_lir_store(f, T, at, v));
    }
    loom_lir_append(f, f->body, lj);
    int safe = loom_lir_is_simd_safe(f, lj);
    loom_lir_func_free(f);
    loom_dataset_free(k.ds);
    loom_program_free(k.prog);
    return safe;
}

/* Marked: each iteration writes its own element and reads only its own
 * (a read-modify-write of T(j + 4) at j + 4), an invariant W(3).  Not
 * marked: a loop-carried sum, a strided (gathered) load, a read of T at
 * another iteration's element, a loop already VECTORIZED or parallel. */
Test(sim, codegen_marks_only_loops_without_dependences_omp_simd)
{
    cr_expect_eq(simd_safe(4, 1, -1, 0, LIR_LOOP_SERIAL), 1, "T(j + 4) = X(j) * W(3)");
    cr_expect_eq(simd_safe(4, 1, 4, 0, LIR_LOOP_SERIAL), 1, "T(j + 4) = T(j + 4) + X(j) * W(3)");
    cr_expect_eq(simd_safe(4, 1, 5, 0, LIR_LOOP_SERIAL), 0, "T(j + 4) = T(j + 5) + ...: the next iteration's element");
    cr_expect_eq(simd_safe(4, 2, -1, 0, LIR_LOOP_SERIAL), 0, "X(2 j): a strided load");
    cr_expect_eq(simd_safe(0, 1, -1, 1, LIR_LOOP_SERIAL), 0, "s = s + X(j): a loop-carried sum");
    cr_expect_eq(simd_safe(4, 1, -1, 0, LIR_LOOP_VECTORIZED), 0, "already VECTORIZED");
    cr_expect_eq(simd_safe(4, 1, -1, 0, LIR_LOOP_PARALLEL), 0, "a parallel loop");
}
