/* loom: the cost model -- XGBoost gradient-boosted trees over feature rows.
 *
 * DESIGN.md "Cost model".  The model ranks measure candidates: it learns, from
 * measured tuning records, a score per feature row (higher = predicted faster)
 * that the search uses to pick what to measure next.  It follows MetaSchedule's
 * XGBModel (apache/tvm python/tvm/meta_schedule/cost_model/xgb_model.py, as
 * summarised in /work/shared/research/metaschedule.md section 8):
 *
 *  - Labels: per group (workload + data + target), label = best latency in the
 *    group / latency, so the best record of a group has label 1 and a record 2x
 *    slower has 0.5.  A failed candidate (latency <= 0, NaN or INFINITY) has
 *    label 0 (MetaSchedule gives failures a cost of 1e10, i.e. label ~0).
 *  - Warm-up: below `min_records` (MetaSchedule's num_warmup_samples = 100) or
 *    with no booster yet, scores come from a random model.
 *  - Adaptive training: retrain only when the records grew by `retrain_growth`
 *    (MetaSchedule: data_size - last_train_size >= last_train_size / 5).
 *  - XGBoost parameters (MetaSchedule's XGBConfig): max_depth = 10,
 *    gamma = 0.001, min_child_weight = 0, eta = 0.2, seed; tree_method =
 *    "hist", which is what MetaSchedule's "auto" means from XGBoost 2.0 on (the
 *    installed 1.7 maps "auto" to "exact" on small data, several times slower
 *    at 1000 records x 180 features); up to num_boost_round = 10000 rounds with
 *    early stopping after 50 rounds without improvement (MetaSchedule's
 *    early_stopping_rounds = 50).
 *  - Early stopping watches the RMSE on the held-out records (improvements
 *    below a relative LOOM_COST_MODEL_MIN_DELTA do not count), not the
 *    training RMSE MetaSchedule watches: at 1000 records x 180 features the
 *    training RMSE kept improving for 1315 rounds (124 s wall, exact trees, on
 *    this shared machine), and the held-out RMSE without a minimum delta for
 *    300-1800 rounds (hist), while ranking quality on fresh rows is the same
 *    after 100 rounds as after 300 (bench/bench_model.c).  With the
 *    held-out rule training stops after 25-40 rounds (2.9 CPU s for the whole
 *    update at 1000 records, 5.9 s at 5000) with the same quality on fresh
 *    rows.  The final booster, trained on all records, gets the number of
 *    rounds that was best on the held-out records.  Only when too few records
 *    can be held out does it fall back to MetaSchedule's rule.
 *
 * Objective: reg:squarederror on the label, unweighted.  MetaSchedule trains
 * one row per BufferStore and sums the rows of a program ("pack-sum") with a
 * custom label-weighted squared error; loom gives exactly one feature row per
 * candidate, so the pack sum is the identity and plain squared error on the
 * label is the same regression.  The rows are not weighted by the label
 * (MetaSchedule's hess = y) because that gives failed candidates (label 0)
 * zero weight, and the model then ranks them no better than chance (49% of
 * (failure, success) pairs ordered right in bench/bench_model.c, against
 * 99.6% unweighted).  rank:pairwise with the group as query id ranked worse
 * there (per-group Spearman 0.89 against 0.97, top-10 recall 0.15 against
 * 0.60, 1000 records, 100 rounds) and trained 7x slower, so squared error
 * stays.
 *
 * Quality: at each retrain a random `heldout` fraction of the records is held
 * out, a booster is trained on the rest and scored on it (Spearman rank
 * correlation and top-k recall; MetaSchedule only watches the training error),
 * then the final booster is trained on all records.  The same held-out records
 * choose the number of rounds, so the figures are slightly optimistic (one
 * integer is tuned on them); bench/bench_model.c also scores fresh rows.
 *
 * Threads: every function may be called from several threads at once.  One
 * mutex per model guards the records and the booster; every XGBoost call made
 * on the model's booster (prediction included) is made under it, so XGBoost is
 * never asked to be thread-safe.  loom_cost_model_update trains on a private
 * copy of the records *outside* the mutex and only swaps the new booster in
 * under it, so predictions keep being served (by the old booster) while it
 * trains; concurrent updates are serialised by a second mutex.
 *
 * fork() safety: XGBoost uses OpenMP.  With nthread = 1 (the default) no
 * OpenMP thread pool is started, so runtime/measure/measure.c's forked children may
 * still run OpenMP kernels; with nthread > 1 libgomp keeps a thread pool and a
 * forked child must not run OpenMP code (see runtime/measure/measure.h).
 *
 * XGBoost's console logging is silenced (verbosity 0, global and per booster).
 */
#ifndef LOOM_COSTMODEL_MODEL_H
#define LOOM_COSTMODEL_MODEL_H

#include <stdint.h>

#include "../dsl/ir/error.h"

typedef struct loom_cost_model loom_cost_model;

typedef struct loom_cost_model_opts {
    int nfeatures;          /* columns of every feature row (>= 1) */
    uint64_t seed;          /* random model and XGBoost seed; default 43 (MetaSchedule's XGBConfig.seed) */
    int min_records;        /* 100: below this the model is random (MetaSchedule's num_warmup_samples) */
    double retrain_growth;  /* 0.2: retrain when the records grew by this fraction since the last training */
    int nthread;            /* XGBoost threads (0: 1) */
    int num_rounds;         /* maximum boosting rounds: 10000, MetaSchedule's num_boost_round; training
                               stops earlier after LOOM_COST_MODEL_EARLY_STOP rounds without improvement
                               (of the held-out RMSE; see above) */
    double heldout;         /* 0.2: fraction held out to measure quality at each retrain (in [0, 1)) */
} loom_cost_model_opts;

/* Rounds without improvement of the watched RMSE after which boosting stops
 * (MetaSchedule's XGBModel early_stopping_rounds). */
#define LOOM_COST_MODEL_EARLY_STOP 50

/* An RMSE counts as an improvement only when it is below the best so far by
 * this relative amount (XGBoost's EarlyStopping callback calls it min_delta;
 * MetaSchedule uses 0).  loom's choice: without it the held-out RMSE keeps
 * improving in the 6th digit for 300-1800 rounds (bench/bench_model.c) while
 * ranking quality does not change. */
#define LOOM_COST_MODEL_MIN_DELTA 1e-3

/* The defaults above for rows of `nfeatures` columns. */
loom_cost_model_opts loom_cost_model_defaults(int nfeatures);

/* Create an empty (random, untrained) model from the options o (required;
 * start from loom_cost_model_defaults); *out is owned by the caller and freed
 * with loom_cost_model_free.  Errors: LOOM_ERR_INVALID (o or out NULL, nfeatures < 1,
 * min_records < 0, retrain_growth < 0, nthread < 0, num_rounds < 1, heldout
 * outside [0, 1)); LOOM_ERR_NOMEM. */
loom_status loom_cost_model_new(const loom_cost_model_opts *o, loom_cost_model **out, loom_error *err);

/* Free the model and its booster; NULL is a no-op. */
void loom_cost_model_free(loom_cost_model *m);

/* Add n measured records (copied): features row-major n x nfeatures (NaN means
 * "missing" to XGBoost; +-INFINITY is rejected); group[i] identifies the
 * workload+data+target the record belongs to (labels are normalised per group:
 * label = best latency in group / latency, so the best is 1); latency_s[i]
 * (seconds) <= 0, NaN or INFINITY means the candidate failed (label 0).  Labels
 * of a group are recomputed when a better latency arrives.  n = 0 is a no-op.
 * Errors: LOOM_ERR_INVALID (m NULL, n < 0, an array NULL when n > 0, an
 * infinite feature: the message names the row and column; nothing is added);
 * LOOM_ERR_NOMEM. */
loom_status loom_cost_model_add(loom_cost_model *m, const float *features, const uint64_t *group,
                                const double *latency_s, int n, loom_error *err);

/* Number of records added so far (0 for NULL). */
int loom_cost_model_records(const loom_cost_model *m);

/* 1 once an XGBoost booster exists (trained or loaded), else 0 (0 for NULL). */
int loom_cost_model_trained(const loom_cost_model *m);

/* The current label of the first min(cap, records) records, in the order
 * added, into out[0..].  Returns the number written, or -1 when m or out is
 * NULL or cap < 0.  Labels are in [0, 1]: best latency in the
 * record's group / its latency, 0 for a failed record. */
int loom_cost_model_labels(const loom_cost_model *m, double *out, int cap);

typedef struct loom_cost_model_quality {
    int ntrain, nheldout;   /* records the held-out booster was trained on / scored on */
    double spearman;        /* rank correlation of predicted scores and labels on the held-out records,
                               all groups together, failures (label 0) included (NaN when nheldout < 2
                               or either side is constant) */
    double topk_recall;     /* |predicted top k ∩ true top k| / k on the held-out records (NaN when k = 0);
                               see loom_topk_recall for ties */
    int k;                  /* min(10, nheldout) */
    double train_seconds;   /* wall time of the whole update: held-out booster, its scoring, final booster */
    int rounds;             /* boosting rounds of the final booster: the best round count on the held-out
                               records (or, with nothing held out, where training-RMSE early stopping ended) */
    int records;            /* records the final booster was trained on */
} loom_cost_model_quality;

/* Retrain if due (records >= min_records and, when a booster was already
 * trained, records - records_at_last_training >= retrain_growth *
 * records_at_last_training; or force, which trains whenever there is at least
 * one record): hold out a random `heldout` fraction (GSL mt19937 seeded from
 * seed and the training count, so a rerun with the same records splits the
 * same way), train on the rest with early stopping on the held-out RMSE,
 * measure quality on the held-out records, then train the final booster on all
 * records for the best number of rounds.  *retrained = 1 and *q filled when it
 * trained, else *retrained = 0 and *q untouched.  q may be NULL.  With fewer
 * than 2 held-out records or no training record left, the quality step is
 * skipped (nheldout = 0, spearman and topk_recall NaN).
 * Errors: LOOM_ERR_INVALID (m or retrained NULL); LOOM_ERR_RUN (XGBoost
 * failed: the message names the call and quotes XGBGetLastError() without its
 * stack trace; the previous booster stays);
 * LOOM_ERR_NOMEM. */
loom_status loom_cost_model_update(loom_cost_model *m, int force, int *retrained, loom_cost_model_quality *q,
                                   loom_error *err);

/* Scores (higher = predicted faster; comparable within a group) for n rows
 * (row-major n x nfeatures) into scores[0..n-1].  Once a booster exists
 * (trained or loaded): the booster's predicted label.  Before: a random model
 * whose score is a deterministic hash (FNV-1a over the seed and the row's bytes, finished with
 * the splitmix64 mixer) in [0,1) -- same row and seed, same score, so it is
 * reproducible and thread-safe.  Safe to call from several threads at once
 * (XGBoost is called under the model's mutex, see above).  n = 0 is a no-op.
 * Errors: LOOM_ERR_INVALID (m NULL, n < 0, features or scores NULL when n > 0,
 * an infinite feature); LOOM_ERR_RUN (XGBoost failed: XGBGetLastError());
 * LOOM_ERR_NOMEM. */
loom_status loom_cost_model_predict(loom_cost_model *m, const float *features, int n, double *scores,
                                    loom_error *err);

/* Save the model: the booster as XGBoost JSON at `path` (written from
 * XGBoosterSaveModelToBuffer with format "json", so the file is JSON whatever
 * its extension) plus a sidecar "<path>.meta" (JSON: format, version,
 * nfeatures, seed, trained, records_at_training).  Each file is written to
 * "<file>.tmp" and renamed, so a crash never leaves a torn file.  An untrained
 * model writes only the sidecar (trained = 0) and removes nothing.  Records are
 * not saved: they live in the tuning-record database.
 * Errors: LOOM_ERR_INVALID (m or path NULL); LOOM_ERR_IO (a file could not be
 * written: err->file names it); LOOM_ERR_RUN (XGBoost failed). */
loom_status loom_cost_model_save(const loom_cost_model *m, const char *path, loom_error *err);

/* Load a model saved by loom_cost_model_save into m: the seed, the booster (or
 * none, for an untrained save) and records-at-training are restored, so m
 * predicts exactly as the saved model did; m's records and options other than
 * the seed are kept.  The next update retrains when m's records have grown by
 * retrain_growth over the saved records-at-training.  The booster is read into
 * memory and given to XGBoosterLoadModelFromBuffer, which checks it is JSON
 * and that its feature count matches the sidecar.
 * Errors (err->file names the file; m is unchanged): LOOM_ERR_INVALID (m or
 * path NULL, or the saved nfeatures differs from m's); LOOM_ERR_IO (missing or
 * unreadable file); LOOM_ERR_DATA (the sidecar is not a loom cost model
 * sidecar, or XGBoost rejects the booster file as corrupt). */
loom_status loom_cost_model_load(loom_cost_model *m, const char *path, loom_error *err);

/* Format q into buf (n bytes, truncated to fit) as one line for the campaign
 * log, e.g. "cost model retrained on 400 records in 0.11 s (26 rounds):
 * held-out 80 records (trained on 320), Spearman 0.956, top-10 recall 0.80".
 * Returns buf (untouched when buf is NULL or n <= 0). */
char *loom_cost_model_quality_format(const loom_cost_model_quality *q, char *buf, int n);

/* Spearman rank correlation of a[0..n-1] and b[0..n-1]: the Pearson
 * correlation of their ranks, ties given their average rank (GSL's
 * gsl_stats_spearman).  NaN when n < 2, a or b is NULL, or either side is
 * constant. */
double loom_spearman(const double *a, const double *b, int n);

/* Top-k recall: the fraction of the k rows with the highest pred (ties broken
 * by lower index; NaN preds rank last) whose truth is at least the k-th
 * largest truth value -- i.e. |predicted top k ∩ true top k| / k, with ties in
 * truth at the k-th place counted as members of the true top k (a NaN truth
 * counts as -infinity).  k > n is clamped to n.  NaN when n < 1, k < 1, or an
 * array is NULL.  A random ranking scores k/n on average. */
double loom_topk_recall(const double *pred, const double *truth, int n, int k);

#endif
