/* loom: running many schedules of one workload at once.
 *
 * Schedules are lowered and generated into shared objects of up to `chunk`
 * kernels each (one compiler run per chunk; the content-hash cache makes a
 * repeated batch free).  The chunks are compiled in parallel, one compiler
 * process per worker thread (pthreads; `jobs` workers, default one per
 * online core), and only then is each kernel measured, one at a time, in
 * its own child process and checked against the reference, exactly as
 * loom_pipeline_run_schedule would (measuring while compilers run would
 * disturb the timings).  A schedule that fails to lower, a kernel that
 * fails to compile (a chunk whose compilation fails is recompiled kernel
 * by kernel, so one bad kernel does not fail its neighbours), a kernel that
 * crashes, hangs or is wrong: each gets its own result and the batch goes
 * on.
 */
#ifndef LOOM_BATCH_H
#define LOOM_BATCH_H

#include "../../dsl/ir/limits.h"
#include "../../dsl/schedule/schedule.h"
#include "../data/dataset.h"
#include "build.h"
#include "measure.h"
#include "reference.h"

typedef struct loom_run_opts {
    loom_measure_opts measure;  /* loom_measure_defaults() */
    loom_build_opts build;      /* zeroed: defaults */
    int serial;                 /* 1: no parallel loops in the default nest */
    const loom_limits *limits;  /* the target's limits the lowering uses (loom_lower_for; the CPU
                                   runner sets its target's); NULL: the host's.  Not owned */
} loom_run_opts;

/* Defaults: loom_measure_defaults(), default build options, parallel. */
loom_run_opts loom_run_defaults(void);

typedef struct loom_run_result {
    loom_status status;       /* LOOM_OK, LOOM_ERR_BUILD, LOOM_ERR_RUN,
                                 LOOM_ERR_TIMEOUT, LOOM_ERR_WRONG */
    double latency_s;         /* median seconds per kernel run */
    double flops;             /* FLOPs from the actual nonzeros (reference count) */
    double gflops;            /* flops / latency_s / 1e9 */
    int correct;              /* outputs match the reference within tol */
    double max_rel_err, tol;  /* see loom_check */
    double compile_seconds;   /* 0 when the object was cached */
    int cached;               /* 1 if the kernel object came from the cache */
    loom_measurement m;       /* the raw measurement; with status OK, m.unreliable (and m.message)
                                 say the median is a stall figure (measure.h), m.stalled_runs how
                                 many timed runs stalled */
    char message[1024];       /* why status is not OK */
} loom_run_result;

/* Called once per schedule, in index order, as soon as its result is
 * final (so a caller can persist it before the next measurement). */
typedef void (*loom_batch_result_fn)(void *ctx, int index, const loom_run_result *res);

typedef struct loom_batch_opts {
    int chunk;                     /* kernels per shared object; <= 0: 32 */
    int jobs;                      /* compiler processes at once; <= 0: online cores */
    loom_batch_result_fn on_result;/* may be NULL */
    void *ctx;                     /* passed to on_result */
    const int *stop;               /* may be NULL; once *stop != 0 (set by on_result), the kernels not yet
                                      measured are not: status LOOM_ERR_RUN "not measured: the batch was
                                      stopped", no on_result call (the tuner, when its database cannot
                                      be written) */
} loom_batch_opts;

/* Where a batch's wall time went (seconds). */
typedef struct loom_batch_stats {
    double lower_s;    /* lowering and C generation */
    double build_s;    /* compiling (wall, all workers) */
    double measure_s;  /* measuring and checking */
    int chunks, chunk_failures;
} loom_batch_stats;

/* Run schedules[0..n) (all of ds's program).  results[k] receives the
 * outcome of schedules[k]: status LOOM_OK (built, ran, correct), or
 * LOOM_ERR_SEMANTIC/UNSUPPORTED (did not lower), LOOM_ERR_BUILD,
 * LOOM_ERR_RUN, LOOM_ERR_TIMEOUT, LOOM_ERR_WRONG, with a message.
 * bopts may be NULL (defaults); stats may be NULL.  Returns LOOM_OK unless
 * the batch itself could not run (LOOM_ERR_NOMEM, a worker thread that
 * could not start, or a measurement that could not fork); results before
 * that point are filled and were reported. */
loom_status loom_run_batch_ex(const loom_schedule *const *schedules, int n, loom_dataset *ds,
                              const loom_reference *ref, const loom_run_opts *opts, const loom_batch_opts *bopts,
                              loom_run_result *results, loom_batch_stats *stats, loom_error *err);

/* loom_run_batch_ex with `chunk` kernels per object and the other batch
 * options at their defaults. */
loom_status loom_run_batch(const loom_schedule *const *schedules, int n, loom_dataset *ds,
                           const loom_reference *ref, const loom_run_opts *opts, int chunk,
                           loom_run_result *results, loom_error *err);

#endif
