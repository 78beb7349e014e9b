/* loom: a model's trial records read back from its database
 * (search/model/model_scan.c; private to search/model/). */
#ifndef LOOM_MODEL_SCAN_H
#define LOOM_MODEL_SCAN_H

#include "../database/database.h"
#include "model.h"

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
