/* Search strategies (search.h): the search object, the
 * strategy table and the dispatch of generate; the candidates' building
 * blocks are in candidates.c, the population loop in population.c, the options, MH
 * acceptance and the parallel-for in search_util.c, each
 * strategy in strategy_*.c. */
#include "search_internal.h"
#include "../../runtime/target/target.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the strategy table ---------------------------------------------------- */

extern const loom_search_strategy loom__strategy_evolutionary, loom__strategy_metaschedule, loom__strategy_random;

#define MAX_STRATEGIES 16

/* indexed as loom_strategy_kind, then the registered ones */
static const loom_search_strategy *strategies[MAX_STRATEGIES] = {
    &loom__strategy_evolutionary, &loom__strategy_metaschedule, &loom__strategy_random};
static int nstrategies = 3;

int loom_strategy_count(void)
{
    return nstrategies;
}

const loom_search_strategy *loom_strategy_get(int k)
{
    return k >= 0 && k < nstrategies ? strategies[k] : NULL;
}

const char *loom_strategy_name(loom_strategy_kind k)
{
    const loom_search_strategy *st = loom_strategy_get((int)k);
    return st ? st->name : NULL;
}

int loom_strategy_find(const char *name)
{
    for (int k = 0; name && k < nstrategies; k++)
        if (!strcmp(name, strategies[k]->name))
            return k;
    return -1;
}

void loom_strategy_list(char *buf, size_t n)
{
    size_t at = 0;
    if (n)
        buf[0] = '\0';
    for (int k = 0; k < nstrategies && at + 1 < n; k++) {
        int w = snprintf(buf + at, n - at, "%s%s", k ? ", " : "", strategies[k]->name);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

loom_status loom_strategy_register(const loom_search_strategy *st, int *k, loom_error *err)
{
    if (!st || !st->name || !st->name[0] || !st->generate)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "a search strategy needs a name and a generate function");
    if (loom_strategy_find(st->name) >= 0)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "a search strategy called '%s' exists already: choose another name", st->name);
    if (nstrategies == MAX_STRATEGIES)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0,
                              "the strategy table is full (%d strategies): raise MAX_STRATEGIES in search/strategy/search.c",
                              MAX_STRATEGIES);
    strategies[nstrategies] = st;
    if (k)
        *k = nstrategies;
    nstrategies++;
    return LOOM_OK;
}

/* The options' defaults come from the strategies' rows (search.h). */
loom_search_opts loom_search_defaults(void)
{
    loom_search_opts o;
    memset(&o, 0, sizeof o);
    for (int k = 0; k < loom_strategy_count(); k++) {
        const loom_search_option *const *L = loom_strategy_get(k)->options;
        for (int l = 0; L && L[l]; l++)
            for (const loom_search_option *R = L[l]; R->name; R++)
                loom_search_option_set(&o, R, R->def);
    }
    o.strategy = LOOM_STRATEGY_EVOLUTIONARY;
    o.seed = 1;
    o.threads = 0;
    o.mutators = loom_mutator_defaults("cpu");
    o.limits = loom_target_cpu_limits(); /* the CPU target's; a campaign uses its own target's */
    return o;
}

/* ---- the search object ---------------------------------------------------- */

/* Every option the strategy reads is within its row's range. */
static loom_status check_options(const loom_search_strategy *strat, const loom_search_opts *o, loom_error *err)
{
    for (int l = 0; strat->options && strat->options[l]; l++)
        for (const loom_search_option *R = strat->options[l]; R->name; R++) {
            double x = loom_search_option_get(o, R);
            if (loom_search_option_ok(R, x))
                continue;
            char range[64];
            if (R->kind == LOOM_OPTION_INT || R->kind == LOOM_OPTION_REAL)
                snprintf(range, sizeof range, "%s%g..%g", R->lo_open ? "> " : "", R->lo, R->hi);
            else
                snprintf(range, sizeof range, "%s", R->kind == LOOM_OPTION_SHARE ? "[0, 1]" : "one of its values");
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "search option %s of strategy %s is %g, out of range (%s)", R->field, strat->name,
                                  x, range);
        }
    return LOOM_OK;
}

loom_status loom_search_new(const loom_search_opts *o, const loom_program *prog, const loom_search_env *env,
                            loom_search **out, loom_error *err)
{
    *out = NULL;
    const loom_search_strategy *strat = o ? loom_strategy_get((int)o->strategy) : NULL;
    if (o && !strat) {
        char known[256];
        loom_strategy_list(known, sizeof known);
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "search strategy %d is not in the table (%s)",
                              (int)o->strategy, known);
    }
    if (!o || !prog || !env || !env->sample || !env->is_measured || (strat->needs_model && !env->score))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "a search needs a program, a sampler, a measured-set query and (but for random "
                              "search) a cost model");
    loom_status bad = check_options(strat, o, err);
    if (bad)
        return bad;
    loom_search *s = calloc(1, sizeof *s);
    if (!s)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    s->o = *o;
    s->prog = prog;
    s->env = *env;
    s->strategy = strat;
    s->threads = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (s->threads < 1)
        s->threads = 1;
    if (s->threads > 64)
        s->threads = 64;
    s->rngs = calloc((size_t)s->threads, sizeof *s->rngs);
    s->scratch = calloc((size_t)s->threads, sizeof *s->scratch);
    s->trace_hint = calloc((size_t)s->threads, sizeof *s->trace_hint);
    /* room for a round's population, kids and copies (bounded: a huge population frees the rest) */
    s->pool_cap = o->population < 1024 ? 3 * o->population + 64 : 3136;
    s->tpool = malloc(sizeof *s->tpool * (size_t)s->pool_cap);
    s->spool = malloc(sizeof *s->spool * (size_t)s->pool_cap);
    pthread_mutex_init(&s->pool_lock, NULL);
    int ok = s->rngs && s->scratch && s->trace_hint && s->tpool && s->spool;
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
    if (strat->init) {
        loom_status st = strat->init(s, &s->state, err);
        if (st) {
            loom_search_free(s);
            return st;
        }
    }
    *out = s;
    return LOOM_OK;
}

void loom_search_free(loom_search *s)
{
    if (!s)
        return;
    if (s->state && s->strategy->free)
        s->strategy->free(s->state);
    for (int k = 0; k < s->threads; k++) {
        if (s->rngs && s->rngs[k])
            gsl_rng_free(s->rngs[k]);
        if (s->scratch)
            free(s->scratch[k]);
    }
    free(s->rngs);
    free(s->scratch);
    free(s->trace_hint);
    for (int k = 0; k < s->ntpool; k++)
        loom_trace_free(s->tpool[k]);
    for (int k = 0; k < s->nspool; k++)
        free(s->spool[k]);
    free(s->tpool), free(s->spool);
    free(s->scores.key), free(s->scores.val);
    free(s->credit.hash), free(s->credit.model);
    pthread_mutex_destroy(&s->pool_lock);
    free(s->handed.slot);
    if (s->rules)
        pthread_mutex_destroy(&s->lock);
    free(s);
}

const loom_search_stats *loom_search_get_stats(const loom_search *s)
{
    return &s->st;
}

const loom_search_opts *loom_search_options(const loom_search *s)
{
    return &s->o;
}

const loom_search_env *loom_search_environment(const loom_search *s)
{
    return &s->env;
}

int loom_search_threads(const loom_search *s)
{
    return s->threads;
}

loom_search_stats *loom_search_stats_mut(loom_search *s)
{
    return &s->st;
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
    int m = 0;
    loom_status st = s->strategy->generate(s, s->state, call, n, res, &m, err);
    if (st) {
        for (int i = 0; i < m; i++)
            loom_candidate_free(&res[i]);
        free(res);
        return st;
    }
    *out = res;
    *nout = m;
    return LOOM_OK;
}
