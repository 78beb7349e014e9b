/* Tests of the simulator's bandwidth terms (runtime/sim/sim_machine.h "Streamer",
 * "Level bandwidth", "Shared-level bandwidth", "Write-backs of a cold run";
 * models 18, 19, 21, 27, 42 and 86), each on a 4 MiB copy whose lines can
 * be counted by hand.  Since
 * model 42 the bandwidth terms count the lines a level serves the loads
 * (x's), not the stores' line fills (y's write-allocate), which the
 * lookup counters still include. */
#include <criterion/criterion.h>
#include <math.h>

#include "sim_fixture.h"

/* y = 2 x over 2^20 floats: the copy of the streamer and level-bandwidth tests */
static const char *COPY_4MIB = "param N = 1048576\ntensor x(N) dense\ntensor y(N) dense output\ny(i) = x(i) * 2.0\n";

/* Model 18 (sim_machine.h "Streamer"): y[i] = x[i] * 2 over 2^20 floats (4 MiB,
 * 65,536 lines and 1,024 pages each, past spr-2c's 2 MiB L2; the target is
 * cold), serial.  Without the streamer every line of x and y misses L2 on
 * its demand access: 2 x 65,536 misses.  With stream_lines 8 the lines
 * ahead of a stream are in L2 before they are asked for, within its page:
 * one demand miss a page (its first line, which the streamer may not
 * cross into) and the array's second line, which starts the stream: 2 x
 * 1,025.  The bytes from memory are the same lines, fetched ahead. */
Test(sim, streamer_fetches_ahead_into_l2)
{
    loom_target t = spr();
    kern k;
    load(&k, COPY_4MIB, NULL, NULL, 1);
    loom_sim_result off = sim(&k, &t);
    t.stream_lines = 8;
    loom_sim_result on = sim(&k, &t);
    cr_expect_float_eq(off.misses[1], 2.0 * 65536, 0.5, "L2 misses without the streamer: %g", off.misses[1]);
    cr_expect_float_eq(on.misses[1], 2.0 * 1025, 0.5, "L2 misses with it: %g", on.misses[1]);
    cr_expect_lt(fabs(on.dram_bytes / off.dram_bytes - 1), 0.02, "DRAM bytes %g against %g", on.dram_bytes,
                 off.dram_bytes);
    cr_expect_leq(on.latency_s, off.latency_s, "%g s against %g s", on.latency_s, off.latency_s);
    unload(&k);
}

/* Model 19 (sim_machine.h "Level bandwidth"): the 4 MiB copy above on spr-2c, serial,
 * with L2 given a bandwidth of 1 GB/s a core.  Every L2 lookup of a load
 * (65,536: x's L1 misses) moves a 64-byte line, so the run takes at least
 * 65,536 x 64 bytes / 1 GB/s = 4.2 ms; without the key it is far faster.
 * Model 42: y's 65,536 line fills are L2 lookups too, but not in the bound
 * (it would be 8.4 ms with them).  With a bandwidth too high to bind the
 * latency is the same as without it. */
Test(sim, level_bandwidth_bounds_the_core)
{
    loom_target t = spr();
    kern k;
    load(&k, COPY_4MIB, NULL, NULL, 1);
    loom_sim_result off = sim(&k, &t);
    t.caches[1].bandwidth = 1e9;
    loom_sim_result slow = sim(&k, &t);
    t.caches[1].bandwidth = 1e15;
    loom_sim_result fast = sim(&k, &t);
    double bound = 65536.0 * 64 / 1e9;
    cr_expect_float_eq(slow.accesses[1], 2.0 * 65536, 0.5, "L2 lookups %g", slow.accesses[1]);
    cr_expect_geq(slow.latency_s, bound * (1 - 1e-9), "%g s against the bound %g s", slow.latency_s, bound);
    cr_expect_lt(slow.latency_s, 1.5 * bound, "the stores' line fills left out: %g s against the bound %g s",
                 slow.latency_s, bound);
    cr_expect_lt(off.latency_s, bound / 2, "without the key %g s", off.latency_s);
    cr_expect_eq(fast.latency_s, off.latency_s, "a bound that does not bind: %g s against %g s", fast.latency_s,
                 off.latency_s);
    unload(&k);
}

/* Model 27 (sim_machine.h "Level bandwidth"): the level's time and the core's
 * other cycles are a 4-norm, not a max.  The 4 MiB copy above, serial, with
 * L2's bandwidth set so its loads' lines (x's 65,536) take exactly the
 * latency without the key: the run takes 2^(1/4) times as long.  With the
 * level at a quarter of the core's time it adds (1 + 4^-4)^(1/4) - 1,
 * under 0.1%. */
Test(sim, level_bandwidth_contends_with_the_core)
{
    loom_target t = spr();
    kern k;
    load(&k, COPY_4MIB, NULL, NULL, 1);
    loom_sim_result off = sim(&k, &t);
    double lines = 65536;
    t.caches[1].bandwidth = lines * 64 / off.latency_s;
    loom_sim_result even = sim(&k, &t);
    cr_expect_float_eq(even.accesses[1], 2 * lines, 0.5, "L2 lookups (y's line fills among them) %g",
                       even.accesses[1]);
    cr_expect_lt(fabs(even.latency_s / off.latency_s - pow(2.0, 0.25)), 0.01, "%g s against %g s without the key",
                 even.latency_s, off.latency_s);
    t.caches[1].bandwidth = 4 * lines * 64 / off.latency_s;
    loom_sim_result quarter = sim(&k, &t);
    cr_expect_lt(quarter.latency_s / off.latency_s - 1, 1e-3, "%g s against %g s", quarter.latency_s, off.latency_s);
    cr_expect_gt(quarter.latency_s, off.latency_s, "a norm, not a max: %g s against %g s", quarter.latency_s,
                 off.latency_s);
    unload(&k);
}

/* Model 21 (sim_machine.h "Shared-level bandwidth"): the 4 MiB copy above on
 * spr-2c, serial, with L3 (its first shared level) given a bandwidth.  The
 * lines L3 serves the core's loads -- x's lookups, 65,536 (its L2 misses),
 * or with the streamer on its lookups plus the fetched lines a load used,
 * the same lines; not y's line fills (model 42) -- move 64 bytes each, and
 * that time is combined with the core's other cycles as hypot(core,
 * shared): with the shared time equal to the latency without the key the
 * run takes sqrt(2) times as long; with a bandwidth too high to matter,
 * the same. */
Test(sim, shared_level_bandwidth_is_a_norm)
{
    loom_target t = spr();
    cr_assert(t.caches[2].shared && !t.caches[1].shared, "spr-2c's L3 is its first shared level");
    kern k;
    load(&k, COPY_4MIB, NULL, NULL, 1);
    loom_sim_result off = sim(&k, &t);
    double lines = 65536, bw = lines * 64 / off.latency_s;
    t.caches[2].bandwidth = bw;
    loom_sim_result on = sim(&k, &t);
    cr_expect_float_eq(on.accesses[2], 2 * lines, 0.5, "L3 lookups (y's line fills among them) %g", on.accesses[2]);
    cr_expect_lt(fabs(on.latency_s / off.latency_s - sqrt(2.0)), 0.01, "%g s against %g s without the key",
                 on.latency_s, off.latency_s);
    t.stream_lines = 8; /* most lines now come in ahead of their demand access */
    loom_sim_result ahead = sim(&k, &t);
    cr_expect_lt(ahead.accesses[2], 2 * lines / 10, "L3 lookups with the streamer %g", ahead.accesses[2]);
    cr_expect_geq(ahead.latency_s, 0.98 * lines * 64 / bw, "the fetched lines cross the port too: %g s",
                  ahead.latency_s);
    cr_expect_lt(ahead.latency_s, 1.6 * off.latency_s, "the lines fetched ahead of y's stores do not: %g s against %g s",
                 ahead.latency_s, off.latency_s);
    t.stream_lines = 0;
    t.caches[2].bandwidth = 1e18;
    loom_sim_result fast = sim(&k, &t);
    cr_expect_lt(fabs(fast.latency_s / off.latency_s - 1), 1e-9, "%g s against %g s", fast.latency_s, off.latency_s);
    unload(&k);
}

/* SpMM at F = 128 on the 500-node Cora subgraph, serial, on t with its
 * caches cut to 32 KiB / 64 KiB / 128 KiB and cold (B is 256 KB, so its
 * rows of 8 lines come from memory), simulated without the streamer (*off)
 * and with stream_lines 8 (*on): the kernel of the two tests below. */
static void cold_rows_with_and_without_streamer(loom_target t, loom_sim_result *off, loom_sim_result *on)
{
    t.caches[0].size = 32 << 10;
    t.caches[1].size = 64 << 10;
    t.caches[2].size = 128 << 10;
    t.warm_caches = 0;
    kern k;
    load(&k, "param F = 128\ntensor A(N, K) csr\ntensor B(K, F) dense\ntensor C(N, F) dense output\n"
             "C(i, f) += A(i, k) * B(k, f)\n",
         "A", "data/cora500_adj.mtx", 1);
    t.stream_lines = 0;
    *off = sim(&k, &t);
    t.stream_lines = 8;
    *on = sim(&k, &t);
    unload(&k);
}

/* Model 29 (sim_machine.h "Streamer"): a line the streamer brings from memory costs
 * its DRAM bytes when a demand access uses it.  The cold SpMM above on
 * spr-2c: after a gathered row's second line the streamer runs 8 lines
 * ahead, past the row's end into rows the next nonzeros rarely want.
 * Counting those at once (model 18) read 1.12x the DRAM bytes of the same
 * kernel without the streamer; counted on use the streamer moves the same
 * lines earlier: within 3%. */
Test(sim, streamer_lines_from_memory_cost_dram_when_used)
{
    loom_sim_result off, on;
    cold_rows_with_and_without_streamer(spr(), &off, &on);
    cr_log_info("DRAM bytes with the streamer %g, without %g (%.3fx)", on.dram_bytes, off.dram_bytes,
                on.dram_bytes / off.dram_bytes);
    cr_expect_lt(fabs(on.dram_bytes / off.dram_bytes - 1), 0.03, "DRAM bytes %g against %g", on.dram_bytes,
                 off.dram_bytes);
}

/* Model 43 (sim_machine.h "Streamer"): a line the streamer brought from memory,
 * loaded before its site's run of sequential lines reaches the streamer's
 * look-ahead, costs LOOM_SIM_STREAMER_MEMORY_LINE_STALL of a memory miss's
 * stall.  The cold SpMM above with memory's bandwidth too high to bind, so
 * the memory term is the misses' stall.  Without the streamer a row's first
 * three lines stall and the rest are a trained stream (model 7); with it
 * the row's lines from the third on come from the streamer, 0.7 of a miss
 * each: the memory term is larger with the streamer (1.46x here), where
 * before model 43 the streamer's lines were free and took it to 0.39x.  On
 * the CPU a row read at once does not wait less for being fetched ahead:
 * bench/bench_row_gather (Zen 5) read a row of 8 lines in 5.4-5.7 gathered
 * elements' time, 4 lines in 3.0-3.1. */
Test(sim, streamer_lines_from_memory_still_stall_a_row)
{
    loom_target t = spr();
    t.core_bandwidth = t.mem_bandwidth = 1e15;
    loom_sim_result off, on;
    cold_rows_with_and_without_streamer(t, &off, &on);
    cr_log_info("memory cycles with the streamer %g, without %g (%.3fx)", on.memory_cycles, off.memory_cycles,
                on.memory_cycles / off.memory_cycles);
    cr_expect_gt(on.memory_cycles, off.memory_cycles,
                 "the streamer's lines from memory are not free: %g cycles with it, %g without", on.memory_cycles,
                 off.memory_cycles);
}

/* Model 49 (sim_machine.h "Stride prefetch"): y(j) += x(i, j) over a 2,048 x 528
 * x (4.3 MiB, a row 2,112 bytes: 33 lines), serial, loops reordered j
 * outside i: each j walks down x's column, one line every 33 lines -- a
 * constant stride no adjacent-line stream rule follows, and its 2,048
 * lines (128 KiB) do not stay in L1 from one column to the next.  With
 * stride_prefetch_lines 64 every miss of a walk after its first two (they
 * set the stride) is prefetched: no stall.  The misses are the same either
 * way; only the stall (memory cycles) goes, and with a limit of 32 lines,
 * short of the stride, nothing changes. */
/* y(j) += x(i, j) for the workload text, loops reordered j outside i (each
 * j walks down x's column), simulated on t; the run is repeated and must
 * give the same cycles (the simulator is deterministic). */
static loom_sim_result walk_columns(const char *name, const char *text, loom_target t)
{
    loom_program *prog;
    loom_dataset *ds;
    loom_error err;
    int b, loops[2], n = 2;
    loom_schedule *s = naive_dense(name, text, "y", &prog, &ds, &b, loops, &n);
    cr_assert_eq(n, 2);
    int order[2] = {loops[1], loops[0]};
    cr_assert_eq(loom_reorder(s, order, 2, &err), LOOM_OK, "%s", err.msg);
    lir_func *f;
    cr_assert_eq(loom_lower(s, &f, &err), LOOM_OK, "%s", err.msg);
    loom_sim_result r, again;
    cr_assert_eq(loom_sim_run(f, ds, &t, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_sim_run(f, ds, &t, &again, &err), LOOM_OK, "%s", err.msg);
    cr_expect_eq(again.cycles, r.cycles, "not deterministic: %g then %g cycles", r.cycles, again.cycles);
    loom_lir_func_free(f);
    free(s);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return r;
}

static loom_sim_result column_walk(int stride_prefetch_lines)
{
    loom_target t = spr();
    t.stride_prefetch_lines = stride_prefetch_lines;
    return walk_columns("column.loom",
                        "param N = 2048\nparam M = 528\ntensor x(N, M) dense\n"
                        "tensor y(M) dense output\ny(j) += x(i, j)\n",
                        t);
}

Test(sim, a_constant_stride_is_prefetched)
{
    loom_sim_result off = column_walk(0), short_ = column_walk(32), on = column_walk(64);
    cr_expect_gt(off.misses[0], 528.0 * 2048 * 0.9, "L1 misses %g: a miss a column's line", off.misses[0]);
    cr_expect_float_eq(on.misses[0], off.misses[0], 0.5, "L1 misses %g against %g", on.misses[0], off.misses[0]);
    cr_expect_float_eq(short_.memory_cycles, off.memory_cycles, 1e-9 * off.memory_cycles, "limit 32: %g cycles, %g",
                       short_.memory_cycles, off.memory_cycles);
    cr_expect_lt(on.memory_cycles, 0.1 * off.memory_cycles, "memory cycles %g against %g", on.memory_cycles,
                 off.memory_cycles);
    cr_expect_lt(on.latency_s, off.latency_s, "%g s against %g s", on.latency_s, off.latency_s);
}

/* Model 66 (sim_machine.h "Physical indexing"): y(j) += x(i, j) over a
 * 32 x 32,768 x (4 MiB, a row 128 KiB: the 2 MiB 16-way L2's 2,048 sets
 * times a line), loops reordered j outside i: each j walks down x's
 * column, 32 lines a row apart, and the next 15 columns walk the same
 * lines.  Indexed by the virtual address the 32 lines share one L2 set of
 * 16 ways and every walk misses them all again; with page_bytes 4096 the
 * L2 takes the set's upper bits from a hash of the line's page (its
 * physical frame), the 32 lines spread over up to 32 sets and stay in L2
 * for the next columns: only the first touch of a line misses.  L1 (48
 * KiB, 64 sets: one page) is indexed within the page either way and
 * misses alike. */
static loom_sim_result page_walk(int page_bytes)
{
    loom_target t = spr();
    t.page_bytes = page_bytes;
    loom_sim_result r = walk_columns("pages.loom",
                                     "param N = 32\nparam M = 32768\ntensor x(N, M) dense\n"
                                     "tensor y(M) dense output\ny(j) += x(i, j)\n",
                                     t);
    cr_expect_eq(r.sampled, 0, "sampled: the walks' reuse is the point");
    return r;
}

Test(sim, a_level_wider_than_a_page_is_physically_indexed)
{
    loom_sim_result virt = page_walk(0), phys = page_walk(4096);
    cr_log_info("L1 misses %g / %g, L2 misses %g / %g (virtual / physical)", virt.misses[0], phys.misses[0],
                virt.misses[1], phys.misses[1]);
    cr_expect_gt(virt.misses[1], 0.9 * 32 * 32768, "virtually indexed: L2 misses %g, a miss a column's line",
                 virt.misses[1]);
    cr_expect_lt(phys.misses[1], 0.2 * virt.misses[1], "physically indexed: L2 misses %g against %g", phys.misses[1],
                 virt.misses[1]);
    cr_expect_geq(phys.misses[1], 32 * 32768 / 16, "L2 misses %g: fewer than the lines' first touches",
                  phys.misses[1]);
    cr_expect_float_eq(phys.misses[0], virt.misses[0], 0.01 * virt.misses[0], "L1 misses %g against %g",
                       phys.misses[0], virt.misses[0]);
    cr_expect_lt(phys.latency_s, virt.latency_s, "%g s against %g s", phys.latency_s, virt.latency_s);
}

/* Model 86 (sim_machine.h "Write-backs of a cold run"): the 4 MiB copy, serial,
 * on spr-2c as loom calibrate writes it (warm_caches) with an 8 MiB last
 * level.  x and y (8 MiB) do not fit in half of it, so the run starts
 * cold: x's 65,536 lines come from memory, y's too (its stores'
 * write-allocate), and y's 4 MiB go back to memory once a run, though
 * most of its dirty lines are still in the L3 when the kernel ends: 3 x
 * 4 MiB of DRAM bytes by hand.  With a 32 MiB last level the data fits,
 * the run starts warm and nothing goes to memory. */
Test(sim, a_cold_run_writes_back_what_it_stored)
{
    loom_target t = spr();
    t.warm_caches = 1;
    t.caches[2].size = 8 << 20;
    t.caches[2].assoc = 16;
    kern k;
    load(&k, COPY_4MIB, NULL, NULL, 1);
    loom_sim_result cold = sim(&k, &t);
    t.caches[2].size = 32 << 20;
    loom_sim_result warm = sim(&k, &t);
    double mib4 = 4.0 * (1 << 20);
    cr_log_info("cold: %g DRAM bytes; warm: %g", cold.dram_bytes, warm.dram_bytes);
    cr_expect_lt(fabs(cold.dram_bytes / (3 * mib4) - 1), 0.01, "cold: %g DRAM bytes, not 3 x 4 MiB", cold.dram_bytes);
    cr_expect_lt(warm.dram_bytes, 0.01 * mib4, "warm: %g DRAM bytes", warm.dram_bytes);
    unload(&k);
}
