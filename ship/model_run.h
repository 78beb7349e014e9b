/* loom: a whole model's forward pass (`loom run MODEL`; docs/models.md,
 * issue 30): every task line of a model file (search/model/model.h) runs
 * its kernel in file order -- the best record of its task in a tuning
 * database, or the default schedule -- with the outputs of earlier tasks
 * fed to later tasks' inputs as the model's `feed` lines say, and the
 * model's outputs are checked against the reference interpreter's forward
 * pass (runtime/measure/reference.h) over the same dataflow.
 */
#ifndef LOOM_SHIP_MODEL_RUN_H
#define LOOM_SHIP_MODEL_RUN_H

#include "../runtime/measure/pipeline.h"
#include "../search/model/model.h"

typedef struct loom_model_run_opts {
    const char *db_dir;          /* the model's tuning database; NULL: every task runs its default schedule */
    const char *target;          /* whose records to take, as `loom tune --target` took it (NULL: "cpu");
                                    a simulator target's records (and its default schedule) are run on this
                                    CPU, lowered for it as a simulated campaign checks its best */
    loom_run_opts run;           /* build and measurement options (loom_run_defaults); run.limits is set here */
} loom_model_run_opts;

/* Defaults: no database, target "cpu", loom_run_defaults(). */
loom_model_run_opts loom_model_run_defaults(void);

/* One call's kernel in the forward pass. */
typedef struct loom_model_call_run {
    int from_record;             /* 1: its task's best record (ship/replay.h loom_ship_best); 0: the default */
    int record_line;             /* that record's line in DIR/records.jsonl (0: the default) */
    loom_status status;          /* the kernel's (runtime/measure/batch.h loom_run_result.status) */
    double latency_s;            /* its median time per run (INFINITY: it failed) */
    int correct;                 /* its outputs match the reference on the same inputs */
    double max_rel_err, tol;     /* that check's (runtime/measure/reference.h loom_check) */
    char message[1100];          /* why it failed ("" when it ran) */
} loom_model_call_run;

typedef struct loom_model_run_result {
    double latency_s;            /* end to end: sum over calls of runs x latency_s (INFINITY: one failed) */
    int correct;                 /* 1: every call ran and the model's outputs are within tol */
    double max_rel_err;          /* the model's outputs against the reference forward pass (loom_check's
                                    relative error, the largest over the outputs) */
    double tol;                  /* min(1e-2, sum of the calls' tolerances): each call adds its own fp32
                                    error to its inputs' */
    int from_records;            /* calls that ran a tuned record */
    loom_model_call_run *calls;  /* ncalls entries, malloc'd (loom_model_run_result_free) */
} loom_model_run_result;

void loom_model_run_result_free(loom_model_run_result *r);

/* Run m's forward pass once on this CPU.  First the reference: each call's
 * reference interpreter (double precision) on its inputs, the fed ones
 * being the reference's outputs of the earlier calls (rounded to float, as
 * a kernel's are).  Then the kernels: each call's schedule (chosen before
 * any input is overwritten: a record is looked up by the data the task was
 * tuned on) is built and measured in a child process (runtime/measure/
 * pipeline.h; its own check against the reference on its actual inputs),
 * its outputs fed to the later calls.  m's data sets are overwritten
 * (fed inputs, outputs).  Kernel failures are results (status, correct 0),
 * not errors; a task without a usable record (none of its data and target,
 * or one that no longer replays or validates) runs its default schedule,
 * and its call's message says why.  Errors: LOOM_ERR_INVALID (an unknown
 * target), LOOM_ERR_IO (db_dir unreadable), the reference's errors, the
 * default schedule's (modules/module.h loom_default_build), LOOM_ERR_NOMEM;
 * each message names the task. */
loom_status loom_model_run(loom_model *m, const loom_model_run_opts *opts, loom_model_run_result *res,
                           loom_error *err);

#endif
