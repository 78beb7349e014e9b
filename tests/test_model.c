/* The cost model (costmodel/model.c): labels, the random warm-up model,
 * adaptive retraining, held-out quality on synthetic data with a known
 * latency function, save/load, threads, argument errors, and the Spearman
 * and top-k recall statistics. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "../costmodel/model.h"

/* ---- synthetic tuning records ------------------------------------------------ */

#define NF 8

/* A known nonlinear latency over features 0-2 (feature 3 matters only for
 * failures, 4-6 are noise, 7 is the group id as a workload feature):
 * base_g * exp(1.5 x0) * (1 + 4 (x1 - 0.5)^2) / (0.3 + x2), times lognormal
 * noise (sigma 0.05).  With fail_frac > 0, rows with x3 > 1 - fail_frac fail
 * (latency INFINITY). */
typedef struct synth {
    float f[NF * 4096];
    uint64_t g[4096];
    double lat[4096];
    int n;
} synth;

static void synth_gen(synth *s, int n, unsigned long seed, double fail_frac)
{
    cr_assert_leq(n, 4096);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    for (int i = 0; i < n; i++) {
        float *x = s->f + (size_t)i * NF;
        for (int j = 0; j < NF - 1; j++)
            x[j] = (float)gsl_rng_uniform(r);
        int grp = (int)gsl_rng_uniform_int(r, 2);
        x[NF - 1] = (float)grp;
        s->g[i] = grp ? 0xabcdef01ull : 0x12345678ull;
        double base = grp ? 5e-2 : 1e-3;
        double t = base * exp(1.5 * x[0]) * (1 + 4 * (x[1] - 0.5) * (x[1] - 0.5)) / (0.3 + x[2]);
        t *= exp(gsl_ran_gaussian(r, 0.05));
        s->lat[i] = (fail_frac > 0 && x[3] > 1 - fail_frac) ? INFINITY : t;
    }
    s->n = n;
    gsl_rng_free(r);
}

static loom_cost_model *model_new(uint64_t seed)
{
    loom_cost_model_opts o = loom_cost_model_defaults(NF);
    o.seed = seed;
    loom_cost_model *m = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_cost_model_new(&o, &m, &err), LOOM_OK, "%s", err.msg);
    return m;
}

static void add_all(loom_cost_model *m, const synth *s, int from, int to)
{
    loom_error err;
    cr_assert_eq(loom_cost_model_add(m, s->f + (size_t)from * NF, s->g + from, s->lat + from, to - from, &err), LOOM_OK,
                 "%s", err.msg);
}

static loom_cost_model_quality train(loom_cost_model *m, int force)
{
    loom_error err;
    loom_cost_model_quality q;
    int re = 0;
    cr_assert_eq(loom_cost_model_update(m, force, &re, &q, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(re, 1);
    char line[512];
    printf("costmodel: %s\n", loom_cost_model_quality_format(&q, line, sizeof line));
    return q;
}

static void predict(loom_cost_model *m, const float *f, int n, double *out)
{
    loom_error err;
    cr_assert_eq(loom_cost_model_predict(m, f, n, out, &err), LOOM_OK, "%s", err.msg);
}

/* A fresh directory for files; removed by the caller's rm of its files. */
static void tmpdir(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/loom-costmodel-XXXXXX");
    cr_assert_not_null(mkdtemp(buf));
}

/* ---- quality on held-out records ------------------------------------------------ */

Test(costmodel, heldout_quality_after_400_records)
{
    static synth s;
    synth_gen(&s, 400, 1, 0);
    loom_cost_model *m = model_new(43);
    add_all(m, &s, 0, 400);
    loom_cost_model_quality q = train(m, 0);
    cr_assert_eq(q.records, 400);
    cr_assert_eq(q.nheldout, 80, "20%% of 400 held out, got %d", q.nheldout);
    cr_assert_eq(q.ntrain, 320);
    cr_assert_eq(q.k, 10);
    double chance = (double)q.k / q.nheldout;
    printf("costmodel: 400 records, held-out Spearman %.3f, top-%d recall %.2f (chance %.3f), %d rounds, "
           "train %.3f s\n", q.spearman, q.k, q.topk_recall, chance, q.rounds, q.train_seconds);
    cr_assert_gt(q.spearman, 0.8, "held-out Spearman %.3f", q.spearman);
    cr_assert_gt(q.topk_recall, chance, "top-%d recall %.2f not above chance %.3f", q.k, q.topk_recall, chance);
    cr_assert(q.rounds >= 1 && q.rounds <= 10000);
    cr_assert(loom_cost_model_trained(m));

    /* And on records it never saw: fresh draws from the same function. */
    static synth t;
    synth_gen(&t, 1000, 99, 0);
    double *pred = malloc(1000 * sizeof *pred);
    predict(m, t.f, 1000, pred);
    /* Rank quality within each group (scores are comparable within a group). */
    for (int g = 0; g < 2; g++) {
        double pp[1000], tt[1000];
        int k = 0;
        for (int i = 0; i < 1000; i++)
            if ((int)t.f[(size_t)i * NF + NF - 1] == g) {
                pp[k] = pred[i];
                tt[k++] = 1.0 / t.lat[i];
            }
        double rho = loom_spearman(pp, tt, k);
        printf("costmodel: fresh group %d (%d records): Spearman %.3f, top-10 recall %.2f\n", g, k, rho,
               loom_topk_recall(pp, tt, k, 10));
        cr_assert_gt(rho, 0.8);
    }
    free(pred);
    loom_cost_model_free(m);
}

/* Failed candidates (INFINITY) get label 0 and rank below the successes. */
Test(costmodel, failed_records_rank_last)
{
    static synth s, t;
    synth_gen(&s, 400, 2, 0.15);
    loom_cost_model *m = model_new(43);
    add_all(m, &s, 0, 400);
    double lab[400];
    cr_assert_eq(loom_cost_model_labels(m, lab, 400), 400);
    int nfail = 0;
    for (int i = 0; i < 400; i++)
        if (isinf(s.lat[i])) {
            cr_assert_eq(lab[i], 0.0, "failed record %d has label %g", i, lab[i]);
            nfail++;
        } else {
            cr_assert(lab[i] > 0 && lab[i] <= 1);
        }
    cr_assert_gt(nfail, 20);
    loom_cost_model_quality q = train(m, 0);
    cr_assert_gt(q.spearman, 0.5);

    /* Held-out: fresh records.  The fraction of (failed, succeeded) pairs of a
     * group where the failed one scores lower. */
    synth_gen(&t, 600, 77, 0.15);
    double *pred = malloc(600 * sizeof *pred);
    predict(m, t.f, 600, pred);
    long below = 0, pairs = 0, last = 0, nf = 0;
    for (int i = 0; i < 600; i++) {
        if (!isinf(t.lat[i]))
            continue;
        nf++;
        int under_all = 1;
        for (int j = 0; j < 600; j++)
            if (!isinf(t.lat[j]) && t.g[j] == t.g[i]) {
                pairs++;
                below += pred[i] < pred[j];
                under_all &= pred[i] <= pred[j];
            }
        last += under_all;
    }
    double frac = (double)below / pairs;
    printf("costmodel: %ld held-out failures: ranked below a success in %.1f%% of %ld pairs, below every "
           "success of their group %ld times\n", nf, 100 * frac, pairs, last);
    cr_assert_gt(nf, 40);
    cr_assert_gt(frac, 0.5, "failures ranked below successes in only %.1f%% of pairs", 100 * frac);
    free(pred);
    loom_cost_model_free(m);
}

/* ---- labels ------------------------------------------------------------------------ */

Test(costmodel, labels_per_group_and_recomputed)
{
    loom_cost_model *m = model_new(1);
    float f[NF * 7] = {0};
    for (int i = 0; i < NF * 7; i++)
        f[i] = (float)i;
    uint64_t g[7] = {1, 1, 1, 1, 1, 2, 1};
    double t[7] = {2e-3, 1e-3, INFINITY, -1, NAN, 4, 5e-4};
    loom_error err;
    cr_assert_eq(loom_cost_model_add(m, f, g, t, 6, &err), LOOM_OK);
    double lab[7];
    cr_assert_eq(loom_cost_model_labels(m, lab, 7), 6);
    double want[6] = {0.5, 1, 0, 0, 0, 1};
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(lab[i], want[i], 1e-12, "label %d = %g, want %g", i, lab[i], want[i]);
    /* A better latency for group 1 rescales its labels. */
    cr_assert_eq(loom_cost_model_add(m, f + 6 * NF, g + 6, t + 6, 1, &err), LOOM_OK);
    cr_assert_eq(loom_cost_model_records(m), 7);
    cr_assert_eq(loom_cost_model_labels(m, lab, 7), 7);
    double want2[7] = {0.25, 0.5, 0, 0, 0, 1, 1};
    for (int i = 0; i < 7; i++)
        cr_assert_float_eq(lab[i], want2[i], 1e-12, "label %d = %g, want %g", i, lab[i], want2[i]);
    /* A group with only failures: all 0. */
    uint64_t g3 = 3;
    double bad = 0;
    cr_assert_eq(loom_cost_model_add(m, f, &g3, &bad, 1, &err), LOOM_OK);
    cr_assert_eq(loom_cost_model_labels(m, lab, 7), 7);
    double last[8];
    cr_assert_eq(loom_cost_model_labels(m, last, 8), 8);
    cr_assert_eq(last[7], 0.0);
    loom_cost_model_free(m);
}

/* ---- the random model ---------------------------------------------------------------- */

Test(costmodel, random_model_below_min_records)
{
    static synth s;
    synth_gen(&s, 120, 3, 0);
    loom_cost_model *a = model_new(5), *b = model_new(6);
    add_all(a, &s, 0, 99);
    loom_error err;
    int re = -1;
    cr_assert_eq(loom_cost_model_update(a, 0, &re, NULL, &err), LOOM_OK);
    cr_assert_eq(re, 0, "99 records < min_records 100 must not train");
    cr_assert(!loom_cost_model_trained(a));

    double p1[120], p2[120], pb[120];
    predict(a, s.f, 120, p1);
    predict(a, s.f, 120, p2);
    predict(b, s.f, 120, pb);
    int same_b = 0, dup = 0;
    for (int i = 0; i < 120; i++) {
        cr_assert(p1[i] >= 0 && p1[i] < 1, "score %g outside [0,1)", p1[i]);
        cr_assert_eq(memcmp(&p1[i], &p2[i], sizeof(double)), 0, "row %d not deterministic", i);
        same_b += p1[i] == pb[i];
        for (int j = 0; j < i; j++)
            dup += p1[i] == p1[j];
    }
    cr_assert_eq(dup, 0, "different rows got the same random score");
    cr_assert_eq(same_b, 0, "seeds 5 and 6 give the same scores");
    /* Per row: row 7 alone scores what it scored inside the batch. */
    double one;
    predict(a, s.f + 7 * NF, 1, &one);
    cr_assert_eq(one, p1[7]);
    /* Roughly uniform: the mean of 120 scores is near 0.5. */
    double mean = 0;
    for (int i = 0; i < 120; i++)
        mean += p1[i] / 120;
    cr_assert(mean > 0.35 && mean < 0.65, "mean random score %g", mean);
    loom_cost_model_free(a);
    loom_cost_model_free(b);
}

/* ---- adaptive retraining -------------------------------------------------------------- */

static int update(loom_cost_model *m, int force)
{
    loom_error err;
    int re = -1;
    loom_cost_model_quality q;
    cr_assert_eq(loom_cost_model_update(m, force, &re, &q, &err), LOOM_OK, "%s", err.msg);
    return re;
}

Test(costmodel, retrains_only_after_20_percent_growth)
{
    static synth s;
    synth_gen(&s, 200, 4, 0);
    loom_cost_model *m = model_new(43);
    cr_assert_eq(update(m, 1), 0, "nothing to train on: no retrain even when forced");
    add_all(m, &s, 0, 99);
    cr_assert_eq(update(m, 0), 0);
    add_all(m, &s, 99, 100);
    cr_assert_eq(update(m, 0), 1, "100 records: first training");
    double before[50], after[50];
    predict(m, s.f + 150 * NF, 50, before);
    cr_assert_eq(update(m, 0), 0, "no new records");
    add_all(m, &s, 100, 119);
    cr_assert_eq(update(m, 0), 0, "19 new records < 20%% of 100");
    add_all(m, &s, 119, 120);
    cr_assert_eq(update(m, 0), 1, "20 new records = 20%% of 100");
    add_all(m, &s, 120, 143);
    cr_assert_eq(update(m, 0), 0, "23 new records < 20%% of 120");
    add_all(m, &s, 143, 144);
    cr_assert_eq(update(m, 0), 1, "24 new records = 20%% of 120");
    predict(m, s.f + 150 * NF, 50, after);
    int changed = 0;
    for (int i = 0; i < 50; i++)
        changed += before[i] != after[i];
    cr_assert_gt(changed, 0, "retraining on more records changed no prediction");
    cr_assert_eq(update(m, 1), 1, "force retrains");
    loom_cost_model_free(m);
}

Test(costmodel, tiny_force_training_skips_quality)
{
    static synth s;
    synth_gen(&s, 5, 5, 0);
    loom_cost_model *m = model_new(43);
    add_all(m, &s, 0, 5);
    loom_cost_model_quality q = train(m, 1);
    cr_assert_eq(q.nheldout, 0, "1 held-out record cannot be ranked");
    cr_assert(isnan(q.spearman) && isnan(q.topk_recall));
    cr_assert_eq(q.records, 5);
    cr_assert(loom_cost_model_trained(m));
    loom_cost_model_free(m);
}

/* ---- save and load ------------------------------------------------------------------------ */

Test(costmodel, save_load_predicts_bit_identically)
{
    static synth s, t;
    synth_gen(&s, 300, 6, 0.1);
    synth_gen(&t, 500, 7, 0.1);
    loom_cost_model *m = model_new(11);
    add_all(m, &s, 0, 300);
    train(m, 0);
    double p[500], r[500];
    predict(m, t.f, 500, p);
    char dir[64], path[128];
    tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.json", dir);
    loom_error err;
    cr_assert_eq(loom_cost_model_save(m, path, &err), LOOM_OK, "%s", err.msg);

    loom_cost_model *n = model_new(999);
    cr_assert(!loom_cost_model_trained(n));
    cr_assert_eq(loom_cost_model_load(n, path, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom_cost_model_trained(n));
    predict(n, t.f, 500, r);
    cr_assert_eq(memcmp(p, r, sizeof p), 0, "loaded model predicts differently");
    /* The saved records-at-training (300) govern the next retrain: 359 records do not retrain, 360 do. */
    add_all(n, &s, 0, 300);
    add_all(n, &t, 0, 59);
    cr_assert_eq(update(n, 0), 0);
    add_all(n, &t, 59, 60);
    cr_assert_eq(update(n, 0), 1);

    /* The file is XGBoost JSON. */
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_eq(fgetc(f), '{');
    fclose(f);

    /* An untrained model round-trips its seed: the random model is restored. */
    loom_cost_model *u = model_new(7), *v = model_new(8);
    char upath[128];
    snprintf(upath, sizeof upath, "%s/untrained", dir);
    cr_assert_eq(loom_cost_model_save(u, upath, &err), LOOM_OK, "%s", err.msg);
    predict(u, t.f, 500, p);
    cr_assert_eq(loom_cost_model_load(v, upath, &err), LOOM_OK, "%s", err.msg);
    predict(v, t.f, 500, r);
    cr_assert_eq(memcmp(p, r, sizeof p), 0);
    cr_assert(!loom_cost_model_trained(v));
    /* Loading an untrained save over a trained model drops its booster. */
    cr_assert_eq(loom_cost_model_load(n, upath, &err), LOOM_OK, "%s", err.msg);
    cr_assert(!loom_cost_model_trained(n));

    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    loom_cost_model_free(m);
    loom_cost_model_free(n);
    loom_cost_model_free(u);
    loom_cost_model_free(v);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

Test(costmodel, load_errors_name_the_file)
{
    static synth s;
    synth_gen(&s, 150, 8, 0);
    loom_cost_model *m = model_new(43);
    add_all(m, &s, 0, 150);
    train(m, 0);
    double before[20], after[20];
    predict(m, s.f, 20, before);
    char dir[64], path[128], meta[160];
    tmpdir(dir, sizeof dir);
    loom_error err;

    /* Missing. */
    snprintf(path, sizeof path, "%s/missing.json", dir);
    loom_error_clear(&err);
    cr_assert_eq(loom_cost_model_load(m, path, &err), LOOM_ERR_IO);
    cr_assert_str_eq(err.file, path);
    printf("costmodel: missing: %s: %s\n", err.file, err.msg);

    /* Corrupt booster (a truncated JSON document). */
    snprintf(path, sizeof path, "%s/model.json", dir);
    snprintf(meta, sizeof meta, "%s.meta", path);
    cr_assert_eq(loom_cost_model_save(m, path, &err), LOOM_OK, "%s", err.msg);
    write_text(path, "{\"learner\": {\"gradient_booster\": {\"model\": {\"trees\": [");
    loom_error_clear(&err);
    cr_assert_eq(loom_cost_model_load(m, path, &err), LOOM_ERR_DATA);
    cr_assert_str_eq(err.file, path);
    cr_assert_null(strstr(err.msg, "Stack trace"), "%s", err.msg);
    printf("costmodel: corrupt booster: %s: %s\n", err.file, err.msg);
    write_text(path, "not json at all");
    loom_error_clear(&err);
    cr_assert_eq(loom_cost_model_load(m, path, &err), LOOM_ERR_DATA);
    cr_assert_str_eq(err.file, path);

    /* Booster removed, sidecar present. */
    remove(path);
    loom_error_clear(&err);
    cr_assert_eq(loom_cost_model_load(m, path, &err), LOOM_ERR_IO);
    cr_assert_str_eq(err.file, path);

    /* Sidecar removed, booster present: the sidecar is named. */
    cr_assert_eq(loom_cost_model_save(m, path, &err), LOOM_OK, "%s", err.msg);
    remove(meta);
    loom_error_clear(&err);
    cr_assert_eq(loom_cost_model_load(m, path, &err), LOOM_ERR_IO);
    cr_assert_str_eq(err.file, meta);

    /* Corrupt sidecar. */
    cr_assert_eq(loom_cost_model_save(m, path, &err), LOOM_OK, "%s", err.msg);
    write_text(meta, "{\"format\": \"something else\"}");
    loom_error_clear(&err);
    cr_assert_eq(loom_cost_model_load(m, path, &err), LOOM_ERR_DATA);
    cr_assert_str_eq(err.file, meta);
    printf("costmodel: corrupt sidecar: %s: %s\n", err.file, err.msg);

    /* A model with a different number of features. */
    cr_assert_eq(loom_cost_model_save(m, path, &err), LOOM_OK, "%s", err.msg);
    loom_cost_model_opts o = loom_cost_model_defaults(NF + 1);
    loom_cost_model *w = NULL;
    cr_assert_eq(loom_cost_model_new(&o, &w, &err), LOOM_OK);
    loom_error_clear(&err);
    cr_assert_eq(loom_cost_model_load(w, path, &err), LOOM_ERR_INVALID);
    cr_assert_str_eq(err.file, meta);
    cr_assert(!loom_cost_model_trained(w));

    /* Failed loads left m as it was. */
    predict(m, s.f, 20, after);
    cr_assert_eq(memcmp(before, after, sizeof before), 0);

    /* Saving into a directory that does not exist names the file. */
    snprintf(path, sizeof path, "%s/no/such/dir/model.json", dir);
    loom_error_clear(&err);
    cr_assert_eq(loom_cost_model_save(m, path, &err), LOOM_ERR_IO);
    cr_assert_not_null(strstr(err.file, "no/such/dir/model.json"), "error file \"%s\"", err.file);

    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    loom_cost_model_free(w);
    loom_cost_model_free(m);
}

/* ---- invalid arguments ----------------------------------------------------------------------- */

Test(costmodel, invalid_arguments)
{
    loom_error err;
    loom_cost_model *m = NULL;
    loom_cost_model_opts o = loom_cost_model_defaults(0);
    cr_assert_eq(loom_cost_model_new(&o, &m, &err), LOOM_ERR_INVALID);
    cr_assert_null(m);
    cr_assert_eq(loom_cost_model_new(NULL, &m, &err), LOOM_ERR_INVALID);
    o = loom_cost_model_defaults(NF);
    cr_assert_eq(loom_cost_model_new(&o, NULL, &err), LOOM_ERR_INVALID);
    o.heldout = 1.0;
    cr_assert_eq(loom_cost_model_new(&o, &m, &err), LOOM_ERR_INVALID);
    o = loom_cost_model_defaults(NF);
    o.num_rounds = 0;
    cr_assert_eq(loom_cost_model_new(&o, &m, &err), LOOM_ERR_INVALID);
    o = loom_cost_model_defaults(NF);
    o.retrain_growth = NAN;
    cr_assert_eq(loom_cost_model_new(&o, &m, &err), LOOM_ERR_INVALID);

    m = model_new(1);
    float f[NF] = {0};
    uint64_t g = 1;
    double t = 1, s;
    cr_assert_eq(loom_cost_model_add(NULL, f, &g, &t, 1, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_add(m, NULL, &g, &t, 1, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_add(m, f, NULL, &t, 1, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_add(m, f, &g, NULL, 1, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_add(m, f, &g, &t, -1, &err), LOOM_ERR_INVALID);
    f[3] = INFINITY;
    cr_assert_eq(loom_cost_model_add(m, f, &g, &t, 1, &err), LOOM_ERR_INVALID);
    cr_assert_not_null(strstr(err.msg, "row 0 column 3"), "%s", err.msg);
    cr_assert_eq(loom_cost_model_predict(m, f, 1, &s, &err), LOOM_ERR_INVALID);
    f[3] = NAN; /* missing is fine */
    cr_assert_eq(loom_cost_model_add(m, f, &g, &t, 1, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_cost_model_records(m), 1, "only the valid add counted");
    cr_assert_eq(loom_cost_model_add(m, NULL, NULL, NULL, 0, &err), LOOM_OK);

    cr_assert_eq(loom_cost_model_predict(NULL, f, 1, &s, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_predict(m, NULL, 1, &s, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_predict(m, f, 1, NULL, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_predict(m, f, -2, &s, &err), LOOM_ERR_INVALID);
    int re;
    cr_assert_eq(loom_cost_model_update(NULL, 1, &re, NULL, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_update(m, 1, NULL, NULL, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_save(NULL, "/tmp/x", &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_save(m, NULL, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_load(NULL, "/tmp/x", &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_load(m, NULL, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_cost_model_labels(m, NULL, 1), -1);
    cr_assert_eq(loom_cost_model_records(NULL), 0);
    cr_assert_eq(loom_cost_model_trained(NULL), 0);
    loom_cost_model_free(NULL);
    loom_cost_model_free(m);
}

/* ---- threads ------------------------------------------------------------------------------------ */

typedef struct pjob {
    loom_cost_model *m;
    const float *f;
    int n;
    double *out;
    loom_status st;
} pjob;

static void *pthread_predict(void *arg)
{
    pjob *j = arg;
    loom_error err;
    for (int rep = 0; rep < 20 && j->st == LOOM_OK; rep++)
        j->st = loom_cost_model_predict(j->m, j->f, j->n, j->out, &err);
    return NULL;
}

static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(costmodel, concurrent_predictions_match_serial)
{
    static synth s, t;
    synth_gen(&s, 200, 9, 0);
    synth_gen(&t, 400, 10, 0);
    loom_cost_model *m = model_new(43);
    add_all(m, &s, 0, 200);
    int threads_before = count_threads();
    train(m, 0);
    /* nthread = 1: XGBoost started no OpenMP pool (forked measurements stay safe). */
    cr_assert_eq(count_threads(), threads_before, "training with nthread 1 left threads behind");
    static double serial[400], par[4][400];
    predict(m, t.f, 400, serial);
    pthread_t th[4];
    pjob jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (pjob){m, t.f + (size_t)i * 100 * NF, 100, par[i], LOOM_OK};
        cr_assert_eq(pthread_create(&th[i], NULL, pthread_predict, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(jobs[i].st, LOOM_OK);
        cr_assert_eq(memcmp(par[i], serial + i * 100, 100 * sizeof(double)), 0, "thread %d differs", i);
    }
    loom_cost_model_free(m);
}

typedef struct ujob {
    loom_cost_model *m;
    int retrains;
    loom_status st;
} ujob;

static void *pthread_update(void *arg)
{
    ujob *j = arg;
    loom_error err;
    for (int rep = 0; rep < 3 && j->st == LOOM_OK; rep++) {
        int re = 0;
        j->st = loom_cost_model_update(j->m, 1, &re, NULL, &err);
        j->retrains += re;
    }
    return NULL;
}

/* Predictions keep being served (by the old booster) while update trains. */
Test(costmodel, predict_while_training)
{
    static synth s, t;
    synth_gen(&s, 300, 12, 0.1);
    synth_gen(&t, 400, 13, 0);
    loom_cost_model *m = model_new(43);
    add_all(m, &s, 0, 300);
    train(m, 0);
    pthread_t up, th[2];
    ujob uj = {m, 0, LOOM_OK};
    static double out[2][200];
    pjob jobs[2];
    cr_assert_eq(pthread_create(&up, NULL, pthread_update, &uj), 0);
    for (int i = 0; i < 2; i++) {
        jobs[i] = (pjob){m, t.f + (size_t)i * 200 * NF, 200, out[i], LOOM_OK};
        cr_assert_eq(pthread_create(&th[i], NULL, pthread_predict, &jobs[i]), 0);
    }
    /* Records added concurrently too. */
    add_all(m, &t, 0, 100);
    pthread_join(up, NULL);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(jobs[i].st, LOOM_OK);
        for (int r = 0; r < 200; r++)
            cr_assert(isfinite(out[i][r]));
    }
    cr_assert_eq(uj.st, LOOM_OK);
    cr_assert_eq(uj.retrains, 3);
    cr_assert_eq(loom_cost_model_records(m), 400);
    loom_cost_model_free(m);
}

/* ---- statistics ------------------------------------------------------------------------------------ */

Test(costmodel, spearman_hand_computed)
{
    double a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50}, c[5] = {5, 4, 3, 2, 1};
    cr_assert_float_eq(loom_spearman(a, b, 5), 1.0, 1e-12);
    cr_assert_float_eq(loom_spearman(a, c, 5), -1.0, 1e-12);
    /* Monotone but nonlinear: still 1. */
    double e[5] = {1, 8, 27, 64, 1000};
    cr_assert_float_eq(loom_spearman(a, e, 5), 1.0, 1e-12);
    /* Ties: b ranks (1, 2, 3.5, 5, 3.5); Pearson with (1..5) = 8 / sqrt(10 * 9.5). */
    double t[5] = {5, 6, 7, 8, 7};
    cr_assert_float_eq(loom_spearman(a, t, 5), 8.0 / sqrt(95.0), 1e-12);
    /* Ties on both sides: ranks (1.5,1.5,3.5,3.5) and (1.5,3.5,1.5,3.5): 0. */
    double p[4] = {1, 1, 2, 2}, q[4] = {1, 2, 1, 2};
    cr_assert_float_eq(loom_spearman(p, q, 4), 0.0, 1e-12);
    /* d^2 formula case without ties: x = (1,2,3,4), y = (1,3,2,4): 1 - 6*2/(4*15) = 0.8. */
    double x[4] = {1, 2, 3, 4}, y[4] = {1, 3, 2, 4};
    cr_assert_float_eq(loom_spearman(x, y, 4), 0.8, 1e-12);
    /* Undefined: fewer than 2 values, a constant side, NULL. */
    cr_assert(isnan(loom_spearman(a, b, 1)));
    double k[3] = {2, 2, 2};
    cr_assert(isnan(loom_spearman(a, k, 3)));
    cr_assert(isnan(loom_spearman(NULL, b, 3)));
}

Test(costmodel, topk_recall_cases)
{
    double pred[4] = {0.9, 0.8, 0.1, 0.2}, truth[4] = {1, 0.5, 0.9, 0.1};
    /* predicted top 2 = {0, 1}, true top 2 = {0, 2}. */
    cr_assert_float_eq(loom_topk_recall(pred, truth, 4, 2), 0.5, 1e-12);
    cr_assert_float_eq(loom_topk_recall(pred, truth, 4, 1), 1.0, 1e-12);
    /* k = n and k > n: everything is in both sets. */
    cr_assert_float_eq(loom_topk_recall(pred, truth, 4, 4), 1.0, 1e-12);
    cr_assert_float_eq(loom_topk_recall(pred, truth, 4, 9), 1.0, 1e-12);
    /* Reversed prediction: top 2 predicted = {2, 3}, neither truly top 2. */
    double rev[4] = {0.1, 0.2, 0.9, 0.8};
    cr_assert_float_eq(loom_topk_recall(rev, truth, 4, 2), 0.5, 1e-12); /* index 2 is truly 2nd */
    double worst[4] = {0, 0.1, 0.2, 0.9};
    cr_assert_float_eq(loom_topk_recall(worst, truth, 4, 1), 0.0, 1e-12);
    /* Ties in truth at the k-th place all count as top k. */
    double tt[4] = {1, 1, 1, 0}, pp[4] = {0, 0.5, 0.9, 1.0};
    cr_assert_float_eq(loom_topk_recall(pp, tt, 4, 2), 0.5, 1e-12);
    /* Ties in prediction: lower index first. */
    double flat[4] = {1, 1, 1, 1}, t2[4] = {0, 0, 1, 1};
    cr_assert_float_eq(loom_topk_recall(flat, t2, 4, 2), 0.0, 1e-12);
    double t3[4] = {1, 1, 0, 0};
    cr_assert_float_eq(loom_topk_recall(flat, t3, 4, 2), 1.0, 1e-12);
    /* NaN predictions rank last. */
    double np[3] = {NAN, 0.1, 0.2}, nt[3] = {1, 0, 0.5};
    cr_assert_float_eq(loom_topk_recall(np, nt, 3, 1), 0.0, 1e-12);
    cr_assert_float_eq(loom_topk_recall(np, nt, 3, 2), 0.5, 1e-12);
    /* Undefined. */
    cr_assert(isnan(loom_topk_recall(pred, truth, 4, 0)));
    cr_assert(isnan(loom_topk_recall(pred, truth, 0, 2)));
    cr_assert(isnan(loom_topk_recall(NULL, truth, 4, 2)));
    /* A random ranking averages k/n over many draws. */
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    double sum = 0, rp[50], rt[50];
    for (int it = 0; it < 400; it++) {
        for (int i = 0; i < 50; i++) {
            rp[i] = gsl_rng_uniform(r);
            rt[i] = gsl_rng_uniform(r);
        }
        sum += loom_topk_recall(rp, rt, 50, 10);
    }
    gsl_rng_free(r);
    cr_assert(fabs(sum / 400 - 0.2) < 0.03, "random recall %g, expected about 10/50", sum / 400);
}

Test(costmodel, quality_format_line)
{
    loom_cost_model_quality q = {320, 80, 0.9123, 0.7, 10, 0.41, 57, 400};
    char buf[256];
    loom_cost_model_quality_format(&q, buf, sizeof buf);
    cr_assert_not_null(strstr(buf, "Spearman 0.912"), "%s", buf);
    cr_assert_not_null(strstr(buf, "top-10 recall 0.70"), "%s", buf);
    cr_assert_not_null(strstr(buf, "400 records"), "%s", buf);
}
