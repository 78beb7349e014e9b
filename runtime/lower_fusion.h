/* Private to runtime/: lowering of fused reduction chains (RollingUpdate,
 * dsl/schedule.h), called by loom_lower (runtime/lower.c). */
#ifndef LOOM_LOWER_FUSION_H
#define LOOM_LOWER_FUSION_H

#include "../dsl/schedule.h"
#include "lir.h"

/* 1 if some block is rolled into a loop of stage s. */
int loom__has_rolled(const loom_schedule *sch, int s);

/* Lower stage s (at the root, the source of rolled blocks) together with
 * the blocks rolled into its reduction loop and the blocks computed at that
 * loop, as one loop nest appended to f->body (FlashAttention's online
 * softmax: one pass over the reduced index, the partials rescaled when the
 * running max grows, deferred divisions after the loop).  Sets emitted[] of
 * every stage it lowers.  Errors: LOOM_ERR_UNSUPPORTED
 * `rolling-update-layout: ...` (a loop structure or access this lowering
 * does not handle, named), the correction rule's errors, LOOM_ERR_NOMEM. */
loom_status loom__lower_rolling(const loom_schedule *sch, lir_func *f, int s, int *emitted, loom_error *err);

#endif
