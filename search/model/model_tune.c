/* The model campaign (model.h loom_model_tune): steps of loom_tune on the
 * task the scheduler picks, all in one database. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "../../dsl/ir/util.h"
#include "../../runtime/target/target.h"
#include "../database/database.h"
#include "model.h"
#include "model_internal.h"

/* Unix seconds, for the log's lines. */
static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A task's state in the campaign. */
typedef struct task_run {
    int count;           /* trial records */
    int resumed;         /* of which found at the start */
    int measured;        /* measured in this run */
    double best;         /* their minimum (INFINITY: none succeeded) */
    double *hist;        /* best after each full round of `batch` records */
    int nhist, caphist;
    int terminated;
    int stepped;         /* 1: a step ran in this run (default_s is its figure) */
    double default_s;    /* the default measured by the last step */
    double default_rec;  /* the default's fastest trial record (loom_tune_result.default_record_s) */
} task_run;

typedef struct model_ctx {
    loom_model *m;
    const loom_model_tune_opts *o;
    loom_target tg;
    task_run *t;
    int total;           /* trial records over all tasks */
    int cur;             /* the task in hand */
    int step;
    int batch;           /* trials of one step (step_batch) */
    double t0;
    FILE *log;
} model_ctx;

/* The trials of one step: opts->tune.batch, or fewer when the budget cannot
 * give every task one step of that size (then trials / tasks, at least 1),
 * so that every task's default and some of its space are measured -- 32
 * trials over a six-task Longformer layer in steps of 8 left two tasks
 * without a record, hence no end-to-end figure.  A function of the
 * options and the model only, so a resumed campaign steps the same way. */
static int step_batch(const loom_model *m, const loom_model_tune_opts *o)
{
    int b = o->tune.batch;
    if ((long)o->trials < (long)m->ntasks * b)
        b = o->trials / m->ntasks;
    return b < 1 ? 1 : b;
}

loom_model_tune_opts loom_model_tune_defaults(void)
{
    loom_model_tune_opts o;
    memset(&o, 0, sizeof o);
    o.tune = loom_tune_defaults();
    o.scheduler = LOOM_TASK_SCHEDULER_GRADIENT;
    o.alpha = LOOM_TASK_SCHEDULER_ALPHA;
    o.window = LOOM_TASK_SCHEDULER_WINDOW;
    return o;
}

void loom_model_tune_result_free(loom_model_tune_result *r)
{
    if (!r)
        return;
    free(r->tasks);
    r->tasks = NULL;
}

static double e2e(const model_ctx *c)
{
    double s = 0;
    for (int k = 0; k < c->m->ntasks; k++)
        s += c->m->tasks[k].weight * c->t[k].best;
    return s;
}

static int push_hist(task_run *t, double best)
{
    if (t->nhist == t->caphist) {
        int n = t->caphist ? 2 * t->caphist : 16;
        double *h = realloc(t->hist, sizeof *h * (size_t)n);
        if (!h)
            return -1;
        t->hist = h;
        t->caphist = n;
    }
    t->hist[t->nhist++] = best;
    return 0;
}

/* Every task's records, best and history from the database (file order). */
static loom_status resume(model_ctx *c, loom_db *db, loom_error *err)
{
    loom__model_trial *tr = NULL;
    int n = loom__model_scan(c->m, db, c->tg.fingerprint, &tr);
    int batch = c->batch, bad = n < 0;
    for (int i = 0; i < n && !bad; i++) {
        task_run *t = &c->t[tr[i].task];
        t->count++;
        if (tr[i].latency_s < t->best)
            t->best = tr[i].latency_s;
        if (t->count % batch == 0)
            bad = push_hist(t, t->best);
    }
    free(tr);
    if (bad)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int k = 0; k < c->m->ntasks; k++) {
        c->t[k].resumed = c->t[k].count;
        c->total += c->t[k].count;
    }
    return LOOM_OK;
}

/* The campaign of one task: the task's options with these trials. */
static loom_tune_opts task_opts(const model_ctx *c, int k, int trials)
{
    const loom_model_call *call = &c->m->calls[c->m->tasks[k].call];
    loom_tune_opts to = c->o->tune;
    to.batch = c->batch;
    to.target_handle = &c->tg;
    to.trials = trials;
    to.workload_name = call->name;
    to.workload_text = call->workload_text;
    to.search.seed = loom_seed_mix(c->o->tune.search.seed, 0x6d6f64656cull /* "model" */, (uint64_t)k, (uint64_t)c->t[k].count);
    to.seeds = NULL;
    to.nseeds = 0;
    to.pins = NULL;
    to.progress = NULL;
    return to;
}

static void step_progress(void *ctx, const loom_tune_progress *p)
{
    model_ctx *c = ctx;
    int k = c->cur;
    const loom_model_task *task = &c->m->tasks[k];
    double saved = c->t[k].best;
    if (p->best_latency_s < c->t[k].best)
        c->t[k].best = p->best_latency_s;
    loom_model_progress mp = {.step = c->step, .task = k, .task_name = c->m->calls[task->call].name,
                              .weight = task->weight, .task_trials = p->done,
                              .done = c->total - c->t[k].count + p->done, .total = c->o->trials,
                              .task_best_s = c->t[k].best, .e2e_s = e2e(c), .elapsed_s = loom_now_seconds() - c->t0};
    c->t[k].best = saved;
    c->o->progress(c->o->progress_ctx, &mp);
}

/* The next task: one whose round a kill cut short, else the scheduler's. */
static int next_task(model_ctx *c)
{
    int n = c->m->ntasks, batch = c->batch;
    for (int k = 0; k < n; k++)
        if (!c->t[k].terminated && c->t[k].count % batch)
            return k;
    loom_task_state *s = malloc(sizeof *s * (size_t)n);
    if (!s)
        return -1;
    for (int k = 0; k < n; k++)
        s[k] = (loom_task_state){.weight = c->m->tasks[k].weight, .rounds = c->t[k].nhist, .history = c->t[k].hist,
                                 .terminated = c->t[k].terminated};
    int pick = loom_task_scheduler_next(c->o->scheduler, s, n, c->o->alpha, c->o->window,
                                        loom_seed_mix(c->o->tune.search.seed, 0x7363686564ull /* "sched" */, (uint64_t)c->step, 0));
    free(s);
    return pick;
}

/* Give task k the trials to its next round's end (at most the budget left). */
static loom_status run_step(model_ctx *c, int k, loom_error *err)
{
    task_run *t = &c->t[k];
    int batch = c->batch;
    int want = (t->count / batch + 1) * batch;
    if (want - t->count > c->o->trials - c->total)
        want = t->count + (c->o->trials - c->total);
    loom_tune_opts to = task_opts(c, k, want);
    to.remeasure_rounds = 0;
    if (c->o->progress) {
        to.progress = step_progress;
        to.progress_ctx = c;
    }
    c->cur = k;
    int before = t->count;
    loom_tune_result r;
    const loom_model_call *call = &c->m->calls[c->m->tasks[k].call];
    loom_status st = loom_tune(call->prog, call->ds, &to, &r, err);
    if (st)
        return st;
    t->count = r.trials;
    t->measured += r.measured;
    c->total += t->count - before;
    t->stepped = 1;
    t->default_s = r.default_latency_s;
    t->default_rec = r.default_record_s;
    if (r.sampled_best_latency_s < t->best)
        t->best = r.sampled_best_latency_s;
    while (t->nhist < t->count / batch)
        if (push_hist(t, t->best))
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (t->count < want)
        t->terminated = 1; /* the search found nothing new */
    if (c->log) {
        fprintf(c->log, "%.3f step %d: task %s (weight %d) trials %d -> %d%s, best %.6g s, e2e estimate %.6g s, "
                        "model trials %d/%d, scheduler %s\n",
                wall(), c->step, call->name, c->m->tasks[k].weight, before, t->count,
                t->terminated ? " (its search found nothing new: terminated)" : "", t->best, e2e(c), c->total,
                c->o->trials, loom_task_scheduler_name(c->o->scheduler));
        fflush(c->log);
    }
    return LOOM_OK;
}

/* Without re-measurement, the default's figure on the footing of the
 * sampled best: its fastest trial record (the best is the minimum over
 * records that include it, so best <= default, and what loom replay ships
 * -- the fastest record -- is the default or one recorded faster), else
 * (not recorded: a pinned or exhausted budget) the last measurement. */
static double sampled_default(double record_s, double measured_s)
{
    return isfinite(record_s) ? record_s : measured_s;
}

/* The final figures of task k, as a single-workload campaign ends
 * (search/tune/tune.h loom_tune_remeasure): with re-measurement rounds, the
 * winner of its best schedules and the default re-measured together (the
 * lowest median, the default included: loom replay and loom run ship it);
 * without, its sampled best and its default's trial record. */
static loom_status finish_task(model_ctx *c, int k, loom_model_task_result *out, loom_error *err)
{
    task_run *t = &c->t[k];
    *out = (loom_model_task_result){.trials = t->count, .measured = t->measured, .rounds = t->nhist,
                                    .terminated = t->terminated, .best_s = t->best,
                                    .default_s = sampled_default(t->default_rec, t->default_s)};
    if (t->count == 0 || (c->o->tune.remeasure_rounds == 0 && t->stepped))
        return LOOM_OK;
    loom_tune_opts to = task_opts(c, k, t->count);
    to.pretrain = 0;
    to.ntransfer = 0;
    loom_tune_result r;
    const loom_model_call *call = &c->m->calls[c->m->tasks[k].call];
    loom_status st = c->o->tune.remeasure_rounds > 0 ? loom_tune_remeasure(call->prog, call->ds, &to, &r, err)
                                                     : loom_tune(call->prog, call->ds, &to, &r, err);
    if (st)
        return st;
    out->best_s = r.best_latency_s;
    out->default_s = c->o->tune.remeasure_rounds > 0 ? r.default_latency_s
                                                     : sampled_default(r.default_record_s, r.default_latency_s);
    return LOOM_OK;
}

/* DIR/model.lock, held while the campaign runs: *fd, or an error. */
static loom_status take_lock(const char *dir, int *fd, loom_error *err)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/model.lock", dir);
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot open the model campaign's lock: %s", strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
        return LOOM_OK;
    int e = errno;
    close(*fd);
    *fd = -1;
    if (e == EWOULDBLOCK)
        return loom_error_set(err, LOOM_ERR_IO, NULL, 0, 0, "%s is in use by another model campaign (%s is locked)",
                              dir, path);
    return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot lock: %s", strerror(e));
}

/* Open the target, the database (resume), the lock and the log. */
static loom_status open_campaign(model_ctx *c, int *lock, loom_error *err)
{
    const loom_tune_opts *to = &c->o->tune;
    loom_status st = LOOM_OK;
    if (to->target_handle)
        c->tg = *to->target_handle;
    else
        st = loom_target_open(to->target ? to->target : "cpu", to->run.build.cc, to->run.build.cflags, &c->tg, err);
    loom_db *db = NULL;
    if (!st)
        st = loom_db_open(to->db_dir, to->warn ? to->warn : stderr, &db, err);
    if (!st)
        st = take_lock(to->db_dir, lock, err);
    if (!st)
        st = resume(c, db, err);
    loom_db_close(db);
    if (st)
        return st;
    char path[1100];
    snprintf(path, sizeof path, "%s/model.log", to->db_dir);
    c->log = fopen(path, "a");
    if (c->log)
        fprintf(c->log, "%.3f model %s (%s): %d tasks, %d trials recorded, budget %d, batch %d, scheduler %s, "
                        "target %s\n",
                wall(), c->m->name, c->m->path, c->m->ntasks, c->total, c->o->trials, c->batch,
                loom_task_scheduler_name(c->o->scheduler), c->tg.fingerprint);
    return LOOM_OK;
}

static loom_status campaign(model_ctx *c, loom_model_tune_result *res, loom_error *err)
{
    loom_status st = LOOM_OK;
    for (int k = 0; k < c->m->ntasks; k++)
        c->step += c->t[k].nhist;
    while (!st && c->total < c->o->trials) {
        int k = next_task(c);
        if (k < 0)
            break; /* every task is terminated */
        c->step++;
        st = run_step(c, k, err);
    }
    res->steps = c->step;
    res->batch = c->batch;
    res->e2e_best_s = res->e2e_default_s = 0;
    for (int k = 0; k < c->m->ntasks && !st; k++) {
        st = finish_task(c, k, &res->tasks[k], err);
        res->trials += c->t[k].count;
        res->resumed += c->t[k].resumed;
        res->measured += c->t[k].measured;
        res->e2e_best_s += c->m->tasks[k].weight * res->tasks[k].best_s;
        res->e2e_default_s += c->m->tasks[k].weight * res->tasks[k].default_s;
    }
    return st;
}

loom_status loom_model_tune(loom_model *m, const loom_model_tune_opts *opts, loom_model_tune_result *res,
                            loom_error *err)
{
    memset(res, 0, sizeof *res);
    if (!m || !opts || !opts->tune.db_dir || opts->trials < 1 || opts->tune.batch < 1)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "a model campaign needs a model, a database directory, trials >= 1 and batch >= 1");
    model_ctx c = {.m = m, .o = opts, .batch = step_batch(m, opts), .t0 = loom_now_seconds()};
    c.t = calloc((size_t)m->ntasks, sizeof *c.t);
    res->tasks = calloc((size_t)m->ntasks, sizeof *res->tasks);
    if (!c.t || !res->tasks) {
        free(c.t);
        loom_model_tune_result_free(res);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    for (int k = 0; k < m->ntasks; k++)
        c.t[k].best = c.t[k].default_s = c.t[k].default_rec = INFINITY;
    int lock = -1;
    loom_status st = open_campaign(&c, &lock, err);
    snprintf(res->target_fp, sizeof res->target_fp, "%s", c.tg.fingerprint);
    if (!st)
        st = campaign(&c, res, err);
    if (c.log) {
        fprintf(c.log, "%.3f done: %d trials, %d steps, e2e best %.6g s, default %.6g s%s%s\n", wall(),
                res->trials, res->steps, res->e2e_best_s, res->e2e_default_s, st ? "; stopped: " : "",
                st ? err->msg : "");
        fclose(c.log);
    }
    if (lock >= 0)
        close(lock);
    for (int k = 0; k < m->ntasks; k++)
        free(c.t[k].hist);
    free(c.t);
    return st;
}
