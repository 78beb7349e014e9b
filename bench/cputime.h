/* One-thread CPU-time measurement of loom kernels inside the bench process
 * (bench_epilogue, bench_sddmm_psum): compile, check, then time kernels
 * interleaved by the thread's CPU clock, which other processes on a loaded
 * machine disturb far less than wall time.  Every function prints
 * "WHO: what went wrong" and exits (2: could not build or load, 1: a
 * kernel failed or is wrong) instead of returning an error: these are
 * benchmark programs, not library code. */
#ifndef LOOM_BENCH_CPUTIME_H
#define LOOM_BENCH_CPUTIME_H

#include <stdint.h>

#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"
#include "../runtime/data/dataset.h"
#include "../runtime/measure/build.h"
#include "../runtime/measure/reference.h"

/* The calling thread's CPU time, seconds (CLOCK_THREAD_CPUTIME_ID). */
double loom_bench_cpu_now(void);

/* Wall-clock time, seconds (CLOCK_MONOTONIC): for kernels on several
 * threads, whose time is not one thread's CPU time. */
double loom_bench_wall_now(void);

/* Bind prog to one sparse tensor read from the Matrix Market file mtx and
 * one param = value (the other dense inputs from the seeded generator).
 * The returned data set is the caller's (loom_dataset_free). */
loom_dataset *loom_bench_load(loom_program *prog, const char *tensor, const char *mtx, const char *param,
                              int64_t value, const char *who);

/* Lower sch, generate its C and compile it into *mod (loom_build; close it
 * with loom_module_close); with dump non-NULL the C is also written to the
 * file dump.  Returns the kernel. */
loom_kernel_fn loom_bench_build_kernel(const loom_schedule *sch, loom_module *mod, const char *dump, const char *who);

/* The same with the build options opts (NULL: loom_build's defaults), e.g.
 * other compiler flags (bench/trace_cputime.c --cflags-b). */
loom_kernel_fn loom_bench_build_kernel_opts(const loom_schedule *sch, const loom_build_opts *opts, loom_module *mod,
                                            const char *dump, const char *who);

/* Run fn once on ds (outputs filled with garbage first) and compare every
 * output with ref (loom_reference_check); exits 1 naming label when the
 * kernel fails or is wrong. */
void loom_bench_check_kernel(loom_kernel_fn fn, loom_dataset *ds, const loom_reference *ref, const char *who,
                             const char *label);

/* rounds x (for each of the nk kernels, reps runs), interleaved; min[k] and
 * median[k] are kernel k's per-run CPU seconds. */
void loom_bench_cpu_times(const loom_kernel_fn *fn, int nk, loom_dataset *ds, int rounds, int reps, double *min,
                          double *median);

/* The same with the clock now (loom_bench_cpu_now or loom_bench_wall_now):
 * min[k] and median[k] are kernel k's per-run seconds by that clock. */
void loom_bench_times(const loom_kernel_fn *fn, int nk, loom_dataset *ds, int rounds, int reps, double (*now)(void),
                      double *min, double *median);

#endif
