/* loom: a schedule found on the simulator, checked on the CPU (issue 14).
 *
 * The simulator counts work; it never computes values, so nothing in a
 * campaign on a simulated target says whether a kernel is right.  Before a
 * simulated schedule becomes a campaign's best (what `loom tune` reports and
 * `loom replay` writes out), loom_sim_best_check compiles it for this
 * machine, runs it once on the data in a child process and compares its
 * outputs with the reference; a wrong one is recorded as wrong instead.
 */
#ifndef LOOM_SIM_CHECK_H
#define LOOM_SIM_CHECK_H

#include <stddef.h>

#include "../../runtime/measure/pipeline.h"

/* Build sch, run it on ds (one warm-up and one timed run, within
 * run->measure.time_limit seconds; run may be NULL: the defaults) and
 * compare every output with ref (NULL: computed here).  Returns LOOM_OK
 * when it is correct; otherwise the failure -- LOOM_ERR_WRONG, or
 * LOOM_ERR_BUILD / LOOM_ERR_RUN / LOOM_ERR_TIMEOUT, or the error that kept
 * the check from running -- with msg (n bytes, may be NULL) saying
 * "simulated fine, but on the CPU: <why>".  ds's output values are
 * overwritten. */
loom_status loom_sim_best_check(const loom_schedule *sch, loom_dataset *ds, const loom_reference *ref,
                                const loom_run_opts *run, char *msg, size_t n);

#endif
