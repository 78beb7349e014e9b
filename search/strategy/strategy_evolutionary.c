/* The evolutionary strategy (search.h): every population member is a
 * Markov chain; its child replaces it by the Metropolis-Hastings test with
 * an annealed temperature (Metropolis et al. 1953; Hastings 1970). */
#include "search_internal.h"

#include <string.h>

/* every member proposes one child */
static loom_status plan(loom__generation *g, loom_error *err)
{
    (void)err;
    for (int i = 0; i < g->npop; i++)
        g->parent[i] = i;
    return LOOM_OK;
}

/* each chain moves to its child with probability min(1, exp((s' - s) / T_g)) */
static loom_status advance(loom__generation *g, loom_error *err)
{
    (void)err;
    loom_search *s = g->s;
    double T = loom_mh_temperature(&s->o, g->g);
    long acc = 0, rej = 0;
    for (int i = 0; i < g->npop; i++) {
        loom_candidate *kid = &g->kids[i];
        if (!kid->trace)
            continue;
        gsl_rng *r = loom_search_rng(s, 0, g->call, LOOM__PH_GEN + 1000 + g->g, i);
        if (loom_mh_accept(g->pop[i].score, kid->score, T, gsl_rng_uniform(r))) {
            loom_candidate_free(&g->pop[i]);
            g->pop[i] = *kid;
            memset(kid, 0, sizeof *kid);
            acc++;
        } else {
            loom_candidate_free(kid);
            rej++;
        }
    }
    s->st.accepted += acc;
    s->st.rejected += rej;
    return LOOM_OK;
}

static const loom__population_ops ops = {plan, advance, 1};

static loom_status generate(loom_search *s, void *state, long call, int n, loom_candidate *out, int *nout,
                            loom_error *err)
{
    (void)state;
    return loom__population_generate(s, &ops, call, n, out, nout, err);
}

const loom_search_strategy loom__strategy_evolutionary = {
    .name = "evolutionary",
    .needs_model = 1,
    .generate = generate,
};
