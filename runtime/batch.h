/* loom: running many schedules of one workload at once.
 *
 * Schedules are lowered and generated into shared objects of up to `chunk`
 * kernels each (one compiler run per chunk; the content-hash cache makes a
 * repeated batch free), then each kernel is measured in its own child
 * process and checked against the reference, exactly as
 * loom_pipeline_run_schedule would.  A schedule that fails to lower, a chunk
 * that fails to compile, a kernel that crashes, hangs or is wrong: each gets
 * its own result and the batch goes on.
 */
#ifndef LOOM_BATCH_H
#define LOOM_BATCH_H

#include "pipeline.h"

/* Run schedules[0..n) (all of ds's program).  results[k] receives the
 * outcome of schedules[k]: status LOOM_OK (built, ran, correct), or
 * LOOM_ERR_SEMANTIC/UNSUPPORTED (did not lower), LOOM_ERR_BUILD,
 * LOOM_ERR_RUN, LOOM_ERR_TIMEOUT, LOOM_ERR_WRONG, with a message.
 * chunk <= 0 means 32.  Returns LOOM_OK unless the batch itself could not
 * run (LOOM_ERR_NOMEM, or a measurement that could not fork). */
loom_status loom_run_batch(const loom_schedule *const *schedules, int n, loom_dataset *ds,
                           const loom_reference *ref, const loom_run_opts *opts, int chunk,
                           loom_run_result *results, loom_error *err);

#endif
