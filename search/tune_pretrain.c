/* Pre-training the campaign's cost model on the simulator (tune.h
 * loom_tune_opts.pretrain; issue 13).  Without it the model is a random
 * hash until 100 records exist, so a campaign of fewer trials never ranks a
 * candidate by a model.  Here, before the first round, `pretrain` distinct
 * valid schedules of the campaign's design space are simulated on the same
 * data set (runtime/sim: deterministic, milliseconds per schedule) and the
 * model is trained on them, as its own label group (labels are normalised
 * per group, so simulated seconds are never compared with measured ones):
 * the first batch is then ranked by a model that has seen this workload on
 * this data.  Measured records join the same model as they arrive (another
 * group) and take over as it retrains.  The idea is TLP's and
 * MetaSchedule's transfer of a model trained elsewhere (Zhai et al., ASPLOS
 * 2023; Shao et al., NeurIPS 2022, section 5), with the simulator as the
 * "elsewhere". */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../costmodel/features.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../traces/validate.h"
#include "search.h"
#include "tune_internal.h"

typedef struct pre_job {
    tune_ctx *c;
    const loom_target *t;
    loom_schedule **schs;
    float *feat;
    double *lat;
} pre_job;

static void pre_one(void *ctx, int i, int w)
{
    (void)w;
    pre_job *j = ctx;
    loom_error err;
    loom_error_clear(&err);
    float *row = j->feat + (size_t)i * (size_t)j->c->nfeat;
    if (loom_features_of_schedule(j->schs[i], &j->c->stats, row, &err) != LOOM_OK)
        memset(row, 0, sizeof(float) * (size_t)j->c->nfeat);
    lir_func *f = NULL;
    loom_sim_result r;
    j->lat[i] = INFINITY;
    if (loom_lower(j->schs[i], &f, &err) == LOOM_OK && loom_sim_run(f, j->c->ds, j->t, &r, &err) == LOOM_OK)
        j->lat[i] = r.latency_s;
    if (f)
        loom_lir_func_free(f);
}

/* Up to n distinct valid schedules of the campaign's space (draws seeded
 * from the campaign's seed): *m of them in schs[]. */
static loom_status draw(tune_ctx *c, const loom_limits *lim, loom_schedule **schs, int n, int *m, loom_error *err)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    uint64_t *seen = malloc(sizeof *seen * (size_t)n);
    if (!rng || !seen) {
        if (rng)
            gsl_rng_free(rng);
        free(seen);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    gsl_rng_set(rng, (unsigned long)(c->o->search.seed * 0x9E3779B97F4A7C15ULL + 0x5052455452ULL));
    loom_status st = LOOM_OK;
    *m = 0;
    for (int d = 0; d < 20 * n && *m < n && !st; d++) {
        loom_schedule *s = schs[*m] ? schs[*m] : (schs[*m] = malloc(sizeof *s));
        if (!s) {
            st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
            break;
        }
        loom_error e;
        loom_violation v;
        if (loom_schedule_init(s, c->prog, rng, &e) || loom_space_apply(c->space, s, &e) ||
            loom_validate(s, lim, &v, NULL) != LOOM_OK)
            continue;
        uint64_t h = loom_schedule_hash(s);
        int dup = 0;
        for (int k = 0; k < *m && !dup; k++)
            dup = seen[k] == h;
        if (!dup)
            seen[(*m)++] = h;
    }
    gsl_rng_free(rng);
    free(seen);
    return st;
}

loom_status loom__tune_pretrain(tune_ctx *c, const loom_limits *lim, loom_error *err)
{
    int n = c->o->pretrain;
    if (n <= 0)
        return LOOM_OK;
    if (loom_cost_model_trained(c->model)) {
        loom__tune_log(c, "cost model trained on the campaign's records already: no pre-training");
        return LOOM_OK;
    }
    double t0 = loom_now_seconds();
    loom_target t;
    const char *tname = c->o->pretrain_target ? c->o->pretrain_target : LOOM_TUNE_PRETRAIN_TARGET;
    if (c->simulated && !c->o->pretrain_target)
        t = c->target, tname = "the campaign's";
    else {
        loom_status st = loom_target_load(tname, &t, err);
        if (st)
            return st;
    }
    pre_job j = {c, &t, calloc((size_t)n, sizeof(loom_schedule *)),
                 malloc(sizeof(float) * (size_t)n * (size_t)c->nfeat), malloc(sizeof(double) * (size_t)n)};
    uint64_t *g = malloc(sizeof *g * (size_t)n);
    int m = 0;
    loom_status st = j.schs && j.feat && j.lat && g ? LOOM_OK
                                                   : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (!st)
        st = draw(c, lim, j.schs, n, &m, err);
    if (!st && m > 0)
        st = loom_parallel_for(m, c->threads, pre_one, &j, err);
    int ok = 0;
    for (int i = 0; i < m; i++) {
        g[i] = c->group ^ 0x53494D5052455452ULL; /* the simulated records' own label group */
        ok += isfinite(j.lat[i]) != 0;
    }
    if (!st && m > 0)
        st = loom_cost_model_add(c->model, j.feat, g, j.lat, m, err);
    int retrained = 0;
    loom_cost_model_quality q;
    memset(&q, 0, sizeof q);
    if (!st && ok > 1)
        st = loom_cost_model_update(c->model, 1, &retrained, &q, err);
    double dt = loom_now_seconds() - t0;
    c->costmodel_s += dt;
    if (!st) {
        c->pretrained = m;
        if (retrained) {
            snprintf(c->model_desc, sizeof c->model_desc, "the cost model pre-trained on %d simulated schedules", m);
            loom__tune_log(c,
                           "cost model pre-trained on %d simulated schedules (%s target %s, %d simulated ok): held-out "
                           "Spearman %.3f, top-%d recall %.2f; %.2f s",
                           m, tname, t.name, ok, q.spearman, q.k, q.topk_recall, dt);
        } else
            loom__tune_log(c, "cost model not pre-trained: %d schedules drawn, %d simulated ok", m, ok);
    }
    for (int i = 0; j.schs && i < n; i++)
        free(j.schs[i]);
    free(j.schs);
    free(j.feat);
    free(j.lat);
    free(g);
    return st;
}
