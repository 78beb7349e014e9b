/* loom: the tuning campaign's state, shared by search/tune/tune.c and
 * search/tune/tune_remeasure.c (private; see tune.h). */
#ifndef LOOM_TUNE_INTERNAL_H
#define LOOM_TUNE_INTERNAL_H

#include "../../costmodel/features.h"
#include "../../costmodel/model.h"
#include "../../modules/module.h"
#include "../../runtime/runner/runner.h"
#include "../../runtime/target/target.h"
#include "../database/database.h"
#include "tune.h"

typedef struct tune_ctx {
    loom_program *prog;
    loom_dataset *ds;
    loom_reference *ref;
    const loom_tune_opts *o;
    loom_db *db;
    uint64_t whash, dfp;
    uint64_t foreign_default; /* the default schedule's structural hash when it is modules/default.c's, not
                                 the space's (loom__tune_default), else 0: search.h env.foreign_hash */
    char target_fp[128];     /* target.fingerprint */
    int simulated;           /* target.kind == LOOM_TARGET_SIM */
    loom_target target;      /* the campaign's target handle (loom_target_open), chosen once */
    loom_limits lim;         /* target.limits: the space's, the validator's and the lowering's */
    loom_runner *runner;     /* the target's runner (runtime/runner/runner.h): every measurement */
    loom_registry *reg;
    loom_space *space;
    loom_cost_model *model;
    loom_data_stats stats;
    int nfeat;
    uint64_t group;
    int threads;
    /* measured schedule hashes, sorted */
    uint64_t *measured;
    int nmeasured, capmeasured;
    /* the best so far */
    double best_latency, best_flops;
    char *best_json;
    /* counters */
    int ok, failed, resumed, measured_now;
    int by_status[16];
    FILE *log;
    double t_start;
    double costmodel_s, compile_s, measure_s;
    long invalid;
    /* the machine's state (runtime/measure/measure.h loom_measure_core_line_ns) */
    double line_ns;              /* the probe of the measurement being recorded (0: none) */
    double line_first[LOOM_TUNE_CORE_LINE_REF]; /* the campaign's first probes */
    int nline_first;
    int line_moved;              /* 1 while the latest probe is LOOM_CORE_LINE_MOVED x off their median */
    loom_tune_result *res;
    /* the batch being measured */
    loom_candidate *batch;
    float *batch_feat;       /* features of the batch, row per candidate */
    double *batch_lat;
    int batch_ok, batch_failed, batch_status[16];
    loom_status append_status;
    char append_msg[1024];
    int stop;                /* 1 once a record could not be written: measure nothing more */
    int pretrained;          /* simulated schedules the model was pre-trained on */
    int transferred;         /* records of earlier databases it was pre-trained on (transfer) */
    char *pins_json;         /* opts->pins as the records store them (loom_pins_to_json); NULL: unpinned */
    char model_desc[160];    /* what ranks the candidates now, for the log ("" = untrained) */
    double ctl_level;        /* the round control's last re-run over its record (tune.c round_drifted; 0: none) */
    double ctl_check_at;     /* when that re-run was made (unix seconds) */
} tune_ctx;

/* A round's control (tune.h no_round_control): the campaign's best ok
 * record of this workload, data and target (carrying the pins), its
 * schedule replayed. */
typedef struct loom__tune_control {
    loom_schedule *sch; /* owned; NULL: none */
    uint64_t hash;
    double recorded_s;  /* its record's latency */
    double recorded_at; /* when that record was measured (unix seconds) */
} loom__tune_control;

/* Fill ctl with the control (ctl->sch NULL when there is no record to
 * take, or the target is simulated).  Free with loom__tune_control_free. */
void loom__tune_control_pick(tune_ctx *c, loom__tune_control *ctl);
void loom__tune_control_free(loom__tune_control *ctl);

/* A line "TIME text" in DIR/campaign.log (nothing when there is no log). */
void loom__tune_log(tune_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Start a tuning record of the campaign: zero, then the fields every one
 * carries -- the workload (hash, name, text), the data set's fingerprint
 * (16 hex digits written into dfp, which r->data_fp points to) and the
 * target's fingerprint (c->target_fp).  Used by the measured rounds
 * (tune.c) and the re-measurement (tune_remeasure.c). */
/* The median of v[0..n) (not changed; at most LOOM_TUNE_MAX_ROUNDS values),
 * 0 when n is 0: GSL's gsl_stats_median_from_sorted_data on a sorted copy. */
double loom__tune_median(const double *v, int n);
void loom__tune_record_init(const tune_ctx *c, loom_record *r, char dfp[17]);

/* Measure a schedule of the campaign's program through the campaign's
 * runner (runtime/runner/runner.h: CPU, a batch of one; simulator, one
 * simulation with the target's limits): its latency in seconds, or INFINITY
 * with *status and msg saying why. */
double loom__tune_measure_one(tune_ctx *c, const loom_schedule *sch, loom_status *status, char *msg, size_t nmsg);

/* The default schedule (modules/module.h loom_default_build with the
 * campaign's space and its target's limits) with its trace (def->sch
 * malloc'd, def->trace, def->hash; free with loom_candidate_free); logs
 * why when it is modules/default.c's, not the space's.  Errors: those of
 * loom_default_build, LOOM_ERR_NOMEM. */
loom_status loom__tune_default(tune_ctx *c, loom_candidate *def, loom_error *err);

/* Set up c for a campaign on (prog, ds, opts) (tune_open.c): the target
 * handle and its runner, the database (its lock), the log, the reference;
 * with `campaign`, also the design space, the data statistics and the cost
 * model.  On error the caller still calls loom__tune_finish.  Errors: those
 * of loom_tune. */
loom_status loom__tune_open(tune_ctx *c, loom_program *prog, loom_dataset *ds, const loom_tune_opts *opts,
                            loom_tune_result *res, int campaign, loom_error *err);

/* Fill c->res from c, write the best trace and the log's last line, free
 * c's state and `search` (may be NULL). */
void loom__tune_finish(tune_ctx *c, loom_search *search);

/* Pre-train the cost model on opts->pretrain simulated schedules of the
 * space and the records of opts->transfer_dirs (search/tune/tune_pretrain.c),
 * validated with `lim`; logs what it did.  Nothing when both are empty or
 * the model is trained already.  Errors:
 * the pre-training target does not load; LOOM_ERR_NOMEM; the model's. */
loom_status loom__tune_pretrain(tune_ctx *c, const loom_limits *lim, loom_error *err);

/* The end-of-campaign re-measurement (tune.h loom_tune_remeasure) on an
 * open campaign: fills c->res, appends the re-measurement records, makes
 * the winner c's best. */
loom_status loom__tune_remeasure(tune_ctx *c, loom_error *err);

/* Schedule sch measured once (CPU) with one OpenMP thread in the
 * measuring child: seconds, NAN on a simulator target, when libgomp is
 * not loaded, or when the measurement failed. */
double loom__tune_measure_one_thread(tune_ctx *c, const loom_schedule *sch);

/* The fastest ok trial record of schedule h on c's workload, data and
 * target (not a re-measurement), or INFINITY (tune_remeasure.c). */
double loom__tune_record_latency(tune_ctx *c, uint64_t h);

#endif
