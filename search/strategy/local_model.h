/* loom: the local model -- an additive model of the measured latencies of
 * schedules that share one trace structure, over their decisions
 * (search.h local_model; used by the evolutionary strategy's local
 * exploration to rank the children of the best measured schedules).
 *
 * The cost model (costmodel/model.h) ranks schedules across the whole
 * design space from LIR features; near the best measured schedules, where
 * the candidates differ in one or two decisions and their latencies by a
 * few percent, its ranking of them measured no better than chance (ranking
 * local children with it took more trials than drawing them at random:
 * docs/tuning.md "Local exploration").  The local model is fitted on the
 * measured records themselves, in decision space:
 *
 *   log(latency) = mean + sum over sampling instructions i of w[i, d_i]
 *
 * one weight per (instruction index, decision value) seen in the records,
 * fitted by ridge regression (Tikhonov; Hoerl and Kennard 1970) in its
 * dual form, alpha = (X X^T + lambda I)^-1 (y - mean), w = X^T alpha,
 * with X the records' 0/1 indicator rows (GSL's Cholesky solver).  A
 * decision value no record has contributes 0 (the mean), so a child that
 * changes a decision to an unseen value is ranked as neither better nor
 * worse than the average measured one.  Only records whose trace has the
 * reference trace's instruction kinds in the same order take part, and
 * only such traces get a prediction.  This is the additive surrogate of
 * combinatorial Bayesian optimisation (Baptista and Poloczek, "Bayesian
 * Optimization of Combinatorial Structures", ICML 2018, whose model adds
 * pairwise terms) without its sampling. */
#ifndef LOOM_LOCAL_MODEL_H
#define LOOM_LOCAL_MODEL_H

#include <gsl/gsl_rng.h>

#include "../../traces/trace.h"

typedef struct loom_local_model loom_local_model;

/* Fits the model on the traces t[0..n) with measured latencies lat[0..n)
 * (seconds, > 0 and finite; other entries are skipped) that share ref's
 * structure (ref itself may be one of them); lambda > 0 is the ridge
 * weight (1 in loom: the indicators are 0/1).  *out receives the model
 * (free with loom_local_model_free), or NULL when fewer than min_records
 * records take part.  Errors: LOOM_ERR_INVALID (lambda <= 0, n < 0),
 * LOOM_ERR_NOMEM, LOOM_ERR_RUN (GSL could not factor the matrix). */
loom_status loom_local_model_fit(const loom_trace *const *t, const double *lat, int n, const loom_trace *ref,
                                 double lambda, int min_records, loom_local_model **out, loom_error *err);

/* The predicted natural log of the latency in seconds of trace t, or NAN
 * when t's structure is not the model's. */
double loom_local_model_predict(const loom_local_model *m, const loom_trace *t);

/* The model's own optimum near t (an additive model's optimum is found
 * decision by decision): for each sampling instruction i of t, the seen
 * decision of i with the lowest weight, when that weight is lower than
 * the weight of t's own decision (0 when unseen) by more than margin (in
 * log seconds), is written to decs[i] (a loom_decision override for
 * loom_trace_replay; decs has t->ninsts entries) -- with probability p
 * (drawn from rng; p >= 1 always, rng may then be NULL); every other
 * entry gets n = 0.  Returns the number of overrides written (0 also when
 * t's structure is not the model's). */
int loom_local_model_improve(const loom_local_model *m, const loom_trace *t, double p, double margin, gsl_rng *rng,
                             loom_decision *decs);

/* Screening (search.h local_screen): the number of distinct decisions of
 * instruction i (an index into the model's structure) the fitted records
 * hold, and in *has (may be NULL) 1 when x -- instruction i of some trace
 * of the model's structure -- holds one of them, else 0.  Returns 0 and
 * *has = 0 for i out of range. */
int loom_local_model_values(const loom_local_model *m, int i, const loom_inst *x, int *has);

/* Number of records fitted, and of features (distinct instruction and
 * decision pairs). */
int loom_local_model_records(const loom_local_model *m);
int loom_local_model_features(const loom_local_model *m);

void loom_local_model_free(loom_local_model *m);

#endif
