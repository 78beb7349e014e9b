/* The cost model's view of fusion plans (`loom plan score`; search/plan/plan.h,
 * docs/plans.md).  A plan is scored by the model on the fill it keeps (the
 * design-space draw the simulator ranked best), with the same features a
 * tuning campaign gives the model (costmodel/features.h).  The model is a
 * campaign's saved one (loom_cost_model_save: DIR/cost_model.json) or, when
 * none is given, one pre-trained here on the simulator as `loom tune
 * --pretrain N` does (search/tune/tune_pretrain.c): N distinct valid schedules of
 * the workload's default CPU design space, simulated on the plan context's
 * target over the same data, one label group. */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../costmodel/features.h"
#include "../../runtime/runner/runner.h"
#include "../../traces/validate.h"
#include "plan.h"
#include "../strategy/search_internal.h"

/* The label group of the simulated records (any constant: one group). */
#define PLAN_PRETRAIN_GROUP 0x504C414E53494DULL

static loom_status new_model(uint64_t seed, loom_cost_model **out, loom_error *err)
{
    loom_cost_model_opts mo = loom_cost_model_defaults(loom_feature_count());
    mo.seed = seed;
    mo.nthread = 1; /* no libgomp pool: --measure forks (costmodel/model.h) */
    return loom_cost_model_new(&mo, out, err);
}

loom_status loom_plan_model_load(const char *path, loom_cost_model **out, loom_error *err)
{
    *out = NULL;
    loom_cost_model *m = NULL;
    loom_status st = new_model(43, &m, err);
    if (!st)
        st = loom_cost_model_load(m, path, err);
    if (!st && !loom_cost_model_trained(m))
        st = loom_error_set(err, LOOM_ERR_DATA, path, 0, 0,
                            "the cost model in %s was never trained (a campaign saves a trained booster once its "
                            "model retrains); give another --model or none (a model pre-trained on the simulator)",
                            path);
    if (st) {
        loom_cost_model_free(m);
        return st;
    }
    *out = m;
    return LOOM_OK;
}

/* lat[i]: schs[i] simulated on c->target (its simulator runner,
 * runtime/runner/runner.h), INFINITY when it failed (label 0); *ok counts
 * the successes. */
static loom_status simulate(const loom_plan_ctx *c, loom_schedule **schs, int n, double *lat, int *ok,
                            loom_error *err)
{
    loom_runner *run = NULL;
    loom_measure_candidate *mc = malloc(sizeof *mc * (size_t)n);
    loom_runner_result *rr = malloc(sizeof *rr * (size_t)n);
    loom_status s = mc && rr ? loom_runner_sim_new(c->target, c->ds, NULL, &run, err)
                             : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int i = 0; !s && i < n; i++)
        mc[i] = (loom_measure_candidate){schs[i], NULL};
    if (!s)
        s = loom_runner_run(run, mc, n, NULL, rr, NULL, err);
    for (int i = 0; !s && i < n; i++) {
        lat[i] = rr[i].status == LOOM_OK ? rr[i].latency_s : INFINITY;
        *ok += rr[i].status == LOOM_OK;
    }
    loom_runner_free(run);
    free(mc), free(rr);
    return s;
}

loom_status loom_plan_model_pretrain(const loom_plan_ctx *c, const loom_data_stats *st, int n, uint64_t seed,
                                     loom_cost_model **out, int *ntrained, loom_error *err)
{
    *out = NULL;
    *ntrained = 0;
    if (!c->ds || !c->target || n < 2)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "pre-training a plan model needs data, a target and at least 2 schedules (got %d)", n);
    int nf = loom_feature_count();
    loom_limits lim = c->target->limits; /* the target handle's (runtime/target/target.h) */
    loom_registry *reg = loom_registry_new();
    loom_space *sp = NULL;
    loom_schedule **schs = calloc((size_t)n, sizeof *schs);
    float *feat = malloc(sizeof *feat * (size_t)n * (size_t)nf);
    double *lat = malloc(sizeof *lat * (size_t)n);
    uint64_t *grp = malloc(sizeof *grp * (size_t)n);
    loom_cost_model *m = NULL;
    loom_status s = reg && schs && feat && lat && grp ? LOOM_OK
                                                      : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (!s)
        s = loom_space_new(reg, NULL, "cpu", &sp, err);
    int drawn = 0, ok = 0;
    if (!s) {
        loom_space_set_limits(sp, &lim);
        s = loom__draw_distinct_valid(c->prog, sp, &lim, (unsigned long)(seed * 0x9E3779B97F4A7C15ULL + 0x504C414EULL), n,
                                      schs, &drawn, err);
    }
    for (int i = 0; !s && i < drawn; i++) {
        loom_error e;
        float *row = feat + (size_t)i * (size_t)nf;
        if (loom_features_of_schedule_for(schs[i], &lim, st, row, &e) != LOOM_OK)
            memset(row, 0, sizeof *row * (size_t)nf);
        grp[i] = PLAN_PRETRAIN_GROUP;
    }
    if (!s && drawn > 0)
        s = simulate(c, schs, drawn, lat, &ok, err);
    if (!s && ok < 2)
        s = loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0,
                           "only %d of %d drawn schedules simulated: too few to pre-train a cost model (give --model "
                           "or --db)",
                           ok, drawn);
    if (!s)
        s = new_model(seed, &m, err);
    if (!s)
        s = loom_cost_model_add(m, feat, grp, lat, drawn, err);
    int retrained = 0;
    if (!s)
        s = loom_cost_model_update(m, 1, &retrained, NULL, err);
    if (!s && !retrained)
        s = loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "the cost model did not train on %d records", drawn);
    if (s)
        loom_cost_model_free(m);
    else {
        *out = m;
        *ntrained = drawn;
    }
    loom_space_free(sp);
    loom_registry_free(reg);
    for (int i = 0; schs && i < n; i++)
        free(schs[i]);
    free(schs);
    free(feat);
    free(lat);
    free(grp);
    return s;
}

loom_status loom_plan_model_score(loom_cost_model *m, const loom_data_stats *st, const loom_schedule *sch,
                                  double *score, loom_error *err)
{
    *score = NAN;
    int nf = loom_feature_count();
    float *row = malloc(sizeof *row * (size_t)nf);
    if (!row)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status s = loom_features_of_schedule(sch, st, row, err);
    if (!s)
        s = loom_cost_model_predict(m, row, 1, score, err);
    free(row);
    return s;
}
