/* loom: a tuning campaign -- the loop that ties the design space, the
 * search strategy, the builder and runner, the tuning database and the
 * cost model together (DESIGN.md "Search", "Cost model", "Database";
 * MetaSchedule's TaskScheduler + TuneContext for one task).
 *
 *   open DIR/records.jsonl; replay its records of this (workload, data,
 *     target) to rebuild the measured set and the cost model's data, and
 *     count them against the trial budget (a killed campaign resumes);
 *   measure the naive loop nest and the default schedule (the baselines
 *     of the summary; the default schedule is also recorded as a trial
 *     when the database does not have it, so search starts from it);
 *   until `trials` records exist: the strategy generates a batch of
 *     measure candidates (scored by the cost model); they are compiled in
 *     parallel and measured one at a time (runtime/measure/batch.h) or simulated
 *     (runtime/sim/sim.h); every result is appended to the database the moment
 *     it exists; the cost model takes the batch and retrains when due.
 *     Five batches in a row with nothing new end the campaign early
 *     (MetaSchedule's num_empty_iters_before_early_stop).
 *
 * On a simulator target every step is deterministic and records carry a
 * logical time (the trial number), so the same campaign with the same seed
 * writes a byte-identical database.
 *
 * The campaign log (DIR/campaign.log) gets one line per batch and one per
 * retraining (with the model's held-out rank correlation and top-k
 * recall); the best trace is written to DIR/best-<workload>.json.
 */
#ifndef LOOM_TUNE_H
#define LOOM_TUNE_H

#include <stdint.h>
#include <stdio.h>

#include "../runtime/measure/pipeline.h"
#include "search.h"

typedef struct loom_tune_progress {
    int done, total;          /* trials recorded / budget */
    int valid, failed;        /* measured ok / failed records (this campaign + resumed) */
    long invalid;             /* traces the validator rejected during search */
    double best_latency_s;    /* INFINITY until one succeeded */
    double best_gflops;
    double elapsed_s, eta_s;  /* eta_s < 0: unknown */
} loom_tune_progress;

typedef struct loom_tune_opts {
    const char *db_dir;       /* campaign directory (created if missing) */
    int trials;               /* total records wanted for (workload, data, target) */
    int batch;                /* candidates per round (64) */
    const char *target;       /* "cpu" (default) or a simulator target: "sim", "sim:NAME", "sim:FILE.json", "FILE.json" */
    const char *modules;      /* design space: comma-separated module names; NULL: the target's default */
    const char *const *module_libs; /* user module libraries (shared objects, modules/module.h
                                 loom_registry_load) loaded into the campaign's registry;
                                 with modules NULL, their modules come first, then the
                                 target's default list (as `loom sample --module`) */
    int nmodule_libs;         /* entries of module_libs (0..16) */
    const char *workload_name;/* for records and file names (e.g. "spmm") */
    const char *workload_text;/* the .loom source, stored in records (may be NULL) */
    loom_search_opts search;  /* loom_search_defaults() */
    loom_run_opts run;        /* build and measurement options */
    int model_min_records;    /* 100 (below: a random model) */
    int no_default_trial;     /* 1: do not record the default schedule as a trial (search alone) */
    int pretrain;             /* before the first round, train the cost model on this many distinct
                                 schedules of the space simulated on the same data (search/tune_pretrain.c),
                                 so the first batch is ranked by a model; 0 (the default): none, the model
                                 stays random until model_min_records records exist.  Skipped when the
                                 model is trained already (a resumed campaign) */
    const char *const *transfer_dirs; /* earlier campaign directories (read only) whose records of this
                                 workload -- measured on any data set and target -- join the pre-training
                                 (search/tune_pretrain.c: replayed on this campaign's program and data,
                                 one label group per directory, data set and target); NULL: none */
    int ntransfer;            /* entries of transfer_dirs */
    double pretrain_budget_s; /* seconds of wall time the pre-training's simulations may take (<= 0, the
                                 library's default: no limit).  Schedules are simulated in draw order on
                                 `threads` threads; none starts after the budget and a running one stops
                                 at it (loom_sim_run_until): the model is trained on those finished.
                                 When the budget is not reached the pre-training is the same, bit for
                                 bit, as without one; when it is, how many finish depends on the
                                 machine's speed and load (the campaign log says so) */
    const char *pretrain_target; /* simulator target of the pre-training (a name or file, as
                                 loom_target_load); NULL: the campaign's own when it is simulated, else
                                 LOOM_TUNE_PRETRAIN_TARGET */
    int remeasure_rounds;     /* final re-measurement rounds (5; 0: none; at most LOOM_TUNE_MAX_ROUNDS;
                                 a simulator target makes one) */
    /* progress after every measured candidate; may be NULL */
    void (*progress)(void *ctx, const loom_tune_progress *p);
    void *progress_ctx;
    FILE *warn;               /* database warnings (torn lines); NULL: stderr */
    /* Traces measured and recorded right after the baselines, before the
     * search (`loom tune --plans`: fills of plans handed in, search/plan.h),
     * so the search starts from them; one that fails to replay or that the
     * validator refuses is skipped with a line in the log.  Not owned. */
    loom_trace *const *seeds;
    int nseeds;
    /* Pinned decisions (`loom tune --pin TRACE`, search/navigate.h: a partial
     * trace): every fresh sample is drawn with them forced (by sampler
     * ordinal), mutators leave them alone, database traces and seeds without
     * them are not used, and the default schedule is not recorded as a trial
     * (it is not a schedule of the pinned space); so every record carries
     * them.  NULL: none.  Not owned. */
    const struct loom_pins *pins;
} loom_tune_opts;

/* Defaults: 64 per batch, target "cpu", 5 re-measurement rounds, search and
 * run defaults. */
loom_tune_opts loom_tune_defaults(void);

/* The simulator target a CPU campaign pre-trains on (targets/spr-2c.json:
 * the target whose parameters were fitted on measured SpMM and SDDMM,
 * runtime/sim/sim.h "Accuracy"). */
#define LOOM_TUNE_PRETRAIN_TARGET "spr-2c"

/* Schedules re-measured at the end of a campaign: the best LOOM_TUNE_REMEASURE_TOP
 * distinct ones and the default schedule. */
#define LOOM_TUNE_REMEASURE_TOP 5
#define LOOM_TUNE_MAX_ROUNDS 100

/* One re-measured schedule (seconds; INFINITY when every round failed). */
typedef struct loom_tune_remeasured {
    uint64_t schedule;           /* its schedule hash */
    int rank;                    /* 1.. its rank among the campaign's records; 0: only the default */
    int is_default;              /* 1: the workload's default schedule */
    double sampled_s;            /* the campaign's figure for it (its record) */
    double min_s, median_s, max_s; /* over the successful rounds */
    int rounds, failed_rounds;
} loom_tune_remeasured;

typedef struct loom_tune_result {
    double best_latency_s;       /* the re-measured median of the winner (the sampled minimum when
                                    remeasure_rounds is 0); INFINITY when nothing succeeded */
    double best_gflops;
    double default_latency_s;    /* the default schedule (INFINITY if it failed) */
    double naive_latency_s;      /* the naive loop nest */
    int trials;                  /* records of this (workload, data, target) now */
    int resumed;                 /* of which loaded from an earlier run */
    int measured;                /* measured in this run */
    int failed_by_status[16];    /* by loom_status, over all records */
    long invalid;                /* traces rejected by the validator while searching */
    int empty_rounds;
    char best_trace[1024];       /* path of the best trace's JSON file ("" if none) */
    char target_fp[128];
    /* where the wall time went (seconds) */
    double search_s;             /* sampling, mutation, replay, validation */
    double costmodel_s;          /* features, prediction, training */
    double compile_s, measure_s; /* building and running candidates */
    double total_s;
    int retrains;
    int pretrained;              /* schedules the model was pre-trained on (simulated; 0: none) */
    int transferred;             /* records of transfer_dirs the model was pre-trained on (0: none) */
    double last_spearman, last_topk_recall;  /* quality at the last retraining (NaN if none) */
    /* the final re-measurement (loom_tune_remeasure) */
    int remeasure_rounds;        /* rounds made; 0: none (then the figures above are the sampled ones) */
    int nremeasured;
    loom_tune_remeasured remeasured[LOOM_TUNE_REMEASURE_TOP + 1]; /* by median, fastest first */
    double sampled_best_latency_s;    /* the campaign's minimum over its records (biased low) */
    double sampled_default_latency_s; /* the default schedule's figure before re-measuring */
    double load_avg;             /* 1-minute load average after re-measuring (NaN: unknown, simulator) */
    int cores;                   /* online cores then */
    int noisy;                   /* 1: load_avg > cores, or some schedule's max > 2 x its min */
} loom_tune_result;

/* Run a campaign for the bound program `prog` on data set `ds`.
 * Errors: LOOM_ERR_IO (campaign directory), LOOM_ERR_INVALID (options,
 * unknown target or module), LOOM_ERR_NOMEM, LOOM_ERR_RUN (a measurement
 * that could not start), a database write failure.  Candidates that fail
 * to build, crash, hang or are wrong are records, not errors.
 * Kernels are measured in children this process forks: call it from a
 * process that has not run an OpenMP parallel region (GCC's libgomp keeps
 * its thread pool, which a forked child inherits without the threads, and
 * every kernel then hangs until its time limit).  The Python package runs
 * campaigns in a spawned process for that reason. */
loom_status loom_tune(loom_program *prog, loom_dataset *ds, const loom_tune_opts *opts, loom_tune_result *res,
                      loom_error *err);

/* The final re-measurement, which loom_tune runs at the end of every
 * campaign (when opts->remeasure_rounds > 0); alone, it re-measures an
 * existing campaign directory's results (the records of prog's workload,
 * ds's data and opts->target).  Issue 12: a campaign's best latency is the
 * minimum over many noisy measurements, so it is biased low (the campaign's
 * best and the same trace re-measured differed by up to 40% on SpMM and
 * 2.9x on GEMM).  So: the best LOOM_TUNE_REMEASURE_TOP distinct schedules
 * of the records (ok trials, best first) and the default schedule are
 * measured again, in opts->remeasure_rounds rounds (capped at
 * LOOM_TUNE_MAX_ROUNDS), every round measuring each once (one child
 * process each, as in the campaign; the objects come from the build
 * cache), the order rotated by one each round; a simulator target makes
 * one round (its simulation is deterministic).  Each schedule gets a
 * re-measurement record (database.h "remeasure": the per-round latencies,
 * the 1-minute load average, the core count; latency_s their median).
 * res: remeasured[] by median; best_latency_s and default_latency_s become
 * the medians (the winner by median is the best, its trace goes to
 * DIR/best-NAME.json); the sampled figures stay in sampled_*; noisy is set
 * when the load average exceeds the core count or a schedule's slowest
 * round is over 2x its fastest.  Re-measurement records are not trials: a
 * resumed campaign does not count them.
 * Errors: those of loom_tune (the directory's lock, a database write:
 * "K records are safe in DIR/records.jsonl"). */
loom_status loom_tune_remeasure(loom_program *prog, loom_dataset *ds, const loom_tune_opts *opts,
                                loom_tune_result *res, loom_error *err);

/* The fingerprint of the real CPU target: "cpu:<16 hex>" over the CPU
 * model name, the online core count, the compiler and its flags. */
void loom_cpu_target_fingerprint(const loom_run_opts *run, char *buf, size_t n);

#endif
