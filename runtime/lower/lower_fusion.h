/* Private to runtime/: lowering of fused reduction chains (RollingUpdate,
 * dsl/schedule/schedule.h), called by loom_lower (runtime/lower/lower.c). */
#ifndef LOOM_LOWER_FUSION_H
#define LOOM_LOWER_FUSION_H

#include "../../dsl/ir/limits.h"
#include "../../dsl/schedule/query.h"
#include "../../dsl/schedule/schedule.h"
#include "lir.h"

/* Lower stage s (at the root, the source of rolled blocks) together with
 * the blocks rolled into its reduction loop and the blocks computed at that
 * loop, as one loop nest appended to f->body (FlashAttention's online
 * softmax: one pass over the reduced index, the partials rescaled when the
 * running max grows, deferred divisions after the loop).  When the rolled
 * loop is annotated "row_tile" = BR and/or "key_tile" = BC, the chain is
 * tiled FlashAttention-2 style (Dao 2023, algorithm 1): BR rows share each
 * block of BC keys, the score block is a BR x BC product of the row operand
 * and the key operand packed once per kernel in a kernel-allocated buffer
 * (BR <= 32, BC a multiple of 16 up to 256; lower_fusion_tile.c); a
 * compressed mask, split-K or a score that is not such a product keeps the
 * untiled form, with a comment in the kernel naming the reason.  The
 * register tiles fit the rolled loop's vector_lanes / vector_registers
 * annotations, else lim's (the target's: loom_lower_for).  Sets emitted[] of
 * every stage it lowers.  Errors: LOOM_ERR_UNSUPPORTED
 * `rolling-update-layout: ...` (a loop structure or access this lowering
 * does not handle, named), the correction rule's errors, LOOM_ERR_NOMEM. */
loom_status loom__lower_rolling(const loom_schedule *sch, const loom_limits *lim, lir_func *f, int s, int *emitted,
                                loom_error *err);

#endif
