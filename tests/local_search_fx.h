/* Shared fixture of the local-exploration tests (test_local_search.c,
 * test_local_model.c): SpMM on cora500 in the default CPU design space,
 * draws and one-decision neighbourhoods of a trace, and a search
 * environment over a few "measured" schedules.  Not a test file. */
#ifndef LOOM_TEST_LOCAL_SEARCH_FX_H
#define LOOM_TEST_LOCAL_SEARCH_FX_H

#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/machine/machine.h"
#include "../modules/module.h"
#include "../runtime/data/dataset.h"
#include "../search/strategy/search.h"
#include "../search/navigate/navigate.h"
#include "../search/strategy/search_internal.h"
#include "fixture.h"

static inline loom_program *load_spmm(long F)
{
    char par[32];
    snprintf(par, sizeof par, "F=%ld", F);
    const char *args[] = {"A=data/cora500_adj.mtx", par};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 2, &ds);
    loom_dataset_free(ds);
    return prog;
}

/* SpMM on cora500 (F = 64), the default CPU design space, a seeded
 * generator and a schedule to draw into */
typedef struct fx {
    loom_program *prog;
    loom_registry *reg;
    loom_space *space;
    gsl_rng *rng;
    loom_schedule *sch;
} fx;

static inline fx fx_open(unsigned long seed)
{
    fx f = {.prog = load_spmm(64), .reg = loom_registry_new(), .rng = gsl_rng_alloc(gsl_rng_mt19937),
            .sch = malloc(sizeof(loom_schedule))};
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_space_new(f.reg, NULL, "cpu", &f.space, &err), LOOM_OK, "%s", err.msg);
    gsl_rng_set(f.rng, seed);
    return f;
}

static inline void fx_close(fx *f)
{
    free(f->sch);
    gsl_rng_free(f->rng);
    loom_space_free(f->space);
    loom_registry_free(f->reg);
    loom_program_free(f->prog);
}

/* a draw of the space's trace (sch receives its schedule) */
static inline loom_trace *draw(const loom_program *prog, const loom_space *space, gsl_rng *rng, loom_schedule *sch)
{
    loom_error err;
    loom_error_clear(&err);
    loom_trace *t = loom_trace_new();
    cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK, "%s", err.msg);
    sch->recorder = loom_trace_recorder;
    sch->recorder_ctx = t;
    cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
    sch->recorder = NULL;
    return t;
}

static inline int same_decision(const loom_inst *x, const loom_inst *y)
{
    return x->ndecision == y->ndecision && !memcmp(x->decision, y->decision, sizeof(int64_t) * (size_t)x->ndecision);
}

/* Up to n distinct schedules around ref (its structure): one-decision
 * mutants of ref or of earlier members, a neighbourhood as local
 * exploration sees it.  t[i] (owned by the caller) and h[i] their hashes;
 * returns the count. */
static inline int cloud(fx *f, const loom_trace *ref, int n, loom_trace **t, uint64_t *h)
{
    loom_schedule *cs = malloc(sizeof *cs), *scratch = malloc(sizeof *scratch);
    loom_limits lim = loom_target_cpu_limits();
    loom_mutator_weights w0 = loom_mutator_defaults("cpu");
    int m = 0;
    for (int k = 0; k < 100 * n && m < n; k++) {
        const loom_trace *par = m && gsl_rng_uniform(f->rng) >= 0.3 ? t[gsl_rng_uniform_int(f->rng, (unsigned long)m)] : ref;
        loom_trace *child = loom_trace_new();
        loom_mutation info;
        loom_error err;
        loom_mutator_weights w = loom__instruction_weights(par, &w0);
        int ok = loom_mutate_trace(par, f->prog, &w, &lim, f->rng, scratch, child, cs, &info, &err) == LOOM_OK &&
                 child->ninsts == ref->ninsts;
        uint64_t hc = ok ? loom_schedule_hash(cs) : 0;
        for (int i = 0; ok && i < m; i++)
            ok = h[i] != hc;
        if (!ok) {
            loom_trace_free(child);
            continue;
        }
        t[m] = child;
        h[m++] = hc;
    }
    free(cs), free(scratch);
    return m;
}


typedef struct local_env {
    const loom_space *space;
    loom_trace *best[4]; /* the "measured" schedules, best first */
    uint64_t hash[4];
    int nbest;
} local_env;

static inline loom_status lenv_sample(void *ctx, loom_schedule *sch, loom_error *err)
{
    return loom_space_apply(((local_env *)ctx)->space, sch, err);
}

static inline loom_status lenv_score(void *ctx, const loom_schedule *const *schs, int n, double *scores, loom_error *err)
{
    (void)ctx, (void)err;
    for (int i = 0; i < n; i++)
        scores[i] = (double)(loom_seed_mix(7, loom_schedule_hash(schs[i]), 0, 0) >> 11) / 9007199254740992.0;
    return LOOM_OK;
}

static inline int lenv_measured(void *ctx, uint64_t h)
{
    local_env *e = ctx;
    for (int i = 0; i < e->nbest; i++)
        if (e->hash[i] == h)
            return 1;
    return 0;
}

static inline int lenv_best(void *ctx, int k, loom_trace ***out)
{
    local_env *e = ctx;
    int n = k < e->nbest ? k : e->nbest;
    *out = calloc((size_t)(n > 0 ? n : 1), sizeof **out);
    loom_error err;
    for (int i = 0; i < n; i++)
        cr_assert_eq(loom_trace_copy(e->best[i], &(*out)[i], &err), LOOM_OK);
    return n;
}


static inline int lenv_ready(void *ctx)
{
    (void)ctx;
    return 1;
}

#endif
