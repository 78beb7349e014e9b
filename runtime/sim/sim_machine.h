/* loom: the simulator's machine state -- cores, their counters, the cache
 * hierarchy -- and one memory access through it (sim.h "Cycles"; the
 * hierarchy's model is described below).
 * Private to the simulator's .c files (sim_exec.c runs the access path, static
 * inline on the simulator's hot loop; sim_setup.c makes the machine; sim_cycles.c reads
 * the counters).  Not a public header. */
/* The memory hierarchy the simulator models (sim.h describes the rest of
 * the model; the sections are referred to as sim_machine.h "<name>").
 *
 * Caches.  Per level: set-associative, LRU, write-allocate, write-back
 * (a dirty line evicted from a level is written into the next; from the
 * last level it costs line bytes of DRAM traffic).  Private levels exist
 * once per core, shared ones once.  Levels are non-inclusive and
 * coherence is not modelled.  A hardware prefetcher is modelled per access
 * site: a miss at some level on the line right after (or before) the
 * site's previous miss line at that level is a prefetched stream miss: it
 * moves the same bytes but adds no latency stall.
 *
 * Physical indexing (model 66; a target's "page_bytes", which loom
 * calibrate writes -- the base page size; off without the key: the
 * hand-written targets).  A level whose sets span more than a page (L2
 * and L3 here, not a 48 KiB 12-way L1 whose 64 sets span 4 KiB) takes the
 * set index's upper bits from the physical frame the OS chose for the
 * page, not from the virtual address: cache_set() hashes the page number
 * and keeps the line's place in its page.  loom's buffers come from
 * aligned_alloc and never ask for huge pages (the Zen 5 host: transparent
 * huge pages "madvise", AnonHugePages 0 kB), so a page is the base 4 KiB.
 * Why (issue 29): GEMM 512's B read in place (no PackPanel) walks a
 * 32-column panel, 128 bytes every 2 KiB; virtually indexed, the panel's
 * 1,024 lines fell into 64 of the 1 MiB 16-way L2's 1,024 sets and missed
 * there (596,000 L2 misses against the packed panel's 99,500), simulated
 * 1.05-1.10x the packed panel where the CPU ran it 0.99x (Zen 5, AVX-512,
 * the seed-4 records of 8 x 32 tiles: 27 unpacked, 26 packed).  On the
 * 32 cells of docs/simulator.md "Model 66" mean Spearman 0.8434 -> 0.8455
 * (GEMM 0.662 / 0.927 -> 0.741 / 0.932 seed 4, +0.004 seed 3; nothing
 * else moves by more than 0.007); other hashes of the page number (two
 * seeds) gave 0.8459-0.8464, GEMM seed-4 AVX-512 0.725-0.728.
 *
 * Stride prefetch (model 49; a target's "stride_prefetch_lines", which
 * loom calibrate measures; off without the key: the hand-written targets).
 * A miss of a site whose distance in lines from the site's previous miss
 * equals that of the previous non-sequential miss from its predecessor,
 * and is at most stride_prefetch_lines, is a stream too: a constant stride
 * the core's prefetcher follows (AMD's "L1 stride prefetcher", which
 * uses each instruction's access history; Intel's IP prefetcher).  A run
 * of sequential misses between (a row of two lines a k) does not break it.
 * Why: GEMM 512's B read in place (no PackPanel) walks a column panel,
 * 2 KiB a k; the CPU ran it as fast as the packed panel (Zen 5, the seed-4
 * AVX-512 records: 8 x 32 tiles 607-617 us either way) where every second
 * line of the walk stalled as an L2 gather in the simulator (memory
 * cycles 1.16e6 of 2.78e6 a core, 1.19x).  loom calibrate chases a
 * pointer through 2,048 lines at strides of 2, 31, 257 and 4,097 lines
 * in address order and in a random order of the same lines: on Zen 5
 * the strided chases ran 1.2-2.7 ns a step, the random ones 4.0-7.4
 * (bench/bench_stride_lines shows the loads' throughput alike: the
 * stride hides latency, not bandwidth).  Spearman over the 32 cells of
 * docs/simulator.md "Model 49" 0.8198 -> 0.8293 (GEMM 0.862 / 0.855 /
 * 0.617 / 0.874 -> 0.913 / 0.929 / 0.720 / 0.956).  Model 95 (copy_stream):
 * a completely unrolled loop's copies are load instructions of their own,
 * each followed apart -- GEMM's 8-row tiles broadcast A from 8 rows, which
 * as one site missed 32 lines apart and back, a stream broken every 8.
 *
 * Streamer (model 18; a target's "stream_lines", which loom calibrate sets
 * to 8; off without the key: the hand-written targets).  The L2 streamer
 * also runs ahead of a stream.  After a miss on the line right after the
 * site's previous miss line, the next stream_lines lines of the same
 * 4 KiB page come into the last private level and the shared ones on the
 * way. These are prefetches: the memory bytes count, but no access, miss
 * or stall does. The same site's later misses on them hit there, and so
 * do other sites' and passes'. Such a line first touched in a sampled
 * block is found in the last level by model 16's warm rule, drawn without
 * marking it (sim.h "First touches in sampled blocks"). Why: GCN-style SpMM at
 * F = 128 gathers B's 512-byte rows from the last level, and splitting
 * the features in two passes over a row measured 0.98-1.15x. Without the
 * look-ahead the second pass found its half-rows cold and simulated
 * 1.38-1.81x. On the re-measured records of docs/simulator.md "Model 18",
 * Facebook F = 128 ranks at Spearman 0.361 -> 0.609 (AVX2 0.696 -> 0.773)
 * and PubMed at 0.490 -> 0.623 (0.792 -> 0.814). 8 lines was chosen over
 * 1, 2, 3, 4 and 16 (Intel's streamer runs up to 20 ahead).
 * Model 29: a line the streamer brings from memory costs its DRAM bytes
 * when a demand access uses it in the private level, not when it is
 * fetched; one never used (evicted first, or found later in a shared
 * level) costs none.  After a gathered row's second line the streamer runs
 * 8 lines ahead, past the row's end into rows the next nonzeros rarely
 * want, and counting those at once doubled the DRAM bytes of PubMed F =
 * 128 without software prefetch on the Zen 5 host (22.2 against 12.7 MB
 * with it, 2026-12-02): the simulator made the prefetch save a quarter of
 * the time (0.84x over 16 pairs of records) where it cost 1.15x, and
 * ranked PubMed at 0.545.  With model 29: 0.815 (regret 1.21x -> 1.08x);
 * Facebook 0.511 -> 0.516, AVX2 0.860 -> 0.863 and 0.711 -> 0.704, the
 * other cases unchanged (docs/simulator.md, thirty-seventh session).
 * Model 43: such a line, loaded while its site's run of sequential lines
 * is still shorter than stream_lines, adds LOOM_SIM_STREAMER_MEMORY_LINE_STALL
 * (0.7) of a memory miss's stall: a gathered row is read at once, and the
 * streamer's fetches of its later lines are still on their way; a long
 * stream, once its run reaches the look-ahead, pays nothing more.  Why:
 * bench/bench_row_gather (Zen 5, one thread, random rows from 256 MiB)
 * reads a row of 8 lines in 5.4-5.7 times a gathered element's time (the
 * calibrated miss cost) and a row of 4 lines in 3.0-3.1 times, where the
 * rules before charged about 2 (the row's first two lines); Facebook F =
 * 128's software prefetch 16 rows ahead measured 0.71-0.92x and simulated
 * 0.94-1.00x over the records that differ in nothing else.  Facebook's
 * Spearman 0.719/0.628/0.675/0.581 -> 0.826/0.725/0.754/0.643 (four record
 * sets), PubMed 0.742/0.820/0.821/0.839 -> 0.760/0.820/0.845/0.840, every
 * other case of the sets unchanged (docs/simulator.md "Model 43").
 *
 * Level bandwidth (model 19; a private level's "bandwidth" past L1, which
 * loom calibrate sets to its sequential load bandwidth; none on the
 * hand-written targets).  The lines such a level serves a core (its
 * lookups: the core's misses in the level above), times the line size, over
 * the bandwidth, bound the core's cycles in the region: core = max(core,
 * that).  It is a bound, not a stall added to the memory term, because a
 * stream from L2 overlaps the FMAs. As a memory term, the overlap formula
 * added half of it to every core and slowed GEMM's 4-row tiles (2.3e6 L1
 * misses, the hand count) by 1.33x. Why: mbeacxc F = 128 reads 512 bytes
 * of B (254 KB, in L2) a nonzero. That is about 11 cycles at Emerald
 * Rapids' 45 bytes a cycle, where the simulator counted 5, and software
 * prefetch's loop hid under it on the CPU (measured 0.94-1.04x, simulated
 * 1.46-1.76x). On the re-measured records mbeacxc ranks 0.686 -> 0.784
 * (AVX2 0.733 -> 0.851) and Facebook 0.609 -> 0.715 (docs/simulator.md
 * "Model 19").  Since model 27 the bound is a norm, not a max: core =
 * (core^p + level^p)^(1/p) with p = LOOM_SIM_LEVEL_BANDWIDTH_NORM (4).
 * When both are near their limit the run takes longer than either (the
 * level's lines and the core's loads plausibly contend for the load ports
 * and the fill buffers; not measured apart).  Why: once the data is 64-byte aligned (thirty-second
 * session), mbeacxc F = 128's whole-row tile with a software prefetch 4
 * or 16 nonzeros ahead measured 1.19-1.25x slower than without it, on 16
 * and 15 pairs of records that differ in nothing else.  The prefetch's
 * loop (eight lines a nonzero: 24 integer instructions, 8 loads, 8
 * branches) takes the core's issue from 0.5 to 1.0 of the L2 time, and
 * the max charged 1.00x; the 4-norm charges 1.12x (docs/simulator.md
 * "Model 27").  When either term is under half the other the norm adds
 * under 1.6%.  Model 90: on targets of vectors narrower than
 * LOOM_SIM_PREFETCH_OVERLAP_BITS (sim_constants.h) the lines a software
 * prefetch looked up there are left out of the norm and bound the core as
 * a max after it -- the prefetch's fills overlap the core's work whole.
 * Model 42: the lines this bound and the shared level's below count are
 * those the levels serve loads -- a store's line fill (the lookups of a
 * line a store misses: write-allocate, read for ownership; and a streamer
 * line a store then uses) does not count, though its lookups, misses and
 * DRAM bytes do.  A store retires into the store buffer and its line is
 * fetched off the loads' path; the bounds stand for loads contending with
 * the core.  Why: SpMM F = 128 on PubMed and Facebook (Zen 5, AVX-512 and
 * AVX2, four record sets) writes C's 512-byte rows once each, and C is
 * larger than L2: a streamed copy-out (non-temporal stores, no fill)
 * measured 1.00-1.14x the ordinary one over 19 pairs of records that
 * differ in nothing else, and the simulator, charging C's fills at L2's
 * and L3's load bandwidth, made it 0.82-0.88x; with model 42 0.97-1.01x.
 * Spearman PubMed 0.606/0.784/0.722/0.547 -> 0.742/0.820/0.821/0.839,
 * Facebook 0.719/0.581/0.634/0.517 -> 0.719/0.628/0.675/0.581, the other
 * cases within 0.01 (docs/simulator.md "Model 42").
 *
 * Shared-level bandwidth (model 21; the first shared level's "bandwidth",
 * which loom calibrate sets to its one-thread sequential load bandwidth;
 * none on the hand-written targets).  The lines that level serves a core's
 * loads -- their lookups (the core's misses in the last private level) and
 * the lines the streamer brought from it that a load then used; since
 * model 42 not stores' line fills ("Level bandwidth") --
 * times the line size over the bandwidth are a second bound on the core,
 * combined with the core's other cycles as their Euclidean norm
 * (hypot(core, shared)), not their max: a core that streams B's rows from
 * the last level still issues its loads and FMAs, and the two overlap only
 * partly.  Why: the F = 128 graphs gather B's 512-byte rows from L3.  On
 * Emerald Rapids that costs about 50 cycles a nonzero, where the issue
 * bound counts 16, so the simulator put PubMed and Facebook at 0.43x and
 * 0.40x their measured latency and ranked a split of the row (more loop
 * overhead, the same lines) 1.2-1.7x slower, where it measured as fast
 * once the lowering prefetched only the split's tile (docs/simulator.md
 * "Model 21").  The norm's p = 2 is not measured: chosen over the max on
 * those records.
 *
 * Shared pages (model 22; targets with more than one core and a streamer,
 * "stream_lines", which loom calibrate writes).  Cores
 * of a parallel region that store to the same 4 KiB page of a buffer pass
 * its lines between their private caches: a store invalidates the other
 * core's copy, and the L2 streamer, which runs ahead within a page, fetches
 * lines the other core is writing.  The simulator runs a region's cores one
 * block after another, not in step, so it does not follow the lines: it
 * counts, per core and page, the core's L1 misses on the page, and marks
 * the pages each core stored to (LOCAL workspaces and register-resident
 * ones aside).  When the region ends, the share of a core's L1 misses that
 * fell on pages another core also stored to costs each
 * LOOM_SIM_PAGE_TRANSFER_MISSES misses of the first shared level
 * (loom_sim_result.page_transfers counts them).  Why: a GEMM schedule whose
 * parallel loop splits the columns gives each thread one half of every
 * 2 KiB row of C; with a k split of [32, 16] it adds a register tile into C
 * 32 times.  On Emerald Rapids that kernel ran 1.55x faster with each
 * thread's halves in pages of their own (C's rows spread apart, the
 * generated C otherwise the same), and its records measured 2.5-7.7x the
 * unsplit schedule where the simulator said 1.06-2.0x (docs/simulator.md
 * "Model 22").  Rows split between cores share only the page at each
 * chunk's end.  Model 87: the share is taken buffer by buffer -- a core's
 * misses on each of its first PVIS_BUFFERS buffers' pages are counted
 * apart and scaled with the sampled blocks they fell in, the rest
 * together.  A GEMM tile's stores to C come after its k loop, which the
 * sampling scales more than the tiles; one share of all the misses scaled
 * C's as A's and B's, and counted 31,422 transfers where C's 512 x 512
 * floats have 16,384 lines (tests/test_sim_cycles.c; on Zen 4 GEMM 512's
 * 8 x 64 tiles, the fastest measured, 118,305: simulated 1.06x the best,
 * 1.00x now; mean Spearman 0.8532 -> 0.8547, docs/simulator.md "Model 87").
 *
 * Warm caches (a target's "warm_caches", set by loom calibrate: measured
 * kernels run many times back to back, so data that fits stays cached).
 * Before the kernel runs, every buffer's lines are loaded in buffer order
 * -- all of them through the shared levels, the last 2x (largest private
 * level) bytes through each core's private levels -- unless the buffers
 * (LOCAL workspaces aside) are larger than half the last level (what a
 * shared cache keeps of one program beside other programs' lines and set
 * conflicts): then the run starts cold, as it always does without the key.  Nothing is counted.
 * Model 88: a buffer a STREAM statement writes is left out of both -- its
 * non-temporal stores leave no line in the caches, as model 76's share of
 * the last level already had it.  Why: SpMM with C's rows streamed counted
 * C against the data that fits, so Cora F = 128's 1.5 MB of A and B on a
 * 4 MiB L3 started cold (2.23 MB from memory against C's 1.39 MB streamed;
 * tests/test_stream.c); issue 29's 32 cells move by 0.001 at most (GCN2).
 *
 * Write-backs of a cold run (model 86; targets with warm_caches, which loom calibrate writes).  When the data does
 * not fit, so the run started cold, the lines a run stores to do not stay cached until the next run stores to them
 * again: every line of a buffer ordinary stores write (LOCAL workspaces and buffers a STREAM writes aside) is
 * written back to memory once a run.  The simulator counts the dirty lines its caches evict to memory during the
 * run; when the kernel ends, the rest of those buffers' bytes -- the lines still dirty in the caches, which the
 * next run's misses evict -- count as DRAM bytes of the regions' cores in proportion to the stores each made, in
 * the chip's bandwidth bound only (a write-back does not stall the core).
 * Why: SpMM F = 128 on PubMed (B and C 10 MB each, a 16 MiB L3) on Zen 4: a streamed copy-out measured 0.74-0.88x
 * the ordinary one over 2-23 one-decision pairs a set, simulated 0.79-0.92x with C's 10 MB written back never (the
 * run's dirty lines stayed in the L3 when it ended), 0.60-0.72x now; mean Spearman 0.8487 -> 0.8532, PubMed seed-4
 * AVX2 0.749 -> 0.861 (docs/simulator.md "Model 86").
 *
 * Miss costs.  A level's "miss_cost" (and memory's "miss_cost_ns"), when the target has one, replaces latency / mlp
 * as the stall of an independent miss that hits there (calibrated: the measured time of one gathered element at a
 * working set in that level).
 */
#ifndef LOOM_SIM_MACHINE_H
#define LOOM_SIM_MACHINE_H

#include <stdint.h>
#include <stdlib.h>

#include "../../dsl/ir/util.h"
#include "sim_cache.h"
#include "sim_impl.h"

#define NLEV LOOM_TARGET_MAX_CACHES
#define STREAM_PAGE_SHIFT 12 /* the L2 streamer stays in a 4 KiB page (stream_ahead) */
#define STREAM_TRAIN 4     /* sequential misses a stream from the shared levels takes to be prefetched (touch) */

/* the buffers whose L1 misses on tracked pages a core's counters keep apart (model 87, "Shared pages") */
#define PVIS_BUFFERS 8

typedef struct ctr {
    double fp, flops, iops, ld, st, extra, stall, dram, events, gathers, bmiss;
    double fadd; /* of fp: adds, shuffles, min / max, which the target's fadd_units also take (model 70) */
    double fnarrow; /* of fp: vector pieces of at most half the lanes, on a target with narrow_fma_units (model 92) */
    double bexp, bexpw; /* chunk loops' exposed exits, unscaled by branch memory: model 65's, model 100's (sim_chunk.c) */
    double spill; /* model 33's spilled updates' cycles, issued beside the instructions (model 78, sim.h) */
    double spill_chain; /* their round trips, the spilled vectors side by side (model 97, sim_cycles.c) */
    double br;    /* conditional branches executed (the key of branch memory, sim.h) */
    double chain; /* cycles of loop-carried accumulation latency (sim.h) */
    double acc[NLEV], miss[NLEV];
    double pvis;      /* L1 misses on tracked pages in a parallel region (sim_machine.h "Shared pages") */
    double pvis_buf[PVIS_BUFFERS]; /* of pvis: those on the first PVIS_BUFFERS buffers' pages, by buffer (model 87) */
    double pf_useful; /* the streamer's lines from a shared level (or memory) a demand access then
                         used: each crossed the shared level's port ("Shared-level bandwidth", model 21) */
    double fill_acc[NLEV]; /* of acc: stores' line fills (write-allocate), left out of bandwidth (model 42) */
    double pf_acc[NLEV];   /* of acc: software prefetches' lookups (model 90, "Level bandwidth") */
    double fill_pf;        /* of pf_useful: the streamer's lines a store used (model 42) */
    double wb_lines;  /* dirty lines written back to memory (model 86, "Write-backs of a cold run") */
    double xfer_miss; /* stalled demand loads of lines another core modified (model 67) */
    double nt;        /* of dram: the bytes non-temporal stores wrote (model 99, sim_cycles.c nt_drain) */
    double stall_miss[NLEV + 1]; /* demand misses charged a stall, by the level that served
                                    them (1 .. nlev, nlev: memory): sim.h "Exposed misses",
                                    model 51 */
} ctr;

typedef struct vsite {
    uint64_t first, prev;
    int lanes, cls, store; /* cls: 0 one lane so far, 1 broadcast, 2 contiguous, 3 gather */
    int reg;               /* a register-resident workspace's site (charged nothing) */
    int buf;               /* the buffer of its last access */
    /* loads repeated by a fully unrolled loop (sim.h "Unrolled copies", model 9) */
    uint64_t inst_first;   /* lane 0's address in the first vector of the site's last loop instance */
    int64_t inst_epoch;    /* the core's unroll_epoch then */
    int cse;               /* this instance repeats that one's addresses: its loads are free */
} vsite;

/* a float local's latency chain since its last assignment that did not
 * read it (sim.h "Independent chains", model 26) */
typedef struct fseg {
    double len;   /* chain cycles of the current segment */
    double gmax;  /* of those and of the local's earlier segments in group grp, the longest counted */
    int64_t grp;  /* the overlap group gmax belongs to */
    int active;   /* a workspace's (model 38): a dense fill began a segment, and its accumulations add to it */
    double i0;    /* the core's instructions when the segment began (model 62) */
} fseg;

/* a software-prefetched line on its way (model 50, sim.h "Late prefetches") */
typedef struct pf_slot {
    uint64_t line;  /* +1; 0: empty */
    double stamp;   /* the core's clock (core_clock) when it was prefetched */
    int lev;        /* the level it came from (X->nlev: memory) */
    int lines;      /* lines of its prefetch statement's range, which arrive together */
} pf_slot;

typedef struct core {
    int id;
    int64_t *vars;
    cache priv[NLEV];
    cache *lv[NLEV];      /* the levels this core sees: its private ones, then the shared ones */
    ctr c;
    ctr c2;      /* the counters of the phase c is not counting (sim_phase.c, model 64) */
    int in_phase; /* in a loop that copies a packed panel: c counts that phase */
    uint64_t *last_miss;  /* per site: line of its previous L1 miss (prefetch streams) */
    unsigned char *run;   /* per site: sequential L1 misses since its last non-sequential one (at most 255) */
    int64_t *last_stride; /* per site: lines from its miss before last_miss's non-sequential one to it (model 49) */
    pf_slot *pf;          /* LOOM_SIM_PREFETCH_SLOTS software prefetches in flight (model 50) */
    int npf;              /* occupied slots of pf */
    uint64_t *last_line;  /* per site: line of its previous access (+1; 0 none) */
    unsigned char *bpred; /* per if site: 2-bit counter */
    int64_t *last_trip;   /* per loop site: previous trip count */
    uint64_t *last_rmw;   /* per store site: the elements of its last LOOM_SIM_RMW_HISTORY
                           * accumulations, most recent first (+1; 0 none) */
    vsite *vs;
    int vmode, vmasked;
    int pair_var;            /* scalar code in a model-55 pair sum: its float local + 1, else 0 */
    uint64_t chunk_epoch;    /* instances of chunk loops begun on this core (model 75) */
    uint64_t *self_epoch;    /* per store site: chunk_epoch at its last accumulation (model 75) */
    unsigned char *self_reg; /* per store site, targets with issue_chain_norm: this vector loop
                                instance's accumulation kept in registers by cc (model 54) */
    int64_t vvecs;           /* vector code: the vector iterations of the loop instance */
    int vlane0, vfirst;   /* vector code: lane 0 of this vector iteration; of the loop instance's first */
    double budget;        /* events this core may spend in the current region */
    double lb, lb_e0;     /* the enclosing loop iteration's budget (events) and the events at its start */
    int nest;             /* budgeted loops open on this core (0: the next one is outermost) */
    int64_t unroll_epoch; /* instances of fully unrolled loops started (sim.h "Unrolled copies") */
    int64_t unroll_trip;  /* the copies of the last one started */
    int pf_mem_load;      /* the last line_access: a load used a streamer line from memory (model 43) */
    double skip;          /* > 1: in a sampled block, each simulated iteration stands for this many */
    int warming;          /* > 0: in functional warming (its counters are thrown away) */
    int copy;             /* model 95: 1 + the copy of the unrolled loops around, mod LOOM_SIM_COPY_SITES (0: none) */
    uint64_t flocal_hist[LOOM_SIM_RMW_HISTORY]; /* float locals last accumulated, most recent first
                                                  (var + 1; 0 none; sim.h "Latency chain", model 20) */
    fseg *fseg;           /* per float local (sim.h "Independent chains", model 26) */
    fseg *bseg;           /* per buffer, on targets with issue_chain_norm (model 38); else NULL */
    fseg *sseg;           /* per store site, the same targets: the current element's segment of an
                             intermediate's or a scalar accumulation's chain (models 41, 52); else NULL */
    int64_t grp;          /* the current overlap group */
    double grp_bmiss, grp_instr; /* the mispredictions and instructions counted when it began */
    double grp_window;    /* instructions a group spans: LOOM_SIM_CHAIN_OVERLAP_INSTRUCTIONS, or on a
                             target with issue_chain_norm LOOM_SIM_REORDER_WINDOW_INSTRUCTIONS (model 34) */
    int grp_cut_bmiss;    /* 1: a mispredicted branch ends the group (not on such a target, model 34) */
    double load_lat;      /* model 84 (calibrated targets): cycles the slowest demand load since the core's
                             last accumulation waited (sim.h "Independent chains"; note_load) */
} core;

typedef struct simx {
    const sprog *p;
    const loom_target *t;
    int nlev, first_shared, line_shift, lanes;
    double load_wait[NLEV]; /* model 84's wait for a load each level serves (model 89: L1's latency + the
                               rest times the vector width's scale; set up once, sim_setup.c) */
    double log2_lanes;
    cache shared[NLEV];
    core *cores;
    int ncores;
    double budget;
    double stall_lat[NLEV + 1];
    int in_parallel;
    double samp_sim, samp_total;
    loom_sim_result *r;
    loom_error *err;
    loom_status st;
    double deadline; /* loom_now_seconds() past which the run stops (<= 0: none) */
    int tick;        /* loop iterations until the clock is read again */
    /* first touches in sampled blocks (sim.h "Sampling", model 16); NULL
     * when the caches were prewarmed with every buffer */
    uint64_t **seen;    /* per buffer that fits in the last level: a bit per line touched so far */
    double *touches;    /* per buffer: touches of a line (other than its site's last) so far */
    double *firsts;     /* per buffer: first touches of a line so far */
    double *compulsory; /* per buffer: first touches that missed, each weighted by its skip */
    int cold_warm;       /* model 86: a warm-caches target whose data does not fit, so the run started cold */
    double stored_bytes; /* model 86: bytes of the non-local buffers ordinary stores write (first_touches) */
    double llc_share;   /* model 76: the share of the last level a warm-rule line keeps (first_touches) */
    /* pages written by more than one core in a parallel region (sim.h
     * "Shared pages", model 22); NULL when not tracked */
    int16_t **pg_writer;  /* per buffer, per 4 KiB page: -1 none, the core that stored to it, -2 several */
    uint32_t **pg_visits; /* per buffer, per page and core: the core's L1 misses on the page's lines */
    double xfer_cost;     /* stall of a visit to a page another core stores to (LOOM_SIM_PAGE_TRANSFER_MISSES) */
    uint8_t **owner;      /* model 67 (sim_cycles.c): per buffer, per line from owner_line0[buf]: 0 none,
                             else the id + 1 of the core that modified it; NULL when not tracked */
    uint64_t *owner_line0;
    double line_xfer;     /* a transfer's latency, cycles (the target's core_transfer_ns) */
    int dump;             /* LOOM_SIM_DUMP set: each core's region counters on stderr (sim.h "Cycles") */
    struct rterm *rt;     /* every region's per-core terms, combined at the end (loom__sim_finish) */
    int nrt, cap_rt;
} simx;

/* Every 4096 loop iterations, the clock against the deadline: past it the
 * run stops with LOOM_ERR_TIMEOUT (X->st stops every loop). */
static inline void deadline_check(simx *X)
{
    if (X->deadline <= 0 || --X->tick > 0)
        return;
    X->tick = 4096;
    if (X->st == LOOM_OK && loom_now_seconds() > X->deadline)
        X->st = loom_error_set(X->err, LOOM_ERR_TIMEOUT, NULL, 0, 0, "simulator: deadline passed");
}

static inline cache *level(simx *X, core *C, int l)
{
    (void)X;
    return C->lv[l];
}

/* a dirty victim of level l goes to level l + 1 (or DRAM) */
static inline void write_back(simx *X, core *C, int l, uint64_t victim_tag)
{
    while (victim_tag & 1) {
        uint64_t line = ((victim_tag & ~TAG_FLAGS) >> 1) - 1;
        if (l + 1 >= X->nlev) {
            C->c.dram += (double)(1 << X->line_shift);
            C->c.wb_lines += 1;
            return;
        }
        l++;
        uint64_t ev;
        cache_lookup(level(X, C, l), line, 1, &ev);
        victim_tag = ev;
    }
}

/* One line through the hierarchy; returns the level that hit (nlev: memory). */
static inline int line_access(simx *X, core *C, uint64_t line, int store)
{
    int l;
    C->pf_mem_load = 0;
    for (l = 0; l < X->nlev; l++) {
        uint64_t ev;
        C->c.acc[l] += 1;
        C->c.fill_acc[l] += store != 0;
        int hit = cache_lookup(level(X, C, l), line, l == 0 && store ? 1 : 0, &ev);
        if (ev & 1)
            write_back(X, C, l, ev);
        if (hit) {
            int pf = l > 0 && l + 1 == X->first_shared ? cache_take_pf(level(X, C, l), line) : 0;
            if (pf) {
                C->c.pf_useful += 1;
                C->c.fill_pf += store != 0;
            }
            if (pf == 2) /* a streamer line from memory, used: its DRAM bytes now */
                C->c.dram += (double)(1 << X->line_shift);
            C->pf_mem_load = pf == 2 && !store; /* model 43: touch_line may charge it */
            return l;
        }
        C->c.miss[l] += 1;
    }
    C->c.dram += (double)(1 << X->line_shift);
    return l;
}

/* ---- memory accesses ---- */

/* A line first touched in a sampled block (sim.h "Sampling", model 16):
 * had the skipped iterations run, would they have touched it already?
 * Each simulated iteration in a sampled block stands for `skip` of the
 * whole run's.
 *  - Warm caches (a previous run left what fits): it was touched before
 *    with the probability that a touch of its buffer is not the line's
 *    first, 1 - 1 / R, R = 1 + (r - 1) skip the buffer's touches per line
 *    over the run, r those of the simulated iterations so far (the
 *    re-touches scale with the iterations); drawn by a hash of the line.
 *  - Cold caches: the whole run misses once on each line of the buffer
 *    (compulsory).  A first touch is such a miss while the buffer's
 *    compulsory misses so far, weighted by skip as the block's counters
 *    are, stay within its lines; past that the skipped iterations brought
 *    it in.
 * Either way a streamed buffer (r = 1; one line in skip sampled) stays
 * cold, and a line judged touched before is put in the last level first
 * (a hit there).  Touches in functional warming (counters thrown away)
 * only mark the line. */
/* line into the shared levels (no shared level: this core's last), as
 * prewarm() leaves lines; a dirty victim is written back */
static inline void place_in_shared(simx *X, core *C, uint64_t line)
{
    for (int l = X->first_shared < X->nlev ? X->first_shared : X->nlev - 1; l < X->nlev; l++) {
        uint64_t ev;
        cache_lookup(level(X, C, l), line, 0, &ev);
        write_back(X, C, l, ev);
    }
}

/* The warm rule's draw: did the skipped iterations touch line of buf
 * before, with probability 1 - 1 / R, R = 1 + (r - 1) skip (r: the buffer's
 * touches per first touch so far), times model 76's llc_share?  A hash. */
static inline int warm_touched_before(const simx *X, int buf, uint64_t line, double skip)
{
    double R = 1 + (X->touches[buf] / X->firsts[buf] - 1) * skip;
    uint64_t h = line * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing: uniform in [0, 2^64) */
    return (double)(h >> 11) * 0x1p-53 < (1 - 1 / R) * X->llc_share;
}

static inline void sampled_first_touch(simx *X, core *C, int buf, uint64_t line)
{
    if (buf < 0 || !X->seen[buf])
        return;
    const sbuf *B = &X->p->bufs[buf];
    uint64_t i = line - (B->base >> X->line_shift), bit = (uint64_t)1 << (i & 63);
    if (i >> 6 >= ((B->bytes >> X->line_shift) >> 6) + 2) /* outside the buffer (its bits: first_touches) */
        return;
    uint64_t *w = &X->seen[buf][i >> 6];
    X->touches[buf] += !C->warming;
    if (*w & bit)
        return;
    *w |= bit;
    if (C->warming)
        return;
    X->firsts[buf] += 1;
    double skip = C->skip > 1 ? C->skip : 1;
    if (skip <= 1) {
        X->compulsory[buf] += 1;
        return;
    }
    if (X->t->warm_caches) {
        if (!warm_touched_before(X, buf, line, skip))
            return;
    } else if (X->compulsory[buf] + skip <= (double)((B->bytes >> X->line_shift) + 1)) {
        X->compulsory[buf] += skip;
        return;
    }
    place_in_shared(X, C, line);
}

/* A line the streamer fetches ahead (sim_machine.h "Streamer", model 18) that no
 * simulated iteration touched yet, in a sampled block on a warm target:
 * sampled_first_touch's warm rule decides whether the skipped iterations
 * left it in the last level, without marking or counting it (the demand
 * access that follows is its touch).  On a cold target it is a miss. */
static inline void sampled_prefetch(simx *X, core *C, int buf, uint64_t line)
{
    if (buf < 0 || !X->seen[buf] || C->warming || !X->t->warm_caches || C->skip <= 1 || X->firsts[buf] <= 0)
        return;
    const sbuf *B = &X->p->bufs[buf];
    uint64_t i = line - (B->base >> X->line_shift), bit = (uint64_t)1 << (i & 63);
    if (i >> 6 >= ((B->bytes >> X->line_shift) >> 6) + 2 || (X->seen[buf][i >> 6] & bit))
        return;
    if (warm_touched_before(X, buf, line, C->skip))
        place_in_shared(X, C, line);
}

/* The L2 streamer (sim_machine.h "Streamer", model 18): after an ascending
 * sequential miss at line, the next stream_lines lines of its 4 KiB page
 * come into the last private level (and the shared ones on the way), as
 * prefetches: no access or miss counted; memory's bytes counted when a
 * demand access uses the line in the private level (model 29). */
static inline void stream_ahead(simx *X, core *C, int buf, uint64_t line)
{
    int l0 = X->first_shared - 1, ps = STREAM_PAGE_SHIFT - X->line_shift;
    if (l0 < 1)
        return; /* no private level below L1 to fetch into */
    for (uint64_t p = line + 1; p <= line + (uint64_t)X->t->stream_lines && (p >> ps) == (line >> ps); p++) {
        if (X->seen)
            sampled_prefetch(X, C, buf, p);
        int l = l0;
        for (; l < X->nlev; l++) {
            uint64_t ev;
            int hit = cache_lookup(level(X, C, l), p, 0, &ev);
            write_back(X, C, l, ev);
            if (hit)
                break;
        }
        /* fetched past the private levels: counted once used (pf_useful); from
           memory, its DRAM bytes too (model 29) */
        if (l > l0)
            cache_mark_pf(level(X, C, l0), p, l == X->nlev ? TAG_PF | TAG_PFMEM : TAG_PF);
    }
}

/* sim_machine.h "Shared pages" (model 22), in a parallel region: a store of core
 * C to a line of buf marks its 4 KiB page as C's (-2 once two cores have
 * stored to it); an L1 miss on a line of buf counts a visit of C to its
 * page (functional warming only marks). */
static inline void page_store(simx *X, core *C, int buf, uint64_t line)
{
    const sbuf *B = &X->p->bufs[buf];
    uint64_t pg = ((line << X->line_shift) - B->base) >> STREAM_PAGE_SHIFT;
    if (pg >= (B->bytes >> STREAM_PAGE_SHIFT) + 1)
        return;
    int16_t *w = &X->pg_writer[buf][pg];
    *w = *w == -1 || *w == C->id ? (int16_t)C->id : -2;
}

static inline void page_visit(simx *X, core *C, int buf, uint64_t line)
{
    const sbuf *B = &X->p->bufs[buf];
    uint64_t pg = ((line << X->line_shift) - B->base) >> STREAM_PAGE_SHIFT;
    if (pg >= (B->bytes >> STREAM_PAGE_SHIFT) + 1)
        return;
    if (C->warming)
        return;
    X->pg_visits[buf][pg * (uint64_t)X->ncores + (uint64_t)C->id] += 1;
    C->c.pvis += 1;
    if (buf < PVIS_BUFFERS)
        C->c.pvis_buf[buf] += 1;
}

/* The latency of an access served at level l, in cycles: a cache level's
 * "latency"; memory (l == nlev) the last level's plus latency_ns. */
static inline double level_latency(const simx *X, int l)
{
    const loom_target *t = X->t;
    return l < X->nlev ? t->caches[l].latency : t->caches[X->nlev - 1].latency + t->mem_latency_ns * t->ghz;
}

/* Model 84 (sim.h "Independent chains"; targets with issue_chain_norm, which
 * loom calibrate writes): a demand load served at level lev -- 0 for an L1
 * hit or a line a prefetcher brought, memory as the last cache level (the
 * rest of a miss's latency is the stall's and model 51's) -- is the slowest
 * since the core's last accumulation when its latency is the largest yet. */
static inline void note_load(const simx *X, core *C, int lev)
{
    if (X->t->issue_chain_norm <= 0)
        return;
    double l = X->load_wait[lev < X->nlev ? lev : X->nlev - 1]; /* model 89 (sim_setup.c) */
    if (C->load_lat < l)
        C->load_lat = l;
}

/* sim.h "Late prefetches" (model 50): a core's progress in the current region, in cycles -- its
 * issue slots, the stalls and extra cycles charged so far, or the time its memory bytes take at
 * the core's bandwidth, the longer -- and the slot of a line. */
static inline double core_clock(const simx *X, const core *C)
{
    const loom_target *t = X->t;
    double issue = (C->c.fp + C->c.ld + C->c.st + C->c.iops) / t->issue_width + C->c.stall / t->mlp + C->c.extra +
                   C->c.spill;
    double dram = C->c.dram * t->ghz * 1e9 / t->core_bandwidth;
    return issue > dram ? issue : dram;
}

static inline int pf_slot_of(uint64_t line)
{
    return (int)((line * 0x9E3779B97F4A7C15ULL) >> (64 - LOOM_SIM_PREFETCH_SLOT_BITS));
}

/* A demand access to a line a software prefetch brought from a shared level
 * or memory: when less time has passed since the prefetch than that
 * level's latency, the rest of the latency, shared by the lines of the
 * prefetched range (they arrive together), capped at what a demand miss
 * there costs (a late prefetch costs no more than none), overlapped with
 * the core's work as the target's overlap says.  Returns the level the
 * prefetch brought the line from (0: the line was not a tracked prefetch).
 *
 * Wasted prefetches (model 91): touch_line charges a demand access that
 * finds such a line gone from L1 as though the line had not been
 * prefetched -- the stall, stream rules and load wait (model 84) of the
 * level the prefetch brought it from, not of the L2 copy it finds; model
 * 51's long-miss penalty stays with the level that served it (the line is
 * on chip: counted at the prefetch's level, PubMed lost 0.03-0.23).
 * Prefetches made while warming are tracked too (without a clock: never
 * late), so a sampled run's first rows see the lines its warm-up
 * prefetched.  Why: prefetching 64 nonzeros ahead keeps 512 lines of B's
 * rows (F = 128) in flight, L1's whole 32 KiB on Zen 4, and measured like
 * no prefetch at all -- Facebook and PubMed F = 128 on the Zen 4 host
 * (2026-12-07, seed-3 and seed-4 records, AVX-512 and AVX2), 0.98-1.16x
 * the kernel without over 1-9 one-decision pairs a set (simulated
 * 0.75-1.08x), 1.12-1.47x the kernel prefetching 4 or 16 ahead; a copy of
 * Facebook's kernels (fastest of 60 runs) 1.13-1.22x the 16-ahead one and
 * within 1-6% of none, and 0.90-1.09x with prefetcht1/t2 (into L2) at 64.
 * Counting the L2 copy's cost alone (before) simulated those pairs
 * 0.75-1.08x; with this rule 0.97-1.21x.  On issue 29's 32 cells the mean
 * Spearman went 0.8717 -> 0.8769 (Facebook seed-3 AVX2 0.702 -> 0.848;
 * the 5e7 sample budget, runs close to whole, 0.865 before and after: the
 * sampled run now agrees with the whole one). */
static __attribute__((noinline)) int pf_arrival(simx *X, core *C, uint64_t line)
{
    pf_slot *q = &C->pf[pf_slot_of(line)];
    if (q->line != line + 1)
        return 0;
    const loom_target *t = X->t;
    double left = level_latency(X, q->lev) - (core_clock(X, C) - q->stamp);
    if (left > 0) {
        double miss = X->stall_lat[q->lev] / t->mlp;
        double wait = left / q->lines;
        C->c.extra += (1 - t->overlap) * (wait < miss ? wait : miss);
    }
    q->line = 0;
    C->npf--;
    return q->lev;
}

/* The cache side of one access at addr by a site.  A site touching the
 * line it touched last is an L1 hit without an LRU update (the line was
 * just used; evicting it in between would take `ways` other lines of its
 * set). */
static void touch_line(simx *X, core *C, int site, int buf, uint64_t line, int store);
static inline void touch(simx *X, core *C, int site, int buf, uint64_t addr, int store)
{
    uint64_t line = addr >> X->line_shift;
    if (C->last_line[site] == line + 1) {
        C->c.acc[0] += 1;
        if (!store)
            note_load(X, C, 0);
        return;
    }
    touch_line(X, C, site, buf, line, store);
}

/* touch past its first check: line is not the one the site touched last.
 * Kept out of line so the check above inlines into the per-lane paths
 * (the simulator's hottest code; the counts are the same either way). */
/* sim_cycles.c "Core-to-core lines" (model 67): core C touches line of buf.  1 when another
 * core modified it: C's stale private copies are dropped, so the access
 * misses past C's private levels.  A store makes the line C's; a load of
 * another core's line leaves it clean in both (the owner cleared). */
static inline int line_owner(simx *X, core *C, int buf, uint64_t line, int store)
{
    uint64_t i = line - X->owner_line0[buf];
    if (i >= (X->p->bufs[buf].bytes >> X->line_shift) + 2) /* a shift: this runs on every access */
        return 0;
    uint8_t *o = &X->owner[buf][i], me = (uint8_t)(C->id + 1);
    int xfer = *o && *o != me;
    if (xfer)
        for (int l = 0; l < X->first_shared; l++)
            cache_evict(&C->priv[l], line);
    if (store)
        *o = me;
    else if (xfer)
        *o = 0;
    return xfer;
}

/* Model 95 ("Stride prefetch"): the copy's own misses, its state past the sites'
 * (sim_setup.c); its run of sequential or constant-stride misses when line
 * continues it, else -1. */
static int copy_stream(simx *X, core *C, int site, uint64_t line)
{
    size_t i = (size_t)(X->p->nsites > 0 ? X->p->nsites : 1) + (size_t)site * LOOM_SIM_COPY_SITES +
               (size_t)((C->copy - 1) % LOOM_SIM_COPY_SITES);
    uint64_t last = C->last_miss[i];
    int64_t d = (int64_t)(line - last);
    int on = last && (d == 1 || d == -1 || (d == C->last_stride[i] && llabs(d) <= X->t->stride_prefetch_lines));
    C->last_stride[i] = on ? C->last_stride[i] : d;
    C->last_miss[i] = line;
    C->run[i] = on ? (unsigned char)(C->run[i] < 255 ? C->run[i] + 1 : 255) : 0;
    return on ? C->run[i] : -1;
}

static __attribute__((noinline)) void touch_line(simx *X, core *C, int site, int buf, uint64_t line, int store)
{
    int after = line && C->last_line[site] == line; /* model 96: the site's previous access was the line before */
    C->last_line[site] = line + 1;
    int xfer = X->owner && buf >= 0 && X->owner[buf] ? line_owner(X, C, buf, line, store) : 0;
    if (X->seen)
        sampled_first_touch(X, C, buf, line);
    if (store && X->pg_writer && X->in_parallel && buf >= 0 && X->pg_writer[buf])
        page_store(X, C, buf, line);
    int pf_lev = C->npf > 0 ? pf_arrival(X, C, line) : 0; /* model 91: a tracked prefetch's level */
    /* fast path: the most recent line of its L1 set */
    cache *K = level(X, C, 0);
    uint64_t set = cache_set(K, line);
    uint64_t *w = K->tags + set * (uint64_t)K->ways;
    if (K->used[set] && (w[0] & ~TAG_FLAGS) == (line + 1) << 1) {
        w[0] |= (uint64_t)(store != 0);
        C->c.acc[0] += 1;
        if (!store)
            note_load(X, C, 0);
        return;
    }
    if (X->pg_writer && X->in_parallel && buf >= 0 && X->pg_writer[buf])
        page_visit(X, C, buf, line);
    /* A miss on the line next to the site's previous miss (or access, model 96) is a
     * stream the hardware prefetcher brought in: no stall -- from the private levels
     * at once but a short run's pairs (model 77), from the shared levels and memory
     * once STREAM_TRAIN sequential misses have trained it (sim.h "memory", model 7). */
    int hit = line_access(X, C, line, store), waited = 0; /* waited: the level whose latency it stalled for */
    int from = pf_lev > hit && hit > 0 ? pf_lev : hit; /* model 91 (pf_arrival): evicted, as if not prefetched */
    /* model 43 (sim_machine.h "Streamer"): a line the streamer brought from memory, loaded
       before the site's run of sequential lines reaches the streamer's look-ahead
       (a gathered row read at once), is still on its way: part of a memory miss's stall */
    if (C->pf_mem_load && C->run[site] < X->t->stream_lines)
        C->c.stall += LOOM_SIM_STREAMER_MEMORY_LINE_STALL * X->stall_lat[X->nlev];
    if (hit > 0) {
        uint64_t last = C->last_miss[site];
        int stream = line == last + 1 || line + 1 == last, adjacent = stream;
        /* model 49 (sim_machine.h "Stride prefetch"): a non-sequential miss as far
           from the site's previous miss as that one's non-sequential
           predecessor was is a stride the core's prefetcher follows */
        if (!stream && X->t->stride_prefetch_lines > 0 && last) {
            int64_t d = (int64_t)(line - last);
            if (d == C->last_stride[site] && (d < 0 ? -d : d) <= X->t->stride_prefetch_lines)
                stream = 1;
            C->last_stride[site] = d;
        }
        C->last_miss[site] = line;
        if (line == last + 1 && X->t->stream_lines > 0)
            stream_ahead(X, C, buf, line);
        C->run[site] = stream ? (unsigned char)(C->run[site] < 255 ? C->run[site] + 1 : 255) : 0;
        int run = C->run[site], own = C->copy && X->t->stride_prefetch_lines > 0 ? copy_stream(X, C, site, line) : -1;
        if (own >= 0 && (!stream || own > run)) /* model 95: the copy's own instruction walks a stream */
            stream = 1, run = own;
        if (!stream && after && X->t->stride_prefetch_lines > 0) /* model 96: a walk the prefetchers watched */
            stream = 1, run = STREAM_TRAIN;
        int pair = adjacent && !(line & 1) && from < X->first_shared && run < LOOM_SIM_PAIR_RUN_LINES &&
                   X->t->issue_chain_norm > 0; /* model 77 (sim_constants.h): a pair's even line, a miss */
        if (!stream || pair || (run < STREAM_TRAIN && from >= X->first_shared)) {
            C->c.stall += X->stall_lat[from];
            waited = from;
            if (xfer && !C->warming && !store)
                C->c.xfer_miss += 1;
            else
                C->c.stall_miss[hit] += 1;
        }
    }
    if (!store)
        note_load(X, C, waited);
}

/* An update of a register tile's spilled vector: model 33's cycles beside the
 * instructions, model 81's past a few, model 97's share of the round trips. */
static inline void spilled_update(ctr *c, const sbuf *B)
{
    c->spill += LOOM_SIM_SPILL_UPDATE_CYCLES;
    c->extra += B->spill_excess;
    c->spill_chain += B->spill_chain_share;
}

static inline void mem(simx *X, core *C, int site, int buf, int64_t idx, int store)
{
    const sbuf *B = &X->p->bufs[buf];
    uint64_t addr = B->base + (uint64_t)idx * 4 + (B->local ? (uint64_t)C->id << 20 : 0);
    int reg = loom__sim_in_register(B, idx); /* model 33: a spilled vector of a register tile is memory */
    C->c.events += 1;
    if (C->vmode) {
        vsite *v = &C->vs[site];
        if (v->lanes > 0) {
            int k = addr == v->prev ? 1 : addr == v->prev + 4 ? 2 : 3;
            v->cls = v->cls == 0 ? k : v->cls == k ? k : 3;
        } else
            v->first = addr;
        v->prev = addr;
        v->lanes++;
        v->store = store;
        v->reg = reg;
        v->buf = buf;
    } else if (reg)
        return; /* a register-resident workspace: no load, store or cache access */
    else if (store) {
        C->c.st += 1;
        if (B->reg)
            spilled_update(&C->c, B);
    } else
        C->c.ld += 1;
    if (!reg)
        touch(X, C, site, buf, addr, store);
}

/* cycles of a dependent FP add/FMA (sim.h "Latency chain") */
#define FP_LATENCY 4.0

/* sim_chain.c (sim.h "Latency chain", "Independent chains"): an
 * accumulation of s at element i of its store buffer (in_registers: the
 * buffer is register-resident, no store forwarding, or an intermediate's
 * row cc keeps in a register and stores every time, model 54); an update of float
 * local v from itself; an assignment of v that does not read it (a new
 * segment of its chain); a LOCAL workspace b's fill (a new segment; row: a
 * CSR row's, model 62); a new overlap group (after functional warming). */
void loom__sim_accumulate(core *C, const sst *s, int64_t i, int in_registers);
void loom__sim_accumulate_local(core *C, int v);
void loom__sim_local_chain(core *C, int v, double x);
void loom__sim_local_restart(core *C, int v);
void loom__sim_workspace_restart(core *C, int b, int row);
void loom__sim_chain_new_group(core *C);

/* Account the counters every core gathered since the last flush as one
 * region (sim.h "Cycles"), scaling core k's by scale[k] (NULL: 1)
 * (sim_cycles.c). */
void loom__sim_flush(simx *X, int parallel, const double *scale);
void loom__sim_finish(simx *X);

/* sim_phase.c ("Phases", model 64): swap a core's counters with its
 * other phase's, the work counter (events, the sampling's budget) kept
 * running. */
void loom__sim_phase_swap(core *C);

/* sim_machine.h "Shared pages" (model 22; sim_cycles.c): the page tables of a
 * target with more than one core and a streamer, and the transfer cost
 * (0, or -1 out of memory: loom__sim_pages_free frees what was made);
 * freeing them. */
int loom__sim_pages_init(simx *X);
void loom__sim_pages_free(simx *X);

/* sim_setup.c: the machine of X, whose p, t and r are set -- its levels,
 * line size and miss stalls, the cores with their counters, predictors and
 * private caches, the shared levels, the page tables, the warm caches
 * (sim_machine.h "Warm caches") and the touch bits of sampled first touches.
 * LOOM_ERR_NOMEM (in err) with everything freed when out of memory; freed
 * by loom__sim_machine_free, which also frees a part-made machine. */
loom_status loom__sim_machine_init(simx *X, loom_error *err);
void loom__sim_machine_free(simx *X);

#endif
