/* The local runner (runner.h): this machine's CPU through
 * runtime/measure/batch.h, lowered with the target's limits. */
#include "runner.h"
#include "runner_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct local_state {
    loom_run_opts run;   /* run.limits points at the target's */
} local_state;

typedef struct local_call {
    const loom_runner_opts *o;
    loom_runner_result *results;
    unsigned char *reported;
} local_call;

static void from_run(loom_runner_result *out, const loom_run_result *r)
{
    memset(out, 0, sizeof *out);
    out->status = r->status;
    out->latency_s = r->status == LOOM_OK ? r->latency_s : INFINITY;
    out->flops = r->flops;
    out->compile_s = r->compile_seconds;
    out->checked = r->status == LOOM_OK || r->status == LOOM_ERR_WRONG;
    out->correct = r->correct;
    out->max_rel_err = r->max_rel_err;
    out->tol = r->tol;
    out->unreliable = r->status == LOOM_OK && r->m.unreliable;
    out->m = r->m;
    snprintf(out->message, sizeof out->message, "%s", r->message);
}

static void on_batch_result(void *ctx, int index, const loom_run_result *r)
{
    local_call *c = ctx;
    from_run(&c->results[index], r);
    c->reported[index] = 1;
    if (c->o->on_result)
        c->o->on_result(c->o->ctx, index, &c->results[index]);
}

static loom_status local_run(loom_runner *r, const loom_measure_candidate *cands, int n, const loom_runner_opts *o,
                             loom_runner_result *results, loom_batch_stats *stats, loom_error *err)
{
    local_state *s = r->impl;
    const loom_schedule **schs = calloc((size_t)n, sizeof *schs);
    loom_run_result *rr = calloc((size_t)n, sizeof *rr);
    unsigned char *reported = calloc((size_t)n, 1);
    if (!schs || !rr || !reported) {
        free(schs), free(rr), free(reported);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    for (int k = 0; k < n; k++)
        schs[k] = cands[k].sch;
    local_call call = {o, results, reported};
    loom_batch_opts bo = {.chunk = o->chunk, .jobs = o->jobs, .on_result = on_batch_result, .ctx = &call,
                          .stop = o->stop};
    loom_status st = loom_run_batch_ex(schs, n, r->ds, r->ref, &s->run, &bo, rr, stats, err);
    /* results not reported: a stopped batch (rr says "not measured"), or one
     * that could not go on (st) */
    for (int k = 0; k < n; k++) {
        if (reported[k])
            continue;
        from_run(&results[k], &rr[k]);
        if (st) {
            results[k].status = st;
            results[k].latency_s = INFINITY;
            snprintf(results[k].message, sizeof results[k].message, "not run: %.1000s",
                     err ? err->msg : "the batch failed");
        }
    }
    free(schs), free(rr), free(reported);
    return st;
}

loom_status loom_runner_local_new(const loom_target *t, loom_dataset *ds, const loom_reference *ref,
                                  const loom_run_opts *run, loom_runner **out, loom_error *err)
{
    if (!ref)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "the local runner needs the reference outputs");
    loom_status st = loom__runner_alloc("local", t, ds, ref, sizeof(local_state), out, err);
    if (st)
        return st;
    local_state *s = (*out)->impl;
    s->run = run ? *run : loom_run_defaults();
    s->run.limits = &t->limits;
    (*out)->run = local_run;
    return LOOM_OK;
}
