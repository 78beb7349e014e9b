/* One fixed schedule end to end: lower, generate C, build, measure, check. */
#include "pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "lower.h"

loom_run_opts loom_run_defaults(void)
{
    loom_run_opts o;
    memset(&o, 0, sizeof o);
    o.measure = loom_measure_defaults();
    return o;
}

loom_status loom_pipeline_source(const loom_program *prog, int serial, char **src, loom_error *err)
{
    *src = NULL;
    loom_nest nest;
    loom_status st = loom_nest_default(prog, serial, &nest, err);
    if (st)
        return st;
    lir_func *f = NULL;
    st = loom_lower(prog, &nest, &f, err);
    if (st)
        return st;
    st = loom_codegen_c(f, "loom_kernel", src, err);
    lir_func_free(f);
    return st;
}

loom_status loom_pipeline_run(const loom_program *prog, loom_dataset *ds, const loom_reference *ref,
                              const loom_run_opts *opts, loom_run_result *res, loom_error *err)
{
    memset(res, 0, sizeof *res);
    loom_run_opts defaults = loom_run_defaults();
    if (!opts)
        opts = &defaults;
    char *src = NULL;
    loom_status st = loom_pipeline_source(prog, opts->serial, &src, err);
    if (st)
        return st;

    loom_reference *own_ref = NULL;
    if (!ref) {
        st = loom_reference_run(ds, &own_ref, err);
        if (st) {
            free(src);
            return st;
        }
        ref = own_ref;
    }
    res->flops = ref->flops;

    loom_module mod;
    loom_error berr;
    loom_error_clear(&berr);
    st = loom_build(src, "loom_kernel", &opts->build, &mod, &berr);
    free(src);
    if (st) {
        res->status = st;
        snprintf(res->message, sizeof res->message, "%s", berr.msg);
        loom_reference_free(own_ref);
        return LOOM_OK;
    }
    res->compile_seconds = mod.compile_seconds;
    res->cached = mod.cached;

    /* poison the outputs so a kernel that skips elements cannot pass */
    loom_dataset_fill_outputs(ds, 12345.0f);
    st = loom_measure(mod.fn, ds->t, &opts->measure, &res->m, err);
    loom_module_close(&mod);
    if (st) {
        loom_reference_free(own_ref);
        return st;
    }
    if (res->m.status != LOOM_OK) {
        res->status = res->m.status;
        snprintf(res->message, sizeof res->message, "%s", res->m.message);
        loom_reference_free(own_ref);
        return LOOM_OK;
    }
    res->latency_s = res->m.latency;
    res->gflops = res->latency_s > 0 ? res->flops / res->latency_s / 1e9 : 0;

    loom_check chk;
    loom_reference_check(ds, ref, &chk);
    res->correct = chk.correct;
    res->max_rel_err = chk.max_rel_err;
    res->tol = chk.tol;
    if (!chk.correct) {
        res->status = LOOM_ERR_WRONG;
        snprintf(res->message, sizeof res->message,
                 "wrong result: %s[%lld] = %.9g but the reference gives %.9g (relative error %.3g > tolerance %.3g)",
                 chk.worst_tensor >= 0 ? prog->tensors[chk.worst_tensor].name : "?", (long long)chk.worst_index,
                 chk.worst_got, chk.worst_want, chk.max_rel_err, chk.tol);
    }
    loom_reference_free(own_ref);
    return LOOM_OK;
}
