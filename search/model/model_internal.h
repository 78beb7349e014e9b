/* loom: search/model/'s private declarations: the model file's reader,
 * shared by model_file.c (the lines) and model_load.c (binding a task, the
 * tasks, the outputs), and the records of a model (model_scan.c, used by
 * model_tune.c).  See model.h. */
#ifndef LOOM_MODEL_INTERNAL_H
#define LOOM_MODEL_INTERNAL_H

#include "../database/database.h"
#include "model.h"

/* The words of one line (after its comment is cut). */
#define LOOM__MODEL_MAX_WORDS 160

typedef struct loom__model_line {
    const char *path;            /* the model file */
    int line;                    /* 1-based */
    int nwords;
    char *words[LOOM__MODEL_MAX_WORDS];
} loom__model_line;

/* Set err to status at the line: "file:line: " + the message. */
loom_status loom__model_err(const loom__model_line *L, loom_status status, loom_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* `path` relative to the model file's folder `dir` (absolute paths and
 * dir "" are kept) into out (n bytes).  Returns 0, or -1 when it does not
 * fit. */
int loom__model_resolve(const char *dir, const char *path, char *out, size_t n);

/* Parse and bind call c (its workload, data and params filled by the
 * reader) with the dense generator's seed.  Errors at L: the workload's
 * parse error, the data set's load error, LOOM_ERR_NOMEM. */
loom_status loom__model_bind(loom_model_call *c, const loom__model_line *L, uint64_t seed, loom_error *err);

/* Group m's calls into tasks by (workload hash, data fingerprint) and add
 * the default outputs when no `output` line named one.  Errors:
 * LOOM_ERR_NOMEM. */
loom_status loom__model_finish(loom_model *m, loom_error *err);

/* A tensor of call c by name, with the file's TASK.TENSOR syntax split:
 * returns its index or -1 (err set at L: unknown task or tensor). */
int loom__model_tensor(const loom_model *m, const char *ref, const loom__model_line *L, int *call, loom_error *err);

/* ---- the model's records (search/model/model_scan.c) ---- */

/* One trial record of the model: its task and latency (INFINITY: failed). */
typedef struct loom__model_trial {
    int task;
    double latency_s;
} loom__model_trial;

/* The trial records of m's tasks on target_fp in db, in file order:
 * records of a task's (workload hash, data fingerprint), not
 * re-measurements, a schedule's duplicate records counted once (as
 * loom_tune counts them).  *out is malloc'd (the caller frees it); returns
 * the count, or -1 when out of memory. */
int loom__model_scan(const loom_model *m, const loom_db *db, const char *target_fp, loom__model_trial **out);

#endif
