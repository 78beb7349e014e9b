/* The runner interface's shared parts (runner.h): a runner's allocation
 * (runner_internal.h), running a batch, one schedule, freeing. */
#include "runner.h"
#include "runner_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

loom_status loom__runner_alloc(const char *kind, const loom_target *t, loom_dataset *ds, const loom_reference *ref,
                               size_t impl_size, loom_runner **out, loom_error *err)
{
    *out = NULL;
    if (!t || !ds)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "a %s runner needs a target and data", kind);
    loom_runner *r = calloc(1, sizeof *r);
    void *impl = impl_size ? calloc(1, impl_size) : NULL;
    if (!r || (impl_size && !impl)) {
        free(r), free(impl);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    r->kind = kind;
    r->target = t;
    r->ds = ds;
    r->ref = ref;
    r->impl = impl;
    *out = r;
    return LOOM_OK;
}

loom_status loom_runner_run(loom_runner *r, const loom_measure_candidate *cands, int n, const loom_runner_opts *o,
                            loom_runner_result *results, loom_batch_stats *stats, loom_error *err)
{
    loom_runner_opts def;
    memset(&def, 0, sizeof def);
    loom_batch_stats own;
    if (!stats)
        stats = &own;
    memset(stats, 0, sizeof *stats);
    if (n <= 0)
        return LOOM_OK;
    return r->run(r, cands, n, o ? o : &def, results, stats, err);
}

double loom_runner_run_one(loom_runner *r, const loom_schedule *sch, loom_runner_result *res, loom_status *status)
{
    loom_runner_result *own = res ? NULL : malloc(sizeof *own);
    loom_runner_result *out = res ? res : own;
    loom_measure_candidate c = {sch, NULL};
    loom_error e;
    loom_error_clear(&e);
    if (!out) {
        if (status)
            *status = LOOM_ERR_NOMEM;
        return INFINITY;
    }
    loom_status st = loom_runner_run(r, &c, 1, NULL, out, NULL, &e);
    if (st) {
        out->status = st;
        out->latency_s = INFINITY;
        snprintf(out->message, sizeof out->message, "%s", e.msg);
    }
    double lat = out->status == LOOM_OK ? out->latency_s : INFINITY;
    if (status)
        *status = out->status;
    free(own);
    return lat;
}

void loom_runner_free(loom_runner *r)
{
    if (!r)
        return;
    if (r->free)
        r->free(r);
    free(r->impl);
    free(r);
}
