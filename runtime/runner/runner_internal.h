/* loom: runtime/runner's private helper (defined in runner_base.c, used by
 * runner_local.c and runner_sim.c). */
#ifndef LOOM_RUNNER_INTERNAL_H
#define LOOM_RUNNER_INTERNAL_H

#include "runner.h"

/* A zeroed runner of `kind` on (t, ds, ref) with impl_size bytes of zeroed
 * state in r->impl (0: none).  Errors: LOOM_ERR_INVALID (t or ds NULL),
 * LOOM_ERR_NOMEM. */
loom_status loom__runner_alloc(const char *kind, const loom_target *t, loom_dataset *ds, const loom_reference *ref,
                               size_t impl_size, loom_runner **out, loom_error *err);

#endif
