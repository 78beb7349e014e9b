/* loom-mpi: campaigns across machines with measurement workers on MPI
 * (issue 31; docs/distributed.md).  Only build/loom-mpi links this folder
 * (built with mpicc when Open MPI is installed), so libloom and build/loom
 * keep no MPI dependency.
 *
 * Every rank runs the same command line (`mpirun -np N build/loom-mpi tune
 * WORKLOAD --data ... --target ...`, or `... tune MODEL.model ...`) and so
 * loads the same workload and data (or the same model, every task bound to
 * its data) from the same paths.  Rank 0 runs the search (search/tune/tune.h
 * loom_tune) and owns the database; its runner is the MPI runner below, the
 * third implementation of runtime/runner/runner.h.  Ranks 1..N-1 are
 * measurement workers (loom_mpi_worker_serve): each says hello with its host,
 * target fingerprint and every task's workload hash and data fingerprint;
 * rank 0 refuses a rank whose fingerprints differ (naming its host and the
 * task) unless only the target differs and mixed targets are allowed; an
 * accepted worker is sent one measure candidate (its task's workload hash
 * and data fingerprint, and its trace JSON) at a time when it is idle,
 * picks that task's program and data, replays it, measures or simulates it with its own
 * local or simulator runner (checked against the reference on a CPU) in a
 * measuring process it forked (reused across candidates, started again
 * after one dies or overruns) with a time limit counted from the
 * candidate's start there, and sends the loom_runner_result back.  In a
 * model campaign (search/model/model.h loom_model_tune) rank 0 makes a
 * runner for every step of every task; the workers are one pool that
 * outlives them (from the first runner to loom_mpi_release_workers), so
 * every task's candidates go to the same workers.
 *
 * Failure detection (Open MPI 4.1 from Debian has no ULFM; docs/
 * distributed.md): the communicator's error handler is MPI_ERRORS_RETURN;
 * a busy worker sends a heartbeat every second while its child measures;
 * rank 0 declares a busy worker that has been silent for timeout_s dead,
 * reports it, puts its candidate back in the queue and never talks to it
 * again; rank 0 pings every live worker every second from a thread, and a
 * worker that hears nothing from rank 0 for timeout_s exits.  A job
 * survives a dead rank only under `mpirun --enable-recovery`.
 */
#ifndef LOOM_MPI_RUNNER_H
#define LOOM_MPI_RUNNER_H

#include <stdint.h>
#include <stdio.h>

#include "../../runtime/runner/runner.h"
#include "../../search/tune/tune.h"

/* A task of the campaign: the workload, or one task of a model (its first
 * call's program and data; search/model/model.h loom_model_task). */
typedef struct loom_mpi_task {
    loom_program *prog;      /* bound to ds (the caller's; must outlive the campaign) */
    loom_dataset *ds;        /* rank 0 finds a runner's task by this pointer */
    const char *name;        /* the model's task name for messages; NULL for one workload */
    uint64_t whash;          /* loom_program_hash(prog) */
    uint64_t data_fp;        /* loom_data_fingerprint(ds) */
} loom_mpi_task;

/* What rank 0 and the workers agree on (mpi/main.c fills it from the
 * command line). */
typedef struct loom_mpi_config {
    double timeout_s;        /* seconds of silence after which a busy worker is dead, and after which a
                                worker presumes rank 0 dead (--worker-timeout; default 30) */
    double limit_s;          /* seconds a worker's child may take for one candidate, counted from its
                                start on the worker (--worker-limit; default 600; the kernel's own time
                                limits, runtime/measure/measure.h, apply inside it as on one machine) */
    int allow_mixed_targets; /* 1: accept workers whose target fingerprint differs from rank 0's (their
                                results' messages name the host and target); data must still match */
    const loom_mpi_task *tasks; /* the campaign's tasks (one for a workload, a model's in its order), set by
                                   the caller; every rank must list the same ones */
    int ntasks;
    FILE *log;               /* rank 0's reports (workers refused, dead); NULL: stderr */
} loom_mpi_config;

/* Defaults: timeout 30 s, limit 600 s, mixed targets refused. */
loom_mpi_config loom_mpi_config_defaults(void);

/* The MPI runner on rank 0 (a loom_tune_opts.runner_new; ctx is a
 * loom_mpi_config, which must outlive every runner and the pool): its task
 * is the config's task whose ds is this ds; run() hands candidates with a
 * trace to idle workers, naming the task, and reports results in candidate
 * order; a batch with a candidate without trace, or left without a live
 * worker, runs on rank 0's own runner of t (loom_runner_new).  The first
 * runner starts the worker pool (its target's fingerprint is the one
 * workers must match), which later runners share; free() leaves the
 * workers to the next runner (loom_mpi_release_workers stops them).  MPI
 * must be initialised with MPI_THREAD_MULTIPLE (the ping thread; with
 * less, no pings: workers then rely on mpirun to end them).  Errors:
 * LOOM_ERR_INVALID (ds is no task's), those of loom_runner_new,
 * LOOM_ERR_NOMEM. */
loom_status loom_mpi_runner_new(void *ctx, const loom_target *t, loom_dataset *ds, const loom_reference *ref,
                                const loom_run_opts *run, loom_runner **out, loom_error *err);

/* Serve as a measurement worker (ranks 1..N-1) for the campaign rank 0
 * runs on cfg's tasks with opts (their target and run options): hello,
 * then candidates, each on the task its message names, until STOP or
 * rank 0's silence (a refused worker prints why and waits for STOP, measuring
 * nothing).  Returns 0 after STOP; 2 after a STOP that says a worker died
 * (then the caller must exit without MPI_Finalize: Open MPI 4.1's
 * MPI_Finalize waits for every rank, the dead one too); 1 when the worker
 * could not start (its hello carries the error, which rank 0 reports); 3
 * when rank 0 went silent (exit without MPI_Finalize too). */
int loom_mpi_worker_serve(const loom_tune_opts *opts, const loom_mpi_config *cfg);

/* On a worker rank whose `loom tune` command failed before it could serve
 * (bad arguments, data that does not load): tell rank 0, which reports
 * "rank R on host H could not start: why" and gives it no work, instead
 * of waiting for its hello. */
void loom_mpi_worker_failed(const char *why);

/* On rank 0 at the end: stop the worker pool (the ping thread; rank 0's
 * summary of the workers' measurements on cfg->log; STOP to every live
 * worker, saying whether one died), or, when no MPI runner was made (the
 * campaign failed before, e.g. a database directory it cannot write), send
 * every worker STOP so that they end with MPI_Finalize as rank 0 does. */
void loom_mpi_release_workers(void);

/* Workers rank 0 declared dead in this process (0 on a worker): when > 0,
 * rank 0 must exit without MPI_Finalize (see loom_mpi_worker_serve). */
int loom_mpi_dead_workers(void);

#endif
