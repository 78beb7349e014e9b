/* The evolutionary loop shared by the population strategies
 * (search_internal.h; strategy_evolutionary.c, strategy_metaschedule.c). */
#include "../dsl/util.h" /* loom_now_seconds */
#include "search_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- mutation of a generation ---------------------------------------------- */

static void mutate_one(void *ctx, int i, int w)
{
    loom__generation *j = ctx;
    loom_search *s = j->s;
    loom_candidate *kid = &j->kids[i];
    memset(kid, 0, sizeof *kid);
    if (j->copy && j->copy[i])
        return;
    gsl_rng *rng = loom_search_rng(s, w, j->call, LOOM__PH_GEN + j->g, i);
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

/* ---- the loop -------------------------------------------------------------- */

typedef struct population {
    int P, npop, nfresh;
    loom_candidate *pop, *fresh, *kids;
    int *parent, *copy;
    loom__topk heap;
} population;

/* Fresh samples (step 2): rounds until init_min_unmeasured valid
 * unmeasured ones, giving up after max_fail_count rounds without any valid
 * one; then copies of the fresh unmeasured samples for eps-greedy picks. */
static loom_status sample_population(loom_search *s, long call, int n, population *p, loom_error *err)
{
    int fails = 0, unmeasured = 0;
    for (int round = 0; p->npop < p->P && fails < s->o.max_fail_count; round++) {
        int want = p->P - p->npop;
        int got = loom_search_sample(s, call, LOOM__PH_SAMPLE + 100 * round, want, p->pop + p->npop, err);
        if (got < 0)
            return LOOM_ERR_RUN;
        if (got == 0)
            fails++;
        for (int i = p->npop; i < p->npop + got; i++)
            if (!s->env.is_measured(s->env.ctx, p->pop[i].hash) && !loom__hset_has(&s->handed, p->pop[i].hash))
                unmeasured++;
        p->npop += got;
        if (unmeasured >= s->o.init_min_unmeasured || unmeasured >= n)
            break;
    }
    for (int i = 0; i < p->npop && p->nfresh < p->P; i++)
        if (!s->env.is_measured(s->env.ctx, p->pop[i].hash) &&
            loom__copy_candidate(&p->pop[i], &p->fresh[p->nfresh]) == 0)
            p->nfresh++;
    return LOOM_OK;
}

/* Scores of the children that exist, and their entry into the heap. */
static loom_status score_kids(loom_search *s, population *p, loom_error *err)
{
    int nk = 0, npop = p->npop;
    int *kidx = malloc(sizeof(int) * (size_t)npop);
    loom_candidate *tmp = malloc(sizeof *tmp * (size_t)npop);
    if (!kidx || !tmp) {
        free(kidx), free(tmp);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    for (int i = 0; i < npop; i++)
        if (p->kids[i].trace) {
            kidx[nk] = i;
            tmp[nk++] = p->kids[i];
        }
    loom_status st = loom__score_all(s, tmp, nk, err);
    for (int q = 0; q < nk; q++)
        p->kids[kidx[q]].score = tmp[q].score;
    free(kidx), free(tmp);
    if (st)
        return st;
    for (int i = 0; i < npop; i++)
        if (p->kids[i].trace)
            loom__topk_push(s, &p->heap, &p->kids[i]);
    return LOOM_OK;
}

/* Generation g: plan, mutate, score, advance. */
static loom_status generation(loom_search *s, const loom__population_ops *ops, long call, int g, population *p,
                              loom_error *err)
{
    double t0 = loom_now_seconds();
    loom__generation gj = {.s = s, .call = call, .g = g, .pop = p->pop, .npop = p->npop, .kids = p->kids,
                           .parent = p->parent, .copybuf = p->copy};
    loom_status st = ops->plan(&gj, err);
    if (!st)
        st = loom_parallel_for(p->npop, s->threads, mutate_one, &gj, err);
    if (gj.roulette)
        gsl_ran_discrete_free(gj.roulette);
    gj.roulette = NULL;
    s->st.mutate_s += loom_now_seconds() - t0;
    if (!st)
        st = score_kids(s, p, err);
    if (!st)
        st = ops->advance(&gj, err);
    p->npop = gj.npop;
    for (int i = 0; i < p->P; i++)
        loom_candidate_free(&p->kids[i]);
    return st;
}

static void population_free(population *p)
{
    for (int i = 0; i < p->P; i++) {
        if (p->pop)
            loom_candidate_free(&p->pop[i]);
        if (p->kids)
            loom_candidate_free(&p->kids[i]);
        if (p->fresh)
            loom_candidate_free(&p->fresh[i]);
    }
    free(p->pop), free(p->kids), free(p->fresh), free(p->parent), free(p->copy);
    for (int i = 0; i < p->heap.n; i++)
        loom_candidate_free(&p->heap.c[i]);
    free(p->heap.c);
    free(p->heap.seen.slot);
}

loom_status loom__population_generate(loom_search *s, const loom__population_ops *ops, long call, int n,
                                      loom_candidate *res, int *nout, loom_error *err)
{
    int P = s->o.population;
    population p = {.P = P};
    p.pop = calloc((size_t)P, sizeof *p.pop);
    p.fresh = calloc((size_t)P, sizeof *p.fresh);
    p.kids = calloc((size_t)P, sizeof *p.kids);
    p.parent = malloc(sizeof(int) * (size_t)P);
    p.copy = malloc(sizeof(int) * (size_t)P);
    p.heap = (loom__topk){.k = n, .n = 0, .c = calloc((size_t)n, sizeof(loom_candidate))};
    loom_status st = LOOM_OK;
    *nout = 0;
    if (!p.pop || !p.fresh || !p.kids || !p.parent || !p.copy || !p.heap.c) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto done;
    }
    /* 1. the best measured traces, replayed (those that no longer replay or
     *    validate are skipped); 2. fresh samples */
    if ((st = loom__replay_measured(s, p.pop, &p.npop, err)) || (st = sample_population(s, call, n, &p, err)))
        goto done;
    if (p.npop == 0)
        goto done; /* nothing valid: an empty round */

    /* warm-up: the cost model is random, so the batch is fresh samples
     * (search.h); evolve only for what they cannot fill */
    int warm = 0;
    if (s->env.model_ready && !s->env.model_ready(s->env.ctx)) {
        warm = loom__pick(s, call, 1, NULL, 1.0, p.fresh, p.nfresh, n, res);
        s->st.warmup_picked += warm;
        *nout = warm;
        if (warm == n)
            goto done;
    }

    /* 3. generations */
    if ((st = loom__score_all(s, p.pop, p.npop, err)))
        goto done;
    for (int i = 0; i < p.npop; i++)
        loom__topk_push(s, &p.heap, &p.pop[i]);
    for (int g = 0; g < s->o.generations; g++)
        if ((st = generation(s, ops, call, g, &p, err)))
            goto done;

    /* 4. the batch */
    *nout = warm + loom__pick(s, call, 0, &p.heap, s->o.eps_greedy, p.fresh, p.nfresh, n - warm, res + warm);
done:
    population_free(&p);
    return st;
}
