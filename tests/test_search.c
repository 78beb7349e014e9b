/* Tests for search/: mutators, the Metropolis-Hastings step and the three
 * strategies on a synthetic cost model. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/machine/machine.h"
#include "../modules/generic.h"
#include "../modules/module.h"
#include "../runtime/data/dataset.h"
#include "../search/strategy/search.h"
#include "fixture.h"

/* ---- Metropolis-Hastings ---------------------------------------------------- */

Test(search, mh_acceptance_follows_its_formula)
{
    /* improvements and ties always accepted */
    cr_assert(loom_mh_accept(0.5, 0.6, 0.01, 0.999999));
    cr_assert(loom_mh_accept(0.5, 0.5, 0.01, 0.999999));
    /* T = 0: greedy */
    cr_assert_not(loom_mh_accept(0.5, 0.49, 0, 0.0));
    /* the boundary: accepted iff u < exp(d / T) */
    double p = exp(-0.1 / 0.05);
    cr_assert(loom_mh_accept(0.6, 0.5, 0.05, p * 0.999));
    cr_assert_not(loom_mh_accept(0.6, 0.5, 0.05, p * 1.001));
    /* the empirical rate with a fixed generator matches exp(d/T) within 5 sigma */
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 42);
    double cases[][2] = {{-0.02, 0.05}, {-0.05, 0.05}, {-0.1, 0.025}, {-0.01, 0.1}};
    for (int c = 0; c < 4; c++) {
        int N = 200000, acc = 0;
        for (int k = 0; k < N; k++)
            acc += loom_mh_accept(0.5, 0.5 + cases[c][0], cases[c][1], gsl_rng_uniform(r));
        double want = exp(cases[c][0] / cases[c][1]), got = (double)acc / N;
        double sigma = sqrt(want * (1 - want) / N);
        cr_assert_lt(fabs(got - want), 5 * sigma + 1e-9, "d=%g T=%g: rate %.5f, want %.5f", cases[c][0],
                     cases[c][1], got, want);
    }
    gsl_rng_free(r);
    /* annealing: geometric */
    loom_search_opts o = loom_search_defaults();
    cr_assert_float_eq(loom_mh_temperature(&o, 0), o.t0, 1e-15);
    cr_assert_float_eq(loom_mh_temperature(&o, 3), o.t0 * pow(o.t_decay, 3), 1e-15);
    cr_assert_lt(loom_mh_temperature(&o, 4), loom_mh_temperature(&o, 3));
}

Test(search, seed_mix_separates_items)
{
    cr_assert_neq(loom_seed_mix(1, 0, 0, 0), loom_seed_mix(1, 0, 0, 1));
    cr_assert_neq(loom_seed_mix(1, 0, 1, 0), loom_seed_mix(1, 1, 0, 0));
    cr_assert_neq(loom_seed_mix(1, 2, 3, 4), loom_seed_mix(2, 2, 3, 4));
    cr_assert_eq(loom_seed_mix(7, 2, 3, 4), loom_seed_mix(7, 2, 3, 4));
    /* consecutive seeds are not the same stream shifted by one call */
    for (uint64_t seed = 1; seed < 4; seed++)
        for (uint64_t call = 0; call < 8; call++)
            cr_assert_neq(loom_seed_mix(seed, call + 1, 5, 0), loom_seed_mix(seed + 1, call, 5, 0),
                          "seed %llu call %llu", (unsigned long long)seed, (unsigned long long)call);
}

/* ---- fixtures ------------------------------------------------------------------ */

static loom_program *load(const char *workload, const char *tensor, const char *path, const char *p1, long v1)
{
    char data[300] = "", par[64] = "";
    if (tensor)
        snprintf(data, sizeof data, "%s=%s", tensor, path);
    if (p1)
        snprintf(par, sizeof par, "%s=%ld", p1, v1);
    const char *args[] = {tensor ? data : NULL, p1 ? par : NULL,
                          strstr(workload, "gcn") ? "X=data/cora_features.mtx" : NULL}; /* gcn: the features too */
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind(workload, args, 3, 3, &ds);
    loom_dataset_free(ds); /* the program stays bound */
    return prog;
}

static loom_trace *sample_trace(const loom_program *prog, gsl_rng *rng)
{
    loom_error err;
    loom_error_clear(&err);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace *t = loom_trace_new();
    cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK, "%s", err.msg);
    sch->recorder = loom_trace_recorder;
    sch->recorder_ctx = t;
    cr_assert_eq(loom_generic_program(sch, &err), LOOM_OK, "%s", err.msg);
    free(sch);
    return t;
}

/* ---- mutators ------------------------------------------------------------------ */

static void mutators_on(const char *workload, const char *tensor, const char *path, const char *p, long v)
{
    loom_program *prog = load(workload, tensor, path, p, v);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 9);
    loom_schedule *scratch = malloc(sizeof *scratch), *out_sch = malloc(sizeof *out_sch),
                  *again = malloc(sizeof *again);
    loom_limits lim = loom_target_cpu_limits();
    loom_mutator_weights w = loom_mutator_defaults("cpu");
    int proposed[LOOM_MUTATOR_COUNT] = {0}, valid = 0, invalid = 0, failed = 0;
    for (int k = 0; k < 150; k++) {
        loom_trace *t = sample_trace(prog, rng);
        /* every kind: a proposal changes the decision of an instruction of that kind */
        for (int kind = 0; kind < LOOM_MUTATOR_COUNT; kind++) {
            int inst;
            loom_decision dec;
            loom_error err;
            loom_error_clear(&err);
            loom_status st = loom_mutate_propose(t, prog, kind, rng, scratch, &inst, &dec, &err);
            if (st) {
                cr_assert(strstr(err.msg, loom_mutator_name(kind)) != NULL, "%s", err.msg);
                continue;
            }
            proposed[kind]++;
            cr_assert_eq(loom_mutator_kind_of(t, inst), kind);
            const loom_inst *x = &t->insts[inst];
            cr_assert_eq(dec.n, x->ndecision);
            cr_assert(memcmp(dec.v, x->decision, sizeof(int64_t) * (size_t)dec.n) != 0,
                      "the proposal repeats the recorded decision");
            if (kind == LOOM_MUTATE_TILE_SIZE && x->decision[0] != 0) {
                int64_t p0 = 1, p1 = 1;
                for (int q = 0; q < dec.n; q++) {
                    p0 *= x->decision[q];
                    p1 *= dec.v[q];
                }
                cr_assert_eq(p0, p1, "tile mutation changed the product");
                if (x->attrs[1] > 0 && dec.v[dec.n - 1] != x->decision[dec.n - 1])
                    cr_assert_leq(dec.v[dec.n - 1], x->attrs[1], "innermost tile over max_innermost");
            }
        }
        /* a full step: valid, or the reason */
        loom_trace *child = loom_trace_new();
        loom_mutation info;
        loom_error err;
        loom_error_clear(&err);
        loom_status st = loom_mutate_trace(t, prog, &w, &lim, rng, scratch, child, out_sch, &info, &err);
        if (st == LOOM_OK) {
            valid++;
            /* the child's trace replays to the same schedule and is valid */
            cr_assert_eq(loom_schedule_init(again, prog, NULL, &err), LOOM_OK);
            cr_assert_eq(loom_trace_replay(child, again, NULL, &err), LOOM_OK, "%s", err.msg);
            cr_assert(loom_schedule_equal(again, out_sch));
            loom_violation v;
            cr_assert_eq(loom_validate(again, &lim, &v, &err), LOOM_OK, "%s", v.msg);
            cr_assert_not(loom_trace_equal(child, t) && info.inst >= 0 &&
                              !memcmp(child->insts[info.inst].decision, t->insts[info.inst].decision, 8) &&
                              child->insts[info.inst].ndecision == 1,
                          "the child equals its parent");
        } else if (info.invalid) {
            invalid++;
            cr_assert(strstr(err.msg, info.violation.rule) != NULL, "%s", err.msg);
            cr_assert(strstr(err.msg, loom_mutator_name(info.kind)) != NULL, "%s", err.msg);
        } else {
            failed++;
            cr_assert(strlen(err.msg) > 0);
        }
        loom_trace_free(child);
        loom_trace_free(t);
    }
    printf("mutators %-32s proposals:", workload);
    for (int kind = 0; kind < LOOM_MUTATOR_COUNT; kind++)
        printf(" %s=%d", loom_mutator_name(kind), proposed[kind]);
    printf("; steps valid %d, invalid %d, no mutation %d\n", valid, invalid, failed);
    cr_assert_gt(proposed[LOOM_MUTATE_TILE_SIZE] + proposed[LOOM_MUTATE_CATEGORICAL], 0);
    cr_assert_gt(valid, 0);
    free(scratch), free(out_sch), free(again);
    gsl_rng_free(rng);
    loom_program_free(prog);
}

Test(search, mutators_spmm, .timeout = 120) { mutators_on("workloads/spmm.loom", "A", "data/cora_adj.mtx", "F", 32); }
Test(search, mutators_gcn, .timeout = 120) { mutators_on("workloads/gcn.loom", "A", "data/cora_adj.mtx", "F", 16); }
Test(search, mutators_attention, .timeout = 120)
{
    mutators_on("workloads/attention.loom", NULL, NULL, "N", 64);
}

/* ---- strategies on a synthetic cost model --------------------------------------- */

/* score: how close the innermost loop of the last stage is to 16
 * iterations, plus a bonus for vectorizing it (a smooth landscape that
 * tile mutations can climb). */
static double synth_score(const loom_schedule *sch)
{
    const loom_stage *S = &sch->stages[sch->nstages - 1];
    const loom_loop *L = &S->loops[S->nloops - 1];
    int64_t e = loom_iter_extent(sch, sch->nstages - 1, L->iter);
    double d = e > 0 ? fabs(log2((double)e) - 4.0) : 6;
    return 1.0 / (1.0 + d) + (L->kind == LOOM_LOOP_VECTORIZED ? 0.2 : 0);
}

typedef struct synth_env {
    const loom_program *prog;
    uint64_t measured[256];
    int nmeasured;
    long score_calls;
} synth_env;

static loom_status env_sample(void *ctx, loom_schedule *sch, loom_error *err)
{
    (void)ctx;
    return loom_generic_program(sch, err);
}

static loom_status env_score(void *ctx, const loom_schedule *const *schs, int n, double *scores, loom_error *err)
{
    (void)err;
    synth_env *e = ctx;
    e->score_calls++;
    for (int i = 0; i < n; i++)
        scores[i] = synth_score(schs[i]);
    return LOOM_OK;
}

static int env_measured(void *ctx, uint64_t h)
{
    synth_env *e = ctx;
    for (int i = 0; i < e->nmeasured; i++)
        if (e->measured[i] == h)
            return 1;
    return 0;
}

/* A new search and its first batch of `want` candidates (*c, *n); the
 * caller frees the candidates and the search. */
static loom_search *search_batch(const loom_search_opts *o, const loom_program *prog, const loom_search_env *env,
                                 int want, loom_candidate **c, int *n)
{
    loom_search *s = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_search_new(o, prog, env, &s, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_search_generate(s, want, c, n, &err), LOOM_OK, "%s", err.msg);
    return s;
}

static double run_strategy(const loom_program *prog, loom_strategy_kind kind, int threads, uint64_t seed,
                           synth_env *e, uint64_t *hashes, int *nh)
{
    loom_search_opts o = loom_search_defaults();
    o.strategy = kind;
    o.population = 96;
    o.threads = threads;
    o.seed = seed;
    loom_search_env env = {.ctx = e, .sample = env_sample, .score = env_score, .is_measured = env_measured};
    loom_candidate *c = NULL;
    int n = 0;
    loom_search *s = search_batch(&o, prog, &env, 16, &c, &n);
    loom_error err;
    loom_error_clear(&err);
    cr_assert_gt(n, 0);
    cr_assert_leq(n, 16);
    double sum = 0;
    loom_limits lim = loom_target_cpu_limits();
    for (int i = 0; i < n; i++) {
        loom_violation v;
        cr_assert_eq(loom_validate(c[i].sch, &lim, &v, &err), LOOM_OK, "candidate %d invalid: %s", i, v.msg);
        cr_assert_eq(c[i].hash, loom_schedule_hash(c[i].sch));
        cr_assert_not(env_measured(e, c[i].hash), "a measured schedule was proposed again");
        for (int j = 0; j < i; j++)
            cr_assert_neq(c[i].hash, c[j].hash, "duplicate candidates %d and %d", j, i);
        sum += synth_score(c[i].sch);
        if (hashes)
            hashes[i] = c[i].hash;
        loom_candidate_free(&c[i]);
    }
    if (nh)
        *nh = n;
    free(c);
    const loom_search_stats *st = loom_search_get_stats(s);
    if (kind == LOOM_STRATEGY_EVOLUTIONARY)
        cr_assert_gt(st->accepted + st->rejected, 0, "no Metropolis-Hastings decision was taken");
    loom_search_free(s);
    return sum / n;
}

Test(search, evolutionary_beats_random_on_a_known_landscape, .timeout = 120)
{
    loom_program *prog = load("workloads/spmm.loom", "A", "data/cora_adj.mtx", "F", 256);
    synth_env e = {.prog = prog};
    double evo = 0, ms = 0, rnd = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        evo += run_strategy(prog, LOOM_STRATEGY_EVOLUTIONARY, 2, seed, &e, NULL, NULL) / 3;
        ms += run_strategy(prog, LOOM_STRATEGY_METASCHEDULE, 2, seed, &e, NULL, NULL) / 3;
        rnd += run_strategy(prog, LOOM_STRATEGY_RANDOM, 2, seed, &e, NULL, NULL) / 3;
    }
    printf("synthetic landscape, mean score of a 16-candidate batch: evolutionary %.3f, metaschedule %.3f, "
           "random %.3f\n",
           evo, ms, rnd);
    cr_assert_gt(evo, rnd + 0.05);
    cr_assert_gt(ms, rnd + 0.05);
    loom_program_free(prog);
}

Test(search, same_seed_same_candidates_whatever_the_threads, .timeout = 120)
{
    loom_program *prog = load("workloads/spmm.loom", "A", "data/cora_adj.mtx", "F", 64);
    synth_env e = {.prog = prog};
    uint64_t a[16], b[16], c[16];
    int na, nb, nc;
    run_strategy(prog, LOOM_STRATEGY_EVOLUTIONARY, 1, 5, &e, a, &na);
    run_strategy(prog, LOOM_STRATEGY_EVOLUTIONARY, 2, 5, &e, b, &nb);
    run_strategy(prog, LOOM_STRATEGY_EVOLUTIONARY, 2, 6, &e, c, &nc);
    cr_assert_eq(na, nb);
    for (int i = 0; i < na; i++)
        cr_assert_eq(a[i], b[i], "candidate %d differs between 1 and 2 threads", i);
    int same = na == nc;
    for (int i = 0; same && i < na; i++)
        same = a[i] == c[i];
    cr_assert_not(same, "another seed gave the same batch");
    loom_program_free(prog);
}

Test(search, measured_schedules_are_never_proposed, .timeout = 120)
{
    loom_program *prog = load("workloads/spmv.loom", "A", "data/cora_adj.mtx", NULL, 0);
    synth_env e = {.prog = prog};
    /* measure the first batch, then ask again: nothing from it comes back */
    uint64_t h[16];
    int n;
    run_strategy(prog, LOOM_STRATEGY_EVOLUTIONARY, 2, 11, &e, h, &n);
    for (int i = 0; i < n; i++)
        e.measured[e.nmeasured++] = h[i];
    uint64_t h2[16];
    int n2;
    run_strategy(prog, LOOM_STRATEGY_EVOLUTIONARY, 2, 11, &e, h2, &n2); /* same seed: same samples */
    for (int i = 0; i < n2; i++)
        for (int j = 0; j < n; j++)
            cr_assert_neq(h2[i], h[j]);
    loom_program_free(prog);
}

/* The design space's unroll factor is a sampled value feeding an "unroll"
 * annotation: the unroll mutator finds it, and a mutated decision changes
 * the replayed schedule and the lowered loop's unroll factor. */
#include "../modules/module.h"
#include "../runtime/lower/lower.h"

static int lir_max_unroll(const lir_stmt *s)
{
    if (!s)
        return 0;
    int m = s->kind == LIR_S_FOR && s->loop_kind == LIR_LOOP_UNROLLED ? s->unroll : 0;
    const lir_stmt *kids[2] = {s->body, s->els};
    for (int k = 0; k < 2; k++) {
        int x = lir_max_unroll(kids[k]);
        if (x > m)
            m = x;
    }
    for (int k = 0; s->kind == LIR_S_SEQ && k < s->nitems; k++) {
        int x = lir_max_unroll(s->items[k]);
        if (x > m)
            m = x;
    }
    return m;
}

Test(search, unroll_mutation_changes_the_schedule, .timeout = 120)
{
    loom_program *prog = load("workloads/spmm.loom", "A", "data/cora500_adj.mtx", "F", 64);
    loom_error err;
    loom_error_clear(&err);
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &space, &err), LOOM_OK, "%s", err.msg);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 3);
    loom_schedule *sch = malloc(sizeof *sch), *scratch = malloc(sizeof *scratch), *rep = malloc(sizeof *rep);
    int checked = 0;
    for (int k = 0; k < 40 && checked < 5; k++) {
        loom_trace *t = loom_trace_new();
        cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK);
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = t;
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
        int inst;
        loom_decision dec;
        if (loom_mutate_propose(t, prog, LOOM_MUTATE_UNROLL, rng, scratch, &inst, &dec, &err) != LOOM_OK) {
            loom_trace_free(t);
            continue;
        }
        loom_decision *decs = calloc((size_t)t->ninsts, sizeof *decs);
        decs[inst] = dec;
        cr_assert_eq(loom_schedule_init(rep, prog, NULL, &err), LOOM_OK);
        cr_assert_eq(loom_trace_replay(t, rep, decs, &err), LOOM_OK, "%s", err.msg);
        cr_assert_neq(loom_schedule_hash(rep), loom_schedule_hash(sch), "the mutated unroll factor did not change the schedule");
        int64_t want = t->insts[inst].attrs[dec.v[0]];
        lir_func *f = NULL;
        cr_assert_eq(loom_lower(rep, &f, &err), LOOM_OK, "%s", err.msg);
        int got = lir_max_unroll(f->body);
        cr_assert_eq(got, want > 1 ? want : 0, "lowered unroll factor %d, the mutated decision says %lld", got,
                     (long long)want);
        loom_lir_func_free(f);
        free(decs);
        loom_trace_free(t);
        checked++;
    }
    cr_assert_gt(checked, 0, "no unroll decision in 40 draws of the design space");
    free(sch), free(scratch), free(rep);
    gsl_rng_free(rng);
    loom_space_free(space);
    loom_registry_free(reg);
    loom_program_free(prog);
}

/* ---- warm-up: an untrained cost model picks fresh samples ------------------------ */

/* The default CPU design space of attention: attention-fusion samples
 * unfused (0) or fused (1) with equal weight, and the fused branch ignores
 * most of the unfused branch's tiling decisions, so it holds far fewer
 * distinct schedules.  A random model (scores hashed from the structural
 * hash, like costmodel/model.c's warm-up) evolved against picks from the
 * distinct schedules and so almost never a fused one; the warm-up picks
 * fresh samples and keeps the module's 1:1 odds (up to repeats). */
typedef struct warm_env {
    const loom_space *space;
    int ready;
} warm_env;

static loom_status warm_sample(void *ctx, loom_schedule *sch, loom_error *err)
{
    return loom_space_apply(((warm_env *)ctx)->space, sch, err);
}

static loom_status warm_score(void *ctx, const loom_schedule *const *schs, int n, double *scores, loom_error *err)
{
    (void)ctx, (void)err;
    for (int i = 0; i < n; i++)
        scores[i] = (double)(loom_seed_mix(43, loom_schedule_hash(schs[i]), 0, 0) >> 11) / 9007199254740992.0;
    return LOOM_OK;
}

static int warm_measured(void *ctx, uint64_t h) { return (void)ctx, (void)h, 0; }
static int warm_ready(void *ctx) { return ((warm_env *)ctx)->ready; }

/* Fused members of a 47-candidate batch (a 48-trial campaign's first
 * round), summed over three seeds; *warm_picked the warm-up picks. */
static int fused_in_batch(const loom_program *prog, const loom_space *space, int ready, long *warm_picked,
                          long *mutated)
{
    int fused = 0;
    *warm_picked = *mutated = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        loom_search_opts o = loom_search_defaults();
        o.seed = seed;
        o.threads = 2;
        o.fresh_share_cold = 0; /* the model's part only: the fresh branches would add fused picks to both */
        warm_env we = {space, ready};
        loom_search_env env = {.ctx = &we, .sample = warm_sample, .score = warm_score,
                               .is_measured = warm_measured, .model_ready = warm_ready};
        loom_candidate *c = NULL;
        int n = 0;
        loom_search *s = search_batch(&o, prog, &env, 47, &c, &n);
        cr_assert_eq(n, 47);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < i; j++)
                cr_assert_neq(c[i].hash, c[j].hash, "duplicate candidates %d and %d", j, i);
            fused += fx_rolled_stages(c[i].sch) > 0;
            loom_candidate_free(&c[i]);
        }
        free(c);
        *warm_picked += loom_search_get_stats(s)->warmup_picked;
        *mutated += loom_search_get_stats(s)->mutated;
        loom_search_free(s);
    }
    return fused;
}

Test(search, warm_up_keeps_the_design_space_odds, .timeout = 300)
{
    loom_program *prog = load("workloads/attention.loom", NULL, NULL, "N", 1024);
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &space, &err), LOOM_OK, "%s", err.msg);
    long wp_ready, mut_ready, wp_warm, mut_warm;
    int ready = fused_in_batch(prog, space, 1, &wp_ready, &mut_ready);
    int warm = fused_in_batch(prog, space, 0, &wp_warm, &mut_warm);
    printf("attention N=1024, fused members of three 47-candidate batches: evolved against a random model %d, "
           "warm-up fresh samples %d (of 141)\n",
           ready, warm);
    cr_assert_eq(wp_ready, 0);
    cr_assert_gt(mut_ready, 0, "a trained model evolves");
    cr_assert_eq(wp_warm, 3 * 47, "every warm-up pick is a fresh sample");
    cr_assert_eq(mut_warm, 0, "no generation runs in warm-up");
    /* 1:1 odds would give 70.5 of 141, less the fused draws that repeat
     * a schedule already picked (the fused branch holds a few dozen
     * distinct schedules, mostly the 18 row_tile x key_tile ones) */
    cr_assert_geq(warm, 30, "warm-up batches lost the fused branch (%d of 141)", warm);
    cr_assert_leq(warm, 96);
    /* the evolved count rides on the random scores of the fused schedules'
     * hashes, so any change to the fused branch's instructions moves it:
     * 5 of 141 before the target's vector shape was annotated on the rolled
     * loop, 13 after (warm-up 52 both times) */
    cr_assert_gt(warm, 3 * ready, "warm-up %d, evolved %d", warm, ready);
    loom_space_free(space);
    loom_registry_free(reg);
    loom_program_free(prog);
}
