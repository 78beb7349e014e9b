/* A model's forward pass (model_run.h). */
#include "model_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../modules/module.h"
#include "../runtime/measure/reference.h"
#include "../runtime/target/target.h"
#include "replay.h"

loom_model_run_opts loom_model_run_defaults(void)
{
    loom_model_run_opts o;
    memset(&o, 0, sizeof o);
    o.target = "cpu";
    o.run = loom_run_defaults();
    return o;
}

void loom_model_run_result_free(loom_model_run_result *r)
{
    if (!r)
        return;
    free(r->calls);
    r->calls = NULL;
}

/* The state of one forward pass. */
typedef struct run_ctx {
    loom_model *m;
    const loom_model_run_opts *o;
    loom_target tg;
    loom_schedule **sch;         /* per call */
    float **refout;              /* per call and tensor: the reference's outputs in float (feeding) */
    loom_reference **ref;        /* per call: the reference forward pass's (kept for the outputs' calls) */
} run_ctx;

/* An error of call c: at its line of the model file, naming the task. */
static loom_status task_err(const run_ctx *r, loom_status st, const loom_model_call *c, const loom_error *e,
                            loom_error *err)
{
    return loom_error_set(err, st, r->m->path, c->line, 0, "task %s: %s", c->name, e->msg);
}

/* Call k's schedule: its task's best record, else the default. */
static loom_status pick_schedule(run_ctx *r, int k, loom_model_call_run *cr, loom_error *err)
{
    loom_model_call *c = &r->m->calls[k];
    loom_schedule *s = malloc(sizeof *s);
    if (!s)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    r->sch[k] = s;
    loom_error e;
    loom_error_clear(&e);
    if (r->o->db_dir) {
        loom_ship_best_info info;
        loom_status st = loom_ship_best(r->o->db_dir, c->prog, c->ds, r->o->target ? r->o->target : "cpu", 0, s,
                                        NULL, &info, &e);
        if (!st) {
            cr->from_record = 1;
            cr->record_line = info.line;
            return LOOM_OK;
        }
        if (st != LOOM_ERR_WRONG)
            return task_err(r, st, c, &e, err);
        snprintf(cr->message, sizeof cr->message, "no tuned record, the default ran: %.1000s", e.msg);
        loom_error_clear(&e);
    }
    loom_status st = loom_schedule_init(s, c->prog, NULL, &e);
    if (!st)
        st = loom_default_build(NULL, &r->tg.limits, s, NULL, &e);
    return st ? task_err(r, st, c, &e, err) : LOOM_OK;
}

/* Overwrite call k's fed inputs: from the reference's outputs (ref 1) or
 * the kernels' (ref 0). */
static void feed_inputs(run_ctx *r, int k, int ref)
{
    loom_model *m = r->m;
    for (int f = 0; f < m->nfeeds; f++) {
        const loom_model_feed *fd = &m->feeds[f];
        if (fd->dst != k)
            continue;
        loom_tensor_abi *dst = &m->calls[k].ds->t[fd->dst_tensor];
        const float *src = ref ? r->refout[fd->src * LOOM_MAX_TENSORS + fd->src_tensor]
                               : m->calls[fd->src].ds->t[fd->src_tensor].vals;
        if (src && dst->vals)
            memcpy(dst->vals, src, sizeof(float) * (size_t)dst->nnz);
    }
}

/* The reference forward pass: every call's reference on fed inputs. */
static loom_status reference_pass(run_ctx *r, loom_error *err)
{
    loom_model *m = r->m;
    for (int k = 0; k < m->ncalls; k++) {
        loom_model_call *c = &m->calls[k];
        feed_inputs(r, k, 1);
        loom_error e;
        loom_status st = loom_reference_run(c->ds, &r->ref[k], &e);
        if (st)
            return task_err(r, st, c, &e, err);
        for (int t = 0; t < c->prog->ntensors; t++) {
            if (c->prog->tensors[t].role != LOOM_TENSOR_OUTPUT || !r->ref[k]->vals[t])
                continue;
            int64_t n = r->ref[k]->nvals[t];
            float *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
            if (!v)
                return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
            for (int64_t i = 0; i < n; i++)
                v[i] = (float)r->ref[k]->vals[t][i];
            r->refout[k * LOOM_MAX_TENSORS + t] = v;
        }
    }
    return LOOM_OK;
}

/* The kernels' forward pass. */
static loom_status kernel_pass(run_ctx *r, loom_model_run_result *res, loom_error *err)
{
    loom_model *m = r->m;
    loom_run_opts ro = r->o->run;
    ro.limits = r->tg.kind == LOOM_TARGET_SIM ? NULL : &r->tg.limits; /* lowered for this CPU */
    res->latency_s = 0;
    double tol = 0;
    for (int k = 0; k < m->ncalls; k++) {
        loom_model_call *c = &m->calls[k];
        loom_model_call_run *cr = &res->calls[k];
        feed_inputs(r, k, 0);
        loom_run_result rr;
        loom_error e;
        loom_error_clear(&e);
        loom_status st = loom_pipeline_run_schedule(r->sch[k], c->ds, NULL, &ro, &rr, &e);
        if (st)
            return task_err(r, st, c, &e, err);
        cr->status = rr.status;
        cr->correct = rr.status == LOOM_OK && rr.correct;
        cr->latency_s = rr.status == LOOM_OK ? rr.latency_s : INFINITY;
        cr->max_rel_err = rr.max_rel_err;
        cr->tol = rr.tol;
        if (rr.status != LOOM_OK)
            snprintf(cr->message, sizeof cr->message, "%s", rr.message);
        res->latency_s += c->runs * cr->latency_s;
        tol += isfinite(rr.tol) ? rr.tol : 1e-2;
    }
    res->tol = tol < 1e-2 ? tol : 1e-2;
    return LOOM_OK;
}

/* The model's outputs against the reference forward pass. */
static void check_outputs(run_ctx *r, loom_model_run_result *res)
{
    res->max_rel_err = 0;
    int ok = 1;
    for (int k = 0; k < r->m->ncalls; k++) {
        ok = ok && res->calls[k].status == LOOM_OK;
        int is_out = 0;
        for (int o = 0; o < r->m->noutputs; o++)
            is_out |= r->m->outputs[o].call == k;
        if (!is_out)
            continue;
        loom_check chk;
        loom_reference_check(r->m->calls[k].ds, r->ref[k], &chk);
        if (!(chk.max_rel_err <= res->max_rel_err))
            res->max_rel_err = chk.max_rel_err; /* NaN stays */
    }
    res->correct = ok && res->max_rel_err <= res->tol;
}

static void run_free(run_ctx *r)
{
    int n = r->m->ncalls;
    for (int k = 0; r->sch && k < n; k++)
        free(r->sch[k]);
    for (int k = 0; r->refout && k < n * LOOM_MAX_TENSORS; k++)
        free(r->refout[k]);
    for (int k = 0; r->ref && k < n; k++)
        loom_reference_free(r->ref[k]);
    free(r->sch), free(r->refout), free(r->ref);
}

loom_status loom_model_run(loom_model *m, const loom_model_run_opts *opts, loom_model_run_result *res,
                           loom_error *err)
{
    memset(res, 0, sizeof *res);
    run_ctx r = {.m = m, .o = opts};
    int n = m->ncalls;
    r.sch = calloc((size_t)n, sizeof *r.sch);
    r.refout = calloc((size_t)n * LOOM_MAX_TENSORS, sizeof *r.refout);
    r.ref = calloc((size_t)n, sizeof *r.ref);
    res->calls = calloc((size_t)n, sizeof *res->calls);
    loom_status st = r.sch && r.refout && r.ref && res->calls
                         ? loom_target_open(opts->target ? opts->target : "cpu", opts->run.build.cc,
                                            opts->run.build.cflags, &r.tg, err)
                         : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int k = 0; k < n && !st; k++) /* before any input is overwritten */
        st = pick_schedule(&r, k, &res->calls[k], err);
    for (int k = 0; k < n && !st; k++)
        res->from_records += res->calls[k].from_record;
    if (!st)
        st = reference_pass(&r, err);
    if (!st)
        st = kernel_pass(&r, res, err);
    if (!st)
        check_outputs(&r, res);
    run_free(&r);
    if (st)
        loom_model_run_result_free(res);
    return st;
}
