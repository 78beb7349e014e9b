/* The evolutionary strategy (search.h): every population member is a
 * Markov chain; its child replaces it by the Metropolis-Hastings test with
 * an annealed temperature (Metropolis et al. 1953; Hastings 1970). */
#include "search_internal.h"

#include <math.h>
#include <stddef.h>
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
            loom__retire(g, i);
            g->pop[i] = *kid;
            memset(kid, 0, sizeof *kid);
            acc++;
        } else {
            loom__recycle(s, kid);
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

/* Its own options (search.h loom_search_opts: each field's comment says
 * more; docs/tuning.md "Local exploration", "Fresh branches"). */
static const loom_search_option options[] = {
    LOOM__OPT("t0", t0, REAL, 0.05, 0, HUGE_VAL, 0, "the Metropolis-Hastings temperature of generation 0"),
    {"t-decay", "t_decay", offsetof(loom_search_opts, t_decay), LOOM_OPTION_REAL, 0.5, 0, HUGE_VAL, 1,
     {{0, 0}, {0, 0}}, 0, "the temperature's factor per generation (T_g = t0 * t_decay^g; > 0)"},
    LOOM__OPT("local-share", local_share, SHARE, 0.875, 0, 1, 1,
              "share of each batch that are children of the best measured schedules (0: none, as MetaSchedule)"),
    LOOM__OPT("local-share-cold", local_share_cold, SHARE, 1, 0, 1, 1,
              "that share while the local model has too few records to be fitted, as in round 0"),
    LOOM__OPT("local-share-won", local_share_won, SHARE, 0.25, 0, 1, 1,
              "the local share of the round after one whose best measured candidate was one of the cost model's "
              "picks and beat every schedule of the space measured before it"),
    LOOM__OPT("foreign-parent", foreign_parent, BOOL, 1, 0, 1, 1,
              "when the default is modules/default.c's, not the space's: from round 1 on, while it is the fastest "
              "measured schedule, explore its one-decision mutants as the best's"),
    LOOM__OPT("fresh-share", fresh_share, SHARE, 0, 0, 1, 1,
              "of that local share, the share of each batch that are fresh samples, one per structural branch "
              "(fused or not, fusion group, packed panel...)"),
    LOOM__OPT("fresh-share-cold", fresh_share_cold, SHARE, 0, 0, 1, 1,
              "the same in a cold round, as round 0; when the default is modules/default.c's, not the space's, "
              "round 0's local slots are all fresh samples"),
    LOOM__OPT("local-parents", local_parents, INT, 4, 1, 1000, 1, "those children's parents: the N best measured schedules"),
    LOOM__OPT("local-crossover", local_crossover, SHARE, 0.5, 0, 1, 1,
              "share of the children that are crossovers of two parents, the others one-decision mutants"),
    LOOM__OPT("local-model", local_model, BOOL, 1, 0, 1, 1,
              "rank the children by a model fitted on the measured records' decisions"),
    LOOM__OPT("local-pool", local_pool, INT, 8, 1, 64, 1, "children drawn per child kept when the local model ranks them"),
    LOOM__OPT("fresh-rank", fresh_rank, BOOL, 1, 0, 1, 1,
              "with a trained (pre-trained) cost model, take each structural branch's fresh samples in its "
              "order, the highest score first, not in draw order"),
    LOOM__OPT("local-screen", local_screen, SHARE, 0.25, 0, 1, 1,
              "once the local model is fitted, the share of the local slots that are mutants of the best "
              "setting a decision to a value no record has (which ones: --screen-rank)"),
    LOOM__OPT("screen-rank", local_screen_rank, BOOL, 1, 0, 1, 1,
              "with a trained (pre-trained) cost model, take the screening mutants it scores highest (0: the "
              "fewest-varied decision first, then draw order)"),
    LOOM__OPT("local-cold-rank", local_cold_rank, BOOL, 0, 0, 1, 1,
              "in a cold round (as round 0) with a trained (pre-trained) cost model, rank the children by it"),
    LOOM__OPT("local-cold-order", local_cold_order, BOOL, 1, 0, 1, 1,
              "in a cold round with a trained (pre-trained) cost model, measure the same children in its order, "
              "the predicted fastest first"),
    {"mutate-by", "mutate_by_instruction", offsetof(loom_search_opts, mutate_by_instruction), LOOM_OPTION_CHOICE, 1,
     0, 1, 0, {{"instruction", 1}, {"kind", 0}}, 1,
     "'instruction': every sampling instruction equally likely to mutate; 'kind': the mutator weights"},
    LOOM__OPT_END,
};

static const loom_search_option *const option_lists[] = {loom__population_options, options, NULL};

const loom_search_strategy loom__strategy_evolutionary = {
    .name = "evolutionary",
    .needs_model = 1,
    .generate = generate,
    .doc = "MetaSchedule's evolutionary search with annealed Metropolis-Hastings, local exploration of the best "
           "measured schedules and fresh structural branches (the default)",
    .options = option_lists,
};
