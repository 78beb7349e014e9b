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

#include "../../runtime/measure/pipeline.h"
#include "../strategy/search.h"

struct loom_runner;
struct loom_reference;

typedef struct loom_tune_progress {
    int done, total;          /* trials recorded / budget */
    int valid, failed;        /* measured ok / failed records (this campaign + resumed) */
    long invalid;             /* traces the validator rejected during search */
    double best_latency_s;    /* INFINITY until one succeeded */
    double best_gflops;
    double elapsed_s, eta_s;  /* eta_s < 0: unknown */
    /* the machine's state (runtime/measure/measure.h loom_measure_core_line_ns): */
    double core_line_ns;      /* the latest record's core-to-core round trip, ns (0: not measured) */
    double core_line_ref_ns;  /* the median of the campaign's first LOOM_TUNE_CORE_LINE_REF figures */
    int core_line_moves;      /* times the figure moved LOOM_CORE_LINE_MOVED x away from that median or
                                 back (a VM's vCPUs placed elsewhere; see loom_tune_result) */
} loom_tune_progress;

/* How many of a campaign's first core-to-core figures (one per measured
 * record) make its reference: their median. */
#define LOOM_TUNE_CORE_LINE_REF 5

typedef struct loom_tune_opts {
    const char *db_dir;       /* campaign directory (created if missing) */
    int trials;               /* total records wanted for (workload, data, target) */
    int batch;                /* candidates per round (16: docs/tuning.md "Batch size") */
    const char *target;       /* the target handle's spec (runtime/target/target.h loom_target_open):
                                 "cpu" (default) or a simulator target: "sim", "sim:NAME",
                                 "sim:FILE.json", "FILE.json" */
    const struct loom_target *target_handle; /* the target already opened (runtime/target/target.h
                                 loom_target_open; a command opens it once and hands it to
                                 every consumer); NULL: opened here from `target`.  Not owned */
    const char *modules;      /* design space: comma-separated module names; NULL: the target's default */
    const char *const *module_libs; /* user module libraries (shared objects, modules/module.h
                                 loom_registry_load) loaded into the campaign's registry;
                                 with modules NULL, their modules come first, then the
                                 target's default list (as `loom sample --module`) */
    int nmodule_libs;         /* entries of module_libs (0..16) */
    const char *workload_name;/* for records and file names (e.g. "spmm") */
    const char *workload_text;/* the .loom source, stored in records (may be NULL) */
    loom_search_opts search;  /* loom_search_defaults(); its `limits` are not used: a campaign's limits
                                 are its target's (runtime/target/target.h loom_target_open, derived
                                 once; res->limits says which), so a trace is validated and lowered
                                 for the machine it is tuned for */
    loom_run_opts run;        /* build and measurement options */
    int model_min_records;    /* 100 (below: a random model) */
    int no_default_trial;     /* 1: do not record the default schedule as a trial (search alone) */
    int pretrain;             /* before the first round, train the cost model on this many distinct
                                 schedules of the space simulated on the same data (search/tune/tune_pretrain.c),
                                 so the first batch is ranked by a model; 0 (the default): none, the model
                                 stays random until model_min_records records exist.  Skipped when the
                                 model is trained already (a resumed campaign) */
    const char *const *transfer_dirs; /* earlier campaign directories (read only) whose records of this
                                 workload -- measured on any data set and target -- join the pre-training
                                 (search/tune/tune_pretrain.c: replayed on this campaign's program and data,
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
    int no_round_control;     /* 1: no round control (below); 0 (default): after every round on the CPU the
                                 campaign's best record of the earlier rounds (the control) is run once more
                                 and, when it runs >= LOOM_TUNE_DRIFT_RATIO x its expected time (its record,
                                 scaled by the host's speed at the last round's control when the record is
                                 older), the round ran on a slower host: its records are kept out of the cost
                                 model and the log and the result say so (res->drifted_rounds) */
    double remeasure_budget_s; /* seconds the decisive rounds (LOOM_TUNE_DECISIVE_ROUNDS) may add to the
                                 re-measurement (LOOM_TUNE_DECISIVE_BUDGET_S; 0: no limit): a further
                                 batch is started only when it fits (loom_tune_decisive_fits); the
                                 first remeasure_rounds rounds are always made */
    int remeasure_again;      /* 1: re-measure even when the last re-measurement is recent (no trial
                                 recorded since, same rounds and pins); 0 (default): reuse it, so a
                                 finished campaign rerun does not grow its database */
    /* progress after every measured candidate; may be NULL */
    void (*progress)(void *ctx, const loom_tune_progress *p);
    void *progress_ctx;
    FILE *warn;               /* database warnings (torn lines); NULL: stderr */
    /* Traces measured and recorded right after the baselines, before the
     * search (`loom tune --plans`: fills of plans handed in, search/plan/plan.h),
     * so the search starts from them; one that fails to replay or that the
     * validator refuses is skipped with a line in the log.  Not owned. */
    loom_trace *const *seeds;
    int nseeds;
    /* Pinned decisions (`loom tune --pin TRACE`, search/navigate/navigate.h: a partial
     * trace): every fresh sample is drawn with them forced (by sampler
     * ordinal), mutators leave them alone, database traces and seeds without
     * them are not used, and the default schedule is not recorded as a trial
     * (it is not a schedule of the pinned space); so every record carries
     * them.  NULL: none.  Not owned. */
    const struct loom_pins *pins;
    /* The campaign's runner (runtime/runner/runner.h), made by this function
     * instead of loom_runner_new (build/loom-mpi's MPI runner, issue 31,
     * docs/distributed.md): called once with the campaign's target handle,
     * data, reference and run options, which outlive the runner; returns
     * LOOM_OK with *out, or an error that ends the campaign.  NULL: the
     * target's own runner (loom_runner_new). */
    loom_status (*runner_new)(void *ctx, const struct loom_target *t, loom_dataset *ds,
                              const struct loom_reference *ref, const loom_run_opts *run, struct loom_runner **out,
                              loom_error *err);
    void *runner_ctx;         /* passed to runner_new */
} loom_tune_opts;

/* Defaults: 16 per batch (MetaSchedule's num_trials_per_iter is 64; on
 * bench/bench_suite.sh, 128 trials, 16 reached 95% of the best known in
 * 13.6 trials, 8 in 17.7, 32 in 18.1 and 64 in 22.6: docs/tuning.md
 * "Batch size"), target "cpu", 5 re-measurement rounds, search and run
 * defaults. */
loom_tune_opts loom_tune_defaults(void);

/* The simulator target a CPU campaign pre-trains on: "host", the
 * calibrated model of the CPU the campaign runs on (runtime/target/
 * calibrate.h; measured on first use; issue 29 -- before, spr-2c). */
#define LOOM_TUNE_PRETRAIN_TARGET "host"

/* Schedules re-measured at the end of a campaign: the best LOOM_TUNE_REMEASURE_TOP
 * distinct ones and the default schedule. */
#define LOOM_TUNE_REMEASURE_TOP 5
#define LOOM_TUNE_MAX_ROUNDS 100
/* Decisive rounds: when, after a re-measurement's R rounds, the schedule
 * of lowest median and the default are contested (loom_tune_contested:
 * their medians' notches overlap), R more rounds are made over the same schedules,
 * and again, up to LOOM_TUNE_DECISIVE_ROUNDS x R rounds in all (and at most
 * LOOM_TUNE_MAX_ROUNDS), until they separate.  Why: on 2026-12-01 two
 * bench_suite.sh --cpu campaigns of GEMM 2708 x 1433 x 16 shipped winners
 * that bench/suite_winners.py (20 interleaved rounds, twice) measured
 * 10-19% slower than the default: 5 rounds on the noisy 2-core VM had
 * ranked them 5% faster by median, their spreads overlapping.  4: a
 * contested campaign pays at most 15 more rounds of its 6 schedules. */
#define LOOM_TUNE_DECISIVE_ROUNDS 4
/* The decisive rounds' default time budget, seconds (opts->remeasure_budget_s).
 * The round cap above bounds them relative to the first rounds (3x their
 * time); this bounds them absolutely, for kernels of a second or more, where
 * 15 more rounds of 6 schedules would add minutes.  60: the campaigns of
 * bench_suite.sh --cpu (kernels of 5 us to 20 ms) never reach it. */
#define LOOM_TUNE_DECISIVE_BUDGET_S 60.0

/* One re-measured schedule (seconds; INFINITY when every round failed). */
typedef struct loom_tune_remeasured {
    uint64_t schedule;           /* its schedule hash */
    int rank;                    /* 1.. its rank among the campaign's records; 0: only the default */
    int is_default;              /* 1: the workload's default schedule */
    int chosen;                  /* 1: the campaign's final choice (best_latency_s is its median) */
    int eligible;                /* 1: may be the result (carries every pin; unpinned campaign: 1) */
    double sampled_s;            /* the campaign's figure for it (its record) */
    double min_s, median_s, max_s; /* over the successful rounds */
    double q1_s, q3_s;           /* their first and third quartiles (linear interpolation between the
                                    sorted rounds, Hyndman and Fan's type 7) */
    int rounds, failed_rounds;
} loom_tune_remeasured;

typedef struct loom_tune_result {
    double best_latency_s;       /* the re-measured median of the winner (the sampled minimum when
                                    remeasure_rounds is 0); INFINITY when nothing succeeded */
    double best_gflops;
    double default_latency_s;    /* the default schedule (INFINITY if it failed) */
    double default_record_s;     /* the default schedule's fastest ok trial record on this data and
                                    target (INFINITY: none): the figure on the footing of the sampled
                                    best (a minimum over trial records that include it), so
                                    sampled best <= default_record_s whenever it is finite; a model
                                    campaign without re-measurement reports it (search/model) */
    double naive_latency_s;      /* the naive loop nest */
    int trials;                  /* records of this (workload, data, target) now */
    int resumed;                 /* of which loaded from an earlier run */
    int measured;                /* measured in this run */
    int failed_by_status[16];    /* by loom_status, over all records */
    long invalid;                /* traces rejected by the validator while searching */
    int empty_rounds;
    char best_trace[1024];       /* path of the best trace's JSON file ("" if none) */
    char target_fp[128];         /* the target's fingerprint (every record carries it) */
    loom_limits limits;          /* the target's limits: what shaped the space and reached the validator
                                    and the lowering (runtime/machine/machine.h loom_target.limits) */
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
    int remeasure_rounds;        /* rounds made, decisive ones included (LOOM_TUNE_DECISIVE_ROUNDS); 0: none
                                    (then the figures above are the sampled ones) */
    int nremeasured;
    loom_tune_remeasured remeasured[LOOM_TUNE_REMEASURE_TOP + 1]; /* by median, fastest first */
    double sampled_best_latency_s;    /* the campaign's minimum over its records (biased low) */
    double sampled_default_latency_s; /* the default schedule's figure before re-measuring */
    double load_avg;             /* 1-minute load average after re-measuring (NaN: unknown, simulator) */
    int cores;                   /* online cores then */
    int noisy;                   /* 1: load_avg > cores, or some schedule's max > 2 x its min */
    int stalled_trials;          /* trial records whose figure runtime/measure flagged unreliable (their
                                    message says "figure unreliable: ..."); the re-measurement decides */
    int drifted_rounds;          /* search rounds whose control re-ran >= LOOM_TUNE_DRIFT_RATIO x its expected
                                    time (opts->no_round_control): the host ran slower while they were
                                    measured; their records are in the database but not in the cost model */
    double max_drift;            /* the largest control re-run / its expected time over the rounds (0: no
                                    control ran) */
    double core_line_min_ns, core_line_max_ns; /* the range of the core-to-core round trip measured with
                                    this run's records (runtime/measure/measure.h loom_measure_core_line_ns;
                                    0: none measured) */
    int core_line_moves;         /* times it moved LOOM_CORE_LINE_MOVED x away from the campaign's first
                                    figures (their median) or back: records measured before and after a move
                                    are not comparable when the kernel's threads share data (GCN2's
                                    aggregation: 2-3x); the re-measurement (--remeasure) compares the best
                                    together.  Each record keeps its figure (database.h core_line_ns) */
    int stalled_rounds;          /* re-measurement rounds (of every schedule, the naive nest included)
                                    whose figure runtime/measure flagged unreliable: most timed runs
                                    stalled (loom_measurement.unreliable); > 0 sets noisy */
    int undecided;               /* 1: the best's and the default's re-measured spreads overlap (more than
                                    one round): the machine could not tell them apart; the lower median
                                    is reported -- or load_guard */
    int load_guard;              /* 1: the machine was loaded (noisy) and the default is reported over a
                                    schedule with a lower median, which did not beat the default's
                                    fastest round or whose or the default's rounds stalled (issue 26) */
    int window_changed;          /* schedules whose campaign figure lies outside their re-measured
                                    [min, max] by more than LOOM_TUNE_WINDOW_TOL (the machine's capacity
                                    changed between the campaign and the re-measurement; 0 on a simulator) */
    double window_ratio;         /* the largest such campaign figure / re-measured median (or its inverse
                                    when below 1: always >= 1); 0 when window_changed is 0 */
    int naive_remeasured;        /* 1: naive_latency_s is the naive loop nest's median in the same
                                    interleaved rounds; 0: one measurement at the campaign's start */
    double best_1thread_s;       /* the best measured once with one OpenMP thread (CPU; NAN: not measured) */
    int reused;                  /* 1: the re-measurement was not made again: the last one is recent (no
                                    trial since; opts->remeasure_again) and its records were read back */
    int pinned;                  /* pins of the campaign (opts->pins->n; 0: unpinned) */
    int best_is_default;         /* 1: the reported best is the default schedule */
    int default_faster;          /* pinned campaign: the (unpinned, comparison-only) default re-measured
                                    faster than the pinned best */
} loom_tune_result;

/* 1 when the re-measured schedules s[0..n) (any order) are contested: the
 * eligible one of lowest finite median is not the default, and the two
 * medians' notches overlap -- median +- 1.58 x (q3 - q1) / sqrt(rounds),
 * the box plot's notch, about a 95% interval for the difference of two
 * medians (McGill, Tukey and Larsen, "Variations of box plots", The
 * American Statistician 32(1), 1978) -- so more rounds could reverse the
 * choice; 0 otherwise (no eligible default, no finite median, the default
 * is the lowest, or the notches are apart).  Reads is_default, eligible,
 * median_s, q1_s, q3_s and rounds - failed_rounds.  loom_tune_remeasure
 * makes decisive rounds while this holds (LOOM_TUNE_DECISIVE_ROUNDS).  The
 * min/max overlap that sets loom_tune_result.undecided is a weaker test:
 * one slow round in twenty keeps it set. */
int loom_tune_contested(const loom_tune_remeasured *s, int n);

/* 1 when a further batch of R decisive rounds fits the time budget: the
 * re-measurement has made `made` rounds (>= R > 0) in first_s + decisive_s
 * seconds (first_s for the first R rounds, decisive_s for the decisive ones
 * since), and at that pace -- (first_s + decisive_s) / made a round -- the
 * decisive rounds would still take no more than budget_s seconds with R more;
 * also 1 when budget_s <= 0 (no limit).  0 otherwise, and when made < R or
 * R <= 0.  Pure (no clock); loom_tune_remeasure calls it with its own
 * monotonic timings (opts->remeasure_budget_s), first_s without the naive
 * nest's share of the first rounds (its measurements' wall time over all
 * of theirs): decisive rounds do not re-run it, and on attention 1 x 4096 it
 * took over half of each first round (0.89 s a run, the default 0.40 s). */
int loom_tune_decisive_fits(double first_s, double decisive_s, int made, int R, double budget_s);

/* The relative margin beyond a schedule's re-measured [min, max] at which
 * its campaign figure counts as from another capacity window (0.25: the
 * spread of a median over a quiet 2-core machine's rounds stays within a
 * few percent; issue 33's windows differed by 1.6x). */
#define LOOM_TUNE_WINDOW_TOL 0.25

/* A round's control (loom_tune_opts.no_round_control) that re-runs at this
 * many times its expected time or more marks the round as drifted.  The record is
 * the campaign's minimum, biased low, so a re-run on a steady host reads a
 * little above it: 1.03-1.29x (largest per campaign) on five quiet 96-trial
 * CPU campaigns of 2026-11-28 (SpMM Cora F=32 twice, PubMed F=128,
 * bcsstk16 F=32, SDDMM Cora D=64; AMD EPYC, AVX-512, 2 cores), and one
 * 1.51x.  Records of a quiet 128-trial GCN2 campaign re-ran at 108-140 us
 * where two of its rounds had recorded 139-197 us (docs/simulator.md). */
#define LOOM_TUNE_DRIFT_RATIO 1.4

/* Run a campaign for the bound program `prog` on data set `ds`.
 * Errors: LOOM_ERR_IO (campaign directory), LOOM_ERR_INVALID (options,
 * unknown target or module), LOOM_ERR_NOMEM, LOOM_ERR_RUN (a measurement
 * that could not start), a database write failure (LOOM_ERR_IO "... K
 * records are safe in DIR/records.jsonl"; a file size limit gives it only
 * when the caller ignores SIGXFSZ, else the signal kills the process: see
 * loom_db_append).  Candidates that fail
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
 * LOOM_TUNE_MAX_ROUNDS; while the lowest median and the default are
 * contested, more: LOOM_TUNE_DECISIVE_ROUNDS), every round measuring each once (one child
 * process each, as in the campaign; the objects come from the build
 * cache), the order rotated by one each round; a simulator target makes
 * one round (its simulation is deterministic).  Each schedule gets a
 * re-measurement record (database.h "remeasure": the per-round latencies,
 * the 1-minute load average, the core count; latency_s their median).
 * The naive loop nest is measured in the same rounds (not recorded: it has
 * no trace), so naive_latency_s is comparable with the medians.
 * res: remeasured[] by median; best_latency_s and default_latency_s become
 * the medians.  The winner is the schedule of lowest median *including the
 * default*, so the reported best is never slower than the default as
 * re-measured (issue 26); in a pinned campaign only schedules that carry
 * every pin can win, and the default is re-measured for comparison only
 * (default_faster says when it was faster).  The winner's trace goes to
 * DIR/best-NAME.json, and it is measured once more with one OpenMP thread
 * (best_1thread_s).  The sampled figures stay in sampled_*; noisy is set
 * when the load average exceeds the core count or a schedule's slowest
 * round is over 2x its fastest; undecided and window_changed as above.
 * When the last re-measurement of these records is recent (no trial
 * recorded after it, at least opts->remeasure_rounds rounds and at most
 * LOOM_TUNE_DECISIVE_ROUNDS times them, same pins) and opts->remeasure_again is
 * 0, it is read back instead of made again (reused), so rerunning a
 * finished campaign does not grow its database.  Re-measurement records
 * are not trials: a resumed campaign does not count them.
 * Errors: those of loom_tune (the directory's lock, a database write:
 * "K records are safe in DIR/records.jsonl"; under a file size limit only
 * when the caller ignores SIGXFSZ, see loom_db_append). */
loom_status loom_tune_remeasure(loom_program *prog, loom_dataset *ds, const loom_tune_opts *opts,
                                loom_tune_result *res, loom_error *err);

/* The fingerprint of the real CPU target: "cpu:<16 hex>" over the CPU
 * model name, the online core count, the compiler and its flags
 * (runtime/machine/machine.h loom_target_cpu_fingerprint with run's cc and
 * cflags; run may be NULL). */
void loom_cpu_target_fingerprint(const loom_run_opts *run, char *buf, size_t n);

#endif
