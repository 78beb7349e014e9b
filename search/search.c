/* Search strategies (search.h). */
#include "search.h"
#include "../runtime/measure/measure.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* phases of one generate call, for seeding work items */
enum { PH_BEST = 1, PH_SAMPLE = 2, PH_PICK = 3, PH_PLAN = 4, PH_GEN = 16 };

static const char *const strategy_names[] = {"evolutionary", "metaschedule", "random"};

const char *loom_strategy_name(loom_strategy_kind k)
{
    return (int)k >= 0 && k <= LOOM_STRATEGY_RANDOM ? strategy_names[k] : NULL;
}

int loom_strategy_find(const char *name)
{
    for (int k = 0; name && k <= LOOM_STRATEGY_RANDOM; k++)
        if (!strcmp(name, strategy_names[k]))
            return k;
    return -1;
}

loom_search_opts loom_search_defaults(void)
{
    loom_search_opts o;
    memset(&o, 0, sizeof o);
    o.strategy = LOOM_STRATEGY_EVOLUTIONARY;
    o.seed = 1;
    o.population = 512;
    o.init_measured_ratio = 0.2;
    o.init_min_unmeasured = 50;
    o.max_fail_count = 5;
    o.generations = 4;
    o.mutate_prob = 0.85;
    o.genetic_max_fail_count = 10;
    o.eps_greedy = 0.05;
    o.t0 = 0.05;
    o.t_decay = 0.5;
    o.threads = 0;
    o.mutators = loom_mutator_defaults("cpu");
    o.limits = loom_limits_host();
    return o;
}

int loom_mh_accept(double s_old, double s_new, double T, double u)
{
    if (s_new >= s_old)
        return 1;
    if (!(T > 0))
        return 0;
    return u < exp((s_new - s_old) / T);
}

double loom_mh_temperature(const loom_search_opts *o, int g)
{
    return o->t0 * pow(o->t_decay, g);
}

uint64_t loom_seed_mix(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t z = seed;
    uint64_t parts[3] = {a, b, c};
    for (int k = 0; k < 3; k++) {
        z += 0x9e3779b97f4a7c15ULL + parts[k];
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
    }
    return z;
}

/* ---- a pthread parallel-for ------------------------------------------------ */

typedef struct pf_ctx {
    pthread_mutex_t lock;
    int next, n;
    void (*fn)(void *, int, int);
    void *ctx;
} pf_ctx;

typedef struct pf_arg {
    pf_ctx *c;
    int worker;
} pf_arg;

static void *pf_worker(void *arg)
{
    pf_arg *a = arg;
    pf_ctx *c = a->c;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        int i = c->next < c->n ? c->next++ : -1;
        pthread_mutex_unlock(&c->lock);
        if (i < 0)
            return NULL;
        c->fn(c->ctx, i, a->worker);
    }
}

loom_status loom_parallel_for(int n, int threads, void (*fn)(void *ctx, int i, int worker), void *ctx,
                              loom_error *err)
{
    if (threads > n)
        threads = n;
    if (threads <= 1) {
        for (int i = 0; i < n; i++)
            fn(ctx, i, 0);
        return LOOM_OK;
    }
    if (threads > 64)
        threads = 64;
    pf_ctx c = {.next = 0, .n = n, .fn = fn, .ctx = ctx};
    pthread_mutex_init(&c.lock, NULL);
    pthread_t th[64];
    pf_arg args[64];
    int started = 0;
    for (; started < threads - 1; started++) {
        args[started] = (pf_arg){&c, started + 1};
        if (pthread_create(&th[started], NULL, pf_worker, &args[started]) != 0)
            break;
    }
    pf_arg self = {&c, 0};
    pf_worker(&self); /* the calling thread is worker 0 */
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    pthread_mutex_destroy(&c.lock);
    (void)err;
    return LOOM_OK;
}

/* ---- a set of 64-bit hashes ---------------------------------------------- */

typedef struct hset {
    uint64_t *slot; /* 0 = empty; hash 0 is stored as 1 */
    size_t cap, n;
} hset;

static uint64_t hkey(uint64_t h)
{
    return h ? h : 1;
}

static int hset_has(const hset *s, uint64_t h)
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

static int hset_add(hset *s, uint64_t h)
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

/* ---- the search object ---------------------------------------------------- */

struct loom_search {
    loom_search_opts o;
    const loom_program *prog;
    loom_search_env env;
    int threads;
    long calls;
    hset handed;                /* hashes handed out as candidates */
    gsl_rng **rngs;             /* one per worker, reseeded per work item */
    loom_schedule **scratch;    /* one per worker */
    pthread_mutex_t lock;       /* stats */
    loom_search_stats st;
    const char *const *rules;
    int nrules;
};

void loom_candidate_free(loom_candidate *c)
{
    if (!c)
        return;
    loom_trace_free(c->trace);
    free(c->sch);
    c->trace = NULL;
    c->sch = NULL;
}

loom_status loom_search_new(const loom_search_opts *o, const loom_program *prog, const loom_search_env *env,
                            loom_search **out, loom_error *err)
{
    *out = NULL;
    if (!o || !prog || !env || !env->sample || !env->is_measured ||
        (o->strategy != LOOM_STRATEGY_RANDOM && !env->score))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "a search needs a program, a sampler, a measured-set query and (but for random "
                              "search) a cost model");
    if (o->population < 2 || o->generations < 0 || o->eps_greedy < 0 || o->eps_greedy > 1 ||
        o->init_measured_ratio < 0 || o->init_measured_ratio > 1 || o->mutate_prob < 0 || o->mutate_prob > 1 ||
        o->t0 < 0 || o->t_decay <= 0 || (int)o->strategy < 0 || o->strategy > LOOM_STRATEGY_RANDOM)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "search options out of range (population >= 2, generations >= 0, probabilities in "
                              "[0, 1], t0 >= 0, t_decay > 0)");
    loom_search *s = calloc(1, sizeof *s);
    if (!s)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    s->o = *o;
    s->prog = prog;
    s->env = *env;
    s->threads = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (s->threads < 1)
        s->threads = 1;
    if (s->threads > 64)
        s->threads = 64;
    s->rngs = calloc((size_t)s->threads, sizeof *s->rngs);
    s->scratch = calloc((size_t)s->threads, sizeof *s->scratch);
    int ok = s->rngs && s->scratch;
    for (int k = 0; ok && k < s->threads; k++) {
        s->rngs[k] = gsl_rng_alloc(gsl_rng_mt19937);
        s->scratch[k] = malloc(sizeof(loom_schedule));
        ok = s->rngs[k] && s->scratch[k];
    }
    if (!ok) {
        loom_search_free(s);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    pthread_mutex_init(&s->lock, NULL);
    s->rules = loom_validator_rules(&s->nrules);
    *out = s;
    return LOOM_OK;
}

void loom_search_free(loom_search *s)
{
    if (!s)
        return;
    for (int k = 0; k < s->threads; k++) {
        if (s->rngs && s->rngs[k])
            gsl_rng_free(s->rngs[k]);
        if (s->scratch)
            free(s->scratch[k]);
    }
    free(s->rngs);
    free(s->scratch);
    free(s->handed.slot);
    if (s->rules)
        pthread_mutex_destroy(&s->lock);
    free(s);
}

const loom_search_stats *loom_search_get_stats(const loom_search *s)
{
    return &s->st;
}

static void count_rule(loom_search *s, const char *rule)
{
    for (int r = 0; r < s->nrules && r < 32; r++)
        if (!strcmp(s->rules[r], rule)) {
            s->st.invalid_by_rule[r]++;
            return;
        }
}

static gsl_rng *item_rng(loom_search *s, int worker, long call, int phase, int i)
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
    loom_trace *t = loom_trace_new();
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    loom_error_clear(&err);
    int failed = 1, invalid = 0;
    loom_violation v;
    if (t && sch && loom_schedule_init(sch, s->prog, item_rng(s, w, j->call, j->phase, i), &err) == LOOM_OK) {
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = t;
        if (s->env.sample(s->env.ctx, sch, &err) == LOOM_OK && loom_trace_status(t, &err) == LOOM_OK) {
            failed = 0;
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
    if (!c->trace) {
        loom_trace_free(t);
        free(sch);
    }
}

/* n fresh samples in parallel; the valid ones are compacted to the front,
 * their count returned (-1 on a thread failure). */
static int sample_fresh(loom_search *s, long call, int phase, int n, loom_candidate *out, loom_error *err)
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
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace *t = loom_trace_new();
    loom_error err;
    loom_error_clear(&err);
    loom_violation v;
    if (sch && t && loom_schedule_init(sch, s->prog, NULL, &err) == LOOM_OK) {
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
    loom_trace_free(t);
    free(sch);
}

/* ---- scoring ------------------------------------------------------------------ */

static loom_status score_all(loom_search *s, loom_candidate *c, int n, loom_error *err)
{
    if (n <= 0 || !s->env.score)
        return LOOM_OK;
    double t0 = loom_now_seconds();
    const loom_schedule **schs = malloc(sizeof *schs * (size_t)n);
    double *sc = malloc(sizeof *sc * (size_t)n);
    if (!schs || !sc) {
        free(schs), free(sc);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    for (int i = 0; i < n; i++)
        schs[i] = c[i].sch;
    loom_status st = s->env.score(s->env.ctx, schs, n, sc, err);
    if (!st)
        for (int i = 0; i < n; i++)
            c[i].score = isfinite(sc[i]) ? sc[i] : 0;
    s->st.scored += n;
    s->st.score_s += loom_now_seconds() - t0;
    free(schs), free(sc);
    return st;
}

/* ---- the top-k heap of unmeasured candidates (a sorted array: k <= ~100) -- */

typedef struct topk {
    int k, n;
    loom_candidate *c; /* best first; owned copies */
    hset seen;
} topk;

static int copy_candidate(const loom_candidate *src, loom_candidate *dst)
{
    loom_error e;
    memset(dst, 0, sizeof *dst);
    dst->sch = malloc(sizeof *dst->sch);
    if (!dst->sch || loom_trace_copy(src->trace, &dst->trace, &e)) {
        free(dst->sch);
        dst->sch = NULL;
        return -1;
    }
    loom_schedule_copy(dst->sch, src->sch);
    dst->hash = src->hash;
    dst->score = src->score;
    return 0;
}

static void topk_push(loom_search *s, topk *h, const loom_candidate *c)
{
    if (h->k <= 0 || hset_has(&h->seen, c->hash) || hset_has(&s->handed, c->hash) ||
        s->env.is_measured(s->env.ctx, c->hash))
        return;
    if (h->n == h->k && c->score <= h->c[h->n - 1].score)
        return;
    loom_candidate cp;
    if (copy_candidate(c, &cp))
        return;
    hset_add(&h->seen, c->hash);
    if (h->n == h->k) {
        loom_candidate_free(&h->c[h->n - 1]);
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

/* ---- mutation of a generation ---------------------------------------------- */

typedef struct gen_job {
    loom_search *s;
    long call;
    int g;
    loom_candidate *pop;   /* parents */
    int npop;
    loom_candidate *kids;  /* kids[i].trace == NULL: no valid child */
    int *parent;           /* planned parent of kid i (metaschedule) or i */
    int *copy;             /* 1: the kid is a copy of its parent (metaschedule) */
    gsl_ran_discrete_t *roulette;
} gen_job;

static void mutate_one(void *ctx, int i, int w)
{
    gen_job *j = ctx;
    loom_search *s = j->s;
    loom_candidate *kid = &j->kids[i];
    memset(kid, 0, sizeof *kid);
    if (j->copy && j->copy[i])
        return;
    gsl_rng *rng = item_rng(s, w, j->call, PH_GEN + j->g, i);
    loom_trace *t = loom_trace_new();
    loom_schedule *sch = malloc(sizeof *sch);
    if (!t || !sch) {
        loom_trace_free(t);
        free(sch);
        return;
    }
    int p = j->parent[i];
    long tried = 0, invalid = 0, failed = 0;
    int rules[16], nr = 0;
    for (int attempt = 0; attempt <= s->o.genetic_max_fail_count; attempt++) {
        loom_mutation info;
        loom_error err;
        loom_error_clear(&err);
        tried++;
        loom_status st = loom_mutate_trace(j->pop[p].trace, s->prog, &s->o.mutators, &s->o.limits, rng,
                                           s->scratch[w], t, sch, &info, &err);
        if (!st) {
            kid->trace = t;
            kid->sch = sch;
            kid->hash = loom_schedule_hash(sch);
            break;
        }
        if (info.invalid) {
            invalid++;
            for (int r = 0; r < s->nrules && r < 32 && nr < 16; r++)
                if (!strcmp(s->rules[r], info.violation.rule))
                    rules[nr++] = r;
        } else {
            failed++;
        }
        /* MetaSchedule draws another parent after a failed mutation */
        if (j->roulette)
            p = (int)gsl_ran_discrete(rng, j->roulette);
    }
    j->parent[i] = p;
    pthread_mutex_lock(&s->lock);
    s->st.mutated += tried;
    s->st.mutate_invalid += invalid;
    s->st.mutate_failed += failed;
    for (int r = 0; r < nr; r++)
        s->st.invalid_by_rule[rules[r]]++;
    pthread_mutex_unlock(&s->lock);
    if (!kid->trace) {
        loom_trace_free(t);
        free(sch);
    }
}

/* ---- generate ------------------------------------------------------------------ */

/* The batch: the heap's best, then eps-greedy random fresh samples; all
 * distinct and unmeasured.  Moves what it picks out of heap / fresh. */
static int pick(loom_search *s, long call, int salt, topk *h, double eps, loom_candidate *fresh, int nfresh, int n,
                loom_candidate *out)
{
    int nrand = (int)(n * eps);
    int nbest = n - nrand, m = 0;
    for (int i = 0; h && i < h->n && m < nbest; i++) {
        loom_candidate *c = &h->c[i];
        if (!c->trace || hset_has(&s->handed, c->hash) || s->env.is_measured(s->env.ctx, c->hash))
            continue;
        hset_add(&s->handed, c->hash);
        out[m++] = *c;
        memset(c, 0, sizeof *c);
    }
    /* random fresh samples (a random permutation of them) fill the rest */
    gsl_rng *r = item_rng(s, 0, call, PH_PICK, salt);
    int *perm = malloc(sizeof(int) * (size_t)(nfresh > 0 ? nfresh : 1));
    if (perm) {
        for (int i = 0; i < nfresh; i++)
            perm[i] = i;
        if (nfresh > 1)
            gsl_ran_shuffle(r, perm, (size_t)nfresh, sizeof(int));
        for (int q = 0; q < nfresh && m < n; q++) {
            loom_candidate *c = &fresh[perm[q]];
            if (!c->trace || hset_has(&s->handed, c->hash) || s->env.is_measured(s->env.ctx, c->hash))
                continue;
            hset_add(&s->handed, c->hash);
            out[m++] = *c;
            memset(c, 0, sizeof *c);
        }
        free(perm);
    }
    return m;
}

loom_status loom_search_generate(loom_search *s, int n, loom_candidate **out, int *nout, loom_error *err)
{
    *out = NULL;
    *nout = 0;
    if (n <= 0)
        return LOOM_OK;
    long call = s->calls++;
    loom_candidate *res = calloc((size_t)n, sizeof *res);
    if (!res)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st = LOOM_OK;

    if (s->o.strategy == LOOM_STRATEGY_RANDOM) {
        /* MetaSchedule's ReplayTrace: fresh samples until n new ones, at most
         * 100 rounds without progress */
        int m = 0, fails = 0, round = 0;
        int want = n * 2 > 16 ? n * 2 : 16;
        loom_candidate *buf = calloc((size_t)want, sizeof *buf);
        if (!buf) {
            free(res);
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        }
        while (m < n && fails < 100) {
            int got = sample_fresh(s, call, PH_SAMPLE + 100 * round++, want, buf, err);
            if (got < 0) {
                st = LOOM_ERR_RUN;
                break;
            }
            int before = m;
            for (int i = 0; i < got; i++) {
                loom_candidate *c = &buf[i];
                if (m < n && !hset_has(&s->handed, c->hash) && !s->env.is_measured(s->env.ctx, c->hash)) {
                    hset_add(&s->handed, c->hash);
                    res[m++] = *c;
                } else {
                    loom_candidate_free(c);
                }
            }
            if (m == before)
                fails++;
        }
        free(buf);
        *out = res;
        *nout = m;
        return st;
    }

    int P = s->o.population;
    loom_candidate *pop = calloc((size_t)P, sizeof *pop);
    loom_candidate *fresh = calloc((size_t)P, sizeof *fresh);
    loom_candidate *kids = calloc((size_t)P, sizeof *kids);
    int *parent = malloc(sizeof(int) * (size_t)P), *copy = malloc(sizeof(int) * (size_t)P);
    topk heap = {.k = n, .n = 0, .c = calloc((size_t)n, sizeof(loom_candidate))};
    int npop = 0, nfresh = 0;
    if (!pop || !fresh || !kids || !parent || !copy || !heap.c) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto done;
    }

    /* 1. the best measured traces, replayed (those that no longer replay or
     *    validate are skipped) */
    if (s->env.best_measured) {
        double t0 = loom_now_seconds();
        loom_trace **bt = NULL;
        int k = s->env.best_measured(s->env.ctx, (int)(P * s->o.init_measured_ratio), &bt);
        if (k > 0) {
            replay_job rj = {s, bt, pop};
            st = loom_parallel_for(k, s->threads, replay_one, &rj, err);
            for (int i = 0; i < k; i++) {
                loom_trace_free(bt[i]);
                if (pop[i].trace) {
                    loom_candidate c = pop[i];   /* moved: see sample_fresh */
                    memset(&pop[i], 0, sizeof pop[i]);
                    pop[npop++] = c;
                }
            }
        }
        free(bt);
        s->st.sample_s += loom_now_seconds() - t0;
        if (st)
            goto done;
    }

    /* 2. fresh samples: rounds until init_min_unmeasured valid unmeasured
     *    ones, giving up after max_fail_count rounds without any valid one */
    {
        int fails = 0, unmeasured = 0;
        for (int round = 0; npop < P && fails < s->o.max_fail_count; round++) {
            int want = P - npop;
            int got = sample_fresh(s, call, PH_SAMPLE + 100 * round, want, pop + npop, err);
            if (got < 0) {
                st = LOOM_ERR_RUN;
                goto done;
            }
            if (got == 0)
                fails++;
            for (int i = npop; i < npop + got; i++)
                if (!s->env.is_measured(s->env.ctx, pop[i].hash) && !hset_has(&s->handed, pop[i].hash))
                    unmeasured++;
            npop += got;
            if (unmeasured >= s->o.init_min_unmeasured || unmeasured >= n)
                break;
        }
        /* keep copies of the fresh unmeasured samples for eps-greedy picks */
        for (int i = 0; i < npop && nfresh < P; i++)
            if (!s->env.is_measured(s->env.ctx, pop[i].hash) && copy_candidate(&pop[i], &fresh[nfresh]) == 0)
                nfresh++;
    }
    if (npop == 0)
        goto done; /* nothing valid: an empty round */

    /* warm-up: the cost model is random, so the batch is fresh samples
     * (search.h); evolve only for what they cannot fill */
    int warm = 0;
    if (s->env.model_ready && !s->env.model_ready(s->env.ctx)) {
        warm = pick(s, call, 1, NULL, 1.0, fresh, nfresh, n, res);
        s->st.warmup_picked += warm;
        if (warm == n) {
            *nout = warm;
            goto done;
        }
    }

    /* 3. generations */
    st = score_all(s, pop, npop, err);
    if (st)
        goto done;
    for (int i = 0; i < npop; i++)
        topk_push(s, &heap, &pop[i]);
    for (int g = 0; g < s->o.generations; g++) {
        double t0 = loom_now_seconds();
        gen_job gj = {.s = s, .call = call, .g = g, .pop = pop, .npop = npop, .kids = kids, .parent = parent};
        double *w = NULL;
        if (s->o.strategy == LOOM_STRATEGY_METASCHEDULE) {
            /* roulette on clamped scores; "no mutation" copies a parent at
             * most once per generation (planned serially: deterministic) */
            w = malloc(sizeof *w * (size_t)npop);
            unsigned char *copied = calloc((size_t)npop, 1);
            if (!w || !copied) {
                free(w), free(copied);
                st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
                goto done;
            }
            double tot = 0;
            for (int i = 0; i < npop; i++)
                tot += w[i] = pop[i].score > 0 ? pop[i].score : 0;
            if (!(tot > 0))
                for (int i = 0; i < npop; i++)
                    w[i] = 1;
            gj.roulette = gsl_ran_discrete_preproc((size_t)npop, w);
            gj.copy = copy;
            gsl_rng *r = item_rng(s, 0, call, PH_PLAN + 100 * g, 0);
            for (int i = 0; i < npop; i++) {
                copy[i] = 0;
                for (int a = 0; a <= s->o.genetic_max_fail_count; a++) {
                    int p = (int)gsl_ran_discrete(r, gj.roulette);
                    parent[i] = p;
                    if (gsl_rng_uniform(r) < s->o.mutate_prob)
                        break;
                    if (!copied[p]) {
                        copied[p] = 1;
                        copy[i] = 1;
                        break;
                    }
                }
            }
            free(copied);
        } else {
            for (int i = 0; i < npop; i++)
                parent[i] = i;
        }
        st = loom_parallel_for(npop, s->threads, mutate_one, &gj, err);
        if (gj.roulette)
            gsl_ran_discrete_free(gj.roulette);
        free(w);
        s->st.mutate_s += loom_now_seconds() - t0;
        if (st)
            goto done;
        /* score the children that exist */
        int nk = 0;
        int *kidx = malloc(sizeof(int) * (size_t)npop);
        loom_candidate *tmp = malloc(sizeof *tmp * (size_t)npop);
        if (!kidx || !tmp) {
            free(kidx), free(tmp);
            st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
            goto done;
        }
        for (int i = 0; i < npop; i++)
            if (kids[i].trace) {
                kidx[nk] = i;
                tmp[nk++] = kids[i];
            }
        st = score_all(s, tmp, nk, err);
        for (int q = 0; q < nk; q++)
            kids[kidx[q]].score = tmp[q].score;
        free(kidx), free(tmp);
        if (st)
            goto done;
        for (int i = 0; i < npop; i++)
            if (kids[i].trace)
                topk_push(s, &heap, &kids[i]);
        if (s->o.strategy == LOOM_STRATEGY_METASCHEDULE) {
            /* the children are the next population; a child without a
             * valid mutant is a copy of its (last) parent */
            loom_candidate *next = calloc((size_t)npop, sizeof *next);
            if (!next) {
                st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
                goto done;
            }
            for (int i = 0; i < npop; i++) {
                if (kids[i].trace) {
                    next[i] = kids[i];
                    memset(&kids[i], 0, sizeof kids[i]);
                } else if (copy_candidate(&pop[parent[i]], &next[i])) {
                    next[i] = (loom_candidate){0};
                }
            }
            for (int i = 0; i < npop; i++)
                loom_candidate_free(&pop[i]);
            int m = 0;
            for (int i = 0; i < npop; i++)
                if (next[i].trace)
                    pop[m++] = next[i];
            npop = m;
            free(next);
        } else {
            /* Metropolis-Hastings: each chain moves to its child with
             * probability min(1, exp((s' - s) / T_g)) */
            double T = loom_mh_temperature(&s->o, g);
            long acc = 0, rej = 0;
            for (int i = 0; i < npop; i++) {
                if (!kids[i].trace)
                    continue;
                gsl_rng *r = item_rng(s, 0, call, PH_GEN + 1000 + g, i);
                if (loom_mh_accept(pop[i].score, kids[i].score, T, gsl_rng_uniform(r))) {
                    loom_candidate_free(&pop[i]);
                    pop[i] = kids[i];
                    memset(&kids[i], 0, sizeof kids[i]);
                    acc++;
                } else {
                    loom_candidate_free(&kids[i]);
                    rej++;
                }
            }
            s->st.accepted += acc;
            s->st.rejected += rej;
        }
        for (int i = 0; i < P; i++)
            loom_candidate_free(&kids[i]);
    }

    /* 4. the batch */
    *nout = warm + pick(s, call, 0, &heap, s->o.eps_greedy, fresh, nfresh, n - warm, res + warm);

done:
    if (pop)
        for (int i = 0; i < P; i++)
            loom_candidate_free(&pop[i]);
    if (kids)
        for (int i = 0; i < P; i++)
            loom_candidate_free(&kids[i]);
    if (fresh)
        for (int i = 0; i < P; i++)
            loom_candidate_free(&fresh[i]);
    free(pop), free(kids), free(fresh), free(parent), free(copy);
    for (int i = 0; i < heap.n; i++)
        loom_candidate_free(&heap.c[i]);
    free(heap.c);
    free(heap.seen.slot);
    if (st) {
        for (int i = 0; i < *nout; i++)
            loom_candidate_free(&res[i]);
        free(res);
        *nout = 0;
        return st;
    }
    *out = res;
    return LOOM_OK;
}
