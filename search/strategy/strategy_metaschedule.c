/* The metaschedule strategy (search.h): MetaSchedule's EvolutionarySearch
 * generation step (evolutionary_search.cc): parents drawn by roulette on
 * their scores, mutated with probability mutate_prob (else copied, once per
 * parent and generation); the children are the next population. */
#include "search_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* roulette on clamped scores; "no mutation" copies a parent at most once
 * per generation (planned serially: deterministic) */
static loom_status plan(loom__generation *g, loom_error *err)
{
    loom_search *s = g->s;
    int npop = g->npop;
    double *w = calloc((size_t)npop, sizeof *w);
    unsigned char *copied = calloc((size_t)npop, 1);
    if (!w || !copied) {
        free(w), free(copied);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    double tot = 0;
    for (int i = 0; i < npop; i++)
        tot += w[i] = g->pop[i].score > 0 ? g->pop[i].score : 0;
    if (!(tot > 0))
        for (int i = 0; i < npop; i++)
            w[i] = 1;
    g->roulette = gsl_ran_discrete_preproc((size_t)npop, w);
    free(w);
    if (!g->roulette) {
        free(copied);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    g->copy = g->copybuf;
    gsl_rng *r = loom_search_rng(s, 0, g->call, LOOM__PH_PLAN + 100 * g->g, 0);
    for (int i = 0; i < npop; i++) {
        g->copy[i] = 0;
        for (int a = 0; a <= s->o.genetic_max_fail_count; a++) {
            int p = (int)gsl_ran_discrete(r, g->roulette);
            g->parent[i] = p;
            if (gsl_rng_uniform(r) < s->o.mutate_prob)
                break;
            if (!copied[p]) {
                copied[p] = 1;
                g->copy[i] = 1;
                break;
            }
        }
    }
    free(copied);
    return LOOM_OK;
}

/* the children are the next population; a child without a valid mutant is
 * a copy of its (last) parent */
static loom_status advance(loom__generation *g, loom_error *err)
{
    int npop = g->npop;
    loom_candidate *next = calloc((size_t)npop, sizeof *next);
    if (!next)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int i = 0; i < npop; i++) {
        if (g->kids[i].trace) {
            next[i] = g->kids[i];
            memset(&g->kids[i], 0, sizeof g->kids[i]);
        } else if (loom__copy_candidate(g->s, &g->pop[g->parent[i]], &next[i])) {
            next[i] = (loom_candidate){0};
        }
    }
    for (int i = 0; i < npop; i++)
        loom__retire(g, i);
    int m = 0;
    for (int i = 0; i < npop; i++)
        if (next[i].trace)
            g->pop[m++] = next[i];
    g->npop = m;
    free(next);
    return LOOM_OK;
}

static const loom__population_ops ops = {plan, advance, 0};

static loom_status generate(loom_search *s, void *state, long call, int n, loom_candidate *out, int *nout,
                            loom_error *err)
{
    (void)state;
    return loom__population_generate(s, &ops, call, n, out, nout, err);
}

static const loom_search_option options[] = {
    LOOM__OPT("mutate-prob", mutate_prob, SHARE, 0.85, 0, 1, 0,
              "probability that a parent drawn by roulette is mutated (else copied)"),
    LOOM__OPT_END,
};

static const loom_search_option *const option_lists[] = {loom__population_options, options, NULL};

const loom_search_strategy loom__strategy_metaschedule = {
    .name = "metaschedule",
    .needs_model = 1,
    .generate = generate,
    .doc = "MetaSchedule's EvolutionarySearch as it is: roulette parents, mutation with mutate_prob, no "
           "temperature",
    .options = option_lists,
};
