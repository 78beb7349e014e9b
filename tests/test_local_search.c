/* Tests for the evolutionary strategy's use of measured schedules
 * (search.h: local exploration, crossover, mutation by instruction, the
 * diversity-aware batch, ranked fresh branch samples) and for loom_crossover_trace
 * (mutator.h); the local model's own tests are in test_local_model.c. */
#include "local_search_fx.h"

/* ---- crossover ------------------------------------------------------------------ */

/* Every child of two draws of the SpMM space: replays to the schedule it
 * claims, is valid, and at every categorical where the parents differ
 * holds one parent's decision (categoricals are never repaired), some from
 * each parent; over all children about half the differing decisions come
 * from the second parent. */
Test(local_search, crossover_mixes_the_parents_decisions, .timeout = 120)
{
    fx f = fx_open(17);
    loom_program *prog = f.prog;
    loom_space *space = f.space;
    gsl_rng *rng = f.rng;
    loom_schedule *sa = malloc(sizeof *sa), *sb = malloc(sizeof *sb), *child_sch = malloc(sizeof *child_sch),
                  *again = malloc(sizeof *again);
    loom_limits lim = loom_target_cpu_limits();
    loom_mutator_weights w = loom_mutator_defaults("cpu");
    int ok = 0, from_b = 0, differing = 0, mixed = 0;
    for (int k = 0; k < 200 && ok < 60; k++) {
        loom_trace *a = draw(prog, space, rng, sa), *b = draw(prog, space, rng, sb);
        loom_trace *child = loom_trace_new();
        loom_mutation info;
        loom_error err;
        loom_error_clear(&err);
        int taken = -1;
        loom_status st = loom_crossover_trace(a, b, prog, &w, &lim, rng, child, child_sch, &info, &taken, &err);
        if (st != LOOM_OK) {
            cr_assert(strlen(err.msg) > 0);
            if (strstr(err.msg, "differ in"))
                cr_assert_eq(taken, 0);
            else
                cr_assert(strstr(err.msg, "crossover") != NULL, "%s", err.msg);
            loom_trace_free(a), loom_trace_free(b), loom_trace_free(child);
            continue;
        }
        ok++;
        cr_assert_gt(taken, 0);
        /* the child's trace replays to its schedule, which is valid */
        cr_assert_eq(loom_schedule_init(again, prog, NULL, &err), LOOM_OK);
        cr_assert_eq(loom_trace_replay(child, again, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert(loom_schedule_equal(again, child_sch));
        loom_violation v;
        cr_assert_eq(loom_validate(again, &lim, &v, &err), LOOM_OK, "%s", v.msg);
        /* categoricals: one parent's decision each */
        int fa = 0, fb = 0, kind_cat = loom_inst_kind_find("SampleCategorical");
        for (int i = 0; i < a->ninsts && i < b->ninsts && i < child->ninsts; i++) {
            const loom_inst *x = &a->insts[i], *y = &b->insts[i], *c = &child->insts[i];
            if (x->kind != kind_cat || y->kind != kind_cat || c->kind != kind_cat || x->nattrs != y->nattrs ||
                memcmp(x->attrs, y->attrs, sizeof(int64_t) * (size_t)x->nattrs) || same_decision(x, y))
                continue;
            cr_assert(same_decision(c, x) || same_decision(c, y),
                      "categorical %d: the child's decision is neither parent's", i);
            fa += same_decision(c, x);
            fb += same_decision(c, y);
        }
        mixed += fa > 0 && fb > 0;
        from_b += fb;
        differing += fa + fb;
        /* the child is neither parent */
        cr_assert_not(loom_trace_equal(child, a));
        cr_assert_not(loom_trace_equal(child, b));
        loom_trace_free(a), loom_trace_free(b), loom_trace_free(child);
    }
    printf("crossover on SpMM: %d valid children, %d of %d differing categoricals from the second parent, %d "
           "children mixing categoricals\n",
           ok, from_b, differing, mixed);
    cr_assert_geq(ok, 20, "only %d valid crossovers in 200 pairs", ok);
    cr_assert_gt(mixed, 0);
    double share = (double)from_b / differing;
    cr_assert(share > 0.35 && share < 0.65, "share from the second parent %.2f, want about 1/2", share);
    free(sa), free(sb), free(child_sch), free(again);
    fx_close(&f);
}

/* Identical parents, or parents one decision apart, have no child that is
 * neither; a pinned sampler keeps the first parent's decision. */
Test(local_search, crossover_refuses_twins_and_keeps_pins, .timeout = 120)
{
    fx f = fx_open(5);
    loom_program *prog = f.prog;
    loom_space *space = f.space;
    gsl_rng *rng = f.rng;
    loom_schedule *sa = malloc(sizeof *sa), *sb = malloc(sizeof *sb), *cs = malloc(sizeof *cs);
    loom_limits lim = loom_target_cpu_limits();
    loom_mutator_weights w = loom_mutator_defaults("cpu");
    loom_error err;
    loom_error_clear(&err);
    loom_mutation info;
    int taken;
    loom_trace *a = draw(prog, space, rng, sa), *child = loom_trace_new();
    cr_assert_eq(loom_crossover_trace(a, a, prog, &w, &lim, rng, child, cs, &info, &taken, &err),
                 LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "differ in 0 decisions") != NULL, "%s", err.msg);
    /* pin every sampler but one: at most one decision may differ, so no child */
    int kept = 0;
    for (int k = 0; k < 50 && kept < 10; k++) {
        loom_trace *b = draw(prog, space, rng, sb);
        /* pin sampler ordinals 0..2 (the first three samplers) */
        loom_mutator_weights wp = w;
        wp.pinned[0] = 0x7;
        loom_error_clear(&err);
        if (loom_crossover_trace(a, b, prog, &wp, &lim, rng, child, cs, &info, &taken, &err) == LOOM_OK) {
            for (int j = 0; j < 3; j++) {
                int ia = loom_trace_sampler_inst(a, j), ic = loom_trace_sampler_inst(child, j);
                cr_assert(ia >= 0 && ic >= 0);
                cr_assert(same_decision(&a->insts[ia], &child->insts[ic]), "pinned sampler %d changed", j);
            }
            kept++;
        }
        loom_trace_free(b);
    }
    cr_assert_gt(kept, 0, "no valid crossover with pins in 50 pairs");
    loom_trace_free(a), loom_trace_free(child);
    free(sa), free(sb), free(cs);
    fx_close(&f);
}

/* ---- mutation by instruction -------------------------------------------------- */

Test(local_search, instruction_weights_count_the_samplers, .timeout = 60)
{
    fx f = fx_open(2);
    loom_program *prog = f.prog;
    loom_space *space = f.space;
    gsl_rng *rng = f.rng;
    loom_schedule *sch = f.sch;
    loom_trace *t = draw(prog, space, rng, sch);
    int count[LOOM_MUTATOR_COUNT] = {0}, total = 0;
    for (int i = 0; i < t->ninsts; i++) {
        int k = loom_mutator_kind_of(t, i);
        if (k >= 0)
            count[k]++, total++;
    }
    cr_assert_gt(total, 3);
    loom_mutator_weights base = loom_mutator_defaults("cpu");
    loom_mutator_weights w = loom__instruction_weights(t, &base);
    for (int k = 0; k < LOOM_MUTATOR_COUNT; k++)
        cr_assert_float_eq(w.w[k], (double)count[k], 1e-12, "kind %s", loom_mutator_name(k));
    /* a kind the base disables stays disabled; pins are kept */
    base.w[LOOM_MUTATE_CATEGORICAL] = 0;
    base.pinned[0] = 5;
    w = loom__instruction_weights(t, &base);
    cr_assert_eq(w.w[LOOM_MUTATE_CATEGORICAL], 0);
    cr_assert_eq(w.pinned[0], 5);
    loom_trace_free(t);
    fx_close(&f);
}

/* ---- local exploration inside a search ------------------------------------------ */

/* decisions of t (by instruction) that equal neither a's nor b's */
static int outside(const loom_trace *t, const loom_trace *a, const loom_trace *b)
{
    if (t->ninsts != a->ninsts || t->ninsts != b->ninsts)
        return 1000;
    int n = 0;
    for (int i = 0; i < t->ninsts; i++)
        if (t->insts[i].ndecision > 0 && !same_decision(&t->insts[i], &a->insts[i]) &&
            !same_decision(&t->insts[i], &b->insts[i]))
            n++;
    return n;
}

/* With local_share 1 the whole batch comes from the measured schedules:
 * each candidate is a one-decision mutant of one of them or a crossover of
 * two (decision by decision within the two parents'), never measured, all
 * distinct; with local_share 0 (the model's picks only, random model here)
 * most candidates are neither. */
static int local_batch(const loom_program *prog, local_env *e, double share, int *near)
{
    loom_search_opts o = loom_search_defaults();
    o.seed = 3;
    o.threads = 2;
    o.population = 64;
    o.local_share = share;
    o.fresh_share_cold = 0; /* every slot local (test_fresh_branches.c covers the fresh branches) */
    o.eps_greedy = 0;
    loom_search_env env = {.ctx = e, .sample = lenv_sample, .score = lenv_score, .is_measured = lenv_measured,
                           .best_measured = lenv_best};
    loom_search *s = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_search_new(&o, prog, &env, &s, &err), LOOM_OK, "%s", err.msg);
    loom_candidate *c = NULL;
    int n = 0;
    cr_assert_eq(loom_search_generate(s, 16, &c, &n, &err), LOOM_OK, "%s", err.msg);
    *near = 0;
    for (int i = 0; i < n; i++) {
        cr_assert_not(lenv_measured(e, c[i].hash), "a measured schedule was proposed");
        for (int j = 0; j < i; j++)
            cr_assert_neq(c[i].hash, c[j].hash, "duplicate candidates %d and %d", j, i);
        int best = 1000;
        for (int a = 0; a < e->nbest; a++)
            for (int b = 0; b < e->nbest; b++) {
                int d = outside(c[i].trace, e->best[a], e->best[b]);
                if (d < best)
                    best = d;
            }
        *near += best <= 1;
        loom_candidate_free(&c[i]);
    }
    free(c);
    const loom_search_stats *st = loom_search_get_stats(s);
    if (share > 0)
        cr_assert_gt(st->local_mutants + st->local_crossovers, 0);
    else
        cr_assert_eq(st->local_mutants + st->local_crossovers, 0);
    loom_search_free(s);
    return n;
}

Test(local_search, local_exploration_proposes_children_of_the_measured, .timeout = 300)
{
    fx f = fx_open(11);
    loom_program *prog = f.prog;
    loom_space *space = f.space;
    gsl_rng *rng = f.rng;
    loom_schedule *sch = f.sch;
    local_env e = {.space = space};
    /* four measured schedules with the same instruction list (index-wise
       comparable), drawn from the space */
    loom_trace *first = NULL;
    for (int k = 0; k < 400 && e.nbest < 4; k++) {
        loom_trace *t = draw(prog, space, rng, sch);
        if (first && t->ninsts != first->ninsts) {
            loom_trace_free(t);
            continue;
        }
        first = first ? first : t;
        e.hash[e.nbest] = loom_schedule_hash(sch);
        e.best[e.nbest++] = t;
    }
    cr_assert_eq(e.nbest, 4);
    int near_local, near_model;
    int n1 = local_batch(prog, &e, 1.0, &near_local);
    int n0 = local_batch(prog, &e, 0.0, &near_model);
    printf("local exploration: %d of %d candidates are children of the measured (local_share 1), %d of %d "
           "(local_share 0)\n",
           near_local, n1, near_model, n0);
    cr_assert_eq(n1, 16);
    cr_assert_eq(near_local, n1, "every local candidate is a mutant or crossover of the measured");
    cr_assert_lt(near_model, n0 / 2);
    for (int i = 0; i < e.nbest; i++)
        loom_trace_free(e.best[i]);
    fx_close(&f);
}

/* One cold batch of 16 (every slot local) with a cost model that says it is
 * trained; the score of each candidate, in batch order, into sc[]. */
static int cold_batch(const loom_program *prog, local_env *e, int cold_rank, double *sc, long *ranked)
{
    loom_search_opts o = loom_search_defaults();
    o.seed = 5;
    o.threads = 2;
    o.population = 64;
    o.local_share = o.local_share_cold = 1;
    o.fresh_share_cold = 0;
    o.eps_greedy = 0;
    o.local_cold_rank = cold_rank;
    o.local_cold_order = 0; /* local_cold_rank alone (local_cold_order: test_cold_order.c) */
    loom_search_env env = {.ctx = e, .sample = lenv_sample, .score = lenv_score, .is_measured = lenv_measured,
                           .best_measured = lenv_best, .model_ready = lenv_ready};
    loom_search *s = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_search_new(&o, prog, &env, &s, &err), LOOM_OK, "%s", err.msg);
    loom_candidate *c = NULL;
    int n = 0;
    cr_assert_eq(loom_search_generate(s, 16, &c, &n, &err), LOOM_OK, "%s", err.msg);
    for (int i = 0; i < n; i++) {
        const loom_schedule *one = c[i].sch;
        cr_assert_eq(lenv_score(e, &one, 1, &sc[i], &err), LOOM_OK);
        loom_candidate_free(&c[i]);
    }
    free(c);
    *ranked = loom_search_get_stats(s)->local_cold_ranked;
    loom_search_free(s);
    return n;
}

/* local_cold_rank: in a cold round (no local model: env.best_measured_latency
 * is absent here) with a trained cost model, the children are drawn 8 per
 * slot and the cost model's best fill the batch, best first; without it they
 * come in draw order, scored as a random draw. */
Test(local_search, a_trained_cost_model_ranks_a_cold_rounds_children, .timeout = 300)
{
    fx f = fx_open(11);
    local_env e = {.space = f.space};
    loom_trace *t = draw(f.prog, f.space, f.rng, f.sch);
    e.hash[0] = loom_schedule_hash(f.sch);
    e.best[0] = t;
    e.nbest = 1;
    double ranked_sc[16], drawn_sc[16];
    long nranked, ndrawn;
    int n1 = cold_batch(f.prog, &e, 1, ranked_sc, &nranked);
    int n0 = cold_batch(f.prog, &e, 0, drawn_sc, &ndrawn);
    cr_assert_eq(nranked, 1, "the cold round was ranked by the cost model");
    cr_assert_eq(ndrawn, 0);
    cr_assert_gt(n1, 4);
    double m1 = 0, m0 = 0;
    for (int i = 0; i < n1; i++) {
        m1 += ranked_sc[i] / n1;
        if (i > 0)
            cr_assert_geq(ranked_sc[i - 1], ranked_sc[i], "batch position %d scores above %d", i, i - 1);
    }
    for (int i = 0; i < n0; i++)
        m0 += drawn_sc[i] / n0;
    printf("cold round: mean cost-model score %.3f ranked (%d children), %.3f in draw order (%d)\n", m1, n1, m0, n0);
    cr_assert_gt(m1, m0, "the ranked batch scores better than the drawn one");
    loom_trace_free(t);
    fx_close(&f);
}

/* One round whose only measured schedule is foreign (env.foreign_hash: every
 * local slot a fresh branch sample) with a trained cost model: per pick, its
 * branch key and score; *ranked the rounds fresh_rank ranked. */
static int foreign_batch(const loom_program *prog, local_env *e, int rank, uint64_t *key, double *sc, long *ranked)
{
    loom_search_opts o = loom_search_defaults();
    o.seed = 9;
    o.threads = 2;
    o.population = 64;
    o.fresh_rank = rank;
    o.local_cold_order = 0; /* the branch picks in the order taken */
    loom_search_env env = {.ctx = e, .sample = lenv_sample, .score = lenv_score, .is_measured = lenv_measured,
                           .best_measured = lenv_best, .model_ready = lenv_ready, .foreign_hash = e->hash[0]};
    loom_search *s = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_search_new(&o, prog, &env, &s, &err), LOOM_OK, "%s", err.msg);
    loom_candidate *c = NULL;
    int n = 0;
    cr_assert_eq(loom_search_generate(s, 16, &c, &n, &err), LOOM_OK, "%s", err.msg);
    const loom_search_stats *st = loom_search_get_stats(s);
    cr_assert_eq(st->fresh_branch_picks, n, "every slot a fresh branch sample (%ld of %d)", st->fresh_branch_picks, n);
    for (int i = 0; i < n; i++) {
        const loom_schedule *one = c[i].sch;
        key[i] = loom_search_branch_key(one);
        cr_assert_eq(lenv_score(e, &one, 1, &sc[i], &err), LOOM_OK);
        loom_candidate_free(&c[i]);
    }
    free(c);
    *ranked = st->fresh_ranked;
    loom_search_free(s);
    return n;
}

/* fresh_rank: the same round's fresh samples (one seed), each branch's taken
 * in the cost model's order instead of draw order -- so per branch the same
 * number of picks, whose scores are the branch's best: their sum is at least
 * the draw-order picks' (any k samples of a branch score at most its top k),
 * and above it over the batch. */
Test(local_search, fresh_rank_takes_each_branchs_best_scored, .timeout = 300)
{
    fx f = fx_open(13);
    local_env e = {.space = f.space};
    loom_trace *t = draw(f.prog, f.space, f.rng, f.sch);
    e.hash[0] = loom_schedule_hash(f.sch);
    e.best[0] = t;
    e.nbest = 1;
    uint64_t k1[16], k0[16];
    double s1[16], s0[16];
    long r1, r0;
    int n1 = foreign_batch(f.prog, &e, 1, k1, s1, &r1);
    int n0 = foreign_batch(f.prog, &e, 0, k0, s0, &r0);
    cr_assert_eq(r1, 1);
    cr_assert_eq(r0, 0);
    cr_assert_eq(n1, 16);
    cr_assert_eq(n0, 16);
    double t1 = 0, t0 = 0;
    int branches = 0;
    for (int i = 0; i < n1; i++) {
        int first = 1;
        for (int j = 0; j < i && first; j++)
            first = k1[j] != k1[i];
        if (!first)
            continue;
        branches++;
        int c1 = 0, c0 = 0;
        double b1 = 0, b0 = 0;
        for (int j = 0; j < n1; j++)
            if (k1[j] == k1[i])
                c1++, b1 += s1[j];
        for (int j = 0; j < n0; j++)
            if (k0[j] == k1[i])
                c0++, b0 += s0[j];
        cr_assert_eq(c1, c0, "branch %016llx: %d picks ranked, %d in draw order", (unsigned long long)k1[i], c1, c0);
        cr_assert_geq(b1, b0 - 1e-12, "branch %016llx: the ranked picks score below the drawn ones",
                      (unsigned long long)k1[i]);
        t1 += b1, t0 += b0;
    }
    printf("fresh branch picks: %d branches, mean score %.3f ranked, %.3f in draw order\n", branches, t1 / n1,
           t0 / n0);
    cr_assert_gt(t1, t0);
    loom_trace_free(t);
    fx_close(&f);
}

/* ---- a campaign ----------------------------------------------------------------------- */

#include "../search/tune/tune.h"


/* A simulated campaign logs its local children per round: round 0 has
 * only the default schedule measured, so no local model, and the whole
 * batch (local_share_cold 1) is mutants of the default in draw order
 * (the pre-trained cost model ranks none of them); later rounds hold crossovers and the local
 * model's ranking, 7 of each 8 local (local_share 0.875) and the rest the
 * cost model's; with local_share 0 there are none. */
Test(local_search, a_campaign_logs_its_local_children, .timeout = 300)
{
    const char *args[] = {"A=data/cora500_adj.mtx", "F=64"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    char tmpl[] = "/tmp/loom-test-local-XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert_not_null(dir);
    for (int off = 0; off <= 1; off++) {
        char db[300], logp[340];
        snprintf(db, sizeof db, "%s/%s", dir, off ? "off" : "on");
        loom_tune_opts o = loom_tune_defaults();
        o.db_dir = db;
        o.trials = 41;
        o.batch = 8;
        o.target = "sim:spr-2c";
        o.workload_name = "spmm";
        o.search.population = 64;
        o.search.threads = 2;
        o.pretrain = 16;
        o.remeasure_rounds = 0;
        if (off)
            o.search.local_share = 0;
        loom_tune_result r;
        loom_error err;
        loom_error_clear(&err);
        cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
        snprintf(logp, sizeof logp, "%s/campaign.log", db);
        char *log = fx_slurp(logp);
        const char *r0 = strstr(log, "round 0 search:");
        cr_assert_not_null(r0, "%s", log);
        if (off) {
            cr_assert(strstr(r0, "; 0 local children of the best measured (0 mutants, 0 crossovers, 0 local-model steps)"),
                      "%s", log);
            cr_assert_null(strstr(log, "ranked by the local model"), "%s", log);
        } else {
            /* all 8: mutants of the default (fresh_share_cold 0), in the
               pre-trained cost model's order (local_cold_order) */
            const char *eol = strchr(r0, '\n');
            cr_assert(eol);
            const char *r0l = strstr(r0, "; 8 local children of the best measured (8 mutants, 0 crossovers, 0 local-model "
                                         "steps; ranked by the cost model); 0 fresh samples, one per structural branch (");
            const char *none = strstr(r0, "none left to the cost model");
            cr_assert(r0l && r0l < eol && none && none < eol, "%s", log);
            const char *later = strstr(r0 + 1, "ranked by the local model");
            cr_assert_not_null(later, "no round was ranked by the local model:\n%s", log);
            /* once the local model ranks, 7 of the 8 are local */
            const char *lc = later, *le = strchr(later, '\n'), *rest = strstr(later, "); the rest ranked by the cost model");
            while (lc > log && lc[-1] != '\n')
                lc--;
            const char *seven = strstr(lc, "; 7 local children of the best measured (");
            cr_assert(le && rest && rest < le && seven && seven < later, "%.600s", lc);
            /* each line's local children add up, and later rounds hold the
               local model's own steps (crossovers: crossover_mixes_the_parents_decisions) */
            int steps = 0, screened = 0;
            for (const char *q = strstr(r0 + 1, " local children of the best measured ("); q;
                 q = strstr(q + 1, " local children of the best measured (")) {
                const char *num = q;
                while (num > log && num[-1] >= '0' && num[-1] <= '9')
                    num--;
                int n = 0, mu = 0, x = 0, st = 0;
                cr_assert_eq(sscanf(num, "%d local children of the best measured (%d mutants, %d crossovers, %d", &n,
                                    &mu, &x, &st),
                             4, "%.120s", num);
                cr_assert_eq(n, mu + x + st, "%.160s", num);
                steps += st;
                /* screening (search.h local_screen, 0.25 of the 7: 2) */
                const char *sc = strstr(num, " of the mutants screening"), *eq = strchr(num, '\n');
                if (sc && eq && sc < eq) {
                    const char *d = sc;
                    while (d[-1] >= '0' && d[-1] <= '9')
                        d--;
                    int k = atoi(d);
                    cr_assert(k > 0 && k <= 2 && k <= mu, "%.200s", num);
                    screened += k;
                }
            }
            cr_assert_gt(steps, 0, "no local-model step after round 0:\n%s", log);
            cr_assert_gt(screened, 0, "no screening mutant after round 0:\n%s", log);
        }
        free(log);
    }
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    loom_dataset_free(ds);
    loom_program_free(prog);
}
