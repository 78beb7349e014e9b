/* The simulator runner (runner.h): lower with the target's limits, simulate
 * on its model, on `jobs` threads. */
#include "runner.h"
#include "runner_internal.h"
#include "../lower/lower.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sim_call {
    loom_runner *r;
    const loom_measure_candidate *cands;
    const loom_runner_opts *o;
    loom_runner_result *results;
    int n;
    int next;                /* the next candidate to take (under mu) */
    pthread_mutex_t mu;
    double lower_s, sim_s;   /* summed over threads (under mu) */
} sim_call;

/* Lower and simulate candidate k into c->results[k]. */
static void sim_one(sim_call *c, int k, double *lower_s, double *sim_s)
{
    loom_runner_result *out = &c->results[k];
    memset(out, 0, sizeof *out);
    out->latency_s = INFINITY;
    if (c->o->deadline > 0 && loom_now_seconds() > c->o->deadline) {
        out->status = LOOM_ERR_TIMEOUT;
        snprintf(out->message, sizeof out->message, "not simulated: the deadline had passed");
        return;
    }
    loom_error e;
    loom_error_clear(&e);
    lir_func *f = NULL;
    double t0 = loom_now_seconds();
    loom_status st = loom_lower_for(c->cands[k].sch, &c->r->target->limits, &f, &e);
    double t1 = loom_now_seconds();
    if (!st)
        st = loom_sim_run_until(f, c->r->ds, c->r->target, 0, c->o->deadline, &out->sim, &e);
    *lower_s += t1 - t0;
    *sim_s += loom_now_seconds() - t1;
    loom_lir_func_free(f);
    out->status = st;
    if (st) {
        snprintf(out->message, sizeof out->message, "%s", e.msg);
        return;
    }
    out->latency_s = out->sim.latency_s;
    out->flops = c->r->ref ? c->r->ref->flops : out->sim.flops;
}

static void *sim_worker(void *arg)
{
    sim_call *c = arg;
    double lower_s = 0, sim_s = 0;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        int k = c->next < c->n ? c->next++ : -1;
        pthread_mutex_unlock(&c->mu);
        if (k < 0)
            break;
        sim_one(c, k, &lower_s, &sim_s);
    }
    pthread_mutex_lock(&c->mu);
    c->lower_s += lower_s;
    c->sim_s += sim_s;
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void not_run(loom_runner_result *out)
{
    memset(out, 0, sizeof *out);
    out->status = LOOM_ERR_RUN;
    out->latency_s = INFINITY;
    snprintf(out->message, sizeof out->message, "not measured: the batch was stopped");
}

/* One at a time, each reported as it is done (a tuner's stop flag is read
 * between candidates). */
static void run_serial(sim_call *c)
{
    for (int k = 0; k < c->n; k++) {
        if (c->o->stop && *c->o->stop) {
            not_run(&c->results[k]);
            continue;
        }
        sim_one(c, k, &c->lower_s, &c->sim_s);
        if (c->o->on_result)
            c->o->on_result(c->o->ctx, k, &c->results[k]);
    }
}

static loom_status run_threads(sim_call *c, int jobs, loom_error *err)
{
    pthread_t th[64];
    int started = 0;
    for (; started < jobs && started < 64; started++)
        if (pthread_create(&th[started], NULL, sim_worker, c))
            break;
    if (started == 0)
        sim_worker(c); /* no thread could start: this one does the work */
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    for (int k = 0; k < c->n; k++) {
        if (c->o->stop && *c->o->stop) {
            not_run(&c->results[k]);
            continue;
        }
        if (c->o->on_result)
            c->o->on_result(c->o->ctx, k, &c->results[k]);
    }
    (void)err;
    return LOOM_OK;
}

static loom_status sim_run(loom_runner *r, const loom_measure_candidate *cands, int n, const loom_runner_opts *o,
                           loom_runner_result *results, loom_batch_stats *stats, loom_error *err)
{
    sim_call c = {.r = r, .cands = cands, .o = o, .results = results, .n = n};
    pthread_mutex_init(&c.mu, NULL);
    int jobs = o->jobs > 0 ? o->jobs : 1;
    if (jobs > n)
        jobs = n;
    loom_status st = LOOM_OK;
    if (jobs <= 1)
        run_serial(&c);
    else
        st = run_threads(&c, jobs, err);
    pthread_mutex_destroy(&c.mu);
    stats->lower_s = c.lower_s;
    stats->measure_s = c.sim_s;
    return st;
}

loom_status loom_runner_sim_new(const loom_target *t, const loom_dataset *ds, const loom_reference *ref,
                                loom_runner **out, loom_error *err)
{
    /* the simulator only reads ds (runtime/sim/sim.h loom_sim_run); the struct's field is not const
     * because the local runner writes the outputs */
    loom_status st = loom__runner_alloc("sim", t, (loom_dataset *)ds, ref, 0, out, err);
    if (!st)
        (*out)->run = sim_run;
    return st;
}
