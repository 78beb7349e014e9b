/* loom: the host calibrated -- the simulator's model of this machine from
 * microbenchmarks run on it (`loom calibrate`, issue 29).
 *
 * What is measured (runtime/target/calibrate_bench.inc, compiled at run time
 * with the flags kernels get, runtime/measure/build.h, and run in a forked
 * child so that its OpenMP threads never live in the calling process; every
 * figure is the best of several short runs, the run least disturbed on a
 * loaded machine):
 *   - the clock: dependent integer adds (one cycle each) -> ghz;
 *   - per cache level (sizes, ways and line from sysfs, else
 *     sysconf(_SC_LEVEL*_CACHE_*), loom_target_host) at a working set
 *     inside the level (half of L1; the geometric mean of a level's size and
 *     the one below it) and for memory (twice the effective last level, 64
 *     to 128 MiB): load latency (a pointer chase over randomly ordered
 *     lines), sequential load bandwidth (8 vector accumulators) and the time
 *     of one gathered element (s += x[idx[i]], random idx);
 *   - the effective size of the last level: chase latency at working sets
 *     doubling from 2x L2 up to twice the reported size (at most 64 MiB),
 *     six sweeps spread over the calibration, each working set's fastest
 *     reading kept; the largest whose latency stays below the midpoint of
 *     the level's and memory's (a VM slice sees less than the socket's L3).
 *     When the sweeps' readings at the kept size or above differ by more
 *     than 1.5x, the log gets a note: another tenant was using the cache,
 *     and the size may be less than the quiet machine's;
 *   - store bandwidth to memory with plain (write-allocate) and
 *     non-temporal stores (one thread; non-temporal also every thread),
 *     each after an untimed first pass; the triad a = b + s c with one
 *     thread and with every thread (bytes counted as the simulator counts
 *     them: 16 per element, write-allocate included);
 *   - FMAs per cycle with 16-, 32- and 64-byte vectors (12 chains), and FMAs
 *     and adds per cycle in one loop at the native width (model 70);
 *   - an OpenMP parallel region (fork/join) and a barrier;
 *   - whether cc vectorizes a gather loop (scalar / vector time of the same
 *     loop in L1);
 *   - what cc tunes for (`cc -march=native -Q --help=target`, not timed):
 *     shared_load_copies = 3 under GCC's Zen tuning, else 0 (machine.h);
 *   - the base page size (`sysconf(_SC_PAGESIZE)`, not timed): page_bytes,
 *     model 66's physically indexed levels (calibrate_system.c);
 *   - a cache line two threads pass back and forth (measure.h
 *     loom_measure_core_line_ns): core_transfer_ns, half the median round
 *     trip of five (model 67);
 *   - two pointer chases through memory with fillers between their loads
 *     (loom_calibrate_reorder_window): reorder_window, the instructions the
 *     reorder buffer holds (model 82).
 * Mapped onto the target (every figure's source is written beside it):
 * ghz; fma_units = FMAs per cycle at the native width, rounded;
 * fadd_units = the operations per cycle of FMA chains and add chains in
 * one loop less the FMAs alone, rounded (model 70: Zen's add pipes); cache
 * latencies in cycles (made increasing); memory latency_ns = memory chase
 * minus the last level's; core_bandwidth / bandwidth = triad with one /
 * every thread; nt_bandwidth = non-temporal stores with every thread;
 * mlp = memory chase latency / gathered element time at memory (the
 * misses one core overlaps); gather_cycles_per_lane = L1 gathered element
 * cycles minus a sequential element's; parallel_overhead_ns
 * = the region's cost; issue_width = independent integer adds per cycle;
 * branch_miss_cycles = twice the extra time per branch of a loop on random
 * bits over the same loop always taken; branch_memory (runtime/sim/sim.h
 * "Branch memory") = for random sequences of 2 Ki to 512 Ki bits
 * repeated, the extra time per branch over the unlearned one's, keyed by
 * the branches a pass executes (the loop's own too: twice the bits).  Not measured (kept at
 * targets/spr-2c.json's fitted values, said so in the figures): overlap,
 * masked_lane_cycles, exp_cycles, div_cycles, memory ports.
 *
 * The target's name is "host-<8 hex>", the CPU fingerprint: FNV-1a of the
 * /proc/cpuinfo model name, family, model and stepping, the vector width
 * loom uses (LOOM_HOST_ISA counts) and the number of cores; its "cpu" key
 * says the model and ISA.  It is cached in
 * $LOOM_CACHE/targets/host-<8 hex>.cal<N>.json (else ~/.cache/loom/targets,
 * else /tmp/loom-cache/targets), N = LOOM_CALIBRATION_FORMAT, and read back
 * from there by loom_target_load("host") (also "sim", "sim:host"); a
 * calibration an older loom cached (fewer figures) is not read, so the
 * first use measures the host again.
 *
 * Time: about 14 s of CPU; on a 2-core machine shared by five other
 * builds (load 9) 50 s of wall time (quick mode: a few seconds).
 */
#ifndef LOOM_CALIBRATE_H
#define LOOM_CALIBRATE_H

#include <stddef.h>
#include <stdio.h>

#include "target.h"

/* The calibration's format, in its cache file's name: 21 measures the
 * store bandwidths after an untimed first pass and writes model 99's
 * memory nt_bandwidth, non-temporal stores with every thread (calibrate.c
 * map_memory; the first pass over a freshly written buffer read 47-68
 * GB/s on Zen 4 where every later one read 28); 20 writes model
 * 92's narrow_fma_units (calibrate.c map_model); 19 writes model
 * 85's issue_chain_norm of 3 (calibrate_system.c); 18 measures model
 * 82's reorder_window (calibrate.c map_core); 17 measures model
 * 70's fadd_units (calibrate.c map_model); 16 measures model
 * 67's core_transfer_ns (calibrate_system.c); 15 writes model
 * 66's page_bytes, the base page size (calibrate.c map_pages); 14 measures model
 * 49's stride_prefetch_lines with strided pointer chases (calibrate.c
 * map_model); 13 sweeps the last
 * level's size with gathered lines, not a pointer chase, and measures the
 * last level's latency, bandwidth and gathers at twice the level below (a
 * format-12 file of a Zen 5 VM holds a 2-4 MiB last level where kernels
 * kept 16 MiB, calibrate.c sweep_llc); 12 sweeps the last
 * level's size six times over the calibration and keeps each working
 * set's best reading (a format-10 file may hold a neighbour's burst: 8 MiB
 * where the level gave 16 MiB, calibrate.c sweep_llc), and takes the FMA
 * rates three times and the clock twice, keeping the best (one disturbed
 * calibration read 1 FMA pipe of 2 and 2.89 of 2.99 GHz); 11 was model 24's
 * reorder_window, on main for a day (f1ed8da) and withdrawn, so a format-11
 * file holds a key this loom rejects and is never read; 10 measures the
 * issue rate three times and keeps the best (a format-9 file may hold an
 * issue_width of 4 for a 6-wide Emerald Rapids core: one calibration read
 * that while every rerun read 6); 9 writes the first
 * shared level's bandwidth and a sample_budget (model 21); 8 sweeps the last
 * level's size from twice the level below (loom_calibrate_llc_size; a
 * format-7 file may hold the reported 260 MiB of a VM's shared socket and a
 * last-level latency measured in memory); 7 writes model 19's
 * bandwidth of the private levels past L1; 6 model 18's stream_lines; 5
 * times the OpenMP
 * region and barrier one by one and keeps a run's median, and a region
 * over 100 us is not taken (a mean over a loaded machine's time slices read
 * 7.68 ms a region on Emerald Rapids, a figure that made every parallel
 * schedule look slow), and writes model 15's peel_times and
 * issue_chain_norm; 4 measures the clock
 * with register adds (an immediate add chain read 4x the clock on Emerald
 * Rapids, so format-3 files there are wrong), 3 added
 * shared_load_copies, 2 branch_memory (1: host-<8 hex>.json, the figures
 * before it). */
#define LOOM_CALIBRATION_FORMAT 21

/* The last cache level's effective size, in bytes, from the times
 * lat[0..n) of a gathered line (ns a line, any unit; loom calibrate's sweep
 * of random lines since format 13, a pointer chase's latencies before) at
 * working sets ws[0..n)
 * (bytes, ascending; loom calibrate doubles them from twice the level
 * below's size up to 64 MiB): the largest working set whose next one is
 * still below the midpoint of the first and last latencies, at most
 * reported (the size the machine reports).  When there is no step -- fewer
 * than 3 points, or the last latency under 1.5x the first -- the level is
 * at least as large as the sweep: reported.  On a VM whose socket's last
 * level is shared with other tenants the effective size is a fraction of
 * the reported one and moves with their load (Emerald Rapids, 260 MiB
 * reported, chased: 44 ns at 4 MiB, 52 at 8, 137 at 16, 182 at 64 -- 8 MiB).  The
 * sweep starts at twice the level below, not four times: with the 8 MiB
 * point already slowed by the neighbours the sweep from 8 MiB found no step
 * and took the reported 260 MiB, so the "L3" latency was measured in memory
 * (482 cycles). */
double loom_calibrate_llc_size(const double *ws, const double *lat, int n, double reported);

/* The reorder window, in instructions, from the times ns[0..n) (ns an
 * iteration, any unit) of loom calibrate's two pointer chases with
 * pairs[0..n) filler pairs after each load (ascending; Henry Wong's
 * method, "Measuring Reorder Buffer Capacity", blog.stuffedcow.net, 2013):
 * an iteration takes one memory latency while the two loads and the
 * 2 pairs fillers between them fit in the buffer, two past it.  The first
 * point over 1.5x the least of the first four, with the next one over it
 * too (a single slow run is another program's burst, not the step), is
 * the first that did not fit; the window is the midpoint of its 2 pairs + 2
 * instructions and the previous point's.  0 when there is no such step --
 * fewer than 3 points, none over 1.5x, or the first already over -- and
 * the simulator keeps LOOM_SIM_REORDER_WINDOW_INSTRUCTIONS.  On Zen 4
 * (320-entry reorder buffer) the chases read 157-180 ns an iteration to
 * 152 pairs and 320-357 ns from 160: 314 (2026-12-06). */
double loom_calibrate_reorder_window(const double *pairs, const double *ns, int n);

/* The CPU fingerprint (8 hex digits) of this host, into buf (>= 9 bytes). */
void loom_calibrate_fingerprint(char *buf, size_t n);

/* The cache file of this host's calibration (the file may not exist). */
void loom_calibrate_path(char *buf, size_t n);

/* Run the microbenchmarks (quick: shorter, for tests) and build the
 * calibrated target *out; *json (may be NULL) receives the target file's
 * text (malloc'd; the caller frees it) with a "calibration" object:
 * date, mode, seconds, calibrations (how many were folded into it),
 * llc_disturbed (true: the last level's sweeps disagreed by over 1.5x at
 * the size kept or above -- other work shared the cache; a note says so),
 * figures {key: {value, unit, source}} and readings (the microbenchmarks'
 * raw results: ns, bytes/ns, per-ns rates).  log (may be NULL) gets what
 * was measured and notes on disturbed readings.
 *
 * earlier (may be NULL): the text of an earlier target file of this CPU
 * (what `loom calibrate` finds cached).  When it is a calibration of the
 * same CPU, mode and configuration (threads, vector width, cache levels,
 * sweep sizes) its readings are folded in, each the better of the two: a
 * time the least, a rate or bandwidth the most, the last level's sweep
 * per working set the fastest (its size then re-read from the folded
 * sweep), the branch figures together from the run whose predictable
 * branches ran fastest.  Why: on a shared machine each reading is slowed by
 * whatever else ran in its few milliseconds, never sped up, so the best
 * of several calibrations minutes apart stands for the quiet machine
 * (docs/simulator.md, "`loom calibrate`": "Calibrating again folds the
 * earlier readings in"; the Emerald Rapids VM read its L3 at 4,
 * 8 and 16 MiB in three calibrations of 2026-12-02).  Anything else in
 * earlier (another CPU or mode, an older file without readings, text that
 * does not parse) is ignored: a fresh calibration.
 * Errors: LOOM_ERR_BUILD (the compiler failed on the microbenchmarks),
 * LOOM_ERR_RUN (the child died, timed out after 120 s or gave figures that
 * are not finite and positive), LOOM_ERR_IO, LOOM_ERR_NOMEM. */
loom_status loom_calibrate_run(int quick, const char *earlier, FILE *log, loom_target *out, char **json,
                               loom_error *err);

/* Write json to the cache file of this host: replace = 1 overwrites (what
 * `loom calibrate` does), 0 keeps a file another process wrote first (so
 * that concurrent first uses agree on one calibration).  path (may be
 * NULL) receives the file name.  Errors: LOOM_ERR_IO. */
loom_status loom_calibrate_save(const char *json, int replace, char *path, size_t n, loom_error *err);

/* First use of the calibrated host with no calibration cached: print one
 * line to stderr saying so, calibrate (quick: quick mode) and save it with
 * replace = 0 (a file another process wrote first wins); one more line,
 * a note, when the last level's readings were disturbed (llc_disturbed).  The caller then
 * reads the cached file (loom_target_load("host") does all of this:
 * target.h).  Errors: those of loom_calibrate_run and loom_calibrate_save. */
loom_status loom_calibrate_first_use(int quick, loom_error *err);

#endif
