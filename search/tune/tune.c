/* A tuning campaign (tune.h). */
#include "tune.h"
#include "../navigate/navigate.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../costmodel/features.h"
#include "../../costmodel/model.h"
#include "../../modules/module.h"
#include "../../runtime/lower/lower.h"
#include "../../runtime/runner/runner.h"
#include "sim_check.h"
#include "../../runtime/target/target.h"
#include "../database/database.h"
#include "tune_internal.h"

static double wall_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int is_measured(void *ctx, uint64_t h)
{
    tune_ctx *c = ctx;
    return c->nmeasured > 0 && bsearch(&h, c->measured, (size_t)c->nmeasured, sizeof h, cmp_u64) != NULL;
}

static int add_measured(tune_ctx *c, uint64_t h)
{
    if (is_measured(c, h))
        return 0;
    if (c->nmeasured == c->capmeasured) {
        int nc = c->capmeasured ? c->capmeasured * 2 : 256;
        uint64_t *m = realloc(c->measured, sizeof *m * (size_t)nc);
        if (!m)
            return -1;
        c->measured = m;
        c->capmeasured = nc;
    }
    int at = c->nmeasured++;
    while (at > 0 && c->measured[at - 1] > h) {
        c->measured[at] = c->measured[at - 1];
        at--;
    }
    c->measured[at] = h;
    return 1;
}

/* ---- the search's environment ------------------------------------------------ */

static loom_status env_sample(void *ctx, loom_schedule *sch, loom_error *err)
{
    tune_ctx *c = ctx;
    if (!c->o->pins)
        return loom_space_apply(c->space, sch, err);
    sch->decider = loom_pins_decider;
    sch->decider_ctx = (void *)c->o->pins;
    loom_status st = loom_space_apply(c->space, sch, err);
    sch->decider = NULL;
    if (!st && sch->recorder == loom_trace_recorder && !loom_pins_hold(c->o->pins, sch->recorder_ctx))
        st = loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "the pinned decisions do not hold in this sample");
    return st;
}

typedef struct feat_job {
    tune_ctx *c;
    const loom_schedule *const *schs;
    float *out;
} feat_job;

static void feat_one(void *ctx, int i, int w)
{
    (void)w;
    feat_job *j = ctx;
    float *row = j->out + (size_t)i * (size_t)j->c->nfeat;
    loom_error err;
    loom_error_clear(&err);
    if (loom_features_of_schedule_for(j->schs[i], &j->c->lim, &j->c->stats, row, &err) != LOOM_OK)
        memset(row, 0, sizeof(float) * (size_t)j->c->nfeat);
}

/* Features of n schedules into out (n x nfeat), in parallel. */
static loom_status features_of(tune_ctx *c, const loom_schedule *const *schs, int n, float *out, loom_error *err)
{
    feat_job j = {c, schs, out};
    return loom_parallel_for(n, c->threads, feat_one, &j, err);
}

static loom_status env_score(void *ctx, const loom_schedule *const *schs, int n, double *scores, loom_error *err)
{
    tune_ctx *c = ctx;
    double t0 = loom_now_seconds();
    float *f = malloc(sizeof(float) * (size_t)n * (size_t)c->nfeat);
    if (!f)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st = features_of(c, schs, n, f, err);
    if (!st)
        st = loom_cost_model_predict(c->model, f, n, scores, err);
    free(f);
    c->costmodel_s += loom_now_seconds() - t0;
    return st;
}

static int env_model_ready(void *ctx) { return loom_cost_model_trained(((tune_ctx *)ctx)->model); }

static int env_best_latency(void *ctx, int k, loom_trace ***out, double **lat)
{
    tune_ctx *c = ctx;
    *out = NULL;
    if (lat)
        *lat = NULL;
    const loom_record **recs = NULL;
    int n = loom_db_query(c->db, c->whash, c->target_fp, &recs);
    if (n <= 0) {
        free(recs);
        return 0;
    }
    loom_trace **t = calloc((size_t)(k > 0 ? k : 1), sizeof *t);
    double *l = lat ? calloc((size_t)(k > 0 ? k : 1), sizeof *l) : NULL;
    if (lat && !l) {
        free(t);
        t = NULL;
    }
    int m = 0;
    char dfp[17];
    snprintf(dfp, sizeof dfp, "%016llx", (unsigned long long)c->dfp);
    for (int i = 0; t && i < n && m < k; i++) {
        const loom_record *r = recs[i];
        if (r->status != LOOM_OK || !r->data_fp || strcmp(r->data_fp, dfp) || !r->trace_json)
            continue;
        loom_error e;
        if (loom_trace_from_json(r->trace_json, NULL, &t[m], &e) == LOOM_OK) {
            if (c->o->pins && !loom_pins_hold(c->o->pins, t[m])) { /* not of the pinned space */
                loom_trace_free(t[m]);
                t[m] = NULL;
                continue;
            }
            if (l)
                l[m] = r->latency_s;
            m++;
        }
    }
    free(recs);
    *out = t;
    if (lat)
        *lat = l;
    return m;
}

static int env_best(void *ctx, int k, loom_trace ***out) { return env_best_latency(ctx, k, out, NULL); }

/* ---- recording results ----------------------------------------------------------- */

/* The machine's state with the record being written (tune.h
 * core_line_moves): its range, and a move away from the campaign's first
 * figures or back, logged. */
static void line_track(tune_ctx *c)
{
    double ns = c->line_ns;
    if (!(ns > 0))
        return;
    loom_tune_result *res = c->res;
    res->core_line_min_ns = res->core_line_min_ns > 0 ? fmin(res->core_line_min_ns, ns) : ns;
    res->core_line_max_ns = fmax(res->core_line_max_ns, ns);
    if (c->nline_first < LOOM_TUNE_CORE_LINE_REF) {
        c->line_first[c->nline_first++] = ns;
        return;
    }
    double ref = loom__tune_median(c->line_first, c->nline_first);
    int moved = loom_measure_core_line_moved(ref, ns);
    if (moved != c->line_moved) {
        c->line_moved = moved;
        res->core_line_moves++;
        loom__tune_log(c, "machine state: a cache line between two cores now takes %.0f ns a round trip (%.0f ns "
                          "at the campaign's start)%s",
                       ns, ref, moved ? ": kernels whose threads share data measure differently from here" : "");
    }
}

static void progress(tune_ctx *c)
{
    if (!c->o->progress)
        return;
    loom_tune_progress p;
    memset(&p, 0, sizeof p);
    p.done = c->ok + c->failed;
    p.total = c->o->trials;
    p.valid = c->ok;
    p.failed = c->failed;
    p.invalid = c->invalid;
    p.best_latency_s = c->best_latency;
    p.best_gflops = isfinite(c->best_latency) && c->best_flops > 0 ? c->best_flops / c->best_latency / 1e9 : 0;
    p.elapsed_s = loom_now_seconds() - c->t_start;
    int now = c->measured_now;
    p.eta_s = now > 0 && p.total > p.done ? p.elapsed_s / now * (p.total - p.done) : p.done >= p.total ? 0 : -1;
    p.core_line_ns = c->line_ns;
    p.core_line_ref_ns = loom__tune_median(c->line_first, c->nline_first);
    p.core_line_moves = c->res->core_line_moves;
    c->o->progress(c->o->progress_ctx, &p);
}

/* Append one record for candidate cand with result (status, latency). */
static void record(tune_ctx *c, const loom_candidate *cand, loom_status status, double latency, double flops,
                   double compile_s, const char *message)
{
    char *json = NULL, checked[1200];
    if (c->stop)
        return;
    /* a simulated schedule is run on the CPU once before it becomes the best */
    if (c->simulated && status == LOOM_OK && latency < c->best_latency &&
        (status = loom_sim_best_check(cand->sch, c->ds, c->ref, &c->o->run, checked, sizeof checked)))
        message = checked;
    if (loom_trace_to_json(cand->trace, c->prog, &json) != LOOM_OK) {
        c->append_status = LOOM_ERR_NOMEM;
        snprintf(c->append_msg, sizeof c->append_msg, "could not serialise a trace");
        c->stop = 1;
        return;
    }
    char dfp[17];
    loom_record r;
    loom__tune_record_init(c, &r, dfp);
    r.trace_json = json;
    r.schedule_hash = cand->hash;
    r.latency_s = status == LOOM_OK ? latency : INFINITY;
    r.flops = flops;
    r.compile_s = compile_s;
    r.status = status;
    r.message = (char *)(message ? message : "");
    r.pins_json = c->pins_json;
    r.core_line_ns = c->simulated ? 0 : c->line_ns;
    if (!c->simulated)
        line_track(c);
    /* a simulated measurement is not an event in time: its record carries a
     * logical clock (the trial number), so that a campaign on the simulator
     * writes the same bytes every time it runs with the same seed */
    r.time = c->simulated ? (double)(c->ok + c->failed + 1) : wall_time();
    loom_error e;
    loom_error_clear(&e);
    if (loom_db_append(c->db, &r, &e) != LOOM_OK) {
        /* not safe, so not counted: the campaign stops here and says how
         * many records the file holds */
        if (!c->append_status) {
            c->append_status = e.status ? e.status : LOOM_ERR_IO;
            snprintf(c->append_msg, sizeof c->append_msg, "%s", e.msg);
        }
        c->stop = 1;
        free(json);
        return;
    }
    add_measured(c, cand->hash);
    c->measured_now++;
    if (status == LOOM_OK) {
        c->ok++;
        c->batch_ok++;
        if (latency < c->best_latency) {
            c->best_latency = latency;
            c->best_flops = flops;
            free(c->best_json);
            c->best_json = json;
            json = NULL;
        }
    } else {
        c->failed++;
        c->batch_failed++;
        if ((int)status >= 0 && status < 16) {
            c->by_status[status]++;
            c->batch_status[status]++;
        }
    }
    free(json);
    progress(c);
}

static void on_result(void *ctx, int index, const loom_runner_result *r)
{
    tune_ctx *c = ctx;
    if (!c->batch || c->stop)
        return;
    c->batch_lat[index] = r->status == LOOM_OK ? r->latency_s : INFINITY;
    c->res->stalled_trials += r->unreliable; /* its record's message says so */
    c->line_ns = r->m.core_line_ns;
    double flops = c->simulated ? c->ref->flops : r->flops;
    record(c, &c->batch[index], r->status, r->latency_s, flops, r->compile_s, r->message);
}

/* Measure (or simulate: the campaign's runner) n candidates, recording each. */
static loom_status measure(tune_ctx *c, loom_candidate *cands, int n, loom_error *err)
{
    c->batch = cands;
    loom_measure_candidate *mc = malloc(sizeof *mc * (size_t)n);
    loom_runner_result *rr = malloc(sizeof *rr * (size_t)n);
    if (!mc || !rr) {
        free(mc), free(rr);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    for (int k = 0; k < n; k++) { /* a remote runner ships the trace (runner.h needs_trace) */
        char *tj = NULL;
        if (c->runner->needs_trace && cands[k].trace && loom_trace_to_json(cands[k].trace, c->prog, &tj))
            tj = NULL; /* not serialisable: the runner measures it on rank 0 */
        mc[k] = (loom_measure_candidate){cands[k].sch, tj};
    }
    /* the simulator runs one candidate at a time (jobs 1): its records stay in order and stop when a
     * record cannot be written, as the CPU's */
    loom_runner_opts ro = {.chunk = 16, .jobs = c->simulated ? 1 : c->threads, .on_result = on_result, .ctx = c,
                           .stop = &c->stop};
    loom_batch_stats bs;
    loom_status st = loom_runner_run(c->runner, mc, n, &ro, rr, &bs, err);
    c->compile_s += c->simulated ? 0 : bs.lower_s + bs.build_s;
    c->measure_s += c->simulated ? bs.lower_s + bs.measure_s : bs.measure_s;
    for (int k = 0; k < n; k++)
        free((char *)mc[k].trace_json);
    free(mc), free(rr);
    return st;
}

/* ---- the cost model's data ------------------------------------------------------ */

static loom_status model_add(tune_ctx *c, const loom_schedule *const *schs, const double *lat, int n,
                             loom_error *err)
{
    if (n <= 0)
        return LOOM_OK;
    double t0 = loom_now_seconds();
    float *f = malloc(sizeof(float) * (size_t)n * (size_t)c->nfeat);
    uint64_t *g = malloc(sizeof *g * (size_t)n);
    if (!f || !g) {
        free(f), free(g);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    for (int i = 0; i < n; i++)
        g[i] = c->group;
    loom_status st = features_of(c, schs, n, f, err);
    if (!st)
        st = loom_cost_model_add(c->model, f, g, lat, n, err);
    free(f), free(g);
    c->costmodel_s += loom_now_seconds() - t0;
    return st;
}

static loom_status model_update(tune_ctx *c, loom_error *err)
{
    double t0 = loom_now_seconds();
    int retrained = 0;
    loom_cost_model_quality q;
    memset(&q, 0, sizeof q);
    loom_status st = loom_cost_model_update(c->model, 0, &retrained, &q, err);
    c->costmodel_s += loom_now_seconds() - t0;
    if (!st && retrained) {
        c->res->retrains++;
        if (c->transferred)
            snprintf(c->model_desc, sizeof c->model_desc,
                     "the cost model trained on %d records (%d simulated, %d transferred)", q.records, c->pretrained,
                     c->transferred);
        else
            snprintf(c->model_desc, sizeof c->model_desc, "the cost model trained on %d records (%d simulated)",
                     q.records, c->pretrained);
        c->res->last_spearman = q.spearman;
        c->res->last_topk_recall = q.topk_recall;
        loom__tune_log(c, "cost model retrained on %d records (%d held out): Spearman %.3f, top-%d recall %.2f, %.2f s",
              q.ntrain + q.nheldout, q.nheldout, q.spearman, q.k, q.topk_recall, q.train_seconds);
        /* the model, for the user (loom_cost_model_load); a resumed campaign
         * retrains from its records instead */
        char path[1100];
        snprintf(path, sizeof path, "%s/cost_model.json", c->o->db_dir);
        loom_error e;
        if (loom_cost_model_save(c->model, path, &e))
            loom__tune_log(c, "could not save the cost model: %s", e.msg);
    }
    return st;
}

/* ---- resume -------------------------------------------------------------------------- */

/* 1 when record r may be the campaign's result: an unpinned campaign, or
 * r's trace carries every pin. */
static int record_holds_pins(tune_ctx *c, const loom_record *r)
{
    if (!c->o->pins)
        return 1;
    loom_trace *t = NULL;
    loom_error e;
    int ok = r->trace_json && !loom_trace_from_json(r->trace_json, NULL, &t, &e) && loom_pins_hold(c->o->pins, t);
    loom_trace_free(t);
    return ok;
}

/* Replay this campaign's earlier records: measured set, best, model data. */
static loom_status resume(tune_ctx *c, loom_error *err)
{
    const loom_record **recs = NULL;
    int n = loom_db_query(c->db, c->whash, c->target_fp, &recs);
    if (n < 0)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    char dfp[17];
    snprintf(dfp, sizeof dfp, "%016llx", (unsigned long long)c->dfp);
    loom_schedule **schs = calloc((size_t)(n > 0 ? n : 1), sizeof *schs);
    double *lat = calloc((size_t)(n > 0 ? n : 1), sizeof *lat);
    int m = 0;
    loom_status st = schs && lat ? LOOM_OK : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int i = 0; i < n && !st; i++) {
        const loom_record *r = recs[i];
        if (!r->data_fp || strcmp(r->data_fp, dfp) || r->nsamples)
            continue; /* other data, or a re-measurement (not a trial) */
        if (add_measured(c, r->schedule_hash) != 1)
            continue; /* a duplicate record: counted once */
        c->resumed++;
        if (r->status == LOOM_OK) {
            c->ok++;
            if (r->latency_s < c->best_latency && record_holds_pins(c, r)) {
                c->best_latency = r->latency_s;
                c->best_flops = r->flops;
                free(c->best_json);
                c->best_json = r->trace_json ? strdup(r->trace_json) : NULL;
            }
        } else {
            c->failed++;
            if ((int)r->status >= 0 && r->status < 16)
                c->by_status[r->status]++;
        }
        /* the model learns from it if it still replays */
        loom_trace *t = NULL;
        loom_error e;
        if (!r->trace_json || loom_trace_from_json(r->trace_json, NULL, &t, &e))
            continue;
        loom_schedule *s = malloc(sizeof *s);
        if (s && !loom_schedule_init(s, c->prog, NULL, &e) && !loom_trace_replay(t, s, NULL, &e)) {
            schs[m] = s;
            lat[m++] = r->status == LOOM_OK ? r->latency_s : INFINITY;
        } else {
            free(s);
        }
        loom_trace_free(t);
    }
    if (!st)
        st = model_add(c, (const loom_schedule *const *)schs, lat, m, err);
    if (!st && m > 0)
        st = model_update(c, err);
    for (int i = 0; i < m; i++)
        free(schs[i]);
    free(schs), free(lat), free(recs);
    if (c->resumed)
        loom__tune_log(c, "resumed: %d records of this workload, data and target (%d ok, %d failed)", c->resumed, c->ok,
              c->failed);
    return st;
}

/* ---- baselines ------------------------------------------------------------------------ */


/* The seeds of the options (plans' fills), measured and recorded as trials. */
static loom_status seed_trials(tune_ctx *c, loom_error *err)
{
    for (int k = 0; k < c->o->nseeds && !c->stop && c->ok + c->failed < c->o->trials; k++) {
        loom_candidate cand = {0};
        cand.sch = malloc(sizeof *cand.sch);
        loom_status st = cand.sch ? loom_trace_copy(c->o->seeds[k], &cand.trace, err)
                                  : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        if (st)
            return st;
        loom_error e;
        loom_error_clear(&e);
        loom_violation v;
        if (loom_schedule_init(cand.sch, c->prog, NULL, &e) || loom_trace_replay(cand.trace, cand.sch, NULL, &e) ||
            loom_validate(cand.sch, loom_space_limits(c->space), &v, &e) ||
            (c->o->pins && !loom_pins_hold(c->o->pins, cand.trace) &&
             loom_error_set(&e, LOOM_ERR_INVALID, NULL, 0, 0, "the pinned decisions do not hold in it"))) {
            loom__tune_log(c, "seed %d skipped: %s", k + 1, e.msg);
            loom_candidate_free(&cand);
            continue;
        }
        cand.hash = loom_schedule_hash(cand.sch);
        if (!is_measured(c, cand.hash)) {
            char msg[1024];
            double lat = loom__tune_measure_one(c, cand.sch, &st, msg, sizeof msg);
            c->batch_ok = c->batch_failed = 0;
            record(c, &cand, st, lat, c->ref->flops, 0, msg);
            const loom_schedule *one = cand.sch;
            double l = st == LOOM_OK ? lat : INFINITY;
            loom__tune_log(c, "seed %d: %.6g s%s%s", k + 1, lat, st ? " (failed: " : "", st ? msg : "");
            loom_status ms = c->stop ? LOOM_OK : model_add(c, &one, &l, 1, err);
            if (ms) {
                loom_candidate_free(&cand);
                return ms;
            }
        }
        loom_candidate_free(&cand);
    }
    return LOOM_OK;
}

static loom_status baselines(tune_ctx *c, loom_error *err)
{
    loom_schedule *s = malloc(sizeof *s);
    if (!s)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st;
    char msg[1024];
    loom_error e;
    loom_error_clear(&e);
    c->res->naive_latency_s = INFINITY;
    if (loom_schedule_naive(s, c->prog, 0, &e) == LOOM_OK)
        c->res->naive_latency_s = loom__tune_measure_one(c, s, &st, msg, sizeof msg);
    free(s);
    /* the default schedule, recorded as a trace */
    loom_candidate def;
    c->res->default_latency_s = INFINITY;
    if (loom__tune_default(c, &def, &e)) {
        loom__tune_log(c, "baselines: naive %.6g s; no default schedule: %s", c->res->naive_latency_s, e.msg);
        return LOOM_OK;
    }
    double lat = loom__tune_measure_one(c, def.sch, &st, msg, sizeof msg);
    c->res->default_latency_s = lat;
    if (!c->o->no_default_trial && !c->o->pins && !is_measured(c, def.hash) && c->ok + c->failed < c->o->trials) {
        c->batch_ok = c->batch_failed = 0;
        record(c, &def, st, lat, c->ref->flops, 0, msg);
        const loom_schedule *one = def.sch;
        double l = st == LOOM_OK ? lat : INFINITY;
        loom_status ms = c->stop ? LOOM_OK : model_add(c, &one, &l, 1, err);
        if (ms) {
            loom_candidate_free(&def);
            return ms;
        }
    }
    c->res->default_record_s = loom__tune_record_latency(c, def.hash);
    loom__tune_log(c, "baselines: naive %.6g s, default schedule %.6g s%s%s", c->res->naive_latency_s, lat,
                   st ? " (failed: " : "", st ? msg : "");
    loom_candidate_free(&def);
    return seed_trials(c, err);
}

/* ---- the campaign ------------------------------------------------------------------------ */

/* The round's control (tune.h no_round_control), run once after the
 * round's batch: 1 when it ran >= LOOM_TUNE_DRIFT_RATIO x what the host's
 * last known speed predicts (the host was slower during the round; logged
 * and counted).  The prediction is its record, times the last control's
 * re-run over that control's record when this record predates that
 * re-run: a host that settles at another speed flags the round of the
 * change, not every round after it, whichever schedule is the control. */
static int round_drifted(tune_ctx *c, const loom__tune_control *ctl, int round)
{
    if (!ctl->sch || !isfinite(ctl->recorded_s) || ctl->recorded_s <= 0)
        return 0;
    int scaled = c->ctl_level > 0 && ctl->recorded_at < c->ctl_check_at;
    double ref = ctl->recorded_s * (scaled ? c->ctl_level : 1.0);
    loom_status cs;
    char msg[1024];
    double t0 = loom_now_seconds();
    double now = loom__tune_measure_one(c, ctl->sch, &cs, msg, sizeof msg);
    c->measure_s += loom_now_seconds() - t0;
    if (cs != LOOM_OK || !isfinite(now))
        return 0; /* the control itself failed: nothing to compare */
    double ratio = now / ref;
    c->ctl_level = now / ctl->recorded_s;
    c->ctl_check_at = wall_time();
    if (ratio > c->res->max_drift)
        c->res->max_drift = ratio;
    if (ratio < LOOM_TUNE_DRIFT_RATIO)
        return 0;
    c->res->drifted_rounds++;
    loom__tune_log(c,
                   "round %d: its control (the best earlier schedule, %016llx) ran %.6g s after the round against "
                   "%.6g s %s (%.2fx >= %.2fx): the host was slower while this round was measured; its "
                   "records are kept, the cost model does not learn from them, the final re-measurement decides",
                   round, (unsigned long long)ctl->hash, now, ref, scaled ? "expected at the last round's speed" : "recorded", ratio,
                   LOOM_TUNE_DRIFT_RATIO);
    return 1;
}

/* One round: generate a batch, measure it, feed the cost model, log.
 * *empty is set when the search found nothing new. */
static loom_status tune_round(tune_ctx *c, loom_search *search, int round, int *empty, loom_error *err)
{
    const loom_tune_opts *opts = c->o;
    loom_tune_result *res = c->res;
    int want = opts->trials - (c->ok + c->failed);
    if (want > opts->batch)
        want = opts->batch;
    loom_candidate *cands = NULL;
    int n = 0;
    double ts = loom_now_seconds(), cm0 = c->costmodel_s;
    loom_search_stats s0 = *loom_search_get_stats(search);
    loom_status st = loom_search_generate(search, want, &cands, &n, err);
    if (st)
        return st;
    const loom_search_stats *s1 = loom_search_get_stats(search);
    long nlocal = (s1->local_mutants - s0.local_mutants) + (s1->local_crossovers - s0.local_crossovers) +
                  (s1->local_model_steps - s0.local_model_steps);
    char screened[80] = "";
    if (s1->local_screened > s0.local_screened)
        snprintf(screened, sizeof screened, ", %ld of the mutants screening%s", s1->local_screened - s0.local_screened,
                 s1->screen_ranked > s0.screen_ranked ? ", the cost model's picks" : "");
    int all_local = n > 0 && nlocal + (s1->fresh_branch_picks - s0.fresh_branch_picks) >= n;
    loom__tune_log(c,
                   "round %d search: %ld samples (%ld invalid, %ld failed), %ld mutations (%ld invalid, %ld did not "
                   "replay), Metropolis-Hastings accepted %ld / rejected %ld, %ld scored%s; %ld local children of the best "
                   "measured (%ld mutants, %ld crossovers, %ld local-model steps%s%s)%s; %ld fresh samples, one per "
                   "structural branch (%ld branches seen%s); %s%s",
                   round, s1->sampled - s0.sampled, s1->sample_invalid - s0.sample_invalid,
                   s1->sample_failed - s0.sample_failed, s1->mutated - s0.mutated,
                   s1->mutate_invalid - s0.mutate_invalid, s1->mutate_failed - s0.mutate_failed,
                   s1->accepted - s0.accepted, s1->rejected - s0.rejected, s1->scored - s0.scored,
                   s1->warmup_picked > s0.warmup_picked ? " (cost model untrained: fresh samples picked)" : "", nlocal,
                   s1->local_mutants - s0.local_mutants, s1->local_crossovers - s0.local_crossovers,
                   s1->local_model_steps - s0.local_model_steps, screened,
                   s1->local_model_fits > s0.local_model_fits       ? "; ranked by the local model"
                   : s1->local_cold_ranked > s0.local_cold_ranked ? "; ranked by the cost model"
                                                                    : "",
                   s1->model_won_rounds > s0.model_won_rounds
                       ? ", fewer than usual: the cost model's picks made the last round's best (--local-share-won)"
                       : "",
                   s1->fresh_branch_picks - s0.fresh_branch_picks, s1->fresh_branches - s0.fresh_branches,
                   s1->fresh_ranked > s0.fresh_ranked ? ", each branch's best-scored first" : "", all_local ? "none left to the cost model" : "the rest ranked by ",
                   all_local            ? ""
                   : c->model_desc[0] ? c->model_desc
                                        : "nothing (the cost model is untrained: draw order)");
    double search_s = loom_now_seconds() - ts - (c->costmodel_s - cm0);
    res->search_s += search_s;
    *empty = n == 0;
    if (n == 0) {
        free(cands);
        return LOOM_OK;
    }
    c->batch_feat = NULL;
    c->batch_lat = malloc(sizeof(double) * (size_t)n);
    c->batch_ok = c->batch_failed = 0;
    memset(c->batch_status, 0, sizeof c->batch_status);
    double c0 = c->compile_s, m0 = c->measure_s;
    loom__tune_control ctl;
    loom__tune_control_pick(c, &ctl); /* the best record before this round */
    st = c->batch_lat ? measure(c, cands, n, err) : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "no memory");
    int drifted = !st && !c->stop && round_drifted(c, &ctl, round);
    loom__tune_control_free(&ctl);
    if (!st && !c->stop && !drifted) {
        const loom_schedule **schs = malloc(sizeof *schs * (size_t)n);
        if (schs) {
            for (int k = 0; k < n; k++)
                schs[k] = cands[k].sch;
            st = model_add(c, schs, c->batch_lat, n, err);
            free(schs);
        }
        if (!st)
            st = model_update(c, err);
    }
    char fails[256] = "";
    for (int s = 1; s < 16; s++)
        if (c->batch_status[s]) {
            size_t l = strlen(fails);
            snprintf(fails + l, sizeof fails - l, "%s%s %d", l ? ", " : "", loom_status_name(s), c->batch_status[s]);
        }
    loom__tune_log(c,
                   "round %d: %d candidates, %d ok, %d failed%s%s%s; best %.6g s (%.2f GFLOP/s); trials %d/%d; "
                   "search %.2f s, cost model %.2f s, compile %.2f s, measure %.2f s",
                   round, n, c->batch_ok, c->batch_failed, fails[0] ? " (" : "", fails, fails[0] ? ")" : "",
                   c->best_latency, isfinite(c->best_latency) ? c->best_flops / c->best_latency / 1e9 : 0.0,
                   c->ok + c->failed, opts->trials, search_s, c->costmodel_s - cm0, c->compile_s - c0,
                   c->measure_s - m0);
    for (int k = 0; k < n; k++)
        loom_candidate_free(&cands[k]);
    free(cands);
    free(c->batch_lat);
    c->batch_lat = NULL;
    c->batch = NULL;
    return st;
}

/* A record could not be written: the error says how many records are safe. */
static loom_status append_failed(tune_ctx *c, loom_error *err)
{
    return loom_error_set(err, c->append_status, NULL, 0, 0,
                          "writing the database failed, the campaign stopped: %s. %d records are safe in "
                          "%s/" LOOM_DB_FILE " (whole lines; a rerun of the same command resumes from them once "
                          "there is room)",
                          c->append_msg, loom_db_count(c->db), c->o->db_dir);
}

loom_status loom_tune(loom_program *prog, loom_dataset *ds, const loom_tune_opts *opts, loom_tune_result *res,
                      loom_error *err)
{
    tune_ctx c;
    loom_search *search = NULL;
    loom_status st = loom__tune_open(&c, prog, ds, opts, res, 1, err);
    if (!st)
        st = resume(&c, err);
    res->resumed = c.resumed;
    if (!st)
        st = baselines(&c, err);
    /* the limits are the target's, derived once (loom__tune_open): the caller's search.limits are
     * not used (tune.h loom_tune_opts.search) */
    loom_search_opts so = opts ? opts->search : loom_search_defaults();
    so.limits = c.lim;
    for (int k = 0; opts && opts->pins && k < opts->pins->n; k++) /* mutators leave the pins alone */
        if (opts->pins->ordinal[k] < 64 * LOOM_MUTATOR_PIN_WORDS)
            so.mutators.pinned[opts->pins->ordinal[k] / 64] |= (uint64_t)1 << (opts->pins->ordinal[k] % 64);
    loom_search_env env = {.ctx = &c, .sample = env_sample, .score = env_score, .is_measured = is_measured,
                           .best_measured = env_best, .best_measured_latency = env_best_latency,
                           .model_ready = env_model_ready, .foreign_hash = c.foreign_default};
    if (!st && !c.stop)
        st = loom__tune_pretrain(&c, &so.limits, err);
    res->pretrained = c.pretrained;
    res->transferred = c.transferred;
    if (!st && !c.stop)
        st = loom_search_new(&so, prog, &env, &search, err);
    if (!st)
        progress(&c);
    for (int round = 0; !st && !c.stop && c.ok + c.failed < opts->trials; round++) {
        int empty = 0;
        st = tune_round(&c, search, round, &empty, err);
        if (!st && empty) {
            res->empty_rounds++;
            loom__tune_log(&c, "round %d: the search found nothing new (%d empty rounds)", round, res->empty_rounds);
            if (res->empty_rounds >= 5)
                break;
        }
    }
    if (!st && c.append_status)
        st = append_failed(&c, err);
    if (!st)
        st = loom__tune_remeasure(&c, err);
    if (!st && c.append_status)
        st = append_failed(&c, err);
    loom__tune_finish(&c, search);
    return st;
}

loom_status loom_tune_remeasure(loom_program *prog, loom_dataset *ds, const loom_tune_opts *opts,
                                loom_tune_result *res, loom_error *err)
{
    tune_ctx c;
    loom_status st = loom__tune_open(&c, prog, ds, opts, res, 0, err);
    if (!st)
        st = loom__tune_remeasure(&c, err);
    if (!st && c.append_status)
        st = append_failed(&c, err);
    loom__tune_finish(&c, NULL);
    return st;
}
