/* The evolutionary loop shared by the population strategies
 * (search_internal.h; strategy_evolutionary.c, strategy_metaschedule.c). */
#include "../../dsl/ir/util.h" /* loom_now_seconds */
#include "local_model.h"
#include "search_internal.h"

#include <stddef.h>
#include <stdint.h>

#include <math.h>
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
    loom_trace *t = loom__trace_take(s);
    loom_schedule *sch = loom__schedule_take(s);
    if (!t || !sch) {
        loom__recycle_parts(s, t, sch);
        return;
    }
    int p = j->parent[i], wp = -1;
    long tried = 0, invalid = 0, failed = 0;
    int rules[16], nr = 0;
    loom_mutator_weights mw = s->o.mutators;
    for (int attempt = 0; attempt <= s->o.genetic_max_fail_count; attempt++) {
        loom_mutation info;
        loom_error err;
        loom_error_clear(&err);
        tried++;
        if (j->by_instruction && wp != p) /* once per parent, not per attempt */
            mw = loom__instruction_weights(j->pop[p].trace, &s->o.mutators), wp = p;
        loom_status st = loom_mutate_trace(j->pop[p].trace, s->prog, &mw, &s->o.limits, rng,
                                           s->scratch[w], t, sch, &info, &err);
        if (!st) {
            kid->trace = t;
            kid->sch = sch;
            kid->hash = loom_schedule_hash(sch);
            break;
        }
        if (info.invalid) {
            invalid++;
            for (int r = 0; r < s->nrules && r < LOOM_VALIDATE_MAX_RULES && nr < 16; r++)
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
    if (!kid->trace)
        loom__recycle_parts(s, t, sch);
}

/* ---- the loop -------------------------------------------------------------- */

typedef struct population {
    int P, npop, nfresh;
    int sampled;    /* 1: sample_population ran (it runs once per call) */
    loom_candidate *pop, *fresh, *kids;
    unsigned char *shared; /* shared[k]: fresh[k] is pop[i] itself (fresh_of[i] == k), not a copy */
    int *fresh_of;         /* per pop index: the fresh entry sharing it, -1 */
    int *parent, *copy;
    loom__topk heap;
} population;

/* Fresh samples (step 2): rounds until init_min_unmeasured valid
 * unmeasured ones, giving up after max_fail_count rounds without any valid
 * one; then copies of the fresh unmeasured samples for eps-greedy picks. */
static loom_status sample_population(loom_search *s, long call, int n, population *p, loom_error *err)
{
    int fails = 0, unmeasured = 0;
    if (p->sampled)
        return LOOM_OK;
    p->sampled = 1;
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
    /* shared with the population, not copied (issue 26: copying ~500 traces and schedules a round was ~10% of a
       sim campaign's CPU, and most rounds pick none of them); loom__retire hands one over when its member leaves */
    for (int i = 0; i < p->npop && p->nfresh < p->P; i++)
        if (!s->env.is_measured(s->env.ctx, p->pop[i].hash)) {
            p->fresh[p->nfresh] = p->pop[i];
            p->shared[p->nfresh] = 1;
            p->fresh_of[i] = p->nfresh++;
        }
    return LOOM_OK;
}

/* a pool member of local exploration, with its local-model prediction */
typedef struct pooled {
    loom_candidate c;
    int crossover;  /* 0 mutant, 1 crossover, 2 local-model step */
    double pred;    /* predicted log seconds; NAN: none */
} pooled;

/* predicted fastest first, the unpredicted last; ties by hash (qsort is
 * not stable: determinism) */
static int by_prediction(const void *pa, const void *pb)
{
    const pooled *a = pa, *b = pb;
    int na = isnan(a->pred), nb = isnan(b->pred);
    if (na != nb)
        return na - nb;
    if (!na && a->pred != b->pred)
        return a->pred < b->pred ? -1 : 1;
    return a->c.hash < b->c.hash ? -1 : a->c.hash > b->c.hash;
}

/* One child of the best measured meas[0..np): a crossover of two of them
 * (with probability local_crossover, when np >= 2) or a one-decision
 * mutant of one (every sampling instruction equally likely: mw[a] holds
 * parent a's loom__instruction_weights).  LOOM_OK with c filled, else c is
 * left empty. */
static loom_status local_child(loom_search *s, gsl_rng *rng, const loom_candidate *meas,
                               const loom_mutator_weights *mw, int np, loom_candidate *c, int *crossover)
{
    int a = (int)gsl_rng_uniform_int(rng, (unsigned long)np);
    c->trace = loom__trace_take(s);
    c->sch = loom__schedule_take(s);
    loom_mutation info;
    loom_error e;
    loom_status st = LOOM_ERR_NOMEM;
    *crossover = np >= 2 && gsl_rng_uniform(rng) < s->o.local_crossover;
    if (c->trace && c->sch) {
        if (*crossover) {
            int b = (a + 1 + (int)gsl_rng_uniform_int(rng, (unsigned long)(np - 1))) % np, taken;
            st = loom_crossover_trace(meas[a].trace, meas[b].trace, s->prog, &s->o.mutators, &s->o.limits, rng,
                                      c->trace, c->sch, &info, &taken, &e);
        } else {
            st = loom_mutate_trace(meas[a].trace, s->prog, &mw[a], &s->o.limits, rng, s->scratch[0], c->trace,
                                   c->sch, &info, &e);
        }
    }
    if (st) {
        loom__recycle(s, c);
        memset(c, 0, sizeof *c);
        return st;
    }
    c->hash = loom_schedule_hash(c->sch);
    return LOOM_OK;
}

/* The local model (local_model.h) of the measured meas[0..nmeas) that
 * share meas[0]'s structure, or NULL (off, too few records, an error). */
static loom_local_model *fit_local_model(loom_search *s, const loom_candidate *meas, int nmeas)
{
    if (!s->o.local_model || nmeas <= 0)
        return NULL;
    const loom_trace **t = malloc(sizeof *t * (size_t)nmeas);
    double *lat = malloc(sizeof *lat * (size_t)nmeas);
    loom_local_model *m = NULL;
    if (t && lat) {
        for (int i = 0; i < nmeas; i++)
            t[i] = meas[i].trace, lat[i] = meas[i].latency_s;
        loom_error e;
        if (loom_local_model_fit(t, lat, nmeas, meas[0].trace, 1.0, LOOM__LOCAL_MODEL_MIN, &m, &e))
            m = NULL;
    }
    free(t), free(lat);
    return m;
}

/* Adds c to pool[*npool] unless it was seen in this pool, handed out or
 * measured (then frees it). */
static void pool_admit(loom_search *s, loom__hset *seen, pooled *pool, int *npool, loom_candidate c, int origin,
                       const loom_local_model *lm)
{
    if (loom__hset_has(seen, c.hash) || loom__hset_has(&s->handed, c.hash) || s->env.is_measured(s->env.ctx, c.hash) ||
        loom__hset_add(seen, c.hash) < 0) {
        loom__recycle(s, &c);
        return;
    }
    pool[(*npool)++] = (pooled){c, origin, lm ? loom_local_model_predict(lm, c.trace) : NAN};
}

/* Sorts pool[0..n) by the cost model's score, the predicted fastest first
 * (its pred is the negated score: by_prediction sorts ascending); on an
 * error of the model the pool keeps its draw order. */
static void rank_by_cost_model(loom_search *s, pooled *pool, int n)
{
    loom_candidate *c = malloc(sizeof *c * (size_t)n);
    loom_error e;
    if (!c)
        return;
    for (int i = 0; i < n; i++)
        c[i] = pool[i].c;
    if (loom__score_all(s, c, n, &e) == LOOM_OK) {
        for (int i = 0; i < n; i++)
            pool[i].pred = -c[i].score;
        qsort(pool, (size_t)n, sizeof *pool, by_prediction);
        s->st.local_cold_ranked++;
    }
    free(c);
}

/* A cost model that env.model_ready says is trained (pre-trained or on
 * this campaign's records); without the hook, none.  model_trained below
 * (fresh_rank) takes a missing hook as trained. */
static int cost_model_ready(loom_search *s)
{
    return s->env.score && s->env.model_ready && s->env.model_ready(s->env.ctx);
}

/* a screening mutant (search.h local_screen): its draw and how many
   values of its changed instruction the local model has seen */
typedef struct screened {
    loom_candidate c;
    int values, draw;
    double score; /* the cost model's (local_screen_rank), 0 without */
} screened;

/* fewest values seen first, then draw order */
static int by_values(const void *pa, const void *pb)
{
    const screened *a = pa, *b = pb;
    if (a->values != b->values)
        return a->values < b->values ? -1 : 1;
    return a->draw < b->draw ? -1 : a->draw > b->draw;
}

/* the cost model's highest score first, then as by_values */
static int by_score(const void *pa, const void *pb)
{
    const screened *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return by_values(pa, pb);
}

/* Screening (search.h local_screen): up to `want` one-decision mutants of
 * the best measured schedule (meas[0], mutation weights mw0) that set a
 * decision to a value none of lm's records holds, from a pool of
 * want x local_pool of them: the trained cost model's highest scored first
 * (local_screen_rank), else the instruction with the fewest values seen
 * first, into out (handed out; their hashes added to
 * seen).  Returns the count. */
static int screen_candidates(loom_search *s, long call, const loom_candidate *meas, const loom_mutator_weights *mw0,
                             const loom_local_model *lm, int want, loom__hset *seen, loom_candidate *out)
{
    int cap = want * s->o.local_pool, n = 0, m = 0;
    screened *pool = calloc((size_t)cap + 1, sizeof *pool);
    for (int j = 0; pool && j < 20 * cap && n < cap; j++) {
        loom_candidate c = {.trace = loom__trace_take(s), .sch = loom__schedule_take(s)};
        loom_mutation info;
        loom_error e;
        int has = 1, values = 0;
        if (c.trace && c.sch &&
            loom_mutate_trace(meas[0].trace, s->prog, mw0, &s->o.limits, loom_search_rng(s, 0, call, LOOM__PH_SCREEN, j),
                              s->scratch[0], c.trace, c.sch, &info, &e) == LOOM_OK &&
            info.inst >= 0 && info.inst < c.trace->ninsts) {
            values = loom_local_model_values(lm, info.inst, &c.trace->insts[info.inst], &has);
            c.hash = loom_schedule_hash(c.sch);
        }
        if (has || loom__hset_has(seen, c.hash) || loom__hset_has(&s->handed, c.hash) ||
            s->env.is_measured(s->env.ctx, c.hash) || loom__hset_add(seen, c.hash) < 0) {
            loom__recycle(s, &c);
            continue;
        }
        pool[n++] = (screened){c, values, j, 0};
    }
    /* with a trained cost model, its order (local_screen_rank) */
    int ranked = 0;
    if (pool && n > 1 && s->o.local_screen_rank && cost_model_ready(s)) {
        loom_candidate *cs = malloc(sizeof *cs * (size_t)n);
        loom_error e;
        if (cs) {
            for (int i = 0; i < n; i++)
                cs[i] = pool[i].c;
            if (loom__score_all(s, cs, n, &e) == LOOM_OK) {
                for (int i = 0; i < n; i++)
                    pool[i].score = cs[i].score;
                ranked = 1;
            }
            free(cs);
        }
    }
    if (pool)
        qsort(pool, (size_t)n, sizeof *pool, ranked ? by_score : by_values);
    if (ranked)
        s->st.screen_ranked++;
    for (int i = 0; i < n; i++) {
        if (m < want && loom_search_take(s, &pool[i].c)) {
            out[m++] = pool[i].c;
            s->st.local_mutants++;
            s->st.local_screened++;
        } else {
            loom__recycle(s, &pool[i].c);
        }
    }
    free(pool);
    return m;
}

/* Local exploration (search.h local_share): up to `want` valid, distinct,
 * unmeasured children (local_child) of the best measured schedules
 * meas[0..nmeas) (best first; the best local_parents of them).  With a
 * local model, local_pool x want children are drawn and the `want`
 * predicted fastest are kept; without one, the first `want` drawn.
 * Handed out with loom_search_take into out; returns the count. */
static int local_candidates(loom_search *s, long call, const loom_candidate *meas, int nmeas, int want,
                            const loom_local_model *lm, loom_candidate *out)
{
    int np = nmeas < s->o.local_parents ? nmeas : s->o.local_parents, m = 0, npool = 0;
    if (np <= 0 || want <= 0)
        return 0;
    /* a cold round (no local model yet) with a trained -- pre-trained --
       cost model: the cost model ranks the pool instead (local_cold_rank) */
    int by_cost = !lm && s->o.local_cold_rank && cost_model_ready(s);
    int cap = want * (lm || by_cost ? s->o.local_pool : 1);
    int nscreen = lm ? (int)(want * s->o.local_screen + 0.5) : 0;
    pooled *pool = calloc((size_t)cap, sizeof *pool);
    loom__hset seen = {0};
    if (!pool)
        return 0;
    /* each parent's mutation weights, once */
    loom_mutator_weights *mw = malloc(sizeof *mw * (size_t)np);
    for (int a = 0; mw && a < np; a++)
        mw[a] = loom__instruction_weights(meas[a].trace, &s->o.mutators);
    /* screening mutants of the best (search.h local_screen), drawn first so
       that the pool below skips them; measured after its picks */
    int nscr = 0;
    loom_candidate *scr = nscreen > 0 && mw ? calloc((size_t)nscreen, sizeof *scr) : NULL;
    if (scr)
        nscr = screen_candidates(s, call, meas, &mw[0], lm, nscreen, &seen, scr);
    /* the local model's own optimum near each parent, then random halves of
       its changes (search.h local_model) */
    loom_decision *decs = lm ? calloc((size_t)meas[0].trace->ninsts + 1, sizeof *decs) : NULL;
    for (int j = 0; decs && j < np * LOOM__LOCAL_MODEL_STEPS && npool < cap; j++) {
        int a = j / LOOM__LOCAL_MODEL_STEPS, v = j % LOOM__LOCAL_MODEL_STEPS;
        gsl_rng *rng = loom_search_rng(s, 0, call, LOOM__PH_LOCAL_MODEL, j);
        if (loom_local_model_improve(lm, meas[a].trace, v ? 0.5 : 1, 0, rng, decs) == 0)
            continue;
        loom_candidate c = {.trace = loom__trace_take(s), .sch = loom__schedule_take(s)};
        loom_mutation info;
        loom_error e;
        if (!c.trace || !c.sch ||
            loom_replay_child(meas[a].trace, decs, s->prog, &s->o.mutators, &s->o.limits, "local-model step",
                              c.trace, c.sch, &info, &e)) {
            loom__recycle(s, &c);
            continue;
        }
        c.hash = loom_schedule_hash(c.sch);
        pool_admit(s, &seen, pool, &npool, c, 2, lm);
    }
    free(decs);
    for (int j = 0; mw && j < 20 * cap && npool < cap; j++) {
        loom_candidate c = {0};
        int x;
        if (local_child(s, loom_search_rng(s, 0, call, LOOM__PH_LOCAL, j), meas, mw, np, &c, &x) == LOOM_OK)
            pool_admit(s, &seen, pool, &npool, c, x, lm);
    }
    free(mw);
    if (lm) {
        qsort(pool, (size_t)npool, sizeof *pool, by_prediction);
        s->st.local_model_fits++;
    } else if (by_cost && npool > 0) {
        rank_by_cost_model(s, pool, npool);
    }
    for (int i = 0; i < npool; i++) {
        if (m < want - nscr && loom_search_take(s, &pool[i].c)) {
            out[m++] = pool[i].c;
            if (pool[i].crossover == 2)
                s->st.local_model_steps++;
            else if (pool[i].crossover)
                s->st.local_crossovers++;
            else
                s->st.local_mutants++;
        } else {
            loom__recycle(s, &pool[i].c);
        }
    }
    for (int i = 0; i < nscr; i++)
        out[m++] = scr[i];
    free(scr);
    free(pool);
    free(seen.slot);
    return m;
}

/* one structural branch among a round's fresh samples */
typedef struct branch {
    uint64_t key;
    int nmeasured, first;
} branch;

static int by_measured(const void *pa, const void *pb)
{
    const branch *a = pa, *b = pb;
    if (a->nmeasured != b->nmeasured)
        return a->nmeasured < b->nmeasured ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

/* Up to `want` of p's fresh samples (copies, handed out with
 * loom_search_take into out), one per structural branch
 * (loom_search_branch_key) in turn: the branches with the fewest of the
 * measured p->pop[0..nmeasured) first, then in order of first draw; each
 * branch's samples in draw order.  Returns the count. */
/* a fresh sample's index and score: by score, highest first, ties by draw */
typedef struct scored_fresh {
    double score;
    int f;
} scored_fresh;

static int by_fresh_score(const void *pa, const void *pb)
{
    const scored_fresh *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->f < b->f ? -1 : a->f > b->f;
}

/* a trained cost model to rank with (a missing env.model_ready hook counts
   as trained, unlike cost_model_ready) */
static int model_trained(loom_search *s)
{
    return s->env.score && (!s->env.model_ready || s->env.model_ready(s->env.ctx));
}

static int branch_picks(loom_search *s, population *p, int nmeasured, int want, loom_candidate *out)
{
    int nf = p->nfresh, nb = 0, m = 0;
    uint64_t *fk = malloc(sizeof *fk * (size_t)(nf + 1));
    branch *b = malloc(sizeof *b * (size_t)(nf + 1));
    int *ord = malloc(sizeof *ord * (size_t)(nf + 1)); /* the order each branch's samples are taken in */
    if (!fk || !b || !ord) {
        free(fk), free(b), free(ord);
        return 0;
    }
    for (int f = 0; f < nf; f++)
        ord[f] = f;
    /* search.h fresh_rank: each branch's samples in the trained cost model's order */
    loom_error e;
    scored_fresh *sf = s->o.fresh_rank && nf > 1 && model_trained(s) ? malloc(sizeof *sf * (size_t)nf) : NULL;
    if (sf && loom__score_all(s, p->fresh, nf, &e) == LOOM_OK) {
        for (int f = 0; f < nf; f++)
            sf[f] = (scored_fresh){p->fresh[f].score, f};
        qsort(sf, (size_t)nf, sizeof *sf, by_fresh_score);
        for (int f = 0; f < nf; f++)
            ord[f] = sf[f].f;
        s->st.fresh_ranked++;
    }
    free(sf);
    for (int f = 0; f < nf; f++) {
        fk[f] = loom_search_branch_key(p->fresh[f].sch);
        int k = 0;
        while (k < nb && b[k].key != fk[f])
            k++;
        if (k == nb)
            b[nb++] = (branch){fk[f], 0, f};
    }
    for (int i = 0; i < nmeasured; i++) {
        uint64_t key = loom_search_branch_key(p->pop[i].sch);
        for (int k = 0; k < nb; k++)
            if (b[k].key == key)
                b[k].nmeasured++;
    }
    qsort(b, (size_t)nb, sizeof *b, by_measured);
    /* pass r takes each branch's r-th fresh sample that can be handed out */
    int *next = calloc((size_t)nb + 1, sizeof *next); /* per branch: the fresh index to look from */
    for (int more = 1; next && more && m < want;) {
        more = 0;
        for (int k = 0; k < nb && m < want; k++) {
            int f = next[k];
            while (f < nf && (fk[ord[f]] != b[k].key || !loom_search_take(s, &p->fresh[ord[f]])))
                f++;
            next[k] = f + 1;
            if (f >= nf)
                continue;
            more = 1;
            if (loom__copy_candidate(s, &p->fresh[ord[f]], &out[m]) == 0)
                m++;
        }
    }
    s->st.fresh_branch_picks += m;
    s->st.fresh_branches += nb;
    free(next), free(fk), free(b), free(ord);
    return m;
}

/* local_cold_order applies: the option, and a trained cost model */
static int cold_ordered(loom_search *s)
{
    return s->o.local_cold_order && cost_model_ready(s);
}

/* res[0..n) sorted by the cost model's score, the best first (ties keep
 * their order); 1, or 0 when the model failed and they keep their order. */
static int order_by_cost_model(loom_search *s, loom_candidate *res, int n)
{
    int done = 0;
    loom_candidate *tmp = malloc(sizeof *tmp * (size_t)n);
    int *idx = malloc(sizeof *idx * (size_t)n);
    loom_error e;
    if (tmp && idx && loom__score_all(s, res, n, &e) == LOOM_OK) {
        for (int i = 0; i < n; i++)
            idx[i] = i;
        for (int i = 1; i < n; i++) /* insertion sort: n is a batch, and it is stable */
            for (int j = i; j > 0 && res[idx[j]].score > res[idx[j - 1]].score; j--) {
                int t = idx[j];
                idx[j] = idx[j - 1];
                idx[j - 1] = t;
            }
        for (int i = 0; i < n; i++)
            tmp[i] = res[idx[i]];
        memcpy(res, tmp, sizeof *tmp * (size_t)n);
        done = 1;
    }
    free(tmp), free(idx);
    return done;
}

/* Local exploration and the fresh branches (search.h local_share,
 * fresh_share) of a batch of n into res[0..*nout): local children of the
 * measured schedules of the space (the env's foreign schedule left out),
 * then fresh samples one per structural branch. */
static loom_status local_part(loom_search *s, long call, int n, population *p, loom_candidate *res, int *nout,
                              int *was_cold, loom_error *err)
{
    int nm = p->npop, nspace = 0, foreign = 0;
    *nout = 0;
    loom_candidate *meas = malloc(sizeof *meas * (size_t)(nm + 1)); /* shallow: p->pop owns them */
    if (!meas)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    int nspace_measured = 0; /* the space's schedules measured (the foreign default left out) */
    for (int i = 0; i < nm; i++)
        nspace_measured += !(s->env.foreign_hash && p->pop[i].hash == s->env.foreign_hash);
    for (int i = 0; i < nm; i++) {
        /* a foreign default is a parent (search.h foreign_parent) once the space has been measured
           (after round 0), while it is the fastest measured schedule */
        if (s->env.foreign_hash && p->pop[i].hash == s->env.foreign_hash &&
            !(s->o.foreign_parent && i == 0 && nspace_measured > 0))
            foreign++;
        else
            meas[nspace++] = p->pop[i];
    }
    loom_local_model *lm = fit_local_model(s, meas, nspace);
    int cold = !lm && s->o.local_model;
    *was_cold = cold;
    double share = cold ? s->o.local_share_cold : s->credit.model_won ? s->o.local_share_won : s->o.local_share;
    if (!cold && s->credit.model_won)
        s->st.model_won_rounds++;
    int nloc = (int)(n * share + 0.5);
    int nfr = (int)(n * (cold ? s->o.fresh_share_cold : s->o.fresh_share) + 0.5);
    if (nfr > nloc)
        nfr = nloc; /* the fresh branches' slots come out of the local share */
    nloc -= nfr;
    if (nspace == 0 && foreign > 0) /* nothing of the space to explore around */
        nfr += nloc, nloc = 0;
    long ranked0 = s->st.local_cold_ranked;
    int m = local_candidates(s, call, meas, nspace, nloc, lm, res);
    loom_local_model_free(lm);
    free(meas);
    loom_status st = LOOM_OK;
    if (nfr > 0 && !(st = sample_population(s, call, n, p, err)))
        m += branch_picks(s, p, nm, nfr, res + m);
    /* a cold round with a trained cost model: the same candidates in its
       order (local_cold_order) */
    if (!st && cold && m > 1 && cold_ordered(s) && order_by_cost_model(s, res, m) &&
        s->st.local_cold_ranked == ranked0)
        s->st.local_cold_ranked++; /* once a round, whichever ranked it */
    *nout = m;
    return st;
}

loom_mutator_weights loom__instruction_weights(const loom_trace *t, const loom_mutator_weights *base)
{
    loom_mutator_weights w = *base;
    for (int k = 0; k < LOOM_MUTATOR_COUNT; k++)
        w.w[k] = 0;
    for (int i = 0; t && i < t->ninsts; i++) {
        int k = loom_mutator_kind_of(t, i);
        if (k >= 0 && base->w[k] > 0)
            w.w[k] += 1;
    }
    return w;
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
                           .parent = p->parent, .copybuf = p->copy,
                           .by_instruction = ops->extended && s->o.mutate_by_instruction,
                           .fresh = p->fresh, .shared = p->shared, .fresh_of = p->fresh_of};
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
        loom__recycle(s, &p->kids[i]);
    return st;
}

void loom__retire(loom__generation *g, int i)
{
    int k = g->fresh_of ? g->fresh_of[i] : -1;
    if (k >= 0 && g->shared[k] && g->fresh[k].trace == g->pop[i].trace) {
        g->shared[k] = 0; /* the fresh entry owns it now */
        memset(&g->pop[i], 0, sizeof g->pop[i]);
    } else {
        loom__recycle(g->s, &g->pop[i]);
    }
    if (g->fresh_of)
        g->fresh_of[i] = -1;
}

static void population_free(loom_search *s, population *p)
{
    for (int i = 0; i < p->P; i++) {
        if (p->pop)
            loom__recycle(s, &p->pop[i]);
        if (p->kids)
            loom__recycle(s, &p->kids[i]);
        if (p->fresh && !(p->shared && p->shared[i])) /* a shared one is pop's */
            loom__recycle(s, &p->fresh[i]);
    }
    free(p->pop), free(p->kids), free(p->fresh), free(p->shared), free(p->fresh_of), free(p->parent), free(p->copy);
    for (int i = 0; i < p->heap.n; i++)
        loom__recycle(s, &p->heap.c[i]);
    free(p->heap.c);
    free(p->heap.seen.slot);
}

/* The model's part of the batch (steps 2-4) into res[0..*nout), n wanted. */
static loom_status model_part(loom_search *s, const loom__population_ops *ops, long call, int n, population *p,
                              loom_candidate *res, int *nout, loom_error *err)
{
    loom_status st;
    *nout = 0;
    if (n <= 0)
        return LOOM_OK;
    if ((st = sample_population(s, call, n, p, err)))
        return st;
    if (p->npop == 0)
        return LOOM_OK; /* nothing valid: an empty round */

    /* warm-up: the cost model is random, so the batch is fresh samples
     * (search.h); evolve only for what they cannot fill */
    int warm = 0;
    if (s->env.model_ready && !s->env.model_ready(s->env.ctx)) {
        warm = loom__pick(s, call, 1, NULL, 1.0, p->fresh, p->shared, p->nfresh, n, res);
        s->st.warmup_picked += warm;
        *nout = warm;
        if (warm == n)
            return LOOM_OK;
    }

    /* 3. generations */
    if ((st = loom__score_all(s, p->pop, p->npop, err)))
        return st;
    for (int i = 0; i < p->npop; i++)
        loom__topk_push(s, &p->heap, &p->pop[i]);
    for (int g = 0; g < s->o.generations; g++)
        if ((st = generation(s, ops, call, g, p, err)))
            return st;

    /* 4. the batch */
    *nout = warm + loom__pick(s, call, 0, &p->heap, s->o.eps_greedy, p->fresh, p->shared, p->nfresh, n - warm,
                              res + warm);
    return LOOM_OK;
}

/* The credit of the last round (search.h local_share_won): did the cost
 * model's picks make its best measured schedule, faster than every
 * schedule of the space measured before it (credit.best_before)?
 * pop[0..npop) are the best measured, best first. */
static void credit_read(loom_search *s, const loom_candidate *pop, int npop)
{
    double best[2] = {HUGE_VAL, HUGE_VAL}; /* local, model */
    for (int i = 0; i < npop; i++)
        for (int k = 0; k < s->credit.n; k++)
            if (s->credit.hash[k] == pop[i].hash && pop[i].latency_s > 0 && pop[i].latency_s < best[s->credit.model[k]])
                best[s->credit.model[k]] = pop[i].latency_s;
    s->credit.model_won = s->credit.n > 0 && s->credit.best_before > 0 && best[1] < best[0] &&
                          best[1] < s->credit.best_before;
}

/* Remember where this round's candidates res[0..n) came from (the first
 * nlocal local exploration's -- children and fresh branch samples -- the
 * rest the cost model's) and the best measured latency before it. */
static void credit_write(loom_search *s, double best_before, const loom_candidate *res, int nlocal, int n)
{
    s->credit.n = 0;
    s->credit.best_before = best_before;
    if (n > s->credit.cap) {
        uint64_t *h = realloc(s->credit.hash, sizeof *h * (size_t)n);
        if (h)
            s->credit.hash = h;
        unsigned char *m = realloc(s->credit.model, (size_t)n);
        if (m)
            s->credit.model = m;
        if (!h || !m)
            return; /* no credit next round: the base share */
        s->credit.cap = n;
    }
    for (int i = 0; i < n; i++) {
        s->credit.hash[i] = res[i].hash;
        s->credit.model[i] = i >= nlocal;
    }
    s->credit.n = n;
}

loom_status loom__population_generate(loom_search *s, const loom__population_ops *ops, long call, int n,
                                      loom_candidate *res, int *nout, loom_error *err)
{
    int P = s->o.population;
    population p = {.P = P};
    p.pop = calloc((size_t)P, sizeof *p.pop);
    p.fresh = calloc((size_t)P, sizeof *p.fresh);
    p.kids = calloc((size_t)P, sizeof *p.kids);
    p.shared = calloc((size_t)P, 1);
    p.fresh_of = malloc(sizeof(int) * (size_t)P);
    for (int i = 0; p.fresh_of && i < P; i++)
        p.fresh_of[i] = -1;
    p.parent = malloc(sizeof(int) * (size_t)P);
    p.copy = malloc(sizeof(int) * (size_t)P);
    p.heap = (loom__topk){.k = n, .n = 0, .c = calloc((size_t)n, sizeof(loom_candidate))};
    loom_status st = LOOM_OK;
    int nlocal = 0, nmodel = 0, cold = 0;
    *nout = 0;
    if (!p.pop || !p.fresh || !p.kids || !p.shared || !p.fresh_of || !p.parent || !p.copy || !p.heap.c) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto done;
    }
    /* 1. the best measured traces, replayed (those that no longer replay or
     *    validate are skipped) */
    if ((st = loom__replay_measured(s, p.pop, &p.npop, err)))
        goto done;
    credit_read(s, p.pop, p.npop);
    double best_before = 0; /* of the space's schedules: local exploration's parents (a foreign default is none) */
    for (int i = 0; i < p.npop && !best_before; i++)
        if (!(s->env.foreign_hash && p.pop[i].hash == s->env.foreign_hash))
            best_before = p.pop[i].latency_s;
    /* local exploration and fresh branches (search.h) first: the batch's
       first nlocal, handed out now so that the model's part skips them */
    if (ops->extended && s->o.local_share > 0 && (st = local_part(s, call, n, &p, res, &nlocal, &cold, err))) {
        *nout = nlocal;
        goto done;
    }
    /* 2-4. fresh samples, generations, the model's picks */
    st = model_part(s, ops, call, n - nlocal, &p, res + nlocal, &nmodel, err);
    *nout = nlocal + nmodel; /* on error too: the caller frees them */
    if (!st && ops->extended) {
        /* the credit of a warm round only: a cold round's shares are local_share_cold's */
        if (cold)
            s->credit.n = 0;
        else
            credit_write(s, best_before, res, nlocal, *nout);
    }
    /* a cold round with a trained cost model and local_cold_order: its
       picks are measured first */
    if (!st && cold && nlocal > 0 && nmodel > 0 && cold_ordered(s)) {
        loom_candidate *tmp = malloc(sizeof *tmp * (size_t)nlocal);
        if (tmp) {
            memcpy(tmp, res, sizeof *tmp * (size_t)nlocal);
            memmove(res, res + nlocal, sizeof *res * (size_t)nmodel);
            memcpy(res + nmodel, tmp, sizeof *tmp * (size_t)nlocal);
            free(tmp);
        }
    }
done:
    population_free(s, &p);
    return st;
}

/* ---- the population loop's options (search.h) ------------------------------ */

const loom_search_option loom__population_options[] = {
    LOOM__OPT("population", population, INT, 512, 2, INT32_MAX, 0,
              "population of each generation (MetaSchedule's population_size)"),
    LOOM__OPT("init-measured-ratio", init_measured_ratio, SHARE, 0.2, 0, 1, 0,
              "share of the initial population taken from the best measured schedules"),
    LOOM__OPT("init-min-unmeasured", init_min_unmeasured, INT, 50, 0, INT32_MAX, 0,
              "fewest fresh samples in the initial population"),
    LOOM__OPT("max-fail-count", max_fail_count, INT, 5, 0, INT32_MAX, 0,
              "sampling rounds without a valid sample before the population is taken as it is"),
    LOOM__OPT("generations", generations, INT, 4, 0, 1000, 0,
              "generations of mutation per round (MetaSchedule's genetic_num_iters)"),
    LOOM__OPT("genetic-max-fail-count", genetic_max_fail_count, INT, 10, 0, INT32_MAX, 0,
              "mutation attempts per member and generation before it is kept as it is"),
    LOOM__OPT("eps-greedy", eps_greedy, SHARE, 0.05, 0, 1, 0, "share of each batch that are random fresh samples"),
    LOOM__OPT_END,
};
