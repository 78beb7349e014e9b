/* Tests for the evolutionary strategy's local model (local_model.h): an
 * additive model of measured latencies over decisions, fitted on a known
 * landscape, steering a search's local children, and screening the
 * decisions no record has varied (search.h local_screen). */
#include "local_search_fx.h"

/* ---- the local model ------------------------------------------------------------- */

#include "../search/strategy/local_model.h"

/* A known additive landscape over decisions: log latency = -10 + the sum
 * of a pseudo-random effect in [-0.2, 0.2] per (instruction, decision). */
static double additive_log_latency(const loom_trace *t)
{
    double v = -10;
    for (int i = 0; i < t->ninsts; i++) {
        const loom_inst *x = &t->insts[i];
        if (x->ndecision <= 0)
            continue;
        uint64_t h = loom_seed_mix(99, (uint64_t)i, (uint64_t)x->decision[0], (uint64_t)x->decision[x->ndecision - 1]);
        v += ((double)(h >> 11) / 9007199254740992.0 - 0.5) * 0.4;
    }
    return v;
}

/* rank correlation of two arrays (no ties expected) */
static double spearman(const double *a, const double *b, int n)
{
    double d2 = 0;
    for (int i = 0; i < n; i++) {
        int ra = 0, rb = 0;
        for (int j = 0; j < n; j++)
            ra += a[j] < a[i], rb += b[j] < b[i];
        d2 += (double)(ra - rb) * (ra - rb);
    }
    return 1 - 6 * d2 / ((double)n * ((double)n * n - 1));
}

Test(local_search, local_model_learns_an_additive_landscape, .timeout = 120)
{
    fx f = fx_open(31);
    loom_program *prog = f.prog;
    loom_space *space = f.space;
    gsl_rng *rng = f.rng;
    loom_schedule *sch = f.sch;
    enum { NT = 240, NH = 60 };
    loom_trace *t[NT + NH];
    double lat[NT + NH];
    loom_trace *ref = draw(prog, space, rng, sch);
    uint64_t hs[NT + NH];
    int n = cloud(&f, ref, NT + NH, t, hs);
    for (int i = 0; i < n; i++)
        lat[i] = exp(additive_log_latency(t[i]));
    cr_assert_eq(n, NT + NH, "only %d children of one structure", n);
    loom_local_model *m = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_local_model_fit((const loom_trace *const *)t, lat, NT, ref, 1.0, 8, &m, &err), LOOM_OK, "%s",
                 err.msg);
    cr_assert_not_null(m);
    cr_assert_gt(loom_local_model_features(m), 0);
    double pred[NH], truth[NH];
    for (int i = 0; i < NH; i++) {
        pred[i] = loom_local_model_predict(m, t[NT + i]);
        truth[i] = log(lat[NT + i]);
        cr_assert(isfinite(pred[i]));
    }
    double rho = spearman(pred, truth, NH);
    printf("local model: %d records, %d features; held-out Spearman %.3f on %d children\n",
           loom_local_model_records(m), loom_local_model_features(m), rho, NH);
    cr_assert_gt(rho, 0.8, "held-out rank correlation %.3f on an additive landscape", rho);
    /* shuffled latencies carry no signal: the model cannot rank */
    double shuffled[NT];
    for (int i = 0; i < NT; i++)
        shuffled[i] = lat[(i * 7 + 3) % NT];
    loom_local_model *ms = NULL;
    cr_assert_eq(loom_local_model_fit((const loom_trace *const *)t, shuffled, NT, ref, 1.0, 8, &ms, &err), LOOM_OK);
    for (int i = 0; i < NH; i++)
        pred[i] = loom_local_model_predict(ms, t[NT + i]);
    double rho0 = spearman(pred, truth, NH);
    cr_assert_lt(rho0, rho - 0.3, "shuffled labels ranked as well (%.3f vs %.3f)", rho0, rho);
    loom_local_model_free(ms);
    /* another structure: no prediction; too few records: no model */
    loom_trace *other = NULL;
    for (int k = 0; k < 400 && !other; k++) {
        loom_trace *x = draw(prog, space, rng, sch);
        if (x->ninsts != ref->ninsts)
            other = x;
        else
            loom_trace_free(x);
    }
    if (other) {
        cr_assert(isnan(loom_local_model_predict(m, other)));
        loom_trace_free(other);
    }
    loom_local_model *few = (loom_local_model *)1;
    cr_assert_eq(loom_local_model_fit((const loom_trace *const *)t, lat, 5, ref, 1.0, 8, &few, &err), LOOM_OK);
    cr_assert_null(few);
    cr_assert_eq(loom_local_model_fit((const loom_trace *const *)t, lat, NT, ref, 0, 8, &few, &err),
                 LOOM_ERR_INVALID);
    loom_local_model_free(m);
    for (int i = 0; i < n; i++)
        loom_trace_free(t[i]);
    loom_trace_free(ref);
    fx_close(&f);
}

/* ---- the local model inside a search ---------------------------------------------- */

typedef struct model_env {
    const loom_space *space;
    loom_trace *rec[64]; /* "measured", best first */
    double lat[64];
    uint64_t hash[64];
    int n;
} model_env;

static loom_status menv_sample(void *ctx, loom_schedule *sch, loom_error *err)
{
    return loom_space_apply(((model_env *)ctx)->space, sch, err);
}

static int menv_measured(void *ctx, uint64_t h)
{
    model_env *e = ctx;
    for (int i = 0; i < e->n; i++)
        if (e->hash[i] == h)
            return 1;
    return 0;
}

static int menv_best_latency(void *ctx, int k, loom_trace ***out, double **lat)
{
    model_env *e = ctx;
    int n = k < e->n ? k : e->n;
    *out = calloc((size_t)n + 1, sizeof **out);
    *lat = calloc((size_t)n + 1, sizeof **lat);
    loom_error err;
    for (int i = 0; i < n; i++) {
        cr_assert_eq(loom_trace_copy(e->rec[i], &(*out)[i], &err), LOOM_OK);
        (*lat)[i] = e->lat[i];
    }
    return n;
}

static int menv_ready(void *ctx)
{
    (void)ctx;
    return 1;
}

/* e's records sorted best first (insertion sort), as the database gives them */
static void menv_sort(model_env *e)
{
    for (int i = 1; i < e->n; i++)
        for (int j = i; j > 0 && e->lat[j] < e->lat[j - 1]; j--) {
            loom_trace *t = e->rec[j];
            double l = e->lat[j];
            uint64_t h = e->hash[j];
            e->rec[j] = e->rec[j - 1], e->lat[j] = e->lat[j - 1], e->hash[j] = e->hash[j - 1];
            e->rec[j - 1] = t, e->lat[j - 1] = l, e->hash[j - 1] = h;
        }
}

static int menv_best(void *ctx, int k, loom_trace ***out)
{
    double *lat = NULL;
    int n = menv_best_latency(ctx, k, out, &lat);
    free(lat);
    return n;
}

/* mean true log latency of the 16-candidate batches of local children of
 * four seeds; *fits the rounds the local model ranked */
static double model_batch(const loom_program *prog, model_env *e, int with_latency, int use_model, long *fits)
{
    double tot = 0;
    *fits = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        loom_search_opts o = loom_search_defaults();
        o.seed = seed;
        o.threads = 2;
        o.population = 64;
        o.local_share = 1;
        o.local_model = use_model;
        loom_search_env env = {.ctx = e, .sample = menv_sample, .score = lenv_score, .is_measured = menv_measured,
                               .best_measured = menv_best};
        if (with_latency)
            env.best_measured_latency = menv_best_latency;
        loom_search *s = NULL;
        loom_error err;
        loom_error_clear(&err);
        cr_assert_eq(loom_search_new(&o, prog, &env, &s, &err), LOOM_OK, "%s", err.msg);
        loom_candidate *c = NULL;
        int n = 0;
        cr_assert_eq(loom_search_generate(s, 16, &c, &n, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(n, 16);
        for (int i = 0; i < n; i++) {
            tot += additive_log_latency(c[i].trace) / (4.0 * n);
            loom_candidate_free(&c[i]);
        }
        free(c);
        *fits += loom_search_get_stats(s)->local_model_fits;
        loom_search_free(s);
    }
    return tot;
}

static int by_lat(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* On the known additive landscape, 48 measured children of one schedule:
 * the local model's picks are faster than the same search's picks without
 * it, and the model is only fitted when the environment gives latencies. */
Test(local_search, local_model_steers_local_exploration, .timeout = 300)
{
    fx f = fx_open(41);
    loom_program *prog = f.prog;
    loom_space *space = f.space;
    gsl_rng *rng = f.rng;
    loom_schedule *sch = f.sch;
    model_env e = {.space = space};
    loom_trace *ref = draw(prog, space, rng, sch);
    struct {
        double lat;
        loom_trace *t;
        uint64_t h;
    } tmp[48];
    loom_trace *ct[48];
    uint64_t ch[48];
    int n = cloud(&f, ref, 48, ct, ch);
    for (int i = 0; i < n; i++) {
        tmp[i].t = ct[i];
        tmp[i].h = ch[i];
        tmp[i].lat = exp(additive_log_latency(ct[i]));
    }
    cr_assert_eq(n, 48);
    qsort(tmp, (size_t)n, sizeof tmp[0], by_lat); /* best first, as the database gives them */
    for (int i = 0; i < n; i++)
        e.rec[i] = tmp[i].t, e.lat[i] = tmp[i].lat, e.hash[i] = tmp[i].h;
    e.n = n;
    long fits_on, fits_off, fits_nolat;
    double on = model_batch(prog, &e, 1, 1, &fits_on);
    double off = model_batch(prog, &e, 1, 0, &fits_off);
    double nolat = model_batch(prog, &e, 0, 1, &fits_nolat);
    printf("local model in a search: mean log latency of the batch %.4f with it, %.4f without, %.4f without "
           "latencies (best measured %.4f)\n",
           on, off, nolat, log(e.lat[0]));
    cr_assert_eq(fits_on, 4);
    cr_assert_eq(fits_off, 0);
    cr_assert_eq(fits_nolat, 0);
    cr_assert_lt(on, off - 0.03, "the local model's picks are not faster (%.4f vs %.4f)", on, off);
    for (int i = 0; i < n; i++)
        loom_trace_free(e.rec[i]);
    loom_trace_free(ref);
    fx_close(&f);
}

/* distinct decisions of instruction i among rec[0..n), and whether x holds one */
static int values_held(loom_trace *const *rec, int n, int i, const loom_inst *x, int *has)
{
    int v = 0;
    *has = 0;
    for (int a = 0; a < n; a++) {
        int first = 1;
        for (int b = 0; b < a && first; b++)
            first = !same_decision(&rec[a]->insts[i], &rec[b]->insts[i]);
        v += first;
        *has |= same_decision(&rec[a]->insts[i], x);
    }
    return v;
}

/* Screening (search.h local_screen): with a fitted local model, a quarter of
 * the local slots are mutants of the best measured schedule that set a
 * decision to a value no record holds, fewest-varied instruction first;
 * loom_local_model_values counts what the records hold, as a plain scan of
 * them does; with the share at 0 no batch member is a screening one. */
Test(local_search, screening_varies_decisions_no_record_holds, .timeout = 300)
{
    fx f = fx_open(43);
    model_env e = {.space = f.space};
    loom_trace *ref = draw(f.prog, f.space, f.rng, f.sch);
    loom_trace *ct[48];
    uint64_t ch[48];
    int n = cloud(&f, ref, 48, ct, ch);
    cr_assert_eq(n, 48);
    for (int i = 0; i < n; i++)
        e.rec[i] = ct[i], e.lat[i] = exp(additive_log_latency(ct[i])), e.hash[i] = ch[i];
    e.n = n;
    menv_sort(&e); /* best first, as the database gives them */
    /* the model's count of values against a scan of the records */
    loom_local_model *m = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_local_model_fit((const loom_trace *const *)e.rec, e.lat, n, e.rec[0], 1.0, 8, &m, &err), LOOM_OK);
    int varied = 0;
    for (int i = 0; i < ref->ninsts; i++) {
        if (ref->insts[i].ndecision <= 0)
            continue;
        int has, has_scan, v = loom_local_model_values(m, i, &e.rec[0]->insts[i], &has);
        cr_assert_eq(v, values_held(e.rec, n, i, &e.rec[0]->insts[i], &has_scan), "instruction %d", i);
        cr_assert(has && has_scan);
        varied += v > 1;
    }
    cr_assert_gt(varied, 0);
    cr_assert_eq(loom_local_model_values(m, -1, NULL, NULL), 0);
    cr_assert_eq(loom_local_model_values(m, ref->ninsts, NULL, NULL), 0);
    loom_local_model_free(m);
    /* pass 0: no screening; 1: screening without a trained cost model
       (fewest-varied first); 2: with one (search.h local_screen_rank: its
       highest scored first); 3: with one, local_screen_rank 0 */
    for (int pass = 0; pass <= 3; pass++) {
        int share = pass > 0, ranked = pass == 2;
        loom_search_opts o = loom_search_defaults();
        o.seed = 5;
        o.threads = 2;
        o.population = 64;
        o.local_share = 1;
        o.local_screen = share ? 0.25 : 0;
        o.local_screen_rank = pass != 3;
        loom_search_env env = {.ctx = &e, .sample = menv_sample, .score = lenv_score, .is_measured = menv_measured,
                               .best_measured = menv_best, .best_measured_latency = menv_best_latency,
                               .model_ready = pass >= 2 ? menv_ready : NULL};
        loom_search *s = NULL;
        cr_assert_eq(loom_search_new(&o, f.prog, &env, &s, &err), LOOM_OK, "%s", err.msg);
        loom_candidate *c = NULL;
        int nc = 0;
        cr_assert_eq(loom_search_generate(s, 16, &c, &nc, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(nc, 16);
        const loom_search_stats *st = loom_search_get_stats(s);
        cr_assert_eq(st->local_model_fits, 1);
        cr_assert_eq(st->local_screened, share ? 4 : 0, "pass %d: %ld screened", pass, st->local_screened);
        cr_assert_eq(st->screen_ranked, ranked, "pass %d", pass);
        /* the screening members come last: children of the best whose first
           changed decision no record the model saw holds (the search fits
           it on the best population x init_measured_ratio), fewest-varied
           instruction first */
        int seen = (int)(o.population * o.init_measured_ratio), last_values = 0;
        double last_score = HUGE_VAL;
        if (seen > n)
            seen = n;
        for (int k = 16 - (int)st->local_screened; k < nc; k++) {
            const loom_trace *t = c[k].trace;
            cr_assert_eq(t->ninsts, e.rec[0]->ninsts);
            int i = 0;
            while (i < t->ninsts && (t->insts[i].ndecision <= 0 || same_decision(&t->insts[i], &e.rec[0]->insts[i])))
                i++;
            cr_assert_lt(i, t->ninsts, "member %d is the best itself", k);
            int has, v = values_held(e.rec, seen, i, &t->insts[i], &has);
            cr_assert(!has, "member %d sets instruction %d to a value a record holds", k, i);
            /* ranked: the cost model's order (lenv_score), else fewest-varied first */
            double sc;
            const loom_schedule *one = c[k].sch;
            cr_assert_eq(lenv_score(NULL, &one, 1, &sc, &err), LOOM_OK);
            if (ranked) {
                cr_assert_leq(sc, last_score, "member %d: not the cost model's order", k);
            } else {
                cr_assert_geq(v, last_values, "member %d: not fewest-varied first", k);
            }
            last_values = v, last_score = sc;
        }
        for (int k = 0; k < nc; k++)
            loom_candidate_free(&c[k]);
        free(c);
        loom_search_free(s);
    }
    for (int i = 0; i < n; i++)
        loom_trace_free(e.rec[i]);
    loom_trace_free(ref);
    fx_close(&f);
}


/* ---- the cost model's share after it won a round (search.h local_share_won) --------- */

static long local_count(const loom_search_stats *a, const loom_search_stats *b)
{
    return (b->local_mutants - a->local_mutants) + (b->local_crossovers - a->local_crossovers) +
           (b->local_model_steps - a->local_model_steps);
}

/* Two warm rounds of 16 over 48 measured children of one schedule.  The
 * first round's candidates are "measured": one of them (of the children's
 * trace structure) at half the best latency, the rest at twice it.  When
 * that one is among the cost model's picks (the batch's last two) the next
 * round's local share is local_share_won (8 of 16); when it is a local
 * child, or when local_share_won is local_share, the next round keeps 14
 * local. */
Test(local_search, the_cost_model_gets_more_of_the_round_after_it_won, .timeout = 300)
{
    fx f = fx_open(47);
    loom_trace *ref = draw(f.prog, f.space, f.rng, f.sch);
    loom_trace *ct[48];
    uint64_t ch[48];
    int n = cloud(&f, ref, 48, ct, ch);
    cr_assert_eq(n, 48);
    double lat0[48];
    for (int i = 0; i < n; i++)
        lat0[i] = exp(additive_log_latency(ct[i]));
    double best = HUGE_VAL;
    for (int i = 0; i < n; i++)
        best = fmin(best, lat0[i]);
    /* pass 0: a model pick wins; 1: a local child wins; 2: a model pick wins, local_share_won = local_share;
       the search's seed is the first whose first round has a model pick of the children's structure */
    uint64_t seed = 1;
    for (int pass = 0; pass <= 2; pass++) {
        model_env e = {.space = f.space};
        for (int i = 0; i < n; i++)
            e.rec[i] = ct[i], e.lat[i] = lat0[i], e.hash[i] = ch[i];
        e.n = n;
        loom_search_opts o = loom_search_defaults();
        o.seed = seed;
        o.threads = 2;
        o.population = 64;
        o.eps_greedy = 0;
        o.local_share = 0.875;
        o.local_share_won = pass == 2 ? 0.875 : 0.5;
        loom_search_env env = {.ctx = &e, .sample = menv_sample, .score = lenv_score, .is_measured = menv_measured,
                               .best_measured = menv_best, .best_measured_latency = menv_best_latency,
                               .model_ready = menv_ready};
        loom_search *s = NULL;
        loom_error err;
        loom_error_clear(&err);
        cr_assert_eq(loom_search_new(&o, f.prog, &env, &s, &err), LOOM_OK, "%s", err.msg);
        loom_search_stats s0 = *loom_search_get_stats(s);
        loom_candidate *c = NULL;
        int nc = 0;
        cr_assert_eq(loom_search_generate(s, 16, &c, &nc, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(nc, 16);
        const loom_search_stats *s1 = loom_search_get_stats(s);
        cr_assert_eq(s1->local_model_fits, 1, "the first round is not warm");
        cr_assert_eq(local_count(&s0, s1), 14);
        cr_assert_eq(s1->model_won_rounds, 0);
        /* the batch's first member is local, its last two the cost model's: the winner has the best's
           trace structure (a best of another structure makes the next round cold, all local) */
        int winner = pass == 1 ? 0 : c[15].trace->ninsts == ref->ninsts ? 15 : 14;
        if (pass == 0 && c[winner].trace->ninsts != ref->ninsts && seed < 64) {
            for (int k = 0; k < nc; k++)
                loom_candidate_free(&c[k]);
            free(c);
            loom_search_free(s);
            seed++, pass--; /* another seed */
            continue;
        }
        cr_assert_eq(c[winner].trace->ninsts, ref->ninsts, "no model pick of the best's structure (seed %lu)",
                     (unsigned long)seed);
        for (int k = 0; k < nc; k++) {
            e.rec[e.n] = c[k].trace, e.hash[e.n] = c[k].hash;
            e.lat[e.n++] = k == winner ? best / 2 : best * 2;
            c[k].trace = NULL; /* e holds it now */
        }
        menv_sort(&e); /* best first, as the database gives them */
        for (int k = 0; k < nc; k++)
            loom_candidate_free(&c[k]);
        free(c);
        loom_search_stats s2 = *loom_search_get_stats(s);
        cr_assert_eq(loom_search_generate(s, 16, &c, &nc, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(nc, 16);
        const loom_search_stats *s3 = loom_search_get_stats(s);
        long nloc = local_count(&s2, s3);
        printf("local_share_won pass %d: round 2 has %ld local children of 16\n", pass, nloc);
        cr_assert_eq(nloc, pass == 0 ? 8 : 14, "pass %d: %ld local children", pass, nloc);
        cr_assert_eq(s3->model_won_rounds, pass == 1 ? 0 : 1, "pass %d", pass);
        for (int k = 0; k < nc; k++)
            loom_candidate_free(&c[k]);
        free(c);
        loom_search_free(s);
        for (int i = 0; i < e.n; i++) { /* the round's 16 (ct[] are freed below) */
            int mine = 1;
            for (int j = 0; j < n && mine; j++)
                mine = e.rec[i] != ct[j];
            if (mine)
                loom_trace_free(e.rec[i]);
        }
    }
    for (int i = 0; i < n; i++)
        loom_trace_free(ct[i]);
    loom_trace_free(ref);
    fx_close(&f);
}
