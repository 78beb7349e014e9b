/* loom: the runner -- one interface that takes a batch of measure
 * candidates and returns one result per candidate, in candidate order:
 * a latency, or a failure with its kind, and whether the outputs were
 * checked against the reference (DESIGN.md "Measure"; issue 28).
 *
 * The model is TVM MetaSchedule's Runner (src/meta_schedule/runner/, with
 * its Builder, src/meta_schedule/builder/): RunnerInput -> RunnerResult
 * (run seconds or an error message), one implementation per place a
 * candidate can run (LocalRunner, RPCRunner), chosen once by the tuning
 * context.  Here the builder is folded into the local runner (lowering,
 * C generation and compilation happen in runtime/measure/batch.c before
 * any kernel is timed, as MetaSchedule's LocalBuilder does before its
 * runner), and the runner is chosen by the target handle
 * (runtime/target/target.h loom_target_open):
 *
 *   - the local runner (loom_runner_local_new; target kind LOOM_TARGET_CPU):
 *     runtime/measure/batch.h -- lowered with the target's limits, compiled
 *     in parallel, each kernel timed in a forked child with a time limit and
 *     checked against the reference;
 *   - the simulator runner (loom_runner_sim_new; LOOM_TARGET_SIM): each
 *     candidate lowered with the target's limits (loom_lower_for) and
 *     simulated on the target's model (runtime/sim/sim.h), on `jobs`
 *     threads; nothing is computed, so nothing is checked (checked = 0).
 *
 *   - the MPI runner (cli/mpi/mpi_runner.h loom_mpi_runner_new; issue 31,
 *     docs/distributed.md): only in build/loom-mpi, so that this library
 *     does not link MPI.  run() ships, per candidate, cand->trace_json --
 *     which is why a candidate carries its trace, not only a schedule
 *     pointer (needs_trace = 1) -- to the next idle worker rank, which
 *     replays it on the same workload and data (checked by fingerprint at
 *     start), measures or simulates it with its own local or simulator
 *     runner and sends the loom_runner_result back; results are reported in
 *     candidate order.  A candidate without a trace (the naive loop nest,
 *     the baselines) runs on rank 0's own runner of the same target.
 * Callers never look at the implementation: they call loom_runner_run.
 */
#ifndef LOOM_RUNNER_H
#define LOOM_RUNNER_H

#include "../../dsl/schedule/schedule.h"
#include "../data/dataset.h"
#include "../measure/batch.h"
#include "../measure/reference.h"
#include "../sim/sim.h"
#include "../target/target.h"

/* One measure candidate: a schedule of the runner's program.  trace_json
 * (loom_trace_to_json of the schedule's trace) may be NULL for the local
 * and simulator runners, which use sch; a remote runner needs it.  Neither
 * is owned by the runner. */
typedef struct loom_measure_candidate {
    const loom_schedule *sch;
    const char *trace_json;
} loom_measure_candidate;

/* The result of one candidate. */
typedef struct loom_runner_result {
    loom_status status;       /* LOOM_OK, or the failure's kind: LOOM_ERR_SEMANTIC / UNSUPPORTED (did not
                                 lower), LOOM_ERR_BUILD, LOOM_ERR_RUN (crashed; or, local, not measured:
                                 the batch was stopped), LOOM_ERR_TIMEOUT (the time limit; simulator: the
                                 deadline, see loom_runner_opts), LOOM_ERR_WRONG (outputs differ from the
                                 reference), LOOM_ERR_INVALID (the simulator refused the kernel) */
    double latency_s;         /* seconds: the median of the timed runs, or the simulated latency;
                                 INFINITY unless status is LOOM_OK */
    double flops;             /* FLOPs of one run: the reference's count when the runner has a reference,
                                 else the simulator's executed count */
    double compile_s;         /* seconds compiling this candidate (0: cached, or simulated) */
    int checked;              /* 1: the outputs were compared with the reference (local runner) */
    int correct;              /* checked and within tolerance */
    double max_rel_err, tol;  /* the check (runtime/measure/reference.h loom_check); 0 when unchecked */
    int unreliable;           /* local: the figure is a stall figure (loom_measurement.unreliable) */
    loom_measurement m;       /* local: the raw measurement (zeroed for the simulator) */
    loom_sim_result sim;      /* simulator: the whole simulation (zeroed for the local runner) */
    char message[1024];       /* why status is not LOOM_OK; with OK, a warning or "" */
} loom_runner_result;

/* Called once per candidate, in candidate order, as soon as its result is
 * final (a tuner appends its record before the next is measured). */
typedef void (*loom_runner_result_fn)(void *ctx, int index, const loom_runner_result *res);

/* Options of one loom_runner_run call; zeroed: the defaults. */
typedef struct loom_runner_opts {
    int jobs;                 /* local: compiler processes at once (<= 0: online cores); simulator:
                                 simulation threads (<= 0: 1) */
    int chunk;                /* local: kernels per shared object (<= 0: 32) */
    double deadline;          /* simulator: a loom_now_seconds() value after which no simulation starts
                                 and a running one stops, both LOOM_ERR_TIMEOUT (<= 0: none) */
    loom_runner_result_fn on_result; /* may be NULL */
    void *ctx;                /* passed to on_result */
    const int *stop;          /* may be NULL; once *stop != 0 (set by on_result), candidates not yet run
                                 are not: status LOOM_ERR_RUN "not measured: the batch was stopped", no
                                 on_result call */
} loom_runner_opts;

typedef struct loom_runner loom_runner;

/* An implementation: run n candidates into results[0..n) (see
 * loom_runner_run); free its state. */
struct loom_runner {
    const char *kind;              /* "local", "sim", "mpi" (static strings) */
    const loom_target *target;     /* the handle it runs on (not owned; outlives the runner) */
    loom_dataset *ds;              /* the data (not owned) */
    const loom_reference *ref;     /* the reference outputs and FLOPs (not owned; NULL: none) */
    loom_status (*run)(loom_runner *r, const loom_measure_candidate *cands, int n, const loom_runner_opts *o,
                       loom_runner_result *results, loom_batch_stats *stats, loom_error *err);
    void (*free)(loom_runner *r);
    void *impl;                    /* the implementation's state */
    int needs_trace;               /* 1: run() reads cands[k].trace_json (the MPI runner); callers that
                                      have the trace then pass it (search/tune/tune.c) */
};

/* The runner of target t: the local runner for LOOM_TARGET_CPU (run: build
 * and measurement options, may be NULL for loom_run_defaults; ref
 * required), the simulator runner for LOOM_TARGET_SIM (run ignored; ref may
 * be NULL).  ds, ref and t are not owned and must outlive the runner.
 * Errors: LOOM_ERR_INVALID (NULL t or ds, a CPU target without ref, an
 * unknown kind), LOOM_ERR_NOMEM. */
loom_status loom_runner_new(const loom_target *t, loom_dataset *ds, const loom_reference *ref,
                            const loom_run_opts *run, loom_runner **out, loom_error *err);

/* The local runner explicitly (whatever t's kind: lowering uses t->limits).
 * run is copied.  Errors as loom_runner_new. */
loom_status loom_runner_local_new(const loom_target *t, loom_dataset *ds, const loom_reference *ref,
                                  const loom_run_opts *run, loom_runner **out, loom_error *err);

/* The simulator runner explicitly: t's model, t->limits for the lowering.
 * ds is only read (the simulator computes no values).  Errors as
 * loom_runner_new. */
loom_status loom_runner_sim_new(const loom_target *t, const loom_dataset *ds, const loom_reference *ref,
                                loom_runner **out, loom_error *err);

/* Run candidates cands[0..n): results[k] is cands[k]'s, whatever happened
 * to the others (a failing candidate is a result, not an error).  o may be
 * NULL (defaults), stats may be NULL (zeroed first; lower_s, build_s,
 * measure_s in seconds).  Returns LOOM_OK unless the batch itself could not
 * run (LOOM_ERR_NOMEM, a thread or a measurement that could not start);
 * results before that point are filled and were reported. */
loom_status loom_runner_run(loom_runner *r, const loom_measure_candidate *cands, int n, const loom_runner_opts *o,
                            loom_runner_result *results, loom_batch_stats *stats, loom_error *err);

/* Run one schedule (a batch of one, default options): its latency in
 * seconds, or INFINITY with *res saying why (res may be NULL; *status may be
 * NULL).  Returns the batch's own error status in *status when the batch
 * could not run, else res->status. */
double loom_runner_run_one(loom_runner *r, const loom_schedule *sch, loom_runner_result *res, loom_status *status);

/* Free r (NULL is a no-op). */
void loom_runner_free(loom_runner *r);

#endif
