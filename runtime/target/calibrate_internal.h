/* The host calibration's raw readings, shared by calibrate.c (which
 * measures them and maps them onto a target) and calibrate_fold.c (which
 * keeps them in the target file and folds an earlier calibration's in).
 * Internal: not installed. */
#ifndef LOOM_CALIBRATE_INTERNAL_H
#define LOOM_CALIBRATE_INTERNAL_H

#include <cjson/cJSON.h>

#include "../../dsl/ir/limits.h"
#include "target.h"

#define NLEV (LOOM_TARGET_MAX_CACHES + 1) /* cache levels, then memory */
#define NSWEEP 8
/* random branch sequences the branch-memory bench repeats (bits; with the
 * loop's own branch, 4 Ki to 1 Mi branches a pass) */
#define NBRMEM 6
/* strides (lines) of the strided pointer chases (model 49) */
#define NSTRIDE 4
/* filler counts of the reorder-window chase (model 82) */
#define NROB 40

/* What the child measures (plain doubles: it crosses a pipe). */
typedef struct craw {
    double clock_ns;                      /* ns per cycle */
    double nlev;                          /* cache levels measured; memory at [nlev] */
    double ws[NLEV], lat_ns[NLEV], rd_bw[NLEV], gat_ns[NLEV];
    double gat_scalar_l1, gat_auto_l1, gat_auto_scalar_l1;
    double nsweep, sweep_ws[NSWEEP], sweep_lat[NSWEEP], sweep_hi[NSWEEP], llc_eff; /* hi: the slowest sweep's */
    double st_bw, st_nt_bw, st_nt_all, triad1, triadn, readn;
    double fma[3];                        /* FMAs per ns with 16, 32, 64-byte vectors */
    double fma_add;                       /* FMAs and adds per ns, mixed, at the native width */
    double omp_region, omp_barrier, threads, vbytes;
    double issue_per_ns, br_random_ns, br_pred_ns;
    double br_mem_ns[NBRMEM];             /* loom_calib_branch_memory at br_mem_bits[k] */
    double stride_ns[NSTRIDE], stride_rand_ns[NSTRIDE]; /* loom_calib_stride_chase at stride_lines[k] */
    double rob_pairs[NROB], rob_ns[NROB]; /* loom_calib_reorder: filler pairs, ns an iteration (0: no point) */
} craw;

/* r's readings as a JSON object {name: number or [numbers]} (NULL out of
 * memory): the target file's calibration.readings. */
cJSON *loom__calib_readings_json(const craw *r);

/* The readings of the earlier target file text `earlier` into *e, and how
 * many calibrations it holds into *count: 1 when it is a calibration of
 * CPU `cpu` in this mode (quick or full) with every reading, else 0
 * (another CPU or mode, an older format, text that does not parse). */
int loom__calib_earlier_readings(const char *earlier, const char *cpu, int quick, craw *e, int *count);

/* Fold the earlier readings e into this calibration's r, each the better
 * of the two (calibrate.h, loom_calibrate_run), all but the last level's
 * size (llc_eff), which the caller reads again from the folded sweep
 * (loom_calibrate_llc_size).  0 if the two measured different
 * configurations (r unchanged). */
int loom__calib_fold(craw *r, const craw *e);

/* The figures a calibration writes into the target file (calibration.figures):
 * calibrate.c makes the object, loom__calib_fig (calibrate_system.c) adds one
 * figure -- its value, unit and source. */
typedef struct figs {
    cJSON *obj;
} figs;
void loom__calib_fig(figs *g, const char *key, double v, const char *unit, const char *source);

/* calibrate_system.c: shared_load_copies and the fixed model keys from what cc
 * tunes for (-march=native's -mtune), and model 66's page_bytes from the OS. */
void loom__calib_map_compiler(loom_target *t, figs *g);
void loom__calib_map_pages(loom_target *t, figs *g);
/* calibrate_system.c: model 67's core_transfer_ns, half the median of five
 * core-to-core round trips of a cache line (loom_measure_core_line_ns); 0
 * with one CPU or when the probe gives up. */
void loom__calib_map_transfers(loom_target *t, figs *g);

#endif
