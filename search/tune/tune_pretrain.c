/* Pre-training the campaign's cost model on the simulator (tune.h
 * loom_tune_opts.pretrain; issue 13).  Without it the model is a random
 * hash until 100 records exist, so a campaign of fewer trials never ranks a
 * candidate by a model.  Here, before the first round, `pretrain` distinct
 * valid schedules of the campaign's design space are simulated on the same
 * data set (runtime/sim: deterministic, milliseconds per schedule) and the
 * model is trained on them, as its own label group (labels are normalised
 * per group, so simulated seconds are never compared with measured ones):
 * the first batch is then ranked by a model that has seen this workload on
 * this data.  Measured records join the same model as they arrive (another
 * group) and take over as it retrains.  The idea is TLP's and
 * MetaSchedule's transfer of a model trained elsewhere (Zhai et al., ASPLOS
 * 2023; Shao et al., NeurIPS 2022, section 5), with the simulator as the
 * "elsewhere".
 * Transfer (opts.transfer_dirs, `loom tune --transfer DIR`): the records
 * of earlier campaign directories for the same workload join the same
 * first training, whatever data set and target they were measured on:
 * each trace is replayed on this campaign's program, validated, and its
 * features computed on this campaign's data (the schedule's structure is
 * what transfers; the data statistics are this data's), with its measured
 * latency as the label in a group of its own per directory, data set and
 * target (labels are normalised per group, so a slower machine's seconds
 * are never compared with this one's).  MetaSchedule and TLP pre-train on
 * earlier tuning logs the same way (TLP: Zhai et al., ASPLOS 2023).
 * Records of other workloads are skipped and counted: their features would
 * need their own data sets, which a record names only by fingerprint. */
#include <errno.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../costmodel/features.h"
#include "../../dsl/ir/util.h"
#include "../../traces/trace.h"
#include "../../runtime/runner/runner.h"
#include "../../traces/validate.h"
#include "../strategy/search.h"
#include "../strategy/search_internal.h"
#include "tune_internal.h"

/* ---- simulated latencies cached across campaigns (issue 26) ----
 * One file per (workload, data set, simulator target, simulator model
 * version): $LOOM_CACHE/sim/KEY.tsv (else ~/.cache/loom/sim, else
 * /tmp/loom-cache/sim), a line "HASH LATENCY" per simulated schedule
 * (loom_schedule_hash, seconds or inf).  The simulator is deterministic, so
 * a hit gives the bits a simulation would; a file that cannot be read or
 * written only costs the simulations. */
typedef struct sim_entry {
    uint64_t h;
    double lat;
} sim_entry;

typedef struct sim_cache {
    char path[1100];
    sim_entry *e;
    int n;
} sim_cache;

static int cmp_entry(const void *a, const void *b)
{
    uint64_t x = ((const sim_entry *)a)->h, y = ((const sim_entry *)b)->h;
    return x < y ? -1 : x > y;
}

static void cache_open(sim_cache *k, const tune_ctx *c, const loom_target *t)
{
    memset(k, 0, sizeof *k);
    char dir[1024];
    loom_cache_dir("sim", dir, sizeof dir);
    char parent[1024];
    snprintf(parent, sizeof parent, "%.*s", (int)(strrchr(dir, '/') - dir), dir);
    if ((mkdir(parent, 0777) && errno != EEXIST) || (mkdir(dir, 0777) && errno != EEXIST))
        return;
    uint64_t key = loom_fnv1a(0xcbf29ce484222325ULL, &c->whash, sizeof c->whash);
    key = loom_fnv1a(key, &c->dfp, sizeof c->dfp);
    key = loom_fnv1a(key, t, sizeof *t);
    int ver = LOOM_SIM_MODEL_VERSION;
    key = loom_fnv1a(key, &ver, sizeof ver);
    snprintf(k->path, sizeof k->path, "%s/%016llx.tsv", dir, (unsigned long long)key);
    FILE *f = fopen(k->path, "r");
    int cap = 0;
    unsigned long long h;
    char lat[64];
    while (f && fscanf(f, "%llx %63s", &h, lat) == 2) {
        if (k->n == cap) {
            sim_entry *ne = realloc(k->e, sizeof *ne * (size_t)(cap = cap ? 2 * cap : 256));
            if (!ne)
                break;
            k->e = ne;
        }
        k->e[k->n++] = (sim_entry){(uint64_t)h, strtod(lat, NULL)};
    }
    if (f)
        fclose(f);
    if (k->n)
        qsort(k->e, (size_t)k->n, sizeof *k->e, cmp_entry);
}

/* 1 and *lat when h is cached */
static int cache_get(const sim_cache *k, uint64_t h, double *lat)
{
    sim_entry key = {h, 0};
    const sim_entry *e = k->n ? bsearch(&key, k->e, (size_t)k->n, sizeof *k->e, cmp_entry) : NULL;
    if (e)
        *lat = e->lat;
    return e != NULL;
}

typedef struct pre_job {
    tune_ctx *c;
    const loom_target *t;
    loom_schedule **schs;
    float *feat;
    double *lat;
    unsigned char *done; /* 1: simulated (or failed) before the deadline: a training row; 2: from the cache */
    double deadline;     /* loom_now_seconds() of the time budget's end (<= 0: none) */
    sim_cache cache;
} pre_job;

/* Append the schedules simulated now (done == 1) to the cache file, in
 * draw order; returns how many came from the cache. */
static int cache_save(pre_job *j, int m)
{
    int hits = 0;
    FILE *f = j->cache.path[0] ? fopen(j->cache.path, "a") : NULL;
    for (int i = 0; i < m; i++) {
        hits += j->done[i] == 2;
        if (f && j->done[i] == 1)
            fprintf(f, "%016llx %.17g\n", (unsigned long long)loom_schedule_hash(j->schs[i]), j->lat[i]);
    }
    if (f)
        fclose(f);
    return hits;
}

static void feat_one(void *ctx, int i, int w)
{
    (void)w;
    pre_job *j = ctx;
    if (!j->done[i])
        return;
    loom_error err;
    float *row = j->feat + (size_t)i * (size_t)j->c->nfeat;
    if (loom_features_of_schedule_for(j->schs[i], &j->c->lim, &j->c->stats, row, &err) != LOOM_OK)
        memset(row, 0, sizeof(float) * (size_t)j->c->nfeat);
}

/* Simulate schs[0..m) not in the cache on the pre-training target (its
 * simulator runner, runtime/runner/runner.h: `threads` threads, the
 * budget's deadline), then their features: done[i] 1 (simulated, or failed:
 * a training row), 2 (from the cache), 0 (stopped at the budget: no row). */
static loom_status simulate(pre_job *j, int m, loom_error *err)
{
    loom_runner *run = NULL;
    loom_measure_candidate *mc = malloc(sizeof *mc * (size_t)m);
    loom_runner_result *rr = malloc(sizeof *rr * (size_t)m);
    int *at = malloc(sizeof *at * (size_t)m), nm = 0;
    loom_status st = mc && rr && at ? loom_runner_sim_new(j->t, j->c->ds, NULL, &run, err)
                                    : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int i = 0; !st && i < m; i++) {
        j->lat[i] = INFINITY;
        j->done[i] = 0;
        if (j->deadline > 0 && loom_now_seconds() > j->deadline)
            continue; /* over the budget: not started, not even from the cache */
        j->done[i] = cache_get(&j->cache, loom_schedule_hash(j->schs[i]), &j->lat[i]) ? 2 : 0;
        if (!j->done[i]) {
            mc[nm] = (loom_measure_candidate){j->schs[i], NULL};
            at[nm++] = i;
        }
    }
    loom_runner_opts ro = {.jobs = j->c->threads, .deadline = j->deadline};
    if (!st)
        st = loom_runner_run(run, mc, nm, &ro, rr, NULL, err);
    for (int k = 0; !st && k < nm; k++) {
        if (rr[k].status == LOOM_ERR_TIMEOUT)
            continue; /* not started, or stopped, at the budget: no label */
        j->lat[at[k]] = rr[k].status == LOOM_OK ? rr[k].latency_s : INFINITY;
        j->done[at[k]] = 1;
    }
    if (!st)
        st = loom_parallel_for(m, j->c->threads, feat_one, j, err);
    loom_runner_free(run);
    free(mc), free(rr), free(at);
    return st;
}

/* Keep the rows simulated before the deadline, in draw order; returns how
 * many. */
static int keep_done(pre_job *j, int m)
{
    int k = 0;
    size_t nf = (size_t)j->c->nfeat;
    for (int i = 0; i < m; i++) {
        if (!j->done[i])
            continue;
        if (k != i) {
            memmove(j->feat + (size_t)k * nf, j->feat + (size_t)i * nf, sizeof(float) * nf);
            j->lat[k] = j->lat[i];
        }
        k++;
    }
    return k;
}

/* Up to n distinct valid schedules of the campaign's space (draws seeded
 * from the campaign's seed): *m of them in schs[]. */
static loom_status draw(tune_ctx *c, const loom_limits *lim, loom_schedule **schs, int n, int *m, loom_error *err)
{
    unsigned long seed = (unsigned long)(c->o->search.seed * 0x9E3779B97F4A7C15ULL + 0x5052455452ULL);
    return loom__draw_distinct_valid(c->prog, c->space, lim, seed, n, schs, m, err);
}

/* Rows of the transferred records (transfer_dirs): features, labels and
 * groups appended at *m of the growing arrays; *other counts the records
 * of other workloads, *stale those that no longer replay or validate. */
typedef struct xfer_rows {
    float *feat;
    double *lat;
    uint64_t *g;
    int m, cap, other, stale, dirs;
} xfer_rows;

static int xfer_push(tune_ctx *c, xfer_rows *x, const loom_schedule *s, double lat, uint64_t g)
{
    if (x->m == x->cap) {
        int cap = x->cap ? 2 * x->cap : 256;
        float *f = realloc(x->feat, sizeof(float) * (size_t)cap * (size_t)c->nfeat);
        if (f)
            x->feat = f;
        double *l = realloc(x->lat, sizeof(double) * (size_t)cap);
        if (l)
            x->lat = l;
        uint64_t *gg = realloc(x->g, sizeof(uint64_t) * (size_t)cap);
        if (gg)
            x->g = gg;
        if (!f || !l || !gg)
            return -1;
        x->cap = cap;
    }
    loom_error e;
    float *row = x->feat + (size_t)x->m * (size_t)c->nfeat;
    if (loom_features_of_schedule_for(s, &c->lim, &c->stats, row, &e) != LOOM_OK)
        return 0; /* not a row: counted as stale by the caller */
    x->lat[x->m] = lat;
    x->g[x->m++] = g;
    return 1;
}

static loom_status transfer(tune_ctx *c, const loom_limits *lim, xfer_rows *x, loom_error *err)
{
    loom_schedule *s = malloc(sizeof *s);
    if (!s)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st = LOOM_OK;
    for (int d = 0; d < c->o->ntransfer && !st; d++) {
        const char *dir = c->o->transfer_dirs[d];
        loom_db *db = NULL;
        if ((st = loom_db_open_readonly(dir, NULL, &db, err)) != LOOM_OK)
            break;
        x->dirs++;
        uint64_t dh = loom_fnv1a(0xcbf29ce484222325ULL, dir, strlen(dir));
        for (int i = 0; i < loom_db_count(db) && !st; i++) {
            const loom_record *r = loom_db_record(db, i);
            if (r->nsamples)
                continue; /* a re-measurement: its trial is a record already */
            if (r->workload_hash != c->whash) {
                x->other++;
                continue;
            }
            loom_trace *t = NULL;
            loom_error e;
            loom_violation v;
            int ok = r->trace_json && !loom_trace_from_json(r->trace_json, NULL, &t, &e) &&
                     !loom_schedule_init(s, c->prog, NULL, &e) && !loom_trace_replay(t, s, NULL, &e) &&
                     loom_validate(s, lim, &v, NULL) == LOOM_OK;
            loom_trace_free(t);
            uint64_t g = dh ^ 0x5452414E53464552ULL;
            g = loom_fnv1a(g, r->data_fp ? r->data_fp : "", r->data_fp ? strlen(r->data_fp) : 0);
            g = loom_fnv1a(g, r->target_fp ? r->target_fp : "", r->target_fp ? strlen(r->target_fp) : 0);
            int pushed = ok ? xfer_push(c, x, s, r->status == LOOM_OK ? r->latency_s : INFINITY, g) : 0;
            if (pushed < 0)
                st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
            else if (!pushed)
                x->stale++;
        }
        loom_db_close(db);
    }
    free(s);
    return st;
}

loom_status loom__tune_pretrain(tune_ctx *c, const loom_limits *lim, loom_error *err)
{
    int n = c->o->pretrain > 0 ? c->o->pretrain : 0;
    if (n <= 0 && c->o->ntransfer <= 0)
        return LOOM_OK;
    if (loom_cost_model_trained(c->model)) {
        loom__tune_log(c, "cost model trained on the campaign's records already: no pre-training");
        return LOOM_OK;
    }
    double t0 = loom_now_seconds();
    loom_target t;
    const char *tname = c->o->pretrain_target ? c->o->pretrain_target : LOOM_TUNE_PRETRAIN_TARGET;
    if (c->simulated && !c->o->pretrain_target)
        t = c->target, tname = "the campaign's";
    else {
        loom_status st = loom_target_load(tname, &t, err);
        if (st)
            return st;
    }
    size_t n1 = (size_t)(n > 0 ? n : 1);
    pre_job j = {c,
                 &t,
                 calloc(n1, sizeof(loom_schedule *)),
                 malloc(sizeof(float) * n1 * (size_t)c->nfeat),
                 malloc(sizeof(double) * n1),
                 calloc(n1, 1),
                 c->o->pretrain_budget_s > 0 ? t0 + c->o->pretrain_budget_s : 0,
                 {{0}, NULL, 0}};
    uint64_t *g = malloc(sizeof *g * n1);
    xfer_rows x;
    memset(&x, 0, sizeof x);
    int m = 0;
    loom_status st = j.schs && j.feat && j.lat && j.done && g ? LOOM_OK
                                                   : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (!st && n > 0)
        st = draw(c, lim, j.schs, n, &m, err);
    if (!st && m > 0) {
        cache_open(&j.cache, c, &t);
        st = simulate(&j, m, err);
    }
    int hits = st ? 0 : cache_save(&j, m);
    int drawn = m;
    m = st ? 0 : keep_done(&j, m);
    int ok = 0, xok = 0;
    for (int i = 0; i < m; i++) {
        g[i] = c->group ^ 0x53494D5052455452ULL; /* the simulated records' own label group */
        ok += isfinite(j.lat[i]) != 0;
    }
    if (!st && m > 0)
        st = loom_cost_model_add(c->model, j.feat, g, j.lat, m, err);
    if (!st && c->o->ntransfer > 0)
        st = transfer(c, lim, &x, err);
    for (int i = 0; i < x.m; i++)
        xok += isfinite(x.lat[i]) != 0;
    if (!st && x.m > 0)
        st = loom_cost_model_add(c->model, x.feat, x.g, x.lat, x.m, err);
    int retrained = 0;
    loom_cost_model_quality q;
    memset(&q, 0, sizeof q);
    if (!st && ok + xok > 1)
        st = loom_cost_model_update(c->model, 1, &retrained, &q, err);
    double dt = loom_now_seconds() - t0;
    c->costmodel_s += dt;
    if (!st && m < drawn)
        loom__tune_log(c,
                       "pre-training's time budget (%.3g s) reached: %d of %d drawn schedules simulated, the "
                       "model is trained on those (--pretrain-budget)",
                       c->o->pretrain_budget_s, m, drawn);
    if (!st) {
        c->pretrained = m;
        c->transferred = x.m;
        if (retrained && c->o->ntransfer > 0) {
            snprintf(c->model_desc, sizeof c->model_desc,
                     "the cost model pre-trained on %d simulated + %d transferred records", m, x.m);
            loom__tune_log(c,
                           "cost model pre-trained on %d simulated + %d transferred records (%d simulated ok; "
                           "transferred from %d directories: %d ok, %d records of other workloads skipped, %d no "
                           "longer replay or validate): held-out Spearman %.3f, top-%d recall %.2f; %.2f s",
                           m, x.m, ok, x.dirs, xok, x.other, x.stale, q.spearman, q.k, q.topk_recall, dt);
        } else if (retrained) {
            snprintf(c->model_desc, sizeof c->model_desc, "the cost model pre-trained on %d simulated schedules", m);
            loom__tune_log(c,
                           "cost model pre-trained on %d simulated schedules (%s target %s, %d simulated ok, %d from "
                           "the simulation cache): held-out Spearman %.3f, top-%d recall %.2f; %.2f s",
                           m, tname, t.name, ok, hits, q.spearman, q.k, q.topk_recall, dt);
        } else
            loom__tune_log(c,
                           "cost model not pre-trained: %d schedules drawn, %d simulated, %d ok, %d transferred (%d ok)",
                           drawn, m, ok, x.m, xok);
    }
    free(x.feat);
    free(x.lat);
    free(x.g);
    for (int i = 0; j.schs && i < (int)n1; i++)
        free(j.schs[i]);
    free(j.schs);
    free(j.feat);
    free(j.lat);
    free(j.done);
    free(j.cache.e);
    free(g);
    return st;
}
