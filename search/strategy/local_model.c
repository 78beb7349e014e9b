/* The local model: ridge regression of log latency on decision indicators
 * (local_model.h). */
#include "local_model.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a feature's decision: instruction index and value */
typedef struct feat_dec {
    int inst;
    loom_decision dec;
} feat_dec;

struct loom_local_model {
    int ninsts;
    int *kinds;      /* the structure: instruction kinds in order */
    int nrec, p;
    uint64_t *keys;  /* p sorted feature keys */
    double *w;       /* their weights */
    feat_dec *dec;   /* their decisions */
    double mean;     /* mean log latency */
};

static int same_structure(const loom_trace *a, const int *kinds, int ninsts)
{
    if (!a || a->ninsts != ninsts)
        return 0;
    for (int i = 0; i < ninsts; i++)
        if (a->insts[i].kind != kinds[i])
            return 0;
    return 1;
}

/* the key of instruction i's decision (0 never: the key set uses it as a sentinel) */
static uint64_t key_of(const loom_inst *x, int i)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)(i + 1) * 0x9e3779b97f4a7c15ULL);
    for (int k = 0; k < x->ndecision && k < LOOM_MAX_INST_IO; k++)
        h = (h ^ (uint64_t)x->decision[k]) * 0x100000001b3ULL;
    h ^= h >> 31;
    return h ? h : 1;
}

/* the keys of t's decisions into keys (at most t->ninsts); returns the count */
static int keys_of(const loom_trace *t, uint64_t *keys)
{
    int n = 0;
    for (int i = 0; i < t->ninsts; i++)
        if (t->insts[i].ndecision > 0)
            keys[n++] = key_of(&t->insts[i], i);
    return n;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int feature(const loom_local_model *m, uint64_t k)
{
    const uint64_t *at = bsearch(&k, m->keys, (size_t)m->p, sizeof k, cmp_u64);
    return at ? (int)(at - m->keys) : -1;
}

void loom_local_model_free(loom_local_model *m)
{
    if (!m)
        return;
    free(m->kinds), free(m->keys), free(m->w), free(m->dec);
    free(m);
}

int loom_local_model_records(const loom_local_model *m) { return m ? m->nrec : 0; }
int loom_local_model_features(const loom_local_model *m) { return m ? m->p : 0; }

/* The dual ridge solve: alpha = (K + lambda I)^-1 y with K = X X^T, whose
 * entry (a, b) is the number of decisions records a and b share; then
 * w = X^T alpha. */
static loom_status solve(loom_local_model *m, uint64_t *const *rk, const int *nk, const double *y, double lambda,
                         loom_error *err)
{
    int n = m->nrec;
    gsl_matrix *K = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_vector *yv = gsl_vector_alloc((size_t)n), *alpha = gsl_vector_alloc((size_t)n);
    if (!K || !yv || !alpha) {
        gsl_matrix_free(K), gsl_vector_free(yv), gsl_vector_free(alpha);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    for (int a = 0; a < n; a++) {
        gsl_vector_set(yv, (size_t)a, y[a]);
        for (int b = 0; b <= a; b++) {
            /* shared keys of two sorted lists */
            int i = 0, j = 0, shared = 0;
            while (i < nk[a] && j < nk[b]) {
                if (rk[a][i] == rk[b][j])
                    shared++, i++, j++;
                else if (rk[a][i] < rk[b][j])
                    i++;
                else
                    j++;
            }
            double v = shared + (a == b ? lambda : 0);
            gsl_matrix_set(K, (size_t)a, (size_t)b, v);
            gsl_matrix_set(K, (size_t)b, (size_t)a, v);
        }
    }
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int gs = gsl_linalg_cholesky_decomp1(K);
    if (!gs)
        gs = gsl_linalg_cholesky_solve(K, yv, alpha);
    gsl_set_error_handler(old);
    loom_status st = LOOM_OK;
    if (gs) {
        st = loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "local model: GSL's Cholesky solver failed: %s",
                            gsl_strerror(gs));
    } else {
        for (int a = 0; a < n; a++)
            for (int i = 0; i < nk[a]; i++)
                m->w[feature(m, rk[a][i])] += gsl_vector_get(alpha, (size_t)a);
    }
    gsl_matrix_free(K), gsl_vector_free(yv), gsl_vector_free(alpha);
    return st;
}

loom_status loom_local_model_fit(const loom_trace *const *t, const double *lat, int n, const loom_trace *ref,
                                 double lambda, int min_records, loom_local_model **out, loom_error *err)
{
    *out = NULL;
    if (!(lambda > 0) || n < 0 || !ref || (n > 0 && (!t || !lat)))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "loom_local_model_fit: bad argument");
    loom_local_model *m = calloc(1, sizeof *m);
    int *nk = calloc((size_t)n + 1, sizeof(int));
    uint64_t **rk = calloc((size_t)n + 1, sizeof *rk);
    double *y = malloc(sizeof(double) * (size_t)(n + 1));
    loom_status st = LOOM_OK;
    if (!m || !nk || !rk || !y || !(m->kinds = malloc(sizeof(int) * (size_t)(ref->ninsts + 1)))) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    m->ninsts = ref->ninsts;
    for (int i = 0; i < ref->ninsts; i++)
        m->kinds[i] = ref->insts[i].kind;
    /* the records of ref's structure, their sorted keys and log latencies */
    int total = 0;
    for (int a = 0; a < n; a++) {
        if (!(lat[a] > 0) || !isfinite(lat[a]) || !same_structure(t[a], m->kinds, m->ninsts))
            continue;
        int r = m->nrec;
        if (!(rk[r] = malloc(sizeof(uint64_t) * (size_t)(t[a]->ninsts + 1)))) {
            st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
            goto out;
        }
        nk[r] = keys_of(t[a], rk[r]);
        qsort(rk[r], (size_t)nk[r], sizeof(uint64_t), cmp_u64);
        y[r] = log(lat[a]);
        total += nk[r];
        m->nrec++;
    }
    if (m->nrec < min_records || m->nrec == 0)
        goto out; /* *out stays NULL */
    /* the features: the distinct keys */
    if (!(m->keys = malloc(sizeof(uint64_t) * (size_t)(total + 1)))) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    for (int r = 0; r < m->nrec; r++)
        for (int i = 0; i < nk[r]; i++)
            m->keys[m->p++] = rk[r][i];
    qsort(m->keys, (size_t)m->p, sizeof(uint64_t), cmp_u64);
    int u = 0;
    for (int i = 0; i < m->p; i++)
        if (u == 0 || m->keys[i] != m->keys[u - 1])
            m->keys[u++] = m->keys[i];
    m->p = u;
    if (!(m->w = calloc((size_t)m->p + 1, sizeof(double))) || !(m->dec = calloc((size_t)m->p + 1, sizeof *m->dec))) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    /* each feature's decision, from the records */
    for (int a = 0; a < n; a++) {
        if (!(lat[a] > 0) || !isfinite(lat[a]) || !same_structure(t[a], m->kinds, m->ninsts))
            continue;
        for (int i = 0; i < t[a]->ninsts; i++) {
            const loom_inst *x = &t[a]->insts[i];
            if (x->ndecision <= 0)
                continue;
            feat_dec *d = &m->dec[feature(m, key_of(x, i))];
            d->inst = i;
            d->dec.n = x->ndecision;
            memcpy(d->dec.v, x->decision, sizeof(int64_t) * (size_t)x->ndecision);
        }
    }
    for (int r = 0; r < m->nrec; r++)
        m->mean += y[r] / m->nrec;
    for (int r = 0; r < m->nrec; r++)
        y[r] -= m->mean;
    if ((st = solve(m, rk, nk, y, lambda, err)) == LOOM_OK) {
        *out = m;
        m = NULL;
    }
out:
    for (int r = 0; rk && r < n + 1; r++)
        free(rk[r]);
    free(rk), free(nk), free(y);
    loom_local_model_free(m);
    return st;
}

double loom_local_model_predict(const loom_local_model *m, const loom_trace *t)
{
    if (!m || !same_structure(t, m->kinds, m->ninsts))
        return NAN;
    double v = m->mean;
    for (int i = 0; i < t->ninsts; i++) {
        if (t->insts[i].ndecision <= 0)
            continue;
        int f = feature(m, key_of(&t->insts[i], i));
        if (f >= 0)
            v += m->w[f];
    }
    return v;
}

int loom_local_model_values(const loom_local_model *m, int i, const loom_inst *x, int *has)
{
    if (has)
        *has = 0;
    if (!m || i < 0 || i >= m->ninsts)
        return 0;
    int n = 0;
    for (int f = 0; f < m->p; f++)
        n += m->dec[f].inst == i;
    if (has && x && x->ndecision > 0)
        *has = feature(m, key_of(x, i)) >= 0;
    return n;
}

int loom_local_model_improve(const loom_local_model *m, const loom_trace *t, double p, double margin, gsl_rng *rng,
                             loom_decision *decs)
{
    if (!m || !decs || !same_structure(t, m->kinds, m->ninsts))
        return 0;
    int n = 0;
    for (int i = 0; i < t->ninsts; i++) {
        decs[i].n = 0;
        if (t->insts[i].ndecision <= 0)
            continue;
        int own = feature(m, key_of(&t->insts[i], i));
        double wown = own >= 0 ? m->w[own] : 0, wbest = wown - margin;
        int best = -1;
        for (int f = 0; f < m->p; f++)
            if (m->dec[f].inst == i && m->w[f] < wbest)
                wbest = m->w[f], best = f;
        if (best >= 0 && (p >= 1 || (rng && gsl_rng_uniform(rng) < p))) {
            decs[i] = m->dec[best].dec;
            n++;
        }
    }
    return n;
}
