/* One fixed schedule end to end: lower, generate C, build, measure, check. */
#include "pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "../lower/codegen.h"
#include "../lower/lower.h"

loom_status loom_pipeline_schedule_source(const loom_schedule *sch, char **src, loom_error *err)
{
    *src = NULL;
    lir_func *f = NULL;
    loom_status st = loom_lower(sch, &f, err);
    if (st)
        return st;
    st = loom_codegen_c(f, "loom_kernel", src, err);
    loom_lir_func_free(f);
    return st;
}

loom_status loom_pipeline_source(const loom_program *prog, int serial, char **src, loom_error *err)
{
    *src = NULL;
    loom_schedule *sch = malloc(sizeof *sch);
    if (!sch)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st = loom_schedule_naive(sch, prog, serial, err);
    if (!st)
        st = loom_pipeline_schedule_source(sch, src, err);
    free(sch);
    return st;
}

loom_status loom_pipeline_run(const loom_program *prog, loom_dataset *ds, const loom_reference *ref,
                              const loom_run_opts *opts, loom_run_result *res, loom_error *err)
{
    loom_run_opts defaults = loom_run_defaults();
    if (!opts)
        opts = &defaults;
    loom_schedule *sch = malloc(sizeof *sch);
    if (!sch)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st = loom_schedule_naive(sch, prog, opts->serial, err);
    if (!st)
        st = loom_pipeline_run_schedule(sch, ds, ref, opts, res, err);
    free(sch);
    return st;
}

loom_status loom_pipeline_run_schedule(const loom_schedule *sch, loom_dataset *ds, const loom_reference *ref,
                                       const loom_run_opts *opts, loom_run_result *res, loom_error *err)
{
    memset(res, 0, sizeof *res);
    loom_reference *own_ref = NULL;
    if (!ref) {
        loom_status st = loom_reference_run(ds, &own_ref, err);
        if (st)
            return st;
        ref = own_ref;
    }
    loom_status st = loom_run_batch(&sch, 1, ds, ref, opts, 1, res, err);
    loom_reference_free(own_ref);
    if (st)
        return st;
    /* a schedule that does not lower is the caller's error, not a result */
    if (res->status == LOOM_ERR_SEMANTIC || res->status == LOOM_ERR_UNSUPPORTED || res->status == LOOM_ERR_NOMEM)
        return loom_error_set(err, res->status, sch->prog->path, 0, 0, "%s", res->message);
    return LOOM_OK;
}
