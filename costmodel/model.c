/* loom: the cost model (see model.h): XGBoost through its C API, labels
 * normalised per group, a hash-based random model before training, adaptive
 * retraining and held-out quality figures. */
#include "model.h"
#include "../dsl/ir/util.h" /* loom_fnv1a, loom_now_seconds */

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_statistics_double.h>
#include <xgboost/c_api.h>

struct loom_cost_model {
    loom_cost_model_opts o;
    pthread_mutex_t mu;        /* guards everything below and every call on `booster` */
    pthread_mutex_t train_mu;  /* serialises loom_cost_model_update */
    float *features;           /* n x nfeatures */
    uint64_t *group;
    double *latency;
    int n, cap;
    BoosterHandle booster;     /* NULL: random model */
    int records_at_training;   /* records the current booster was trained on */
    int ntrainings;            /* trainings so far (seeds the held-out split) */
};

/* ---- small helpers ---------------------------------------------------------- */

/* XGBGetLastError() without the stack trace XGBoost appends. */
static const char *xgb_last_error(char *buf, size_t n)
{
    const char *e = XGBGetLastError();
    snprintf(buf, n, "%s", e ? e : "(no message)");
    char *st = strstr(buf, "\nStack trace:");
    if (st)
        *st = '\0';
    return buf;
}

static loom_status xgb_error(loom_error *err, const char *what)
{
    char buf[768];
    return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "cost model: XGBoost %s failed: %s", what,
                          xgb_last_error(buf, sizeof buf));
}

/* XGBoost's global configuration is thread-local: silence it in the calling
 * thread before each use. */
static loom_status xgb_quiet(loom_error *err)
{
    if (XGBSetGlobalConfig("{\"verbosity\": 0}") != 0)
        return xgb_error(err, "XGBSetGlobalConfig(verbosity 0)");
    return LOOM_OK;
}

static int nthreads(const loom_cost_model_opts *o)
{
    return o->nthread > 0 ? o->nthread : 1;
}

static int failed_latency(double t)
{
    return !(t > 0) || isinf(t);
}

/* First infinite feature in rows [0, n), as row*nf+col, or -1. */
static long find_infinite(const float *f, int n, int nf)
{
    long total = (long)n * nf;
    for (long i = 0; i < total; i++)
        if (isinf(f[i]))
            return i;
    return -1;
}

loom_cost_model_opts loom_cost_model_defaults(int nfeatures)
{
    loom_cost_model_opts o;
    memset(&o, 0, sizeof o);
    o.nfeatures = nfeatures;
    o.seed = 43;           /* MetaSchedule XGBConfig.seed */
    o.min_records = 100;   /* MetaSchedule num_warmup_samples */
    o.retrain_growth = 0.2; /* MetaSchedule adaptive_training: last_train_size / 5 */
    o.nthread = 1;
    o.num_rounds = 10000;  /* MetaSchedule num_boost_round */
    o.heldout = 0.2;
    return o;
}

loom_status loom_cost_model_new(const loom_cost_model_opts *o, loom_cost_model **out, loom_error *err)
{
    if (!o || !out)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "cost model: %s is NULL",
                              !o ? "the options" : "the output pointer");
    *out = NULL;
    if (o->nfeatures < 1 || o->min_records < 0 || !(o->retrain_growth >= 0) || o->nthread < 0 ||
        o->num_rounds < 1 || !(o->heldout >= 0 && o->heldout < 1))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "cost model: options out of range (nfeatures %d >= 1, min_records %d >= 0, "
                              "retrain_growth %g >= 0, nthread %d >= 0, num_rounds %d >= 1, heldout %g in [0,1))",
                              o->nfeatures, o->min_records, o->retrain_growth, o->nthread, o->num_rounds,
                              o->heldout);
    loom_cost_model *m = calloc(1, sizeof *m);
    if (!m)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "cost model: out of memory");
    m->o = *o;
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->train_mu, NULL);
    *out = m;
    return LOOM_OK;
}

void loom_cost_model_free(loom_cost_model *m)
{
    if (!m)
        return;
    if (m->booster)
        XGBoosterFree(m->booster);
    free(m->features);
    free(m->group);
    free(m->latency);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->train_mu);
    free(m);
}

/* ---- records and labels ----------------------------------------------------- */

loom_status loom_cost_model_add(loom_cost_model *m, const float *features, const uint64_t *group,
                                const double *latency_s, int n, loom_error *err)
{
    if (!m || n < 0 || (n > 0 && (!features || !group || !latency_s)))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "cost model add: %s", !m ? "the model is NULL"
                              : n < 0 ? "negative record count" : "features, group or latency_s is NULL");
    if (n == 0)
        return LOOM_OK;
    int nf = m->o.nfeatures;
    long bad = find_infinite(features, n, nf);
    if (bad >= 0)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "cost model add: feature row %ld column %ld is infinite (use NaN for missing)",
                              bad / nf, bad % nf);
    pthread_mutex_lock(&m->mu);
    if (m->n > INT32_MAX - n) {
        pthread_mutex_unlock(&m->mu);
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "cost model add: too many records");
    }
    if (m->n + n > m->cap) {
        int cap = m->cap ? m->cap : 256;
        while (cap < m->n + n)
            cap = cap > INT32_MAX / 2 ? m->n + n : cap * 2;
        float *f = realloc(m->features, (size_t)cap * (size_t)nf * sizeof *f);
        if (f)
            m->features = f;
        uint64_t *g = realloc(m->group, (size_t)cap * sizeof *g);
        if (g)
            m->group = g;
        double *l = realloc(m->latency, (size_t)cap * sizeof *l);
        if (l)
            m->latency = l;
        if (!f || !g || !l) {
            pthread_mutex_unlock(&m->mu);
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "cost model add: out of memory (%d records)",
                                  cap);
        }
        m->cap = cap;
    }
    memcpy(m->features + (size_t)m->n * nf, features, (size_t)n * nf * sizeof *features);
    memcpy(m->group + m->n, group, (size_t)n * sizeof *group);
    memcpy(m->latency + m->n, latency_s, (size_t)n * sizeof *latency_s);
    m->n += n;
    pthread_mutex_unlock(&m->mu);
    return LOOM_OK;
}

/* m->n (what = 0) or whether a booster exists (what = 1), read under the lock. */
static int locked_read(const loom_cost_model *m, int what)
{
    if (!m)
        return 0;
    loom_cost_model *mm = (loom_cost_model *)m;
    pthread_mutex_lock(&mm->mu);
    int v = what == 0 ? mm->n : mm->booster != NULL;
    pthread_mutex_unlock(&mm->mu);
    return v;
}

int loom_cost_model_records(const loom_cost_model *m) { return locked_read(m, 0); }
int loom_cost_model_trained(const loom_cost_model *m) { return locked_read(m, 1); }

typedef struct keyed {
    uint64_t g;
    int i;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->g != y->g)
        return x->g < y->g ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* label[i] = best latency of i's group / latency[i]; 0 for failures.
 * Returns -1 when out of memory. */
static int compute_labels(const uint64_t *group, const double *lat, int n, double *label)
{
    if (n == 0)
        return 0;
    keyed *k = malloc((size_t)n * sizeof *k);
    if (!k)
        return -1;
    for (int i = 0; i < n; i++)
        k[i] = (keyed){group[i], i};
    qsort(k, (size_t)n, sizeof *k, cmp_keyed);
    for (int s = 0; s < n;) {
        int e = s;
        double best = INFINITY;
        while (e < n && k[e].g == k[s].g) {
            double t = lat[k[e].i];
            if (!failed_latency(t) && t < best)
                best = t;
            e++;
        }
        for (int j = s; j < e; j++) {
            double t = lat[k[j].i];
            label[k[j].i] = failed_latency(t) ? 0.0 : best / t;
        }
        s = e;
    }
    free(k);
    return 0;
}

int loom_cost_model_labels(const loom_cost_model *m, double *out, int cap)
{
    if (!m || !out || cap < 0)
        return -1;
    loom_cost_model *mm = (loom_cost_model *)m;
    pthread_mutex_lock(&mm->mu);
    int n = mm->n;
    double *all = malloc((size_t)(n ? n : 1) * sizeof *all);
    int ok = all && compute_labels(mm->group, mm->latency, n, all) == 0;
    pthread_mutex_unlock(&mm->mu);
    if (!ok) {
        free(all);
        return -1;
    }
    int w = n < cap ? n : cap;
    memcpy(out, all, (size_t)w * sizeof *out);
    free(all);
    return w;
}

/* ---- XGBoost training and prediction ---------------------------------------- */

/* A DMatrix of n rows with labels; NaN features are missing. */
static loom_status make_dmatrix(const loom_cost_model_opts *o, const float *feat, const double *label, int n,
                                DMatrixHandle *out, loom_error *err)
{
    *out = NULL;
    float *lf = malloc((size_t)(n ? n : 1) * sizeof *lf);
    if (!lf)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "cost model: out of memory (%d labels)", n);
    for (int i = 0; i < n; i++)
        lf[i] = (float)label[i];
    DMatrixHandle d = NULL;
    loom_status st = LOOM_OK;
    if (XGDMatrixCreateFromMat_omp(feat, (bst_ulong)n, (bst_ulong)o->nfeatures, NAN, &d, nthreads(o)) != 0)
        st = xgb_error(err, "XGDMatrixCreateFromMat");
    else if (XGDMatrixSetFloatInfo(d, "label", lf, (bst_ulong)n) != 0)
        st = xgb_error(err, "XGDMatrixSetFloatInfo(label)");
    free(lf);
    if (st != LOOM_OK) {
        if (d)
            XGDMatrixFree(d);
        return st;
    }
    *out = d;
    return LOOM_OK;
}

/* Train a booster on n rows with MetaSchedule's XGBConfig for at most
 * max_rounds rounds.  With an evaluation set (ef/el/ne, ne > 0), stop after
 * LOOM_COST_MODEL_EARLY_STOP rounds without improvement (by a relative
 * LOOM_COST_MODEL_MIN_DELTA) of its RMSE; with
 * early_stop_train, of the training RMSE (MetaSchedule's rule); else run all
 * max_rounds.  *rounds = rounds trained, *best_rounds = the rounds up to and
 * including the best evaluation (= *rounds without early stopping). */
static loom_status train_booster(const loom_cost_model_opts *o, uint64_t seed, const float *feat,
                                 const double *label, int n, const float *ef, const double *el, int ne,
                                 int early_stop_train, int max_rounds, BoosterHandle *out, int *rounds,
                                 int *best_rounds, loom_error *err)
{
    *out = NULL;
    *rounds = *best_rounds = 0;
    DMatrixHandle d = NULL, e = NULL;
    BoosterHandle b = NULL;
    loom_status st = make_dmatrix(o, feat, label, n, &d, err);
    if (st == LOOM_OK && ne > 0)
        st = make_dmatrix(o, ef, el, ne, &e, err);
    if (st != LOOM_OK)
        goto done;
    if (XGBoosterCreate(&d, 1, &b) != 0) {
        st = xgb_error(err, "XGBoosterCreate");
        goto done;
    }
    char seedbuf[32], thrbuf[32];
    snprintf(seedbuf, sizeof seedbuf, "%d", (int)(seed % 2147483647u));
    snprintf(thrbuf, sizeof thrbuf, "%d", nthreads(o));
    /* MetaSchedule's XGBConfig (research/metaschedule.md section 8), except
     * tree_method: "hist", which is what "auto" means from XGBoost 2.0 on
     * (the installed 1.7 maps "auto" to "exact" on small data). */
    const char *params[][2] = {
        {"verbosity", "0"},        {"objective", "reg:squarederror"}, {"eval_metric", "rmse"},
        {"max_depth", "10"},       {"gamma", "0.001"},                {"min_child_weight", "0"},
        {"eta", "0.2"},            {"tree_method", "hist"},           {"seed", seedbuf},
        {"nthread", thrbuf},
    };
    for (size_t p = 0; p < sizeof params / sizeof params[0]; p++)
        if (XGBoosterSetParam(b, params[p][0], params[p][1]) != 0) {
            st = xgb_error(err, "XGBoosterSetParam");
            goto done;
        }
    double best = INFINITY;
    int best_round = 0;
    DMatrixHandle evm = e ? e : d;
    const char *names[1] = {e ? "heldout" : "train"};
    const char *key = e ? "heldout-rmse:" : "train-rmse:";
    int watch = e != NULL || early_stop_train;
    for (int r = 0; r < max_rounds; r++) {
        if (XGBoosterUpdateOneIter(b, r, d) != 0) {
            st = xgb_error(err, "XGBoosterUpdateOneIter");
            goto done;
        }
        *rounds = r + 1;
        if (!watch) {
            best_round = r;
            continue;
        }
        const char *ev = NULL;
        if (XGBoosterEvalOneIter(b, r, &evm, names, 1, &ev) != 0) {
            st = xgb_error(err, "XGBoosterEvalOneIter");
            goto done;
        }
        const char *p = ev ? strstr(ev, key) : NULL;
        if (!p) {
            st = loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0,
                                "cost model: XGBoost evaluation string has no %s \"%s\"", key, ev ? ev : "");
            goto done;
        }
        double rmse = strtod(p + strlen(key), NULL);
        if (rmse < best * (1 - LOOM_COST_MODEL_MIN_DELTA)) {
            best = rmse;
            best_round = r;
        } else if (r - best_round >= LOOM_COST_MODEL_EARLY_STOP) {
            break;
        }
    }
    *best_rounds = best_round + 1;
done:
    if (d)
        XGDMatrixFree(d);
    if (e)
        XGDMatrixFree(e);
    if (st != LOOM_OK) {
        if (b)
            XGBoosterFree(b);
        return st;
    }
    *out = b;
    return LOOM_OK;
}

/* Predicted label of n rows; the caller holds whatever lock guards b. */
/* iteration_end: use the first iteration_end rounds (0: all). */
static loom_status predict_booster(BoosterHandle b, int nf, int nthread, const float *feat, int n,
                                   int iteration_end, double *out, loom_error *err)
{
    DMatrixHandle d = NULL;
    if (XGDMatrixCreateFromMat_omp(feat, (bst_ulong)n, (bst_ulong)nf, NAN, &d, nthread) != 0)
        return xgb_error(err, "XGDMatrixCreateFromMat");
    const bst_ulong *shape = NULL;
    bst_ulong dim = 0;
    const float *res = NULL;
    char cfg[160];
    snprintf(cfg, sizeof cfg,
             "{\"type\": 0, \"training\": false, \"iteration_begin\": 0, \"iteration_end\": %d, "
             "\"strict_shape\": false}", iteration_end);
    if (XGBoosterPredictFromDMatrix(b, d, cfg, &shape, &dim, &res) != 0) {
        XGDMatrixFree(d);
        return xgb_error(err, "XGBoosterPredictFromDMatrix");
    }
    bst_ulong len = 1;
    for (bst_ulong i = 0; i < dim; i++)
        len *= shape[i];
    if (len != (bst_ulong)n) {
        XGDMatrixFree(d);
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "cost model: XGBoost returned %llu predictions for %d rows",
                              (unsigned long long)len, n);
    }
    for (int i = 0; i < n; i++)
        out[i] = res[i];
    XGDMatrixFree(d);
    return LOOM_OK;
}

/* ---- update ---------------------------------------------------------------------- */

static int due(const loom_cost_model *m, int force)
{
    if (m->n == 0)
        return 0;
    if (force)
        return 1;
    if (m->n < m->o.min_records)
        return 0;
    if (!m->booster)
        return 1;
    return (double)(m->n - m->records_at_training) >= m->o.retrain_growth * (double)m->records_at_training;
}

loom_status loom_cost_model_update(loom_cost_model *m, int force, int *retrained, loom_cost_model_quality *q,
                                   loom_error *err)
{
    if (!m || !retrained)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "cost model update: %s is NULL",
                              !m ? "the model" : "retrained");
    *retrained = 0;
    loom_status st = xgb_quiet(err);
    if (st != LOOM_OK)
        return st;
    pthread_mutex_lock(&m->train_mu);
    double t0 = loom_now_seconds();

    /* Snapshot the records under the lock; train outside it. */
    pthread_mutex_lock(&m->mu);
    if (!due(m, force)) {
        pthread_mutex_unlock(&m->mu);
        pthread_mutex_unlock(&m->train_mu);
        return LOOM_OK;
    }
    int n = m->n, nf = m->o.nfeatures, ntrainings = m->ntrainings;
    uint64_t seed = m->o.seed;
    float *feat = malloc((size_t)n * nf * sizeof *feat);
    double *label = malloc((size_t)n * sizeof *label);
    int ok = feat && label && compute_labels(m->group, m->latency, n, label) == 0;
    if (ok)
        memcpy(feat, m->features, (size_t)n * nf * sizeof *feat);
    pthread_mutex_unlock(&m->mu);

    loom_cost_model_quality qq;
    memset(&qq, 0, sizeof qq);
    qq.spearman = qq.topk_recall = NAN;
    BoosterHandle hb = NULL, fb = NULL;
    size_t *perm = NULL;
    float *tf = NULL, *hf = NULL;
    double *tl = NULL, *hl = NULL, *hp = NULL;
    gsl_rng *rng = NULL;
    if (!ok) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "cost model update: out of memory (%d records)", n);
        goto done;
    }

    /* Held-out quality and the number of rounds. */
    int final_rounds = 0;
    int nh = (int)floor(m->o.heldout * n);
    int nt = n - nh;
    if (nh >= 2 && nt >= 1) {
        perm = malloc((size_t)n * sizeof *perm);
        tf = malloc((size_t)nt * nf * sizeof *tf);
        hf = malloc((size_t)nh * nf * sizeof *hf);
        tl = malloc((size_t)nt * sizeof *tl);
        hl = malloc((size_t)nh * sizeof *hl);
        hp = malloc((size_t)nh * sizeof *hp);
        rng = gsl_rng_alloc(gsl_rng_mt19937);
        if (!perm || !tf || !hf || !tl || !hl || !hp || !rng) {
            st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "cost model update: out of memory (%d records)", n);
            goto done;
        }
        gsl_rng_set(rng, (unsigned long)(seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(ntrainings + 1))));
        for (int i = 0; i < n; i++)
            perm[i] = (size_t)i;
        gsl_ran_shuffle(rng, perm, (size_t)n, sizeof *perm);
        for (int i = 0; i < n; i++) {
            size_t r = perm[i];
            if (i < nh) {
                memcpy(hf + (size_t)i * nf, feat + r * nf, (size_t)nf * sizeof *feat);
                hl[i] = label[r];
            } else {
                memcpy(tf + (size_t)(i - nh) * nf, feat + r * nf, (size_t)nf * sizeof *feat);
                tl[i - nh] = label[r];
            }
        }
        int hrounds = 0;
        st = train_booster(&m->o, seed, tf, tl, nt, hf, hl, nh, 0, m->o.num_rounds, &hb, &hrounds, &final_rounds,
                           err);
        if (st != LOOM_OK)
            goto done;
        st = predict_booster(hb, nf, nthreads(&m->o), hf, nh, final_rounds, hp, err);
        if (st != LOOM_OK)
            goto done;
        qq.ntrain = nt;
        qq.nheldout = nh;
        qq.k = nh < 10 ? nh : 10;
        qq.spearman = loom_spearman(hp, hl, nh);
        qq.topk_recall = loom_topk_recall(hp, hl, nh, qq.k);
    }

    /* The final booster on all records. */
    /* As many rounds as were best on the held-out records; with nothing held
     * out, MetaSchedule's early stopping on the training RMSE. */
    int unused;
    st = train_booster(&m->o, seed, feat, label, n, NULL, NULL, 0, final_rounds == 0,
                       final_rounds > 0 ? final_rounds : m->o.num_rounds, &fb, &qq.rounds, &unused, err);
    if (st != LOOM_OK)
        goto done;
    qq.records = n;
    pthread_mutex_lock(&m->mu);
    BoosterHandle old = m->booster;
    m->booster = fb;
    fb = NULL;
    m->records_at_training = n;
    m->ntrainings++;
    pthread_mutex_unlock(&m->mu);
    if (old)
        XGBoosterFree(old);
    qq.train_seconds = loom_now_seconds() - t0;
    *retrained = 1;
    if (q)
        *q = qq;
done:
    if (hb)
        XGBoosterFree(hb);
    if (fb)
        XGBoosterFree(fb);
    if (rng)
        gsl_rng_free(rng);
    free(perm);
    free(tf);
    free(hf);
    free(tl);
    free(hl);
    free(hp);
    free(feat);
    free(label);
    pthread_mutex_unlock(&m->train_mu);
    return st;
}

/* ---- prediction --------------------------------------------------------------------- */

/* The random model: FNV-1a (64-bit) over the seed's and the row's bytes,
 * finished with the splitmix64 mixer (Steele et al., "Fast splittable
 * pseudorandom number generators", OOPSLA 2014), mapped to [0, 1) with 53 bits. */
static double random_score(uint64_t seed, const float *row, int nf)
{
    uint64_t h = loom_fnv1a(LOOM_FNV_OFFSET, &seed, sizeof seed);
    h = loom_fnv1a(h, row, (size_t)nf * sizeof *row);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return (double)(h >> 11) * 0x1p-53;
}

loom_status loom_cost_model_predict(loom_cost_model *m, const float *features, int n, double *scores,
                                    loom_error *err)
{
    if (!m || n < 0 || (n > 0 && (!features || !scores)))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "cost model predict: %s",
                              !m ? "the model is NULL" : n < 0 ? "negative row count" : "features or scores is NULL");
    if (n == 0)
        return LOOM_OK;
    int nf = m->o.nfeatures;
    long bad = find_infinite(features, n, nf);
    if (bad >= 0)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "cost model predict: feature row %ld column %ld is infinite (use NaN for missing)",
                              bad / nf, bad % nf);
    pthread_mutex_lock(&m->mu);
    if (m->booster) {
        loom_status st = xgb_quiet(err);
        if (st == LOOM_OK)
            st = predict_booster(m->booster, nf, nthreads(&m->o), features, n, 0, scores, err);
        pthread_mutex_unlock(&m->mu);
        return st;
    }
    uint64_t seed = m->o.seed;
    pthread_mutex_unlock(&m->mu);
    for (int i = 0; i < n; i++)
        scores[i] = random_score(seed, features + (size_t)i * nf, nf);
    return LOOM_OK;
}

/* ---- save and load ----------------------------------------------------------------------- */

/* Write len bytes to path through "<path>.tmp" and rename, so a crash never
 * leaves a torn file. */
static loom_status write_file(const char *path, const void *data, size_t len, loom_error *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cost model save: path too long");
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return loom_error_set(err, LOOM_ERR_IO, tmp, 0, 0, "cost model save: cannot create: %s", strerror(errno));
    size_t w = fwrite(data, 1, len, f);
    int e = errno;
    if (fclose(f) != 0 && w == len) {
        e = errno;
        w = 0;
    }
    if (w != len) {
        remove(tmp);
        return loom_error_set(err, LOOM_ERR_IO, tmp, 0, 0, "cost model save: write failed: %s", strerror(e));
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        remove(tmp);
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cost model save: cannot rename %s to it: %s", tmp,
                              strerror(e));
    }
    return LOOM_OK;
}

/* Read a whole file (NUL-terminated); *out is malloc'd. */
static loom_status read_file(const char *path, const char *what, char **out, size_t *len, loom_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cost model load: cannot open %s: %s", what,
                              strerror(errno));
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *buf = size >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)size + 1) : NULL;
    size_t n = buf ? fread(buf, 1, (size_t)size, f) : 0;
    fclose(f);
    if (!buf || n != (size_t)size) {
        free(buf);
        return loom_error_set(err, size < 0 || buf ? LOOM_ERR_IO : LOOM_ERR_NOMEM, path, 0, 0,
                              "cost model load: cannot read %s%s", what, size < 0 || buf ? "" : ": out of memory");
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return LOOM_OK;
}

static int meta_path(char *buf, size_t n, const char *path)
{
    return snprintf(buf, n, "%s.meta", path) < (int)n;
}

loom_status loom_cost_model_save(const loom_cost_model *m, const char *path, loom_error *err)
{
    if (!m || !path)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "cost model save: %s is NULL",
                              !m ? "the model" : "the path");
    char meta[4096];
    if (!meta_path(meta, sizeof meta, path))
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cost model save: path too long");
    loom_status st = xgb_quiet(err);
    if (st != LOOM_OK)
        return st;
    loom_cost_model *mm = (loom_cost_model *)m;
    pthread_mutex_lock(&mm->mu);
    int trained = mm->booster != NULL, rec = mm->records_at_training;
    uint64_t seed = mm->o.seed;
    if (trained) {
        bst_ulong len = 0;
        const char *data = NULL;
        if (XGBoosterSaveModelToBuffer(mm->booster, "{\"format\": \"json\"}", &len, &data) != 0)
            st = xgb_error(err, "XGBoosterSaveModelToBuffer(json)");
        else
            st = write_file(path, data, (size_t)len, err);
    }
    pthread_mutex_unlock(&mm->mu);
    if (st != LOOM_OK)
        return st;

    char seedbuf[32];
    snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)seed);
    cJSON *j = cJSON_CreateObject();
    if (!j || !cJSON_AddStringToObject(j, "format", "loom-cost-model") || !cJSON_AddNumberToObject(j, "version", 1) ||
        !cJSON_AddNumberToObject(j, "nfeatures", m->o.nfeatures) || !cJSON_AddStringToObject(j, "seed", seedbuf) ||
        !cJSON_AddBoolToObject(j, "trained", trained) ||
        !cJSON_AddNumberToObject(j, "records_at_training", rec) ||
        !cJSON_AddStringToObject(j, "objective", "reg:squarederror")) {
        cJSON_Delete(j);
        return loom_error_set(err, LOOM_ERR_NOMEM, meta, 0, 0, "cost model save: out of memory");
    }
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text)
        return loom_error_set(err, LOOM_ERR_NOMEM, meta, 0, 0, "cost model save: out of memory");
    st = write_file(meta, text, strlen(text), err);
    cJSON_free(text);
    return st;
}

loom_status loom_cost_model_load(loom_cost_model *m, const char *path, loom_error *err)
{
    if (!m || !path)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "cost model load: %s is NULL",
                              !m ? "the model" : "the path");
    char meta[4096];
    if (!meta_path(meta, sizeof meta, path))
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cost model load: path too long");
    loom_status st = xgb_quiet(err);
    if (st != LOOM_OK)
        return st;
    char *text = NULL;
    size_t len = 0;
    if (access(meta, F_OK) != 0 && access(path, F_OK) != 0)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0,
                              "cost model load: no saved cost model here (neither it nor its sidecar %s exists)",
                              meta);
    st = read_file(meta, "the cost model sidecar", &text, &len, err);
    if (st != LOOM_OK)
        return st;
    cJSON *j = cJSON_Parse(text);
    free(text);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(j, "version");
    const cJSON *nf = cJSON_GetObjectItemCaseSensitive(j, "nfeatures");
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(j, "seed");
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(j, "trained");
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(j, "records_at_training");
    char *end = NULL;
    unsigned long long seed = cJSON_IsString(sd) ? strtoull(sd->valuestring, &end, 10) : 0;
    if (!j || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "loom-cost-model") != 0 || !cJSON_IsNumber(ver) ||
        ver->valuedouble != 1 || !cJSON_IsNumber(nf) || !cJSON_IsString(sd) || !end || *end != '\0' ||
        !cJSON_IsBool(tr) || !cJSON_IsNumber(rc) || rc->valuedouble < 0) {
        cJSON_Delete(j);
        return loom_error_set(err, LOOM_ERR_DATA, meta, 0, 0,
                              "cost model load: not a loom cost model sidecar (expected JSON with format "
                              "\"loom-cost-model\", version 1, nfeatures, seed, trained, records_at_training)");
    }
    int saved_nf = nf->valueint, trained = cJSON_IsTrue(tr), rec = rc->valueint;
    cJSON_Delete(j);
    if (saved_nf != m->o.nfeatures)
        return loom_error_set(err, LOOM_ERR_INVALID, meta, 0, 0,
                              "cost model load: the saved model has %d features, this model %d", saved_nf,
                              m->o.nfeatures);

    BoosterHandle b = NULL;
    if (trained) {
        st = read_file(path, "the cost model booster", &text, &len, err);
        if (st != LOOM_OK)
            return st;
        if (len == 0 || text[0] != '{') {
            free(text);
            return loom_error_set(err, LOOM_ERR_DATA, path, 0, 0,
                                  "cost model load: not an XGBoost JSON model (it should start with '{')");
        }
        if (XGBoosterCreate(NULL, 0, &b) != 0) {
            free(text);
            return xgb_error(err, "XGBoosterCreate");
        }
        int rcode = XGBoosterLoadModelFromBuffer(b, text, (bst_ulong)len);
        free(text);
        bst_ulong bnf = 0;
        if (rcode != 0 || XGBoosterGetNumFeature(b, &bnf) != 0) {
            char buf[768];
            loom_error_set(err, LOOM_ERR_DATA, path, 0, 0, "cost model load: XGBoost rejects the booster: %s",
                           xgb_last_error(buf, sizeof buf));
            XGBoosterFree(b);
            return LOOM_ERR_DATA;
        }
        if ((long long)bnf != saved_nf) {
            XGBoosterFree(b);
            return loom_error_set(err, LOOM_ERR_DATA, path, 0, 0,
                                  "cost model load: the booster has %llu features, its sidecar %d",
                                  (unsigned long long)bnf, saved_nf);
        }
        char thrbuf[32];
        snprintf(thrbuf, sizeof thrbuf, "%d", nthreads(&m->o));
        if (XGBoosterSetParam(b, "verbosity", "0") != 0 || XGBoosterSetParam(b, "nthread", thrbuf) != 0) {
            st = xgb_error(err, "XGBoosterSetParam");
            XGBoosterFree(b);
            return st;
        }
    }
    pthread_mutex_lock(&m->mu);
    BoosterHandle old = m->booster;
    m->booster = b;
    m->o.seed = (uint64_t)seed;
    m->records_at_training = rec;
    pthread_mutex_unlock(&m->mu);
    if (old)
        XGBoosterFree(old);
    return LOOM_OK;
}

/* ---- quality and statistics ---------------------------------------------------------------- */

char *loom_cost_model_quality_format(const loom_cost_model_quality *q, char *buf, int n)
{
    if (!buf || n <= 0)
        return buf;
    if (!q) {
        snprintf(buf, (size_t)n, "cost model: no quality figures");
        return buf;
    }
    if (q->nheldout > 0)
        snprintf(buf, (size_t)n,
                 "cost model retrained on %d records in %.2f s (%d rounds): held-out %d records "
                 "(trained on %d), Spearman %.3f, top-%d recall %.2f",
                 q->records, q->train_seconds, q->rounds, q->nheldout, q->ntrain, q->spearman, q->k,
                 q->topk_recall);
    else
        snprintf(buf, (size_t)n, "cost model retrained on %d records in %.2f s (%d rounds): too few records "
                 "to hold out", q->records, q->train_seconds, q->rounds);
    return buf;
}

double loom_spearman(const double *a, const double *b, int n)
{
    if (!a || !b || n < 2)
        return NAN;
    int ca = 1, cb = 1;
    for (int i = 1; i < n; i++) {
        ca &= a[i] == a[0];
        cb &= b[i] == b[0];
    }
    if (ca || cb)
        return NAN;
    double *work = malloc(2 * (size_t)n * sizeof *work);
    if (!work)
        return NAN;
    double r = gsl_stats_spearman(a, 1, b, 1, (size_t)n, work);
    free(work);
    return r;
}

typedef struct scored {
    double v;
    int i;
} scored;

/* Descending by v, NaN last, ties by lower index. */
static int cmp_desc(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    int xn = isnan(x->v), yn = isnan(y->v);
    if (xn != yn)
        return xn - yn;
    if (!xn && x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

double loom_topk_recall(const double *pred, const double *truth, int n, int k)
{
    if (!pred || !truth || n < 1 || k < 1)
        return NAN;
    if (k > n)
        k = n;
    scored *s = malloc((size_t)n * sizeof *s);
    if (!s)
        return NAN;
    for (int i = 0; i < n; i++)
        s[i] = (scored){isnan(truth[i]) ? -INFINITY : truth[i], i};
    qsort(s, (size_t)n, sizeof *s, cmp_desc);
    double threshold = s[k - 1].v;
    for (int i = 0; i < n; i++)
        s[i] = (scored){pred[i], i};
    qsort(s, (size_t)n, sizeof *s, cmp_desc);
    int hits = 0;
    for (int j = 0; j < k; j++) {
        double t = truth[s[j].i];
        if ((isnan(t) ? -INFINITY : t) >= threshold)
            hits++;
    }
    free(s);
    return (double)hits / k;
}
