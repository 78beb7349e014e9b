/* A simulated best checked on the CPU (sim_check.h). */
#include "sim_check.h"

#include <stdio.h>

loom_status loom_sim_best_check(const loom_schedule *sch, loom_dataset *ds, const loom_reference *ref,
                                const loom_run_opts *run, char *msg, size_t n)
{
    loom_run_opts o = run ? *run : loom_run_defaults();
    o.measure.min_seconds = 0;
    o.measure.min_repeats = 1;
    o.measure.max_repeats = 1;
    o.measure.warmup = 1;
    loom_run_result res;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_pipeline_run_schedule(sch, ds, ref, &o, &res, &err);
    if (st != LOOM_OK) {
        if (msg && n)
            snprintf(msg, n, "simulated fine, but the CPU check could not run: %s", err.msg);
        return st;
    }
    if (res.status == LOOM_OK && res.correct)
        return LOOM_OK;
    if (msg && n) {
        if (res.status == LOOM_OK || res.status == LOOM_ERR_WRONG)
            snprintf(msg, n,
                     "simulated fine, but on the CPU the result is wrong (max relative error %.3g, tolerance "
                     "%.3g)",
                     res.max_rel_err, res.tol);
        else
            snprintf(msg, n, "simulated fine, but on the CPU: %s", res.message);
    }
    return res.status == LOOM_OK ? LOOM_ERR_WRONG : res.status;
}
