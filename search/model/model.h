/* loom: whole models -- a model file (its tasks, how often each runs per
 * forward pass, the dataflow between them) and the task scheduler that
 * spends one trial budget across the tasks (docs/models.md; issue 30).
 *
 * MetaSchedule tunes a model, not a kernel: it extracts the model's tasks
 * (each fused operator with a weight, the number of times it runs per
 * forward pass) and a task scheduler gives each step's trials to one task
 * (TVM, src/meta_schedule/task_scheduler/gradient_based.cc, since moved to
 * src/s_tir/meta_schedule/task_scheduler/; the algorithm follows Ansor,
 * Zheng et al., OSDI 2020, section 6).  Here a task is a bound .loom
 * workload; its campaign is search/tune/tune.h's loom_tune, called once per
 * step with a larger trial budget, so every task resumes from its records.
 *
 * The model file (a line-based text format; every error names file:line):
 *
 *   # a comment; blank lines are ignored
 *   model NAME
 *   task NAME WORKLOAD.loom [--data TENSOR=FILE.mtx]... [--param SIZE=INT | -p SIZE=INT]... [--runs N]
 *   feed TASK.TENSOR -> TASK.TENSOR
 *   output TASK.TENSOR
 *
 * `task` lines are the forward pass's kernel calls, in execution order;
 * paths are relative to the model file's folder (absolute ones are kept);
 * dense inputs without --data come from the seeded generator, as in `loom
 * tune`; --runs N (default 1): the call runs N times per forward pass.
 * `feed` makes an output of an earlier task the value of a dense input of
 * a later one (same shape, or the same first dimension and element count: a reshape of the
 * dimensions after the first, e.g. N x 256 into N x 8 x 32; not an input given by --data; fed once).
 * `output` names the model's outputs (default: every task output that
 * feeds nothing).  Calls with the same structural workload hash
 * (dsl/ir/program.h loom_program_hash) and data fingerprint
 * (search/database/database.h loom_data_fingerprint) are one task -- the
 * same kernel on the same data, so the same tuning records -- whose weight
 * is the sum of their runs.
 */
#ifndef LOOM_MODEL_H
#define LOOM_MODEL_H

#include <stdint.h>

#include "../../dsl/ir/error.h"
#include "../../runtime/data/dataset.h"
#include "../tune/tune.h"

#define LOOM_MODEL_MAX_CALLS 256    /* task lines of one model file */
#define LOOM_MODEL_MAX_LINE 4096    /* bytes of one line, '\n' included */
#define LOOM_MODEL_MAX_RUNS 1000000 /* --runs */

/* One `task` line: a kernel call of the forward pass. */
typedef struct loom_model_call {
    char name[LOOM_MAX_NAME];    /* the line's task name (a C identifier) */
    char workload[1024];         /* the .loom file, resolved against the model file's folder */
    char *workload_text;         /* its text (owned) */
    loom_data_spec data[LOOM_MAX_TENSORS]; /* --data, paths resolved */
    int ndata;
    loom_param_spec params[LOOM_MAX_SIZES]; /* --param / -p */
    int nparams;
    int runs;                    /* --runs: times per forward pass (1..LOOM_MODEL_MAX_RUNS) */
    int line;                    /* its line in the model file */
    int task;                    /* index of its task in loom_model.tasks */
    loom_program *prog;          /* parsed and bound (owned) */
    loom_dataset *ds;            /* its data as loaded (owned; loom_model_run overwrites fed inputs and
                                    outputs) */
} loom_model_call;

/* A `feed` line: call src's tensor src_tensor is call dst's dst_tensor
 * (tensor indices of the programs' tensor tables). */
typedef struct loom_model_feed {
    int src, src_tensor, dst, dst_tensor;
    int line;
} loom_model_feed;

/* A model output: call `call`'s output tensor `tensor`; line 0: by default
 * (no `output` line). */
typedef struct loom_model_output {
    int call, tensor, line;
} loom_model_output;

/* A task: the calls with one (workload hash, data fingerprint). */
typedef struct loom_model_task {
    int call;                    /* its first call: the one tuned (its name names the task) */
    int ncalls;
    int weight;                  /* the sum of its calls' runs */
    uint64_t workload_hash;      /* loom_program_hash */
    uint64_t data_fp;            /* loom_data_fingerprint of the call's data as loaded */
} loom_model_task;

typedef struct loom_model {
    char name[64];               /* `model NAME`; default the file's stem */
    char path[1024];             /* the model file */
    loom_model_call *calls;      /* ncalls, in file (execution) order */
    int ncalls;
    loom_model_feed *feeds;
    int nfeeds;
    loom_model_output *outputs;
    int noutputs;
    loom_model_task *tasks;      /* in order of their first call */
    int ntasks;
} loom_model;

/* Read, check and load the model file `path` (search/model/model_file.c):
 * every workload parsed and bound to its data (dense inputs from the
 * generator with `seed`; `loom tune` uses 1), the feeds checked, the calls
 * grouped into tasks.  On success *out is owned by the caller
 * (loom_model_free).  Errors name the model file and line (err->file,
 * err->line; the message says which task and what):
 *   LOOM_ERR_IO      the file cannot be read;
 *   LOOM_ERR_PARSE   an unknown keyword, a malformed line ("feed expects
 *                    TASK.TENSOR -> TASK.TENSOR"), a bad or duplicate task
 *                    name, an unknown task option or a bad value (--runs,
 *                    --param), a line longer than LOOM_MODEL_MAX_LINE, more
 *                    than LOOM_MODEL_MAX_CALLS tasks, `model` twice, no task;
 *   LOOM_ERR_SEMANTIC a feed or output naming an unknown task or tensor, a
 *                    feed from a later task, from a tensor that is not an
 *                    output, into one that is not an input, is given by
 *                    --data or is fed twice, between tensors that are not
 *                    both dense or whose shapes differ (both printed);
 *   the workload's parse error and the data set's load error (its status),
 *   with the workload's own file:line:col or the data file in the message;
 *   LOOM_ERR_NOMEM. */
loom_status loom_model_load(const char *path, uint64_t seed, loom_model **out, loom_error *err);

/* Free a model and everything it owns (NULL is fine). */
void loom_model_free(loom_model *m);

/* ---- the task scheduler (search/model/model_sched.c) -------------------- */

typedef enum loom_task_scheduler_kind {
    LOOM_TASK_SCHEDULER_GRADIENT = 0, /* MetaSchedule's gradient-based (the default) */
    LOOM_TASK_SCHEDULER_ROUND_ROBIN   /* every alive task in turn (the baseline) */
} loom_task_scheduler_kind;

/* "gradient" / "round-robin"; NULL for a value outside the enum. */
const char *loom_task_scheduler_name(loom_task_scheduler_kind k);

/* Inverse of loom_task_scheduler_name ("gradient-based" is also taken).
 * Returns 0 and sets *out, or -1 for an unknown name. */
int loom_task_scheduler_parse(const char *name, loom_task_scheduler_kind *out);

/* MetaSchedule's gradient-based scheduler's constants: the defaults of
 * python/tvm/s_tir/meta_schedule/task_scheduler/gradient_based.py (TVM
 * 5d4dc87; formerly python/tvm/meta_schedule/...). */
#define LOOM_TASK_SCHEDULER_ALPHA 0.2
#define LOOM_TASK_SCHEDULER_WINDOW 3

/* What the scheduler sees of a task. */
typedef struct loom_task_state {
    int weight;                  /* runs per forward pass */
    int rounds;                  /* rounds (steps) it has had */
    const double *history;       /* rounds entries: its best latency (seconds) after each round,
                                    INFINITY while nothing succeeded */
    int terminated;              /* 1: gets no more rounds (its space gave nothing new) */
} loom_task_state;

/* The task that gets the next round, or -1 when every task is terminated.
 * Round-robin: the alive task with the fewest rounds (ties: the lowest
 * index), which is the cyclic order resumed from any point.  Gradient
 * (gradient_based.cc NextTaskId): while an alive task has had no round, the
 * first such (the round-robin warm-up); then for each alive task with n
 * rounds, best = history[n-1]:
 *     g = alpha * (history[n-1-w] - best) / w + (1 - alpha) * best / n
 * (the first term 0 while n < w + 1), times its weight; -1e9 when best is
 * not finite (nothing succeeded); the largest g goes next; when every g is
 * equal, a task drawn uniformly from the alive ones by `seed` (the caller
 * passes one per step, so a resumed campaign draws the same). */
int loom_task_scheduler_next(loom_task_scheduler_kind kind, const loom_task_state *tasks, int n, double alpha,
                             int window, uint64_t seed);

/* ---- the model campaign (search/model/model_tune.c) ---------------------- */

typedef struct loom_model_progress {
    int step;                    /* 1.. the step in hand (counted over the model's history) */
    int task;                    /* the task in hand */
    const char *task_name;
    int weight;
    int task_trials;             /* its records now */
    int done, total;             /* the model's trial records / budget */
    double task_best_s;          /* its best so far (INFINITY: none) */
    double e2e_s;                /* estimated end-to-end latency: sum of weight x best over the tasks
                                    (INFINITY until every task has a result) */
    double elapsed_s;
} loom_model_progress;

typedef struct loom_model_tune_opts {
    loom_tune_opts tune;         /* every task's campaign options (search/tune/tune.h): db_dir (the model's
                                    one database), target, search (seed), run, modules, pretrain, ...;
                                    batch is the trials of one step (MetaSchedule's num_trials_per_iter;
                                    when trials < tasks x batch, trials / tasks, at least 1, so every
                                    task gets a step);
                                    remeasure_rounds are made once per task at the end.  trials,
                                    workload_name/text, progress and seeds are set per step */
    int trials;                  /* trial records wanted over all tasks */
    loom_task_scheduler_kind scheduler;
    double alpha;                /* LOOM_TASK_SCHEDULER_ALPHA */
    int window;                  /* LOOM_TASK_SCHEDULER_WINDOW */
    void (*progress)(void *ctx, const loom_model_progress *p); /* after every trial; may be NULL */
    void *progress_ctx;
} loom_model_tune_opts;

/* Defaults: loom_tune_defaults() for the tasks, gradient, alpha 0.2, window 3. */
loom_model_tune_opts loom_model_tune_defaults(void);

typedef struct loom_model_task_result {
    int trials;                  /* its trial records now */
    int measured;                /* of which measured in this run */
    int rounds;                  /* steps it has had (its history's length) */
    int terminated;              /* 1: its space gave nothing new in its last step */
    double best_s;               /* best latency (the re-measured median when re-measured), INFINITY: none */
    double default_s;            /* its default schedule: the re-measured median when re-measured, else its
                                    fastest trial record (the sampled best's footing, so best_s <= default_s),
                                    else its last measurement (INFINITY: failed or never measured) */
} loom_model_task_result;

typedef struct loom_model_tune_result {
    int trials, resumed, measured; /* over all tasks: records now, of which found at the start, measured now */
    int steps;                   /* steps (rounds) over the model's history */
    int batch;                   /* trials of one step as the campaign took it (opts->tune.batch, or
                                    fewer: loom_model_tune_opts.tune) */
    double e2e_best_s;           /* sum of weight x best (INFINITY when a task has none) */
    double e2e_default_s;        /* sum of weight x default */
    char target_fp[128];
    loom_model_task_result *tasks; /* ntasks entries, malloc'd: loom_model_tune_result_free */
} loom_model_tune_result;

void loom_model_tune_result_free(loom_model_tune_result *r);

/* Tune model m: spend opts->trials trial records across its tasks.  Every
 * task's records go to the one database opts->tune.db_dir (search/
 * database/database.h: records are kept apart by workload hash, data
 * fingerprint and target), its best trace to DIR/best-TASK.json, the
 * campaigns' lines to DIR/campaign.log, and one line per step to
 * DIR/model.log.  A task's history is read back from the records (file
 * order, duplicates of a schedule counted once as loom_tune counts them):
 * its best after each multiple of the step's trials (batch) records, so a killed
 * campaign resumes with the same state and never measures a record again;
 * a step gives its task the trials to the next multiple of batch (a round
 * cut short by a kill is finished first), at most the budget left.  A step
 * that records nothing new terminates its task (its space is exhausted);
 * resumed, it is tried once more.  At the end every task that has records is
 * re-measured (loom_tune_remeasure, opts->tune.remeasure_rounds), as a
 * single-workload campaign ends: its best LOOM_TUNE_REMEASURE_TOP schedules
 * and its default measured together, the winner the lowest median *the
 * default included*, so best_s <= default_s and loom replay / loom run ship
 * the winner (ship/replay.h loom_ship_best); with 0 rounds, its sampled best
 * and its default's trial record (the minimum over records that include
 * the default: best_s <= default_s again, and the fastest record ships).  While it runs, the
 * directory holds a lock file DIR/model.lock: a second model campaign on it
 * refuses.  Errors: LOOM_ERR_INVALID (options: trials or batch < 1, no
 * db_dir, an unknown target), LOOM_ERR_IO (the directory, its database or
 * lock: "DIR is in use by another model campaign"), loom_tune's. */
loom_status loom_model_tune(loom_model *m, const loom_model_tune_opts *opts, loom_model_tune_result *res,
                            loom_error *err);

/* The model's estimated end-to-end latency after each of its trial records
 * in dbdir for target_fp (a fingerprint as the records carry it): out[k] is
 * sum over tasks of weight x (best of the task's first records up to the
 * model's (k+1)-th trial record, in file order), INFINITY while some task
 * has none.  *out is malloc'd (the caller frees it); returns the count
 * (the model's trial records), or -1 with err set: LOOM_ERR_IO (no
 * database), LOOM_ERR_NOMEM. */
int loom_model_trajectory(const loom_model *m, const char *dbdir, const char *target_fp, double **out,
                          loom_error *err);

#endif
