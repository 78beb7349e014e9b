/* The runner interface (runner.h): choosing the implementation from the
 * target handle.  The shared parts (running a batch, freeing) are
 * runner_base.c's, below the implementations. */
#include "runner.h"

loom_status loom_runner_new(const loom_target *t, loom_dataset *ds, const loom_reference *ref,
                            const loom_run_opts *run, loom_runner **out, loom_error *err)
{
    *out = NULL;
    if (!t)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "a runner needs a target");
    if (t->kind == LOOM_TARGET_CPU)
        return loom_runner_local_new(t, ds, ref, run, out, err);
    if (t->kind == LOOM_TARGET_SIM)
        return loom_runner_sim_new(t, ds, ref, out, err);
    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "no runner for target kind %d", (int)t->kind);
}
