/* Candidates for the search strategies (search_internal.h, strategy.h):
 * hash sets, fresh samples, replayed measured traces, scoring, the top-k
 * heap and the batch pick. */
#include "../../dsl/ir/util.h" /* loom_now_seconds */
#include "search_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a set of 64-bit hashes ---------------------------------------------- */

/* Lives here, the lowest file of search/, so the strategies and the
 * population loop need nothing from search.c (no call cycle). */
void loom_candidate_free(loom_candidate *c)
{
    if (!c)
        return;
    loom_trace_free(c->trace);
    free(c->sch);
    c->trace = NULL;
    c->sch = NULL;
}

/* ---- recycled traces and schedules (search_internal.h) ------------------ */

loom_trace *loom__trace_take(loom_search *s)
{
    loom_trace *t = NULL;
    pthread_mutex_lock(&s->pool_lock);
    if (s->ntpool > 0)
        t = s->tpool[--s->ntpool];
    pthread_mutex_unlock(&s->pool_lock);
    if (!t)
        return loom_trace_new();
    loom_trace_clear(t);
    return t;
}

loom_schedule *loom__schedule_take(loom_search *s)
{
    loom_schedule *sch = NULL;
    pthread_mutex_lock(&s->pool_lock);
    if (s->nspool > 0)
        sch = s->spool[--s->nspool];
    pthread_mutex_unlock(&s->pool_lock);
    return sch ? sch : malloc(sizeof *sch);
}

void loom__recycle_parts(loom_search *s, loom_trace *t, loom_schedule *sch)
{
    pthread_mutex_lock(&s->pool_lock);
    if (t && s->ntpool < s->pool_cap)
        s->tpool[s->ntpool++] = t, t = NULL;
    if (sch && s->nspool < s->pool_cap)
        s->spool[s->nspool++] = sch, sch = NULL;
    pthread_mutex_unlock(&s->pool_lock);
    loom_trace_free(t);
    free(sch);
}

void loom__recycle(loom_search *s, loom_candidate *c)
{
    loom__recycle_parts(s, c->trace, c->sch);
    c->trace = NULL;
    c->sch = NULL;
}

static uint64_t hkey(uint64_t h)
{
    return h ? h : 1;
}

int loom__hset_has(const loom__hset *s, uint64_t h)
{
    if (!s->cap)
        return 0;
    h = hkey(h);
    for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->slot[i] == h)
            return 1;
        if (!s->slot[i])
            return 0;
    }
}

int loom__hset_add(loom__hset *s, uint64_t h)
{
    if ((s->n + 1) * 2 > s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        uint64_t *ns = calloc(nc, sizeof *ns);
        if (!ns)
            return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i])
                for (size_t j = s->slot[i] & (nc - 1);; j = (j + 1) & (nc - 1))
                    if (!ns[j]) {
                        ns[j] = s->slot[i];
                        break;
                    }
        free(s->slot);
        s->slot = ns;
        s->cap = nc;
    }
    h = hkey(h);
    for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->slot[i] == h)
            return 0;
        if (!s->slot[i]) {
            s->slot[i] = h;
            s->n++;
            return 1;
        }
    }
}

static void count_rule(loom_search *s, const char *rule)
{
    for (int r = 0; r < s->nrules && r < LOOM_VALIDATE_MAX_RULES; r++)
        if (!strcmp(s->rules[r], rule)) {
            s->st.invalid_by_rule[r]++;
            return;
        }
}

gsl_rng *loom_search_rng(loom_search *s, int worker, long call, int phase, int i)
{
    gsl_rng *r = s->rngs[worker];
    gsl_rng_set(r, (unsigned long)loom_seed_mix(s->o.seed, (uint64_t)call, (uint64_t)phase, (uint64_t)i));
    return r;
}

/* ---- fresh samples ---------------------------------------------------------- */

typedef struct sample_job {
    loom_search *s;
    long call;
    int phase;
    loom_candidate *out; /* out[i].trace == NULL: no valid sample */
} sample_job;

static void sample_one(void *ctx, int i, int w)
{
    sample_job *j = ctx;
    loom_search *s = j->s;
    loom_candidate *c = &j->out[i];
    memset(c, 0, sizeof *c);
    loom_trace *t = loom__trace_take(s);
    loom_schedule *sch = loom__schedule_take(s);
    loom_error err;
    loom_error_clear(&err);
    int failed = 1, invalid = 0;
    loom_violation v;
    int *hint = s->trace_hint[w];
    if (t && sch && loom_trace_reserve(t, hint[0], hint[1], &err) == LOOM_OK &&
        loom_schedule_init(sch, s->prog, loom_search_rng(s, w, j->call, j->phase, i), &err) == LOOM_OK) {
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = t;
        if (s->env.sample(s->env.ctx, sch, &err) == LOOM_OK && loom_trace_status(t, &err) == LOOM_OK) {
            failed = 0;
            hint[0] = t->ninsts > hint[0] ? t->ninsts : hint[0];
            hint[1] = t->nrvs > hint[1] ? t->nrvs : hint[1];
            sch->recorder = NULL;
            sch->recorder_ctx = NULL;
            sch->rng = NULL;
            if (loom_validate(sch, &s->o.limits, &v, &err) == LOOM_OK) {
                c->trace = t;
                c->sch = sch;
                c->hash = loom_schedule_hash(sch);
            } else {
                invalid = 1;
            }
        }
    }
    pthread_mutex_lock(&s->lock);
    s->st.sampled++;
    if (failed)
        s->st.sample_failed++;
    if (invalid) {
        s->st.sample_invalid++;
        count_rule(s, v.rule);
    }
    pthread_mutex_unlock(&s->lock);
    if (!c->trace)
        loom__recycle_parts(s, t, sch);
}

/* n fresh samples in parallel; the valid ones are compacted to the front,
 * their count returned (-1 on a thread failure). */
int loom_search_sample(loom_search *s, long call, int phase, int n, loom_candidate *out, loom_error *err)
{
    double t0 = loom_now_seconds();
    sample_job j = {s, call, phase, out};
    if (loom_parallel_for(n, s->threads, sample_one, &j, err))
        return -1;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (out[i].trace) {
            /* a move, not a copy: the slot left behind must not still own
             * the trace (the caller frees every slot; issue 14's double free) */
            loom_candidate c = out[i];
            memset(&out[i], 0, sizeof out[i]);
            out[m++] = c;
        }
    s->st.sample_s += loom_now_seconds() - t0;
    return m;
}

/* ---- replay of measured traces --------------------------------------------- */

typedef struct replay_job {
    loom_search *s;
    loom_trace **traces;
    loom_candidate *out;
} replay_job;

static void replay_one(void *ctx, int i, int w)
{
    (void)w;
    replay_job *j = ctx;
    loom_search *s = j->s;
    loom_candidate *c = &j->out[i];
    memset(c, 0, sizeof *c);
    loom_schedule *sch = loom__schedule_take(s);
    loom_trace *t = loom__trace_take(s);
    loom_error err;
    loom_error_clear(&err);
    loom_violation v;
    if (sch && t && loom_trace_reserve(t, j->traces[i]->ninsts, j->traces[i]->nrvs, &err) == LOOM_OK &&
        loom_schedule_init(sch, s->prog, NULL, &err) == LOOM_OK) {
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = t;
        loom_status st = loom_trace_replay(j->traces[i], sch, NULL, &err);
        sch->recorder = NULL;
        sch->recorder_ctx = NULL;
        if (!st && !loom_trace_status(t, &err) && loom_validate(sch, &s->o.limits, &v, &err) == LOOM_OK) {
            c->trace = t;
            c->sch = sch;
            c->hash = loom_schedule_hash(sch);
            return;
        }
    }
    loom__recycle_parts(s, t, sch);
}

loom_status loom__replay_measured(loom_search *s, loom_candidate *pop, int *npop, loom_error *err)
{
    loom_status st = LOOM_OK;
    *npop = 0;
    if (!s->env.best_measured && !s->env.best_measured_latency)
        return LOOM_OK;
    double t0 = loom_now_seconds();
    loom_trace **bt = NULL;
    double *lat = NULL;
    int want = (int)(s->o.population * s->o.init_measured_ratio);
    int k = s->env.best_measured_latency ? s->env.best_measured_latency(s->env.ctx, want, &bt, &lat)
                                         : s->env.best_measured(s->env.ctx, want, &bt);
    if (k > 0) {
        replay_job rj = {s, bt, pop};
        st = loom_parallel_for(k, s->threads, replay_one, &rj, err);
        for (int i = 0; i < k; i++) {
            loom_trace_free(bt[i]);
            if (pop[i].trace) {
                loom_candidate c = pop[i]; /* moved: see loom_search_sample */
                c.latency_s = lat ? lat[i] : 0;
                memset(&pop[i], 0, sizeof pop[i]);
                pop[(*npop)++] = c;
            }
        }
    }
    free(bt);
    free(lat);
    s->st.sample_s += loom_now_seconds() - t0;
    return st;
}

int loom_search_take(loom_search *s, const loom_candidate *c)
{
    if (loom__hset_has(&s->handed, c->hash) || s->env.is_measured(s->env.ctx, c->hash))
        return 0;
    loom__hset_add(&s->handed, c->hash);
    return 1;
}

/* ---- scoring ------------------------------------------------------------------ */

/* The slot of hash h in s->scores (its key, or the empty slot where it goes). */
static size_t score_slot(const loom_search *s, uint64_t h)
{
    size_t i = hkey(h) & (s->scores.cap - 1);
    while (s->scores.key[i] && s->scores.key[i] != hkey(h))
        i = (i + 1) & (s->scores.cap - 1);
    return i;
}

/* Room for `more` new scores (emptied when the call changed); -1 out of memory. */
static int scores_reserve(loom_search *s, size_t more)
{
    if (s->scores.call != s->calls) {
        if (s->scores.key)
            memset(s->scores.key, 0, sizeof *s->scores.key * s->scores.cap);
        s->scores.n = 0;
        s->scores.call = s->calls;
    }
    if ((s->scores.n + more) * 2 <= s->scores.cap)
        return 0;
    size_t cap = s->scores.cap ? s->scores.cap : 1024;
    while ((s->scores.n + more) * 2 > cap)
        cap *= 2;
    uint64_t *ok = s->scores.key;
    double *ov = s->scores.val;
    size_t ocap = s->scores.cap;
    s->scores.key = calloc(cap, sizeof *s->scores.key);
    s->scores.val = malloc(sizeof *s->scores.val * cap);
    if (!s->scores.key || !s->scores.val) {
        free(s->scores.key), free(s->scores.val);
        s->scores.key = ok, s->scores.val = ov;
        return -1;
    }
    s->scores.cap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (ok[i]) {
            size_t j = score_slot(s, ok[i]);
            s->scores.key[j] = ok[i], s->scores.val[j] = ov[i];
        }
    free(ok), free(ov);
    return 0;
}

loom_status loom__score_all(loom_search *s, loom_candidate *c, int n, loom_error *err)
{
    if (n <= 0 || !s->env.score)
        return LOOM_OK;
    double t0 = loom_now_seconds();
    const loom_schedule **schs = malloc(sizeof *schs * (size_t)n);
    double *sc = malloc(sizeof *sc * (size_t)n);
    if (!schs || !sc || scores_reserve(s, (size_t)n)) {
        free(schs), free(sc);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    /* the schedules not scored yet in this call, each once; NAN marks them in the table until scored */
    int m = 0;
    for (int i = 0; i < n; i++) {
        size_t k = score_slot(s, c[i].hash);
        if (!s->scores.key[k]) {
            s->scores.key[k] = hkey(c[i].hash), s->scores.val[k] = NAN, s->scores.n++;
            schs[m++] = c[i].sch;
        }
    }
    loom_status st = m ? s->env.score(s->env.ctx, schs, m, sc, err) : LOOM_OK;
    for (int i = 0, q = 0; i < n; i++) {
        size_t k = score_slot(s, c[i].hash);
        if (q < m && schs[q] == c[i].sch) /* scored now: its row is sc[q] */
            s->scores.val[k] = st ? 0 : isfinite(sc[q]) ? sc[q] : 0, q++;
        if (!st)
            c[i].score = s->scores.val[k];
    }
    if (st) /* nothing of this call is kept: an error leaves no half-made scores */
        s->scores.call = -1;
    s->st.scored += n;
    s->st.score_s += loom_now_seconds() - t0;
    free(schs), free(sc);
    return st;
}

/* ---- the top-k heap of unmeasured candidates ---------------------------- */

int loom__copy_candidate(loom_search *s, const loom_candidate *src, loom_candidate *dst)
{
    loom_error e;
    memset(dst, 0, sizeof *dst);
    dst->sch = loom__schedule_take(s);
    dst->trace = loom__trace_take(s);
    if (!dst->sch || !dst->trace || loom_trace_copy_into(dst->trace, src->trace, &e)) {
        loom__recycle(s, dst);
        return -1;
    }
    loom_schedule_copy(dst->sch, src->sch);
    dst->hash = src->hash;
    dst->score = src->score;
    dst->latency_s = src->latency_s;
    return 0;
}

void loom__topk_push(loom_search *s, loom__topk *h, const loom_candidate *c)
{
    if (h->k <= 0 || loom__hset_has(&h->seen, c->hash) || loom__hset_has(&s->handed, c->hash) ||
        s->env.is_measured(s->env.ctx, c->hash))
        return;
    if (h->n == h->k && c->score <= h->c[h->n - 1].score)
        return;
    loom_candidate cp;
    if (loom__copy_candidate(s, c, &cp))
        return;
    loom__hset_add(&h->seen, c->hash);
    if (h->n == h->k) {
        loom__recycle(s, &h->c[h->n - 1]);
        h->n--;
    }
    int at = h->n;
    while (at > 0 && h->c[at - 1].score < cp.score) {
        h->c[at] = h->c[at - 1];
        at--;
    }
    h->c[at] = cp;
    h->n++;
}

/* The batch: the heap's best, then eps-greedy random fresh samples; all
 * distinct and unmeasured.  Moves what it picks out of heap / fresh. */
int loom__pick(loom_search *s, long call, int salt, loom__topk *h, double eps, loom_candidate *fresh,
               unsigned char *shared, int nfresh, int n, loom_candidate *out)
{
    int nrand = (int)(n * eps);
    int nbest = n - nrand, m = 0;
    for (int i = 0; h && i < h->n && m < nbest; i++) {
        loom_candidate *c = &h->c[i];
        if (!c->trace || !loom_search_take(s, c))
            continue;
        out[m++] = *c;
        memset(c, 0, sizeof *c);
    }
    /* random fresh samples (a random permutation of them) fill the rest */
    gsl_rng *r = loom_search_rng(s, 0, call, LOOM__PH_PICK, salt);
    int *perm = malloc(sizeof(int) * (size_t)(nfresh > 0 ? nfresh : 1));
    if (perm) {
        for (int i = 0; i < nfresh; i++)
            perm[i] = i;
        if (nfresh > 1)
            gsl_ran_shuffle(r, perm, (size_t)nfresh, sizeof(int));
        for (int q = 0; q < nfresh && m < n; q++) {
            loom_candidate *c = &fresh[perm[q]];
            if (!c->trace || !loom_search_take(s, c))
                continue;
            if (shared && shared[perm[q]]) { /* a population member's: a copy (issue 26) */
                shared[perm[q]] = 0;
                if (loom__copy_candidate(s, c, &out[m]) == 0)
                    m++;
            } else {
                out[m++] = *c;
            }
            memset(c, 0, sizeof *c);
        }
        free(perm);
    }
    return m;
}

