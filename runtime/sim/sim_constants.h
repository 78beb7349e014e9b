/* loom: the simulator's fitted constants and its model version (sim.h
 * includes this file).  Each constant says what it stands for, in which
 * unit, and where it was measured or chosen; the sections it names ("Latency
 * chain", "Independent chains", ...) are sim.h's description of the model.
 * Pure macros: no declarations. */
#ifndef LOOM_SIM_CONSTANTS_H
#define LOOM_SIM_CONSTANTS_H

/* The share of a data-dependent branch the simulator cannot predict (it
 * computes no float value) charged as mispredicted: "Unswitched selects". */
#define LOOM_SIM_SELECT_MISS_RATE 0.5
/* Cycles a load waits for the store it reads (store-to-load forwarding)
 * in an accumulation through memory: "Latency chain". */
#define LOOM_SIM_STORE_FORWARD_CYCLES 3.0
/* Accumulations a store site remembers to find independent chains:
 * "Latency chain" (model 14).  16 covers the micro-kernel row counts of
 * the GEMM and dense modules (<= 13); an element last accumulated further
 * back adds at most FP_LATENCY / 16, and nothing here. */
#define LOOM_SIM_RMW_HISTORY 16
/* Cycles a spilled accumulator takes per update: the FMA's latency and the
 * reload of the vector it just stored (store-to-load forwarding), read from
 * GEMM 512's 8 x 16 AVX2 tile on Zen 4 (3 accumulators spilled: 12.5
 * cycles a k where its 16 FMAs take 8).  A register tile whose FMAs per
 * update take fewer cycles spills visibly: "Register-resident workspaces"
 * (model 13). */
#define LOOM_SIM_SPILL_ROUND_TRIP_CYCLES 12.0
/* Of a memory miss's stall, what a line the streamer brought from memory
 * costs when a load uses it: "Streamer" (model 43).  bench/bench_row_gather
 * (Zen 5, one thread, random rows from 256 MiB): a row of 8 lines took 5.4-5.7
 * times a gathered element's time, a row of 4 lines 3.0-3.1 times -- 0.68-0.75
 * of an element's miss a line; the element's is the calibrated miss cost. */
#define LOOM_SIM_STREAMER_MEMORY_LINE_STALL 0.7
/* Cycles each update of a spilled vector of a register tile costs beyond
 * its load and store, where the tile's FMAs per update outlast the round
 * trip and cc keeps the rest in registers (model 33, "Register-resident
 * workspaces"): read from GEMM 512's micro-kernels of 8, 9 and 10 rows by
 * 64 columns on Zen 5 (AVX-512, 2 threads), which GCC 12 spills 5, 9 and 13
 * zmm of and which ran 19.3, 23.2 and 33 cycles a k where their FMAs take
 * 16, 18 and 20: 0.66, 0.58 and 1.0 cycles a spilled update.  Scored on the
 * campaign's 128 re-measured records, 0.6 gave Spearman 0.69 and 1.0-3.0
 * gave 0.80-0.82.  Model 78 issues them beside the instructions (sim_cycles.c):
 * on Zen 4 (2026-12-06) 0 / 0.5 / 1 / 2 / 3 scored GEMM and GCN2's eight
 * cells 0.848 / 0.851 / 0.856 / 0.858 / 0.859; 1.0 stays, Zen 5's figure. */
#define LOOM_SIM_SPILL_UPDATE_CYCLES 1.0
/* Model 97 (sim_cycles.c core_terms): a register tile's spilled vectors are
 * chains side by side through memory, each update an FMA and a store-to-load
 * forward of the vector: bench/bench_spill_tile's round trip, Zen 4
 * (2026-12-07): 16.1 cycles for a zmm, 14.0 for a ymm (12.9 for an xmm).
 * Their cycles contend with the core's other bounds as a
 * LOOM_SIM_SPILL_CHAIN_NORM-norm: GEMM 512's 8 x 64 AVX-512 tile (5 zmm
 * spilled) took 1.007-1.016x the 8 x 32 tile's time a FMA in L1 on Zen 4,
 * where its 32 FMAs a k take 32 cycles (the 4-norm of 32 and 16: 1.015x),
 * and 19.3 cycles a k on Zen 5, whose two pipes take 16 (the 4-norm of 16
 * and 16: 19.0). */
#define LOOM_SIM_SPILL_CHAIN_CYCLES_512 16.0
#define LOOM_SIM_SPILL_CHAIN_CYCLES_256 14.0
#define LOOM_SIM_SPILL_CHAIN_NORM 4.0
/* Model 81 (sim_impl.h loom__sim_spill_excess): a register tile spilling more
 * vectors than this pays LOOM_SIM_SPILL_EXCESS_CYCLES x (spilled - this)^2
 * cycles a k step after its other work.  GCC 12's assembly of GEMM 512's
 * 9-16 row x 64 column AVX-512 tiles spills 9-37 zmm (need - 32, as model 33
 * counts); on Zen 4 (2026-12-06) they ran 5, 13, 26, 32, 59, 114, 130 and
 * 126 cycles a k past their FMAs at 9, 13, 17, 21, 25, 29, 33 and 37
 * spills, on Zen 5 3.3, 5.2 and 13 at 5, 9 and 13 -- growing with the
 * square, not the count, while model 78's issue slots hide the first few.
 * 0.15 and 0.30 score alike on the 32 cells (GEMM seed-3 AVX-512 0.800 ->
 * 0.819 / 0.820); 0.15 keeps bench_attention's unfused campaigns where
 * model 77 had them (0.10 / 0.28, 0.24 / 0.04 lower on model 78), whose
 * 13- and 15-row tiles measured slower than the 8-row one. */
#define LOOM_SIM_SPILL_FREE_VECTORS 8
#define LOOM_SIM_SPILL_EXCESS_CYCLES 0.15
/* Vector registers a register tile needs beside its accumulators and the
 * loads its unrolled copies share: the one each row's broadcast of A's
 * element goes through (vbroadcastss; GCC 12's assembly).  The Zen 4 8 x 64
 * tile of "Register-resident workspaces" needs 32 + 4 + 1 and spills 5; on
 * Emerald Rapids' AVX2 the 7 x 16 tile (14 + 2 + 1 > 16) measured 1.31x the
 * 6 x 16 one (2.23 ms against 1.70, GEMM 512, 2 threads), which model 16
 * counted as fitting and simulated 0.95x (model 17). */
#define LOOM_SIM_TILE_TEMP_REGISTERS 1
/* Model 71 (sim_regs.c loom__sim_tile_pressure): the registers GCC 12's SLP
 * vectorizer takes to pack the narrow pieces (model 39) of a register tile's
 * neighbouring rows -- the shuffled multiplicands and W's pieces it lines up
 * beside them.  Its assembly of GCN2 Cora's 4-row x 7-class T2 tile on AVX2
 * (Zen 5, 2026-12-06): 3 stack round trips an f step where the pieces'
 * count (12 + 1 + 1) left 2 of 16 registers free, so the packing needs at
 * least 3; 3, 4 and 5 score alike on the 32 fidelity cells, 6 costs GCN2
 * seed-4 AVX2 0.03 (docs/simulator.md "Model 71"). */
#define LOOM_SIM_SLP_TEMP_REGISTERS 3
/* The deepest loop nest model 32 follows ("Hoisted copies"); integer work
 * deeper is charged per execution. */
#define LOOM_SIM_HOIST_DEPTH 32
/* The most iterations (a vector loop's: vector iterations) of a loop of
 * literal bounds that cc unrolls completely: GCC's max-completely-peel-times
 * default (GCC 12 manual, "Optimize Options", --param), as the target's
 * peel_times that loom calibrate writes.  Model 25 ("Register-resident
 * workspaces") keeps a workspace indexed by such a loop in registers. */
#define LOOM_SIM_CC_PEEL_TIMES 16
/* The instructions within which a float local's restarted chains run side
 * by side: "Independent chains" (model 26).  A fit, not held out: chosen
 * from {32, 64, 96, 128, 256} on issue 29's re-measured SDDMM records
 * (Emerald Rapids, both ISAs; 32 changes nothing, since a nonzero's
 * segment is ~52 instructions), then checked on the CPU suite's own
 * campaigns (docs/simulator.md "Model 26").  It is far below any of these
 * cores' reorder buffers (256-512 entries): about two of SDDMM's nonzeros
 * overlap, not ten. */
#define LOOM_SIM_CHAIN_OVERLAP_INSTRUCTIONS 64.0
/* Model 34 ("Independent chains"; targets with issue_chain_norm, which
 * loom calibrate writes): the instructions within which a float local's
 * restarted chains run side by side, a mispredicted branch not ending the
 * group -- a reorder buffer's size (Zen 5: 448 entries, Golden Cove: 512),
 * on a target without a reorder_window (model 82: calibrated since format
 * 18, runtime/target/calibrate.h loom_calibrate_reorder_window).
 * On the Zen 5 host's re-measured SDDMM records (both ISAs) every window
 * from 384 up ranks the same (Spearman 0.80-0.82); 64 with the
 * mispredict cut, model 26, ranked 0.756 / 0.766 and simulated AVX2's
 * records 2.42x their time (docs/simulator.md "Model 34"). */
#define LOOM_SIM_REORDER_WINDOW_INSTRUCTIONS 512.0
/* Model 51 (sim.h "Exposed misses"; targets with issue_chain_norm, which
 * loom calibrate writes): the instructions within which a core's stalled
 * demand misses are in flight together, and whose drain time (this over
 * the issue width) hides part of each miss's latency.  A fit, not held
 * out: chosen from {128, 192, 256, 448, 512} on the 32 cells of issue 29's
 * fresh seed-3/4 record sets (Zen 5, both ISAs; mean Spearman 0.826,
 * 0.837, 0.838, 0.836, 0.835; docs/simulator.md "Model 51") -- below the
 * 448-entry reorder buffer, as the first-order models' effective window
 * is (Karkhanis and Smith, "A First-Order Superscalar Processor Model",
 * ISCA 2004). */
#define LOOM_SIM_MISS_WINDOW_INSTRUCTIONS 256.0
/* The fraction of a core's memory term its other work overlaps when the
 * term is its demand misses' stall rather than its DRAM bytes at the
 * core's bandwidth (sim.h "Cycles", model 61; on targets with
 * issue_chain_norm, which loom calibrate writes; the target's `overlap`,
 * 0.5, stays for the bandwidth-bound term and on every hand-written
 * target).  A miss stall is a load the reorder window waits on: the work
 * behind it overlaps only as far as the window reaches (the interval
 * model's long-miss penalty: Karkhanis and Smith, ISCA 2004; Eyerman,
 * Eeckhout, Karkhanis and Smith, ACM TOCS 2009), where a stream of DRAM
 * lines the hardware prefetches runs beside the whole loop.  A fit, held
 * out: chosen from {0, 0.1, 0.25, 0.35} (and 0.5, model 60) on issue 29's
 * four record sets re-measured on Zen 5 (the fifty-seventh session's
 * second re-measurement; mean Spearman 0.8610 / 0.8619 / 0.8630 / 0.8627
 * against 0.8604; 0.25: GEMM 512 on AVX-512 0.789 / 0.784 -> 0.801 /
 * 0.805, SDDMM seed-4 AVX-512 0.715 -> 0.749, Cora AVX2 +0.01-0.02); the
 * same overlap for both terms scored lower (0.3: 0.8616 with Cora down,
 * 0.15: 0.8597, 0: 0.8574), because non-temporal stores' DRAM-bound
 * copy-out then costs too much.  On the other re-measurement of the same
 * records, which it was not chosen on: 0.8508 -> 0.8530 over the 32 cells
 * (docs/simulator.md "Model 61"). */
#define LOOM_SIM_STALL_OVERLAP 0.25
/* The norm p that combines a private level's bandwidth time with a core's
 * other cycles: "Level bandwidth" (model 27).  A fit, not held out: chosen
 * from {2, 3, 4, 6, 8, 12} (and the max, model 19) on issue 29's
 * re-measured records of both ISAs (Emerald Rapids).  mbeacxc F = 128 on
 * AVX-512 ranked 0.687 under the max and 0.810 / 0.810 / 0.811 / 0.814 /
 * 0.799 / 0.769 at 2 / 3 / 4 / 6 / 8 / 12; GEMM 512 on AVX-512, whose
 * register tiles stream B from L2 at about their issue rate, fell from
 * 0.884 to 0.735 at p = 2 and 0.844 at 3, and holds 0.880 at 4.  The CPU
 * suite's own campaigns do not move (docs/simulator.md "Model 27"). */
#define LOOM_SIM_LEVEL_BANDWIDTH_NORM 4.0
/* What an L1 miss on a line of a page another core also stores to in the
 * same parallel region costs, in misses of the first shared level (its
 * stall, miss_cost x mlp or its latency): "Shared pages" (model 22).  The
 * line moves between the cores' private caches -- fetched from the other
 * core's copy and invalidated there on the next store, about twice an L3
 * hit and once more -- and the L2 streamer, which runs ahead within a
 * 4 KiB page, brings in the other core's lines too.  Chosen on GEMM 512's
 * re-measured records (Emerald Rapids, both ISAs; docs/simulator.md "Model
 * 22"): Spearman 0.513 / 0.719 / 0.791 / 0.838 / 0.869 / 0.881 at 0 / 1 /
 * 2 / 3 / 5 / 8 on AVX-512, 0.885 / 0.910 / 0.916 / 0.916 / 0.915 / 0.903
 * on AVX2 -- a fit, not held out; no other case moved. */
#define LOOM_SIM_PAGE_TRANSFER_MISSES 3.0
/* Loop set-up the counted instructions leave out (model 44, sim.h "Loop
 * set-up"; only on targets with issue_chain_norm, which loom calibrate
 * writes).  Counted from GCC 12's assembly (-O3 -march=native, Zen 5) of
 * Cora SpMM F = 32 with the nonzero loop split by PosSplit into chunks of
 * 16 (issue 29's seed-1 AVX-512 records, 2026-12-03): against the unsplit
 * loop, 34 more instructions a row, of which the simulator counted 9 and 9
 * are GCC's register pressure (5 moves between general and vector
 * registers, 4 for the flags of a workspace kept in registers).  The other
 * 16: each entry of a loop of run-time bounds initialises its induction
 * variable and tests its trip (2); the entry of such a loop whose body
 * holds one sets up the pointers and counts cc strength-reduces the inner
 * loop's accesses to (8: a shift, an add and a move each for the index and
 * value arrays, their zeroed counters); each iteration of it advances them
 * (3: two pointer adds and the remaining count).  Measured: the split ran
 * 1.18x the unsplit loop (8.7 -> 10.3 us), simulated 1.03x before. */
/* sim.h "Vectors" (model 53): the integer instructions of cc's trip tests
 * before an auto-vectorized float sum of run-time trip -- the empty test,
 * the full vector's, the epilogue's, the remainder's count: 10 more than
 * the scalar loop's in GCC 12's AVX-512 code for Y = A T's class sum
 * (rows of 3 nonzeros, no vector: measured 1.19x (AVX2) and 1.5x
 * (AVX-512) the -fno-tree-vectorize build on the Zen 5 host). */
#define LOOM_SIM_RT_VECTOR_SETUP_IOPS 10.0
#define LOOM_SIM_LOOP_ENTRY_IOPS 2.0
#define LOOM_SIM_NEST_ENTRY_IOPS 8.0
#define LOOM_SIM_NEST_ITER_IOPS 3.0
/* Software-prefetched lines from the shared levels or memory a core keeps
 * track of until their demand access (model 50, sim.h "Late prefetches";
 * model 91, sim_machine.h pf_arrival): a direct-mapped table of 2^this
 * many slots; a line whose slot another takes is forgotten (its demand
 * access is charged by the level that serves it: no late wait, no model
 * 91).  Model 91 made it
 * 16,384 from 1,024: prefetching 64 nonzeros ahead keeps 512 lines of
 * B's rows (F = 128) in flight, and 1,024 slots lost about a third of
 * them to collisions (16,384: about 3%; 384 KiB a core). */
#define LOOM_SIM_PREFETCH_SLOT_BITS 14
#define LOOM_SIM_PREFETCH_SLOTS (1 << LOOM_SIM_PREFETCH_SLOT_BITS)

/* The simulator's model version: bump it with any change that changes a
 * simulated result (the pre-training's cache of simulated latencies,
 * search/tune/tune_pretrain.c, keys its files by it). */
/* Branch memory (sim.h, model 58): the calibration loop's branches per
 * miss.  Each random bit of loom calibrate's loop is one branch that
 * misses half the time beside the loop's own branch, and its points are
 * keyed by all of its branches (2 a bit, calibrate.c map_model), so a core
 * that misses m times over the whole kernel is looked up at 4 m.  Scored on
 * issue 29's 32 cells (Zen 5, the fifty-seventh session's figures): 2 m,
 * 4 m and 8 m gave mean Spearman 0.8518-0.8552 over the first 25-26 cells,
 * within each other's noise; 4 m is the one the calibration implies. */
#define LOOM_SIM_BRANCH_MEMORY_KEY 4.0
/* A chunk loop cc peels completely (model 63, sim.h "Single iterations";
 * only on targets with issue_chain_norm, which loom calibrate writes): a
 * serial loop [0, min(c, rest)) -- a PosSplit chunk -- of at most
 * LOOM_SIM_PEEL_MAX_POSITIONS positions whose c iterations issue at most
 * LOOM_SIM_PEEL_MAX_INSTRUCTIONS instructions (sim.c peel_size: 2 a
 * statement, a vector loop's vectors; model 101: a vector reduction's
 * tree too).  Read
 * from GCC 12's assembly (-O3 -march=native, Zen 5, issue 29's SpMM records,
 * docs/simulator.md "Fresh campaigns on model 62"): it peels the chunk --
 * each position inline behind a compare and a branch, loads at constant
 * offsets -- for F = 32 AVX2 (8 instructions a position) at c = 2, 4 and 8,
 * F = 32 AVX-512 (6) at 4 and 8 but not 16, F = 128 AVX-512 (12) at 4 but
 * not 8, F = 128 AVX2 (20) not at 4, and an SDDMM chunk with its tree
 * reduction not at 4 (at 2 it is copies: model 101, below). */
#define LOOM_SIM_PEEL_MAX_POSITIONS 8
#define LOOM_SIM_PEEL_MAX_INSTRUCTIONS 64.0
/* Model 101 (sim_chunk.c peel_size): in a PosSplit chunk (model 63) a
 * vector reduction over a literal trip counts its vectors and this many
 * instructions a halving of its tree (an extract or permute and an add),
 * where it counted too many to peel.  Read from GCC 12's assembly (-O3
 * -march=native, Zen 4) of issue 29's SDDMM Cora D = 64 records: a chunk
 * of 2 positions is two inline copies behind a compare (AVX-512: 4 FMAs,
 * 4 multiplies and a 9-instruction horizontal sum a position; AVX2: 8, 8
 * and 7), a chunk of 4 stays a loop on both.  With 2 the 64-lane dot
 * product counts 4 + 8 (AVX-512) and 8 + 6 (AVX2), its position 18 or 20:
 * 2 copies within LOOM_SIM_PEEL_MAX_INSTRUCTIONS, 4 not. */
#define LOOM_SIM_PEEL_TREE_STEP 2.0
/* Model 77 (sim_machine.h touch_line; only on targets with issue_chain_norm,
 * which loom calibrate writes): a miss next to the site's previous one that
 * a private level past L1 serves (L2) is free -- model 7's stream -- only as
 * the second line of an aligned 128-byte pair while the site's run is
 * shorter than LOOM_SIM_PAIR_RUN_LINES lines; the even line of each further
 * pair (its first, in an ascending run) stalls as a miss at that level.
 * A software prefetch of the range (model 45) still waits for its first
 * line only: it asks for every line at once.  Why (issue 29, Zen 4, the sixty-ninth session's record sets): SDDMM
 * Cora D = 64 reads a 256-byte row of K a nonzero, two pairs, from L2; on
 * AVX2 the nonzero loop prefetching 4 or 16 entries ahead measured
 * 0.78-0.80x the same schedules without (20.1-20.6 against 24.8-25.9 us,
 * both seeds), simulated 0.96-1.09x with a row's lines after its first free
 * (Spearman 0.591 / 0.520, the simulator's favourite 1.19x / 1.18x the
 * best).  Cora SpMM F = 32's rows are one pair: their prefetch measured
 * 1.3x slower on AVX-512 (13.4 against 10.3 us), and charging every line
 * of a short run, not pairs, lost Cora 0.05-0.08.  A fit, not held out:
 * runs below 4, 8, 16 and unbounded on the 32 cells gave mean Spearman
 * 0.8275, 0.8292, 0.8293 and 0.8251 (unbounded charges L2 bandwidth's
 * sequential lines twice: mbeacxc and GEMM swing by 0.1-0.2) against
 * model 76's 0.8176; docs/simulator.md "Model 77".
 * Model 102 (sim_exec.c exec_prefetch): a prefetched range of fewer lines
 * than this waits for each pair too.  Issue 29, Zen 4, SDDMM Cora D = 64's
 * held-out AVX-512 records: K's rows prefetched 4 or 16 ahead measured
 * 1.08-1.10x the kernel without, simulated 0.99x with the first line alone
 * waiting; charging every range's pairs lost mbeacxc F = 128 (8-line rows)
 * 0.05-0.36 -- its prefetch measured 0.94-1.00x; docs/simulator.md "Model 102".
 * Model 103 (sim_prefetch.c): not a range that continues its prefetch's
 * constant stride, which the stride prefetcher follows (model 49). */
#define LOOM_SIM_PAIR_RUN_LINES 8

/* Model 95 (sim_machine.h copy_stream): the copies of a completely unrolled
 * loop whose misses the stride prefetcher follows apart -- GCC's completely
 * unrolled copies number at most its max-completely-peel-times, 16 (the
 * target's peel_times); further copies share these slots modulo. */
#define LOOM_SIM_COPY_SITES 16

/* Model 89 (sim_machine.h note_load; targets with issue_chain_norm, which
 * loom calibrate writes): model 84's wait -- a chain segment's first
 * accumulation waiting for the slowest load it reads -- counts the serving
 * level's latency past L1's times LOOM_SIM_LOAD_WAIT_SCALE_512 on targets
 * of 512-bit vectors, LOOM_SIM_LOAD_WAIT_SCALE_256 on narrower ones; an L1
 * hit still waits L1's latency.  Why (issue 29, Zen 4, the sixty-ninth
 * session's record sets, one-decision pairs): SDDMM Cora D = 64's K rows
 * (L2, L3) prefetched 4 or 16 nonzeros ahead measured 1.004-1.056x the
 * kernel without on AVX-512 and 0.85-0.86x on AVX2, both seeds; model 84
 * simulated 0.96-0.97x and 0.92x.  The records' truth is each schedule's
 * fastest run (the least of ten interleaved rounds); `loom run`'s median
 * put the AVX-512 pair at 0.94x, and a standalone copy of both kernels on
 * Cora (the fastest of 300 runs) at 0.89-0.94x on both widths: what
 * separates the widths in the records is not established.  Each scale is the one whose
 * simulated pairs come nearest the measured ones: 512-bit scales 0, 0.25,
 * 0.5 and 1 simulated the pairs 0.996, 0.998, 0.990-0.994 and 0.964-0.968x
 * (the sixteen AVX-512 cells' mean Spearman 0.8667, 0.8678, 0.8665 and
 * 0.8628); 256-bit 1, 1.5, 2 and 3 0.92, 0.87, 0.82 and 0.71x (the AVX2
 * cells' 0.8468, 0.8521, 0.8533, 0.8551 -- larger scales rank a little
 * better by overstating the prefetch, 4-6 moving Facebook's and PubMed's
 * top-1 regret, 10 losing 0.02).  Mean Spearman over the 32 cells 0.8548
 * -> 0.8600, SDDMM 0.831 / 0.908 / 0.825 / 0.919 -> 0.860 / 0.944 / 0.884
 * / 0.956, no cell down more than 0.003; both seeds agree;
 * docs/simulator.md "Model 89". */
#define LOOM_SIM_LOAD_WAIT_SCALE_512 0.25
#define LOOM_SIM_LOAD_WAIT_SCALE_256 1.5
/* Model 90 (sim_machine.h "Level bandwidth", sim_cycles.c; targets with
 * issue_chain_norm, which loom calibrate writes): on targets whose vectors
 * are narrower than this many bits, the lines a software prefetch looked
 * up in a private level past L1 are left out of model 27's norm of the
 * level's bandwidth time and the core's cycles, and bound the core as a
 * max after it: core = max((core^4 + demand^4)^(1/4), demand + prefetched).
 * Why (issue 29, Zen 4, the sixty-ninth session's record sets): mbeacxc F =
 * 128 (B's 254 KB in L2) prefetching its rows 4 nonzeros ahead measured
 * 0.94x / 0.98x the kernel without on AVX2 (seed 3 / 4, one-decision
 * pairs) and 1.00x on AVX-512; with the prefetched lines in the norm the
 * simulator charged 1.07x / 1.02x (AVX2 / AVX-512), now 0.985x on AVX2.
 * Model 27's own evidence was AVX-512 (Emerald Rapids: the same prefetch
 * 1.19-1.25x slower), and its AVX2 cells barely moved between the max and
 * the norm (0.852 -> 0.869).  Combining the prefetched lines at p = 6, 8,
 * 16, 32 or a max gave the AVX2 cells 0.8542, 0.8545, 0.8756, 0.8765 and
 * 0.8757 (model 89: 0.8521) -- the max, the simplest; mbeacxc AVX2 0.706 /
 * 0.564 -> 0.858 / 0.822 and its top-1 regret 1.11x -> 1.03x, Facebook
 * seed-3 AVX2 0.723 -> 0.702 (regret 1.05x -> 1.10x), SDDMM seed-4 AVX2
 * -0.011.  On AVX-512 it loses mbeacxc 0.10 (the seventy-fifth session's
 * probe), so the split stays by width; why the width separates them is not
 * established (docs/simulator.md "Model 90"). */
#define LOOM_SIM_PREFETCH_OVERLAP_BITS 512
/* Model 99 (sim_cycles.c nt_drain): the share of its non-temporal stores'
 * drain a core pays beside its other cycles.  Measured on Zen 4 (issue 29,
 * 2026-12-07; the host of the seventy-ninth to eighty-second sessions):
 * non-temporal stores run 27-28 GB/s pass after pass, one thread or two,
 * from 346 KB to 256 MB (the first pass over a buffer still dirty in the
 * caches, what calibrations before format 21 timed, 47-68 GB/s); Cora SpMM
 * F = 32's streamed copy-out (346 KB) measured 12.6-12.8 us for most
 * schedules whatever their work (the drain's floor; ordinary stores
 * 7.7-9.8 us), while PubMed F = 128's (10 MB, a 357 us drain) measured
 * 418-470 us, the core's work plus about a fifth of the drain, in the order
 * of that work.  The simulator charged those lines at a core's read
 * bandwidth: 20 pairs of records differing in the copy-out alone measured
 * 1.25-1.65x (Cora), simulated 1.09-1.22x.  A fit: chosen from {0.12, 0.2,
 * 0.25, 0.3} on the four re-measured record sets, mean Spearman over the 22
 * cells 0.8779 / 0.8803 / 0.8806 / 0.8800 (0.8664 without the drain; 0.3
 * puts the AVX2 cells at 0.80-0.81; docs/simulator.md "Model 99"). */
#define LOOM_SIM_NT_DRAIN_SHARE 0.25
#define LOOM_SIM_MODEL_VERSION 103 /* 103: a prefetched range that continues its prefetch's constant stride (within stride_prefetch_lines) waits for its first line only, the hardware stride prefetcher following it as model 49 follows a load site's misses (sim_prefetch.c; issue 29, mbeacxc F = 128 in two passes of 64 on Zen 4, AVX2: 1.008x the one pass measured, 1.22x simulated by model 102, 1.15x now). 102: a software prefetch of a range shorter than LOOM_SIM_PAIR_RUN_LINES from a private level waits for each 128-byte pair, as model 77's demand run, not for its first line only (sim_exec.c exec_prefetch; issue 29, SDDMM Cora D = 64 on Zen 4, AVX-512: K's two-pair rows prefetched 4 ahead measured 1.08-1.10x the kernel without, simulated 0.99x, the simulator's favourite 1.11x the best). 101: a PosSplit chunk's vector reduction counts its vectors and two instructions a halving of its tree toward cc's complete peeling, where it counted too many: a chunk of 2 SDDMM positions is copies (sim_chunk.c peel_size; issue 29, SDDMM Cora D = 64 on Zen 4: chunks of 2 measured 1.05x unsplit, simulated 1.32x). 100: a chunk loop cc keeps whose positions accumulate into a workspace exposes its remainder exits past what the chain hides beyond the core's other bounds, after them (sim_chunk.c, sim_cycles.c; issue 29, mbeacxc F = 128 on Zen 4, AVX-512: chunks of 8-32 measured 1.008-1.011x unsplit, simulated 0.997-1.002x). 99: a core's non-temporal stores drain at the calibrated nt_bandwidth, shared by the region's cores; the core pays LOOM_SIM_NT_DRAIN_SHARE of the drain and finishes no sooner (sim_cycles.c nt_drain; issue 29, Zen 4: non-temporal stores 27-28 GB/s pass after pass, Cora SpMM's streamed copy-out measured 1.25-1.65x the ordinary one and simulated 1.09-1.22x). 98: a software prefetch's line takes an issue slot, not a load port -- it brings no data to a register (sim_exec.c exec_prefetch; issue 29, mbeacxc F = 128 on Zen 4, AVX-512: 8 zmm loads and 8 prefetcht0 a nonzero against 8 FMAs bound the two load ports, the prefetch 4 ahead simulated 1.020-1.025x the kernel without, measured 0.99-1.00x; Zen 4 has three address units for two 256-bit load paths; mean Spearman 0.8641 -> 0.8664, mbeacxc AVX-512 +0.018 / +0.025, Facebook seed-5 AVX-512 +0.006, mbeacxc AVX2 -0.001 / +0.003); 97: a register tile's spilled vectors are chains side by side through memory, LOOM_SIM_SPILL_CHAIN_CYCLES a k (bench/bench_spill_tile's round trip: zmm 16, ymm 14 on Zen 4), contending with the core's other bounds as a 4-norm (sim_cycles.c core_terms; issue 29, GEMM 512's 8 x 64 AVX-512 tile, 5 zmm spilled, on Zen 4: 1.007-1.016x the 8 x 32 tile a FMA in L1, 1.007x over the records, simulated 0.991x, now 1.012x; mean Spearman 0.8573 -> 0.8641, GEMM AVX-512 0.772 -> 0.884 and 0.792 -> 0.831, GCN2 seed-5 AVX2 -0.001); 96: a miss on the line after its site's previous access (a hit) continues a walk the prefetchers watched: a trained stream, no stall (sim_machine.h touch_line; targets with stride_prefetch_lines; issue 29, GEMM 512's packed panels of k split in two on Zen 4, mostly in L1, their evicted lines each taken for a random miss: split / unsplit measured 1.013x, simulated 1.046x, now 1.033x; mean Spearman 0.8557 -> 0.8573, GEMM +0.002 to +0.010 on all four cells, PubMed seed-5 AVX2 +0.005, SDDMM seed-5 AVX2 -0.002); 95: a completely unrolled loop's copies are load instructions of their own, whose misses the stride prefetcher follows apart (sim_machine.h copy_stream; issue 29, GEMM 512's 8-row tiles on Zen 4: A's 8 rows as one site missed 32 lines apart and back, most of them stalls; [8, 2, 32] simulated 1.020x [4, 2, 64], measured 0.99x; mean Spearman 0.8499 -> 0.8557, GEMM +0.036 / +0.073 AVX-512, +0.011 / +0.010 AVX2); 94: a run-time loop under `#pragma GCC unroll` stays rolled unless it is a chunk of at most u positions, whose copies test for the end after each but the last (sim_chunk.c); 93: a completely unrolled loop's copies -- a literal inner loop counts its vector iterations for the register file (sim_regs.c cc_unrolls), a literal loop unrolls up to peel_times copies counting only its varying statements (sim_chunk.c), prefetches of back-to-back ranges merge (sim_hoist.c); 92: on a target with narrow_fma_units (FMAs a cycle of vectors at most half the native width, when more than fma_units; loom calibrate measures it, calibration format 20) a vector piece of at most half the lanes takes fma_units / narrow_fma_units of an FMA-pipe slot (sim_cycles.c core_terms; issue 29, GEMM 512 on Zen 4, AVX-512: tiles 8 or 4 columns wide measured 1.38-1.40x the 32-wide ones over 10 pairs each, simulated 2.01-2.03x, now 1.46-1.48x; Spearman unchanged, within 0.002 on every AVX-512 cell); 91: a line a software prefetch brought from a shared level or memory that left L1 before its demand access is charged as though it had not been prefetched -- the stall, stream rules and load wait of the level the prefetch brought it from -- and prefetches made while warming are tracked too (sim_machine.h pf_arrival; issue 29, Facebook and PubMed F = 128 prefetching 64 nonzeros ahead on Zen 4 measured 0.98-1.16x the kernel without, simulated 0.75-1.08x; mean Spearman 0.8717 -> 0.8769, Facebook seed-3 AVX2 0.702 -> 0.848); 90: on targets of vectors narrower than 512 bits a software prefetch's lines from a private level past L1 bound the core as a max after model 27's norm, not inside it (sim_constants.h LOOM_SIM_PREFETCH_OVERLAP_BITS; issue 29, mbeacxc F = 128 on Zen 4 AVX2: the prefetch 4 ahead measured 0.94-0.98x, simulated 1.07x; mean Spearman 0.8600 -> 0.8717, mbeacxc AVX2 0.706 / 0.564 -> 0.858 / 0.822); 89: model 84's load wait counts the serving level's latency past L1's times a scale by the target's vector width, 0.25 at 512 bits, 1.5 below (sim_constants.h LOOM_SIM_LOAD_WAIT_SCALE_*; issue 29, SDDMM Cora D = 64's prefetch pairs on Zen 4: measured 1.00-1.06x on AVX-512, 0.85x on AVX2; mean Spearman 0.8548 -> 0.8600, SDDMM +0.029-0.059 on all four cells); 88: a buffer a STREAM writes neither counts toward the warm rule's fit nor is prewarmed (its non-temporal stores leave no line cached); 87: model 22's shared-page transfers are a core's L1 misses on each buffer's shared pages, each buffer's misses scaled with the sampled blocks they fell in, not one share of all of them (sim_machine.h "Shared pages"; issue 29, GEMM 512 on Zen 4: C's stores after the sampled k loop were scaled as A's and B's, 31,422 transfers for 16,384 lines; mean Spearman 0.8532 -> 0.8547, GEMM +0.044 / +0.005 / +0.016 / -0.017); 86: on a warm-caches target whose data does not fit, every byte of a buffer ordinary stores write goes back to memory once a run -- what the run's caches did not evict to memory by its end counts as DRAM bytes of the regions in proportion to their stores, in the chip's bandwidth bound (sim_machine.h "Write-backs of a cold run"; issue 29, PubMed F = 128 on Zen 4: C's 10 MB stayed dirty in the L3 when a simulated run ended; mean Spearman 0.8487 -> 0.8532, PubMed seed-4 AVX2 0.749 -> 0.861); 85 was loom calibrate's issue_chain_norm 3 (calibration format 19), not a simulator change; 84: a chain segment's first accumulation waits for its loads, at the serving level's latency (sim.h "Independent chains"); 83: a workspace filled before a pass over part of a row restarts its chain as a row's does (sim.c mark_row_fills); 82: a target's calibrated reorder_window spans model 34's overlap groups and model 62's row tail (sim_setup.c); 81: a register tile spilling more than LOOM_SIM_SPILL_FREE_VECTORS pays the excess squared (sim_impl.h loom__sim_spill_excess); 80: a serial fill's lines in other cores' caches are transfers (sim_exec.c exec_fill); 79: a sum's per-loop combining counts the lanes a shorter loop fills (sim_exec.c run_vector); 78: model 33's spilled updates' cycles are issue slots (sim_cycles.c core_terms); 77: a short run's pairs from a private level (sim_machine.h touch_line, LOOM_SIM_PAIR_RUN_LINES); 76: a warm-rule line of a sampled block is in the last level only in the share the kernel's cached buffers leave it (sim_setup.c first_touches); 75: cc keeps an intermediate's row in a register across one chunk's positions only (sim_exec.c SS_WORK); 74: a streamed copy moves the elements outside whole aligned vectors one by one with ordinary stores, as loom_stream_copy (sim_exec.c exec_stream); 73: a chunk loop accumulating into an intermediate hides its exits, as a workspace's (sim_chunk.c); 72: an intermediate's row stored every nonzero overlaps the next rows' chains again (model 59 reverted: the lowering prints that position loop as an offset, sim_chain.c); 71: a register tile of pieces in unrolled copies that fits only without the SLP packing's LOOM_SIM_SLP_TEMP_REGISTERS spills (sim_regs.c; GCN2 Cora's 4-row AVX2 T2 tile, its assembly: 3 stack round trips an f step; seed-3 AVX2's regret 1.12x -> 1.03x). 70: on a target with fadd_units (add pipes beside the FMA pipes, which loom calibrate measures), vector adds, shuffles and min / max run on either kind of pipe, FMAs and multiplies on the FMA pipes only (sim_cycles.c core_terms; issue 29, SDDMM Cora D = 64 on Zen 5: the partial sums' 4 adds a nonzero measured 0.94-1.05x the plain dot product, simulated 1.05-1.13x; mean Spearman 0.8558 -> 0.8582, SDDMM +0.003-0.031 on all four cells, SDDMM seed-4 AVX-512 0.789 -> 0.817); 69: a sampled loop whose iterations begin with integer book-keeping -- the balanced row split's binary searches for its chunk's rows -- is weighed by the work after it (sim_work.c pure_run; before, the work scale gave up at the while loop and scaled the chunks by their count: mbeacxc F = 128 simulated 1.22-1.35e7 FLOPs for 1.28e7); 68: a serial loop of literal trip, at most LOOM_SIM_PEEL_MAX_POSITIONS copies of a small body without a fill or an if, runs as its copies -- no loop instructions, what every copy computes alike (a position, an index load) once per instance (sim_chunk.c "Literal loops GCC unrolls unasked", sim_hoist.c; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, SpMM F = 32 in 4 x 8 tiles on Zen 5: GCC 12's assembly the 32-wide vector loop's, measured as fast, simulated 1.8x; mean Spearman 0.8526 -> 0.8542, bcsstk16 seed-3 AVX2 0.775 -> 0.813); 67: a load of a line another core modified misses past the private levels at the target's core_transfer_ns, which loom calibrate measures, exposed by model 51's window rule (sim_cycles.c "Core-to-core lines"; issue 29, GCN2 Cora's A statements on Zen 5; mean Spearman 0.8455 -> 0.8525, GCN2 +0.044-0.065 on all four cells, nothing else moves); 66: a cache level whose sets span more than a page (the target's page_bytes, which loom calibrate writes) is indexed by a hash of the page number, a stand-in for the physical frame (sim_machine.h "Physical indexing"; issue 29, GEMM 512's B read in place on Zen 5: a 32-column panel 2 KiB a k fell into 64 of the 1,024 L2 sets, simulated 1.05-1.10x the packed panel, measured 0.99x; mean Spearman 0.8434 -> 0.8455, GEMM seed-4 AVX-512 0.662 -> 0.741); 65: a loop cc keeps over [0, min(c, rest)) whose positions accumulate into no workspace mispredicts its exits at a full chunk's boundary without branch memory: they cost branch_miss_cycles past the chain the other misses left (sim_chunk.c "Exposed chunk exits"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, SDDMM Cora D = 64 with chunks of 4 on Zen 5: 1.15-1.31x unsplit on Cora, 0.97-1.07x on a copy whose rows hold multiples of 4 nonzeros, simulated 1.00-1.08x; mean Spearman 0.8401 -> 0.8434, SDDMM +0.008-0.058 on all four cells, GCN2 seed-3 AVX2 +0.018, nothing else moves); 64: a loop that copies a packed panel (PackPanel's restrict local) counts its own counters, combined into cycles on their own, and a core's phases add up (sim_phase.c "Phases"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, GEMM 512 on Zen 5: packing measured 10 us more than the unpacked kernel at 8 and 16 rows, simulated 3.1 us at 8 rows and 1.0 at 32, hidden under the FMAs; mean Spearman 0.8374 -> 0.8401, GCN2 +0.006-0.039 on three cells, GEMM seed-4 AVX-512 +0.012); 63: a serial chunk loop [0, min(c, rest)) of at most LOOM_SIM_PEEL_MAX_POSITIONS small positions runs as c unrolled copies: no loop set-up, the copies share their loads (sim.h "Single iterations"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, fresh record sets on Zen 5: GCC 12 peels PosSplit chunks of 2-8 on F = 32, simulated 1.25-1.34x the unsplit loop, measured 1.00-1.09x; mean Spearman 0.8299 -> 0.8339, bcsstk16 +0.02-0.03 on all four sets); 62: a CSR row's workspace chain (model 56) begun in a new overlap group overlaps the share of the previous row's chain the reorder window holds -- its cycles times min(1, window / the instructions the row spanned) -- and adds only what goes past it (sim.h "Independent chains"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, bcsstk16 F = 32 on Zen 5: 59 nonzeros a row, about 700 instructions, simulated 1.41-1.48x its measured time, 0.90-1.14x with the rule; mean Spearman 0.8630 -> 0.8656, held out 0.8530 -> 0.8561, only SpMM moves); 61: a core's memory term overlaps its other work by LOOM_SIM_STALL_OVERLAP (0.25), not the target's overlap (0.5), when it is the demand misses' stall rather than the DRAM-bandwidth bound (sim.h "Cycles"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, Zen 5: mean Spearman 0.8604 -> 0.8630, GEMM 512 AVX-512 0.789 / 0.784 -> 0.801 / 0.805, held out 0.8508 -> 0.8532); 60: a packed panel (PackPanel's local copy, read through a restrict pointer) is never register-resident: its loads are memory accesses (sim.h "Register-resident workspaces"; only on targets with peel_times, which loom calibrate writes; issue 29, GCN2 Cora's 16 x 7 W2 panel on Zen 5, AVX2: GCC 12 loads its pieces every f step, packing measured 0.995-1.012x, simulated 0.96x; GCN2's four cells 0.882 / 0.719 / 0.832 / 0.656 -> 0.888 / 0.834 / 0.832 / 0.736); 59: an intermediate's row kept in a register across the nonzeros and stored every nonzero (model 54) adds its accumulations to the core's chain: the rows' chains are summed, not overlapped within a reorder window (sim.h "Independent chains"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, GCN2 Cora's T1 = X W1 on Zen 5: simulated 1.2 cycles a nonzero, measured 3.0-3.5; bench_branch_rows: such rows in random order 4.7-4.8 cycles a nonzero, sorted 2.4-3.0; GCN2's four cells 0.835 / 0.641 / 0.809 / 0.691 -> 0.882 / 0.719 / 0.832 / 0.656); 58: branch memory is keyed by a core's branch misses over the whole kernel (LOOM_SIM_BRANCH_MEMORY_KEY of the calibration loop's branches a miss), not by the branches of one region -- the predictor learns the whole repeated run, and the easy branches a schedule adds (a chunk loop's, a reduction's) do not crowd out the hard ones; regions' cycles are combined once the kernel ends (loom__sim_finish) (sim.h "Branch memory"; only on targets with branch_memory points, which loom calibrate writes; issue 29, Cora SpMM F = 32 on Zen 5: Spearman 0.787-0.916 -> 0.808-0.930 on the four cells, GCN2 AVX2 0.619 / 0.679 -> 0.641 / 0.691); 57: a serial or unrolled loop of literal bounds that runs once is no loop -- cc removes it, its body runs inline without a guard, counter or branch (sim.h "Single iterations"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, PosSplit into chunks of one position, which lower_loops.c now writes as a loop [0, 1), on Zen 5: GCC 12 compiles it to the unsplit nonzero loop); 56: a workspace zeroed before a loop of run-time bounds that starts from its enclosing loop's row (a CSR row's workspace, the row loop around it) starts a new segment of its chain, as model 38's dense tiles do; a pass re-reading the same row keeps the summed chain (sim.h "Independent chains"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, Cora SpMM F = 32 on Zen 5: simulated 1.17-1.22x its measured time, 4 cycles a nonzero summed); 55: a VECTORIZED sum of two iterations, which codegen emits with safelen(2), runs as scalar code: the pair's products a partial sum of their own, one add a pair on the sum's chain (sim.h "Vectors"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, SpMV on bcsstk16 in position chunks of 2 on Zen 5: measured 54 us against the whole row's 92, simulated 188 against 181); 54: 54: in vector code an accumulation into a kernel-internal intermediate whose loop instance accumulates into the same elements as its previous one, in at most half the vector registers, loads nothing -- cc keeps the row in registers across the loop around it and stores it each time (sim.h "Independent chains"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, GCN2 Cora's T1 = X W1 on Zen 5: X's nonzero loop unrolled 16 or not measured the same, simulated 0.94x); 53: 53: cc vectorizes a float sum over a loop of run-time bounds (a CSR row's nonzeros) whose body has no loop, if or store: gathers, the lanes added in order on the sum's chain segment, vectors of the full width, a half-width epilogue on 16 lanes, scalars, after LOOM_SIM_RT_VECTOR_SETUP_IOPS of trip tests (sim.h "Vectors"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, Y = A T with C = 7 and the nonzeros innermost on Zen 5: GCC's vector code ran 1.8x the scalar loop on Cora, simulated as the scalar loop); 52: 52: an accumulation into memory in scalar code restarts its store site's chain segment at a new element, as model 41's intermediates do, segments overlapping within the reorder window (sim.h "Independent chains"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, GCN2 Cora's H2 = A T2 with the nonzeros inside the class loop on Zen 5: measured 42.6 us, simulated 114.4; `loom plan score --fills 16` ranked the unfused plan first, measured 1.13-1.20x slower); 51: 51: a core's stalled demand misses, when few share its reorder window, each cost their level's latency less the window's drain time, shared by the misses in the window, where that is more than the calibrated throughput cost (sim.h "Exposed misses"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, PubMed and Facebook F = 128 on Zen 5: PubMed without a software prefetch measured 1.14-1.33x the prefetch 16 rows ahead, simulated 0.97-1.02x); 50: a demand access to a line a software prefetch brought from a shared level or memory less than that level's latency before waits the rest, shared by the range's lines, capped at a demand miss's cost, times 1 - overlap (sim.h "Late prefetches"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, PubMed and Facebook F = 128 on Zen 5: a prefetch 4 rows ahead measured 1.09-1.32x the one 16 ahead, simulated 0.99x); 49: a miss at the same stride from its site's previous miss as that one from its own non-sequential predecessor, within the target's stride_prefetch_lines, is prefetched (sim_machine.h "Stride prefetch"; only on targets with the key, which loom calibrate measures with strided pointer chases; issue 29, GEMM 512's B read in place on Zen 5: a column panel walked 2 KiB a k, measured as fast as the packed panel, simulated 1.19x); 48: a shared load's vectors raise the copies GCC's Zen tuning needs to keep it in a register only up to 2 (LOOM_TARGET_SHARED_LOAD_MAX_VECTORS; sim.h "Unrolled copies"; only on targets with shared_load_copies, which loom calibrate writes; issue 29, GEMM 512's 5 x 64 and 6 x 64 AVX-512 tiles on Zen 5: B kept in 4 zmm by GCC 12, simulated as folded into every row's FMA); 47: a register tile of pieces whose shared loads cc folds needs one register more, for the narrow pieces cc keeps in registers (sim.h "Register-resident workspaces"; only on targets with peel_times, which loom calibrate writes; issue 29, GCN2 Cora's 5 x 7 AVX2 T2 tile on Zen 5: 16 of 16 registers counted as fitting, spilled by GCC 12); 46: a register-resident workspace's fill costs no instruction when every loop after it in its block has literal bounds -- cc unrolls them and gives each vector's first update a zero register kept outside the loops (sim.h "Register-resident workspaces"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, SDDMM Cora D = 64's partial sums on Zen 5: measured 1.00-1.01x the plain dot product, simulated 1.11-1.21x); 45: the first line of a software prefetch a private level past L1 serves costs that level's stall, as its demand access would have (sim.h "Software prefetch"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, Cora SpMM F = 32 on Zen 5: a prefetch of rows in L2 measured 1.13-1.65x, simulated 1.03-1.04x); 44: a loop of run-time bounds costs LOOM_SIM_LOOP_ENTRY_IOPS a entry, one whose body holds such a loop LOOM_SIM_NEST_ENTRY_IOPS more a entry and LOOM_SIM_NEST_ITER_IOPS an iteration -- the induction variables, trip tests and strength-reduced pointers cc sets up and advances (sim.h "Loop set-up"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, PosSplit on Zen 5: a nonzero loop split into chunks measured 1.04-1.14x on AVX-512, simulated 1.00-1.05x); 43: a line the streamer brought from memory costs LOOM_SIM_STREAMER_MEMORY_LINE_STALL of a memory miss's stall when a load uses it -- a gathered row's lines are demanded together and the streamer's fetches are still in flight (sim_machine.h "Streamer"; only on targets with stream_lines, which loom calibrate writes; issue 29, Facebook F = 128 on Zen 5: software prefetch 16 rows ahead measured 0.71-0.92x, simulated 0.94-1.00x); 42: a store's line fill (write-allocate; the lookups of a line a store misses, and a streamer line a store uses) does not count toward the level-bandwidth bounds of models 19, 21 and 27, which count the lines the levels serve loads (sim_machine.h "Level bandwidth"; only on targets with the bandwidth keys, which loom calibrate writes; issue 29, PubMed and Facebook F = 128 on Zen 5: a streamed copy-out simulated 0.82-0.88x the ordinary one, measured 1.00-1.14x); 41: an accumulation into a kernel-internal intermediate (TEMP) restarts its store site's chain segment at a new element, segments overlapping within the reorder window as a float local's (sim.h "Independent chains"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, GCN2 Cora's T1 = X W1 on Zen 5: simulated 1.81x its measured time); 40: a register tile's copies need the vectors of their vector loop -- model 39's pieces for a row of literal trip the lanes do not divide, one register each -- and so do the loads they share, not the tile's elements packed into full vectors (sim.h "Register-resident workspaces"; only on targets with peel_times, which loom calibrate writes; issue 29, GCN2 Cora's 13- and 14-row T2 tiles of 7 classes on Zen 5: 39-42 registers of 32); 39: a vector loop of literal trip that the lanes do not divide runs as GCC's pieces -- vectors of the largest power of two that fits, one narrower vector, single lanes (7 = 4 + 2 + 1) -- each issuing the body, a broadcast reshaped by a shuffle per further piece (sim.h "Vector pieces"; only on targets with peel_times, which loom calibrate writes; issue 29, GCN2 Cora's 7 classes on Zen 5: the T2 tile region simulated 0.43x its measured time); 38: a workspace zeroed before a block of literal loops (a dense tile's row) starts a new segment of its chain, overlapped as a float local's (sim.h "Independent chains"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, GCN2 Cora's one-row T2 tile on Zen 5); 37: a row workspace one register short of the register file, whose vectors cc unrolls completely, keeps all but the vectors that do not fit in registers, and an update of a spilled vector adds a spill's round trip to the chain (sim.h "Register-resident workspaces"; only on targets with peel_times, which loom calibrate writes; issue 29, the F = 128 graphs' AVX2 rows of 16 ymm on Zen 5: Spearman up on Facebook, PubMed and mbeacxc, nothing else moved); 36: an integer min or max counts two instructions, cc's compare and conditional move (sim.h "Address arithmetic"; every target; issue 29: Spearman up on nine of eleven cells, within 0.002 on the other two); 35: an integer variable that is not an induction variable (read from index data, a min, a divide) and that an index multiplies by a size costs one instruction more per assignment, cc's imul (sim.h "Address arithmetic"; every target; issue 29, SpMM's k = crd[p] times B's row length: Spearman the same or up on every case); 34: a float local's restarted chains overlap within LOOM_SIM_REORDER_WINDOW_INSTRUCTIONS, a mispredicted branch not ending the group (sim.h "Independent chains"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, SDDMM Cora D = 64 on Zen 5: AVX2 simulated 2.42x its measured time); 33: a register tile larger than the register file, whose FMAs per update outlast a spill's round trip, keeps in registers all but the vectors that do not fit; each update of a spilled vector costs its load, its store and LOOM_SIM_SPILL_UPDATE_CYCLES (sim.h "Register-resident workspaces"; only on targets with peel_times, which loom calibrate writes; issue 29, GEMM 512's 8-10 x 64 tiles on Zen 5); 32: integer lets a completely unrolled loop's copies compute from values the rolled loops around them do not change are hoisted out of those loops (sim.h "Hoisted copies"; only on targets with peel_times, which loom calibrate writes; issue 29, GEMM 512's 6-row micro-kernel clamping its rows on Zen 5); 31: no model change -- the lowering drops an "unroll" annotation on a loop codegen vectorizes (lower.c drop_unroll_hints), so such a loop is the vectorized serial loop, its workspace in registers, not model 7's partial unroll (issue 29, mbeacxc F = 128: 1.92x measured, 1.14x simulated); 30: a software prefetch of a literal count of lines, at most the target's peel_times, is unrolled completely by cc: its lines cost no loop overhead (sim.h "Software prefetch"; only on targets with peel_times, which loom calibrate writes; issue 29, Facebook F = 128's whole-row prefetch, whose loop lowering now bounds by the literal row length); 29: a line the streamer brings from memory costs its DRAM bytes when a demand access uses it, not when fetched (sim_machine.h "Streamer"; issue 29, PubMed F = 128's software prefetch on Zen 5); 28: a vector loop whose body holds a loop of non-literal bounds (a CSR row's nonzeros) runs as the scalar loop GCC leaves it (sim.h "Outer-loop vectors"; issue 29, `loom plan score` on gcn2's relu-fused plan); 27: a private level's bandwidth time combined with the core's other cycles as a 4-norm, not a max (sim_machine.h "Level bandwidth"; only on targets with the key, which loom calibrate writes; issue 29, mbeacxc F = 128's software prefetch over a row of B in L2); 26: a float local assigned afresh starts an independent segment of its chain, and segments within LOOM_SIM_CHAIN_OVERLAP_INSTRUCTIONS of each other, with no mispredicted branch between, count only their longest (sim.h "Independent chains"; issue 29, SDDMM's dot product a nonzero); 25: register-resident workspaces need the broadcast's register beside their vectors, and a workspace accumulated at an index a loop cc keeps rolled below its declaration reads is memory (sim.h "Register-resident workspaces"; issue 29, the re-measured records on 64-byte aligned data of the thirty-second session: mbeacxc's AVX2 row of 16 ymm, SpMM F = 128's [1, 2, 4, 16] tiles once codegen vectorizes them: lir.h loom_lir_is_simd_safe); 24 was a patch in bench/, never on main; 23: a mispredicted branch costs only the miss cycles past the core's latency chain, which keeps executing during the refill (sim.h "Hidden misses"; only on targets with issue_chain_norm, which loom calibrate writes; issue 29, the twenty-eighth session's records: row exits hidden under SDDMM's and SpMM's chains); 22: an L1 miss on a page another core stores to in the same parallel region costs LOOM_SIM_PAGE_TRANSFER_MISSES misses of the first shared level (sim_machine.h "Shared pages"; only on targets with stream_lines, which loom calibrate writes; issue 29, GEMM's k-split records: two threads writing the halves of C's rows); 21: the first shared level's bandwidth combined with a core's cycles as a Euclidean norm, its lines being its demand lookups and the streamer's used fetches (sim_machine.h "Shared-level bandwidth"; only on targets with the key, which loom calibrate writes); a sampled loop's skipped iterations weighed by their work, not their count ("Sampling"); a target's sample_budget (loom calibrate: 5e6) (issue 29, the F = 128 graphs' units and the prefetch fix's split rows); 20: outer-loop vectors -- a vector loop whose body holds a loop runs its body once per vector as scalar code (sim.h "Outer-loop vectors"); float locals updated in turn are chains side by side ("Latency chain") (bench_attention's fused register tiles simulated 9-14x their time); 19: a private level's bandwidth past L1 bounds a core's cycles (sim_machine.h "Level bandwidth"; only on targets with the key, which loom calibrate writes; issue 29, mbeacxc's B in L2); 18: the L2 streamer fetches stream_lines ahead of a stream within its page (sim_machine.h "Streamer"; only on targets with the key, which loom calibrate writes; issue 29, the F = 128 graphs' half-row passes); 17: guarded iterations -- runs of a loop's iterations that pass its tile guard equally often sampled apart (sim.h "Guarded iterations"); a register tile needs a register beside its accumulators and shared loads (LOOM_SIM_TILE_TEMP_REGISTERS) (issue 29, GEMM's records on both ISAs); 16: a line a sampled block touches first is found in the last level when the skipped iterations would have touched it (sim.h "First touches in sampled blocks"; issue 29, the F = 128 graphs sampled); 15: the issue slots and the latency chain bound together (their Euclidean sum, not their max), a vector loop of literal bounds and <= the target's peel_times vector iterations peeled completely (no loop overhead); both only on targets with the keys, which loom calibrate writes (issue 29, the re-measured records of both ISAs on Emerald Rapids: bcsstk16's prefetch, GEMM's micro-kernel); 14: independent accumulation chains -- an element accumulated d accumulations back at its site is one of d chains side by side and adds FP_LATENCY / d (issue 29, GEMM's micro-kernel rows on Emerald Rapids' two FMA pipes); an auto-vectorized float sum adds its lanes in order (issue 29, SDDMM's regret on Emerald Rapids); 13: a register-resident workspace leaves registers for its FMAs' operands; a load shared by too few unrolled copies is folded into each under GCC's Zen tuning (issue 29, GEMM on both ISAs; 10-12 were patches in bench/, never on main); 9: loads shared by the copies of a completely unrolled loop (issue 29, GEMM's AVX2 units); 8: branch memory -- a repeated kernel's data-dependent branch misses scaled by what the calibrated predictor leaves (issue 29, navigate's estimate on Cora SpMM); non-temporal stores evict their lines from the core's caches; 7: functional warming before each sampled block, hardware prefetch of shared-level streams after 4 misses, workspaces in memory under a partial unroll, a one-iteration loop budgeted whole (issue 29, the campaigns' re-measured records); 6: the first two of those (an intermediate commit, d5f029c); 5: unswitched invariant selects, store forwarding in memory accumulation chains (issue 29, one-thread ground truth);  2: calibrated caches and miss costs (issue 29), or dense loops sampled (issue 26), on two branches; 3: both; 4: free affine address arithmetic, accumulation chains, in-order sum reductions, hoisted broadcasts, register-resident workspaces, fills at memory speed (issue 29) */

#endif
