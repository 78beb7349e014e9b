/* loom: a whole model shipped as one C library (`loom replay MODEL.model
 * --db DIR --emit-lib NAME`; docs/models.md "Shipping a model", issue 30).
 *
 * Every task of the model (search/model/model.h) becomes a kernel library
 * of its own as ship/ship.h writes one, named NAME_TASK (TASK: the task's
 * first call), from its best record in DIR for the target -- the winner of
 * its last re-measurement, as `loom replay` takes it (ship/replay.h
 * loom_ship_best) -- or, without a usable record, its default schedule
 * (modules/module.h loom_default_build).  A model file NAME.c adds the
 * forward pass, and all of them are built into one libNAME.so:
 *
 *   DIR/NAME_TASK.c, DIR/NAME_TASK.h   each task's kernel (ship/ship.h: its
 *                                      typed entry NAME_TASK, NAME_TASK_abi,
 *                                      NAME_TASK_signature)
 *   DIR/NAME.c, DIR/NAME.h             the forward pass
 *   DIR/libNAME.so                     all of them (cc -O3 -march=native
 *                                      -fopenmp -fPIC -shared
 *                                      -fvisibility=hidden: only the
 *                                      entries and signatures are exported)
 *
 * The forward pass's entry:
 *
 *   int NAME(<arrays>);
 *
 * calls the kernels in the model file's order, each call `--runs` times,
 * with every fed input taking its producer's output array.  Its arguments
 * are, per call in file order and per declared tensor of that call in
 * declaration order, the arrays of ship/ship.h's typed entry (pos, crd,
 * vals) prefixed with the call's name (xw1_A_pos1, xw1_B_vals, ...), except
 *   - a fed input: none (it is its producer's output);
 *   - an output that feeds a later call and is not a model output (an
 *     intermediate): none (the entry allocates it per call and frees it).
 * So a caller passes the model's inputs (sparse data and weights) and
 * receives its outputs (and any output that feeds nothing).  Sizes are fixed
 * (the kernels are specialised to them); there are no size arguments.
 * Returns the first non-zero return of a kernel (ship/ship.h LOOM_SHIP_*),
 * 1 when an intermediate cannot be allocated, 3 when an argument is NULL.
 *
 *   extern const char NAME_signature[];
 *
 * is the same as JSON (what the Python package's loom.load_model reads):
 * {"name", "kind": "model", "model", "abi_version", "calls": [{name, task,
 * kernel, runs, from_record, record_line}], "feeds": [{src, src_tensor, dst,
 * dst_tensor}], "outputs": ["CALL_TENSOR"], "kernels": [every kernel's own
 * signature], "tensors": [one per tensor with arguments, in argument order,
 * the fields of a kernel signature's tensors with name CALL_TENSOR, call,
 * tensor (its name in the call), args prefixed, pattern_of an index into
 * this list or -1]}.
 */
#ifndef LOOM_SHIP_MODEL_SHIP_H
#define LOOM_SHIP_MODEL_SHIP_H

#include "../search/model/model.h"

/* What loom_model_ship wrote, per task. */
typedef struct loom_model_ship_task {
    char kernel[64];             /* the kernel's name: NAME_TASK */
    int from_record;             /* 1: its best record in db_dir; 0: its default schedule */
    int record_line;             /* that record's line in DIR/records.jsonl (0: the default) */
    double record_latency_s;     /* that record's latency (re-measured median when re-measured); 0: default */
    char why_default[1100];      /* from_record 0 with a db_dir: why no record was used */
} loom_model_ship_task;

typedef struct loom_model_ship_result {
    int from_records;            /* tasks that shipped a tuned record */
    loom_model_ship_task *tasks; /* m->ntasks entries, malloc'd: loom_model_ship_result_free */
} loom_model_ship_result;

void loom_model_ship_result_free(loom_model_ship_result *r);

/* Write and build model m as the library `name` in the existing directory
 * `dir` (above).  db_dir: the model's tuning database (NULL: every task
 * ships its default schedule); target: whose records to take, as `loom
 * tune --target` took it (NULL: "cpu"); a simulator target's records are
 * lowered for this CPU, where the library runs.  build 0: write the
 * sources only.  Errors: LOOM_ERR_INVALID (a bad name: a C identifier of
 * 1..40 characters whose kernels' names NAME_TASK fit in 40 too, not
 * starting with loom_; an unknown target; two arguments of the same name),
 * LOOM_ERR_IO (db_dir unreadable, a file cannot be written), the default
 * schedule's and the lowering's errors (naming the task), LOOM_ERR_BUILD
 * (the compiler failed), LOOM_ERR_NOMEM. */
loom_status loom_model_ship(const loom_model *m, const char *db_dir, const char *target, const char *name,
                            const char *dir, int build, loom_model_ship_result *res, loom_error *err);

#endif
