/* loom benchmark: the cost model (costmodel/model.c) on synthetic tuning
 * records.
 *
 *   bench_model [--features F] [--max-records N] [--seed S]
 *
 * Data: F feature columns (default 180, about MetaSchedule's 164 per-store
 * features plus loom's sparse groups); columns 0-3 drive a known nonlinear
 * latency, base_g * exp(1.5 x0) * (1 + 4 (x1 - 0.5)^2) / (0.3 + x2) times
 * lognormal noise (sigma 0.05), over two groups (workloads) whose base
 * latencies differ 50x; 10% of the rows (x3 > 0.9) fail (latency INFINITY);
 * the other columns are uniform noise.  Printed:
 *
 *  1. training: for N = 100, 200, 500, 1000, 2000, 5000 (up to
 *     --max-records) records, loom_cost_model_update (force) with the default
 *     options (nthread 1): the boosting rounds early stopping kept, the wall
 *     and CPU time of the whole update (held-out booster + final booster), the
 *     held-out Spearman and top-10 recall it reports; then the Spearman and
 *     top-10 recall per group on 2000 fresh rows (successes only), which is
 *     how the search uses the scores;
 *  2. prediction throughput: rows scored per second in batches of 64 and 512
 *     (one thread), for the trained booster and the random model;
 *  3. objective: reg:squarederror (loom's choice) against rank:pairwise with
 *     the group as query id, and against MetaSchedule's label weighting
 *     (weight = label, so failures weigh 0), each trained directly through the
 *     XGBoost C API with MetaSchedule's parameters (hist) for 100 rounds on
 *     1000 records and scored per group on the fresh rows: Spearman and top-10
 *     recall over successes, and the fraction of (failure, success) pairs in
 *     which the failure scores lower.
 *
 * Timings are wall time on whatever else the machine runs; single-threaded.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <xgboost/c_api.h>

#include "../costmodel/model.h"
#include "../dsl/ir/util.h"

typedef struct data {
    int n, nf;
    float *f;
    uint64_t *g;
    double *lat;
} data;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static data gen(int n, int nf, unsigned long seed)
{
    data d = {n, nf, malloc((size_t)n * nf * sizeof(float)), malloc((size_t)n * sizeof(uint64_t)),
              malloc((size_t)n * sizeof(double))};
    if (!d.f || !d.g || !d.lat) {
        fprintf(stderr, "bench_model: out of memory\n");
        exit(1);
    }
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    for (int i = 0; i < n; i++) {
        float *x = d.f + (size_t)i * nf;
        for (int j = 0; j < nf; j++)
            x[j] = (float)gsl_rng_uniform(r);
        int grp = (int)gsl_rng_uniform_int(r, 2);
        x[nf - 1] = (float)grp;
        d.g[i] = (uint64_t)grp;
        double t = (grp ? 5e-2 : 1e-3) * exp(1.5 * x[0]) * (1 + 4 * (x[1] - 0.5) * (x[1] - 0.5)) / (0.3 + x[2]);
        t *= exp(gsl_ran_gaussian(r, 0.05));
        d.lat[i] = x[3] > 0.9 ? INFINITY : t;
    }
    gsl_rng_free(r);
    return d;
}

static void data_free(data *d)
{
    free(d->f);
    free(d->g);
    free(d->lat);
}

typedef struct fresh_quality {
    double spearman, recall, fail_below;
} fresh_quality;

/* Per-group Spearman and top-10 recall over successes (truth 1/latency),
 * averaged over the groups, and the fraction of same-group (failure, success)
 * pairs where the failure scores lower. */
static fresh_quality score_fresh(const data *t, const double *pred)
{
    fresh_quality q = {0, 0, 0};
    double *pp = malloc((size_t)t->n * sizeof *pp), *tt = malloc((size_t)t->n * sizeof *tt);
    long below = 0, pairs = 0;
    for (uint64_t g = 0; g < 2; g++) {
        int k = 0;
        for (int i = 0; i < t->n; i++)
            if (t->g[i] == g && !isinf(t->lat[i])) {
                pp[k] = pred[i];
                tt[k++] = 1 / t->lat[i];
            }
        q.spearman += loom_spearman(pp, tt, k) / 2;
        q.recall += loom_topk_recall(pp, tt, k, 10) / 2;
        for (int i = 0; i < t->n; i++)
            if (t->g[i] == g && isinf(t->lat[i]))
                for (int j = 0; j < t->n; j++)
                    if (t->g[j] == g && !isinf(t->lat[j])) {
                        pairs++;
                        below += pred[i] < pred[j];
                    }
    }
    q.fail_below = pairs ? (double)below / pairs : NAN;
    free(pp);
    free(tt);
    return q;
}

static void check(loom_status st, const loom_error *err)
{
    if (st != LOOM_OK) {
        fprintf(stderr, "bench_model: %s\n", err->msg);
        exit(1);
    }
}

#define XGB(call)                                                                                   \
    do {                                                                                            \
        if ((call) != 0) {                                                                          \
            fprintf(stderr, "bench_model: %s failed: %s\n", #call, XGBGetLastError());              \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

typedef struct idx_group {
    uint64_t g;
    int i;
} idx_group;

static int cmp_group(const void *a, const void *b)
{
    const idx_group *x = a, *y = b;
    if (x->g != y->g)
        return x->g < y->g ? -1 : 1;
    return x->i - y->i;
}

/* Train with the XGBoost C API directly: objective "reg" (squared error),
 * "weighted" (squared error, weight = label) or "rank" (rank:pairwise, the
 * group as query id; rows sorted by group). */
static BoosterHandle train_variant(const data *d, const char *variant, int rounds)
{
    int n = d->n, nf = d->nf;
    idx_group *ord = malloc((size_t)n * sizeof *ord);
    for (int i = 0; i < n; i++)
        ord[i] = (idx_group){d->g[i], i};
    qsort(ord, (size_t)n, sizeof *ord, cmp_group);
    /* Labels per group: best / latency, failures 0. */
    double best[2] = {INFINITY, INFINITY};
    for (int i = 0; i < n; i++)
        if (!isinf(d->lat[i]) && d->lat[i] < best[d->g[i]])
            best[d->g[i]] = d->lat[i];
    float *f = malloc((size_t)n * nf * sizeof *f), *y = malloc((size_t)n * sizeof *y);
    unsigned gsize[2] = {0, 0};
    for (int r = 0; r < n; r++) {
        int i = ord[r].i;
        memcpy(f + (size_t)r * nf, d->f + (size_t)i * nf, (size_t)nf * sizeof *f);
        y[r] = isinf(d->lat[i]) ? 0.0f : (float)(best[d->g[i]] / d->lat[i]);
        gsize[d->g[i]]++;
    }
    DMatrixHandle dm;
    BoosterHandle b;
    XGB(XGDMatrixCreateFromMat(f, (bst_ulong)n, (bst_ulong)nf, NAN, &dm));
    XGB(XGDMatrixSetFloatInfo(dm, "label", y, (bst_ulong)n));
    int rank = strcmp(variant, "rank") == 0;
    if (strcmp(variant, "weighted") == 0)
        XGB(XGDMatrixSetFloatInfo(dm, "weight", y, (bst_ulong)n));
    if (rank)
        XGB(XGDMatrixSetUIntInfo(dm, "group", gsize, 2));
    XGB(XGBoosterCreate(&dm, 1, &b));
    const char *params[][2] = {
        {"verbosity", "0"}, {"objective", rank ? "rank:pairwise" : "reg:squarederror"},
        {"max_depth", "10"}, {"gamma", "0.001"}, {"min_child_weight", "0"}, {"eta", "0.2"},
        {"seed", "43"}, {"nthread", "1"}, {"tree_method", "hist"},
    };
    for (size_t p = 0; p < sizeof params / sizeof params[0]; p++)
        XGB(XGBoosterSetParam(b, params[p][0], params[p][1]));
    for (int r = 0; r < rounds; r++)
        XGB(XGBoosterUpdateOneIter(b, r, dm));
    XGB(XGDMatrixFree(dm));
    free(f);
    free(y);
    free(ord);
    return b;
}

static void predict_variant(BoosterHandle b, const data *t, double *out)
{
    DMatrixHandle dm;
    XGB(XGDMatrixCreateFromMat(t->f, (bst_ulong)t->n, (bst_ulong)t->nf, NAN, &dm));
    bst_ulong len;
    const float *res;
    XGB(XGBoosterPredict(b, dm, 0, 0, 0, &len, &res));
    for (int i = 0; i < t->n; i++)
        out[i] = res[i];
    XGB(XGDMatrixFree(dm));
}

int main(int argc, char **argv)
{
    int nf = 180, maxn = 5000;
    unsigned long seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--features") && i + 1 < argc)
            nf = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-records") && i + 1 < argc)
            maxn = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_model [--features F] [--max-records N] [--seed S]\n");
            return 2;
        }
    }
    if (nf < 5 || maxn < 100) {
        fprintf(stderr, "bench_model: need --features >= 5 and --max-records >= 100\n");
        return 2;
    }
    XGB(XGBSetGlobalConfig("{\"verbosity\": 0}"));
    data all = gen(maxn, nf, seed), fresh = gen(2000, nf, seed + 1000);
    double *pred = malloc((size_t)fresh.n * sizeof *pred);
    loom_error err;

    printf("== training (%d features, defaults: nthread 1, up to 10000 rounds, early stop 50) ==\n", nf);
    printf("%8s %7s %9s %9s %10s %8s %12s %10s %11s\n", "records", "rounds", "train s", "cpu s", "ho Spearm",
           "ho top10", "fresh Spear", "fresh t10", "fail below");
    loom_cost_model *m = NULL;
    const int sizes[] = {100, 200, 500, 1000, 2000, 5000, 10000, 20000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0] && sizes[s] <= maxn; s++) {
        loom_cost_model_opts o = loom_cost_model_defaults(nf);
        loom_cost_model_free(m);
        check(loom_cost_model_new(&o, &m, &err), &err);
        check(loom_cost_model_add(m, all.f, all.g, all.lat, sizes[s], &err), &err);
        int re = 0;
        loom_cost_model_quality q;
        double c0 = cpu_now();
        check(loom_cost_model_update(m, 1, &re, &q, &err), &err);
        double cpu = cpu_now() - c0;
        check(loom_cost_model_predict(m, fresh.f, fresh.n, pred, &err), &err);
        fresh_quality fq = score_fresh(&fresh, pred);
        printf("%8d %7d %9.3f %9.3f %10.3f %8.2f %12.3f %10.2f %10.1f%%\n", sizes[s], q.rounds, q.train_seconds, cpu,
               q.spearman,
               q.topk_recall, fq.spearman, fq.recall, 100 * fq.fail_below);
        fflush(stdout);
    }

    printf("\n== prediction throughput (one thread) ==\n");
    loom_cost_model_opts o = loom_cost_model_defaults(nf);
    loom_cost_model *rnd = NULL;
    check(loom_cost_model_new(&o, &rnd, &err), &err);
    loom_cost_model *which[2] = {m, rnd};
    const char *names[2] = {"booster", "random"};
    for (int w = 0; w < 2; w++)
        for (int batch = 64; batch <= 512; batch *= 8) {
            long rows = 0;
            double t0 = loom_now_seconds(), t;
            do {
                for (int off = 0; off + batch <= fresh.n; off += batch) {
                    check(loom_cost_model_predict(which[w], fresh.f + (size_t)off * nf, batch, pred, &err), &err);
                    rows += batch;
                }
                t = loom_now_seconds() - t0;
            } while (t < 0.5);
            printf("%-8s batch %3d: %10.0f rows/s (%.2f us/row)\n", names[w], batch, rows / t, 1e6 * t / rows);
        }
    loom_cost_model_free(rnd);
    loom_cost_model_free(m);

    int nobj = maxn < 1000 ? maxn : 1000;
    data sub = all;
    sub.n = nobj;
    printf("\n== objective (%d records, fresh %d rows, per-group averages, successes only) ==\n", nobj, fresh.n);
    printf("%-24s %6s %9s %8s %11s %8s\n", "objective", "rounds", "Spearman", "top10", "fail below", "train s");
    const char *variants[3] = {"reg", "weighted", "rank"};
    const char *labels[3] = {"reg:squarederror (loom)", "squarederror, w = label", "rank:pairwise (qid)"};
    for (int v = 0; v < 3; v++)
        for (int rounds = 100; rounds <= 100; rounds += 200) {
            double t0 = loom_now_seconds();
            BoosterHandle b = train_variant(&sub, variants[v], rounds);
            double t = loom_now_seconds() - t0;
            predict_variant(b, &fresh, pred);
            fresh_quality fq = score_fresh(&fresh, pred);
            printf("%-24s %6d %9.3f %8.2f %10.1f%% %8.3f\n", labels[v], rounds, fq.spearman, fq.recall,
                   100 * fq.fail_below, t);
            XGB(XGBoosterFree(b));
        }
    free(pred);
    data_free(&all);
    data_free(&fresh);
    return 0;
}
