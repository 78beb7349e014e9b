/* The simulator's software prefetch and miss exposure on Cora SpMM (sim.h
 * "Software prefetch", model 45; "Late prefetches", model 50; "Exposed
 * misses", model 51): a prefetch set against the same kernel without, on a
 * hand-written core and a calibrated one; and a PosSplit chunk loop cc
 * peels ("Single iterations", model 63) against the same loop unrolled. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../dsl/schedule/query.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"

#include "sim_fixture.h"

/* Cora SpMM on one core of spr-2c with warm caches (the prefetch tests
 * below; F = 16 unless a test opens another): the program, its data and a
 * schedule to fill. */
typedef struct cora16 {
    loom_program *prog;
    loom_dataset *ds;
    loom_schedule *sch;
    loom_target t;
} cora16;

static cora16 cora16_open(void)
{
    cora16 c;
    c.prog = spmm_open("A=data/cora_adj.mtx", "F=16", &c.ds, &c.sch, &c.t);
    c.t.warm_caches = 1; /* a repeated kernel's: B cached by the run before, no first touch from memory */
    return c;
}

static void cora16_close(cora16 *c)
{
    free(c->sch);
    loom_program_free(c->prog);
    loom_dataset_free(c->ds);
}

/* The default schedule with the nonzero loop prefetching `ahead` entries
 * ahead (0: no prefetch), simulated on c's target without and with the
 * calibrated-only rules (issue_chain_norm 0, then 2): r[0], r[1]. */
static void cora16_prefetch(cora16 *c, int ahead, loom_sim_result r[2])
{
    loom_error err;
    int k = spmm_nonzero_loop(c->sch, c->prog);
    if (ahead)
        cr_assert_eq(loom_annotate(c->sch, k, LOOM_ANN_PREFETCH, -1, ahead, &err), LOOM_OK, "%s", err.msg);
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(c->sch, &f, &err), LOOM_OK, "%s", err.msg);
    for (int cal = 0; cal < 2; cal++) {
        c->t.issue_chain_norm = cal ? 2 : 0;
        cr_assert_eq(loom_sim_run(f, c->ds, &c->t, &r[cal], &err), LOOM_OK, "%s", err.msg);
    }
    loom_lir_func_free(f);
}

/* Model 45 (sim.h "Software prefetch"): a prefetch of rows a private level
 * past L1 holds hides nothing.  SpMM on Cora at F = 16 (B: 2708 rows of
 * one 64-byte line, 173 KB -- past spr-2c's L1, inside its L2; warm), the
 * nonzero loop prefetching 16 entries ahead or not.  On a calibrated core
 * (issue_chain_norm set) the prefetched kernel keeps at least 80% of the
 * plain kernel's memory cycles; with issue_chain_norm 0 (the calibrated-only
 * rules, models 44 and 45 among them, off) the prefetch still hides the L2
 * stalls -- the rule is what tells the two apart. */
Test(sim, a_prefetch_of_rows_in_l2_hides_no_stall, .timeout = 120)
{
    cora16 c = cora16_open();
    cr_assert(2708.0 * 64 > c.t.caches[0].size && 2708.0 * 64 < c.t.caches[1].size && !c.t.caches[1].shared,
              "B must miss L1 and fit the private L2 of spr-2c");
    loom_sim_result r[2][2]; /* [prefetch][calibrated] */
    cora16_prefetch(&c, 0, r[0]);
    cora16_prefetch(&c, 16, r[1]);
    double mem[2][2] = {{r[0][0].memory_cycles, r[0][1].memory_cycles}, {r[1][0].memory_cycles, r[1][1].memory_cycles}};
    cr_log_info("sim: Cora SpMM F = 16, memory cycles plain / prefetched: uncalibrated %.0f / %.0f, calibrated "
                "%.0f / %.0f", mem[0][0], mem[1][0], mem[0][1], mem[1][1]);
    cr_assert_gt(mem[0][1], 0, "the plain kernel's L1 misses cost no memory cycles");
    cr_assert_lt(mem[1][0], 0.5 * mem[0][0], "uncalibrated: the prefetch no longer hides the stalls (%.0f of %.0f)",
                 mem[1][0], mem[0][0]);
    cr_assert_gt(mem[1][1], 0.8 * mem[0][1], "calibrated: a prefetch of L2 rows hid %.0f of %.0f memory cycles",
                 mem[0][1] - mem[1][1], mem[0][1]);
    cora16_close(&c);
}

/* Model 77 (sim_constants.h LOOM_SIM_PAIR_RUN_LINES): from L2, a short run
 * of lines comes a 128-byte pair at a time.  SpMM on Cora at F = 32 (a row
 * of B one pair) and F = 64 (two pairs; B 693 KB, past spr-2c's L1, inside
 * its L2), one core, warm.  On a calibrated core (issue_chain_norm set) the
 * F = 64 kernel's memory cycles are at least 1.6x F = 32's -- a row waits
 * for each of its pairs -- where without the calibrated-only rules a row's
 * lines after its first stream (at most 1.3x).  The nonzero loop
 * prefetching 16 entries ahead waits for each pair of the row too (model
 * 102, sim_exec.c exec_prefetch): at least 0.95x the plain F = 64 kernel's
 * memory cycles (model 45 had only its first line wait: 0.8x). */
Test(sim, a_short_run_from_l2_waits_for_each_pair, .timeout = 120)
{
    double mem[3][2]; /* [F = 32, F = 64, F = 64 prefetched][calibrated] */
    for (int i = 0; i < 3; i++) {
        cora16 c;
        c.prog = spmm_open("A=data/cora_adj.mtx", i ? "F=64" : "F=32", &c.ds, &c.sch, &c.t);
        c.t.warm_caches = 1;
        if (i == 1)
            cr_assert(2708.0 * 256 > c.t.caches[0].size && 2708.0 * 256 < c.t.caches[1].size && !c.t.caches[1].shared,
                      "B must miss L1 and fit the private L2 of spr-2c");
        loom_sim_result r[2];
        cora16_prefetch(&c, i == 2 ? 16 : 0, r);
        mem[i][0] = r[0].memory_cycles;
        mem[i][1] = r[1].memory_cycles;
        cora16_close(&c);
    }
    cr_log_info("sim: Cora SpMM memory cycles F = 32 / F = 64 / F = 64 prefetched: uncalibrated %.0f / %.0f / %.0f, "
                "calibrated %.0f / %.0f / %.0f", mem[0][0], mem[1][0], mem[2][0], mem[0][1], mem[1][1], mem[2][1]);
    cr_assert_gt(mem[0][1], 0, "F = 32's L1 misses cost no memory cycles");
    cr_assert_gt(mem[1][1], 1.6 * mem[0][1], "calibrated: two pairs a row cost %.0f, one pair %.0f", mem[1][1],
                 mem[0][1]);
    cr_assert_lt(mem[1][0], 1.3 * mem[0][0], "uncalibrated: two pairs a row cost %.0f, one pair %.0f", mem[1][0],
                 mem[0][0]);
    cr_assert_geq(mem[2][1], 0.95 * mem[1][1], "calibrated: the prefetch of two pairs left %.0f of %.0f memory cycles",
                  mem[2][1], mem[1][1]);
}

/* Model 50 (sim.h "Late prefetches"): a prefetch issued too close to its use
 * hides only part of the latency.  SpMM on Cora at F = 16, one core, warm,
 * spr-2c's L2 cut to 64 KiB so that B's 2708 lines (173 KB) come from the
 * shared L3: the nonzero loop prefetching 1 or 16 entries ahead.  One entry
 * ahead is a few cycles of the row's work before the line is read, short
 * of L3's latency: on a calibrated core (issue_chain_norm set) the rest of
 * the latency waits -- more cycles than 16 ahead, but no more than the
 * kernel without a prefetch; uncalibrated, the two distances cost alike. */
Test(sim, a_prefetch_too_close_to_its_use_waits, .timeout = 120)
{
    cora16 c = cora16_open();
    c.t.caches[1].size = 65536;
    cr_assert(c.t.ncaches == 3 && c.t.caches[2].shared && 2708.0 * 64 < c.t.caches[2].size,
              "B must come from spr-2c's shared L3");
    loom_sim_result r[3][2]; /* [no prefetch, 1 ahead, 16 ahead][calibrated] */
    cora16_prefetch(&c, 0, r[0]);
    cora16_prefetch(&c, 1, r[1]);
    cora16_prefetch(&c, 16, r[2]);
    cr_log_info("sim: Cora SpMM F = 16, B in L3, cycles none / 1 ahead / 16 ahead: uncalibrated %.0f / %.0f / %.0f, "
                "calibrated %.0f / %.0f / %.0f",
                r[0][0].cycles, r[1][0].cycles, r[2][0].cycles, r[0][1].cycles, r[1][1].cycles, r[2][1].cycles);
    cr_expect_gt(r[1][1].cycles, 1.2 * r[2][1].cycles, "calibrated: 1 ahead %.0f cycles, 16 ahead %.0f",
                 r[1][1].cycles, r[2][1].cycles);
    cr_expect_leq(r[1][1].cycles, r[0][1].cycles, "calibrated: 1 ahead %.0f cycles, no prefetch %.0f",
                  r[1][1].cycles, r[0][1].cycles);
    cr_expect_lt(fabs(r[1][0].cycles / r[2][0].cycles - 1), 0.02, "uncalibrated: 1 ahead %.0f cycles, 16 ahead %.0f",
                 r[1][0].cycles, r[2][0].cycles);
    cora16_close(&c);
}

/* Model 51 (sim.h "Exposed misses"): a demand miss that few others share the
 * reorder window with stalls for its latency, not for the throughput figure
 * a calibration measures with many misses in flight.  SpMM on Cora at
 * F = 16, one core, spr-2c's L2 and L3 cut to 64 and 128 KiB so that B's
 * rows (one line each, 173 KB) come from memory, a calibrated miss cost of
 * 3 ns and a core bandwidth that does not bind: the plain kernel simulated
 * with memory latency 100 and 200 ns.  On a calibrated core (issue_chain_norm
 * set) the memory cycles rise with the latency, by no more than every line
 * read from memory paying the whole 100 ns more; with issue_chain_norm 0
 * (the rule off) they are the same at both latencies. */
Test(sim, a_miss_alone_in_the_reorder_window_shows_its_latency, .timeout = 120)
{
    cora16 c = cora16_open();
    c.t.caches[1].size = 65536;
    c.t.caches[2].size = 131072;
    c.t.mem_miss_cost_ns = 3.0;
    c.t.core_bandwidth = 1e13;
    c.t.mem_bandwidth = 1e13;
    loom_sim_result r[2][2]; /* [latency 100, 200 ns][calibrated] */
    c.t.mem_latency_ns = 100;
    cora16_prefetch(&c, 0, r[0]);
    c.t.mem_latency_ns = 200;
    cora16_prefetch(&c, 0, r[1]);
    cr_log_info("sim: Cora SpMM F = 16, B from memory, memory cycles at 100 / 200 ns: uncalibrated %.0f / %.0f, "
                "calibrated %.0f / %.0f; DRAM bytes %.0f",
                r[0][0].memory_cycles, r[1][0].memory_cycles, r[0][1].memory_cycles, r[1][1].memory_cycles,
                r[0][1].dram_bytes);
    cr_assert_gt(r[0][1].dram_bytes, 2708.0 * 64 / 2, "B must come from memory (%.0f bytes)", r[0][1].dram_bytes);
    cr_expect_eq(r[0][0].memory_cycles, r[1][0].memory_cycles, "uncalibrated: %.0f cycles at 100 ns, %.0f at 200",
                 r[0][0].memory_cycles, r[1][0].memory_cycles);
    cr_expect_gt(r[1][1].memory_cycles, 1.2 * r[0][1].memory_cycles, "calibrated: %.0f cycles at 100 ns, %.0f at 200",
                 r[0][1].memory_cycles, r[1][1].memory_cycles);
    double bound = r[0][1].dram_bytes / 64 * 100e-9 * c.t.ghz * 1e9;
    cr_expect_leq(r[1][1].memory_cycles - r[0][1].memory_cycles, bound,
                  "calibrated: %.0f cycles more, more than every line's 100 ns (%.0f)",
                  r[1][1].memory_cycles - r[0][1].memory_cycles, bound);
    cora16_close(&c);
}

/* ---- a CSR row's workspace restarts its chain (model 56) ---- */

/* Model 63 (sim.h "Single iterations"): GCC 12 peels a PosSplit chunk
 * loop [0, min(c, rest)) of a few small positions completely -- each
 * position inline behind a compare and a branch, as the same loop with
 * `#pragma GCC unroll c` -- so on a calibrated core Cora SpMM F = 32 in
 * chunks of 2 simulates as the chunk loop annotated unroll 2 does, with
 * no loop set-up (model 44) a chunk; on a hand-written core (the rule off)
 * the serial chunk loop keeps its per-iteration overhead and differs.
 * Fails on model 62 (the calibrated serial chunks cost model 44's
 * set-up). */
Test(sim, a_small_chunk_loop_is_peeled_completely)
{
    loom_error err;
    loom_error_clear(&err);
    loom_dataset *ds;
    loom_schedule *sch;
    loom_target t;
    loom_program *prog = spmm_open("A=data/cora_adj.mtx", "F=32", &ds, &sch, &t);
    loom_sim_result r[2][2];
    for (int unrolled = 0; unrolled < 2; unrolled++) {
        int k = spmm_nonzero_loop(sch, prog), parts[2];
        cr_assert_eq(loom_pos_split(sch, k, "A", 2, -1, parts, &err), LOOM_OK, "%s", err.msg);
        if (unrolled)
            cr_assert_eq(loom_unroll(sch, parts[1], 2, &err), LOOM_OK, "%s", err.msg);
        spmm_row_sim_both(sch, ds, &t, r[unrolled]);
    }
    for (int cal = 0; cal < 2; cal++)
        cr_log_info("%s core: serial chunks %g cycles %g instructions, unrolled %g cycles %g instructions",
                    cal ? "calibrated" : "hand-written", r[0][cal].cycles, r[0][cal].instructions,
                    r[1][cal].cycles, r[1][cal].instructions);
    cr_expect_leq(fabs(r[0][1].instructions / r[1][1].instructions - 1), 1e-9,
                  "calibrated: serial chunks of 2 %g instructions, unrolled %g", r[0][1].instructions,
                  r[1][1].instructions);
    cr_expect_leq(fabs(r[0][1].cycles / r[1][1].cycles - 1), 1e-9, "calibrated: serial chunks %g cycles, unrolled %g",
                  r[0][1].cycles, r[1][1].cycles);
    cr_expect_gt(r[0][0].instructions, r[1][0].instructions * 1.01,
                 "hand-written: serial chunks %g instructions, unrolled %g", r[0][0].instructions,
                 r[1][0].instructions);
    cr_expect_eq(r[0][1].flops, r[1][1].flops);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* Model 98 (sim_exec.c exec_prefetch): a software prefetch brings no data to
 * a register -- it takes an issue slot and an address, not a load port's
 * data path.  SpMM on Cora at F = 16 (10,556 nonzeros, a row of B one line),
 * the nonzero loop prefetching 16 entries ahead or not: the prefetched
 * kernel loads one index more a nonzero (the column 16 ahead, for the
 * address), not its line too.  Counted as loads the prefetches bound
 * mbeacxc F = 128 on the Zen 4 host's two load ports (8 zmm loads and 8
 * prefetcht0 a nonzero against 8 FMAs: simulated 1.020-1.025x the kernel
 * without, measured 0.99-1.00x; Zen 4 has three address units for two
 * 256-bit load paths). */
Test(sim, a_prefetch_takes_no_load_port, .timeout = 120)
{
    cora16 c = cora16_open();
    loom_sim_result r[2][2]; /* [prefetch][calibrated] */
    cora16_prefetch(&c, 0, r[0]);
    cora16_prefetch(&c, 16, r[1]);
    for (int cal = 0; cal < 2; cal++) {
        cr_log_info("sim: Cora SpMM F = 16 (calibrated %d), plain / prefetched: %g / %g loads, %g / %g instructions",
                    cal, r[0][cal].loads, r[1][cal].loads, r[0][cal].instructions, r[1][cal].instructions);
        cr_expect_lt(r[1][cal].loads, r[0][cal].loads + 1.1 * 10556, "calibrated %d: %g loads prefetched, %g plain",
                     cal, r[1][cal].loads, r[0][cal].loads);
        cr_expect_gt(r[1][cal].instructions, r[0][cal].instructions + 2 * 10556,
                     "calibrated %d: %g instructions prefetched, %g plain", cal, r[1][cal].instructions,
                     r[0][cal].instructions);
    }
    cora16_close(&c);
}
