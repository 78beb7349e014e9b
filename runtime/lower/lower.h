/* loom: lowering a Schedule (a Program with its stages' loops) to LIR.
 *
 * Layers of runtime/lower (each file calls only files below it; no call
 * cycle between files, checked by scripts/check-cycles.sh in the test
 * suite):
 *
 *   lower.c               loom_lower: each statement's nest, expressions,
 *                         accumulators, placement (lower_internal.h)
 *     lower_loops.c       its loops: dense, position, range and merged
 *                         levels, guards, CacheWrite workspaces; a loop's
 *                         body goes back up through a callback (lctx.inner)
 *     lower_ctx.c         the statement context's leaf helpers
 *     lower_fusion.c      a fused reduction chain, RollingUpdate
 *                         (lower_fusion.h, lower_fusion_internal.h)
 *       lower_fusion_tile.c      its FlashAttention-2 tiled form
 *       lower_splitk.c           a row under split-K
 *         lower_fusion_keys.c    the loop over the reduced index, by key blocks
 *           lower_fusion_util.c  errors, expression translation, accumulators,
 *                                row loops, chunk bounds
 *   lower_expr.c          the one expression translator (lower_expr.h):
 *                         operators by their rows of dsl/ir/op.h; lower.c
 *                         and lower_fusion_util.c hand in their accesses
 *                         and special cases through callbacks
 *   lir.c                 the loop IR (lir.h), below all of the above
 *   codegen.c             LIR -> C (codegen.h); calls only lir.c
 *
 * Each stage's loops are lowered in order; an iter derived by Split, Fuse or
 * PosSplit binds its index variable once all the loops it derives from are
 * open (split: x = sum of child * stride, guarded when the tiles overhang
 * the extent; fuse: a = f / Eb, b = f % Eb; pos: p = start + outer * factor
 * + inner, guarded p < end, x = crd[p]).
 *
 * Lowering rules (TACO's, DESIGN.md "Level formats"):
 *  - a loop over index x visits, for every sparse operand with a level
 *    indexed by x, only that level's stored coordinates: one compressed
 *    level -> a position loop over pos[parent]..pos[parent+1]; several
 *    compressed levels of different patterns -> a coiteration (merge) loop
 *    over their intersection; range levels (causal, band) -> computed loop
 *    bounds, or guards when x is driven by a compressed level; otherwise a
 *    dense loop over the extent;
 *  - operands whose tensors share a pattern (an inferred sparse temporary
 *    and its source) and are indexed alike share positions;
 *  - concordant traversal: a compressed or range level is only reached
 *    inside the loop of its parent level's index, else lowering fails with
 *    rule `discordant-traversal`;
 *  - the left-hand side is reduced into a scalar accumulator when every
 *    reduced loop is inside every free loop, else read-modify-written after
 *    filling the output with the reduction's identity (0, or -inf for
 *    max=); outputs whose free loops do not visit every element are filled
 *    first as well.
 */
#ifndef LOOM_LOWER_H
#define LOOM_LOWER_H

#include "../../dsl/ir/limits.h"
#include "../../dsl/ir/program.h"
#include "../../dsl/schedule/schedule.h"
#include "lir.h"

/* The naive schedule of `loom run`: loom_schedule_init's default loop
 * order (variables in order of appearance, made concordant) with the
 * outermost loop PARALLEL when it iterates a free (left-hand side) variable
 * with a single driver (not a coiteration merge), unless `serial`.
 * Errors: those of loom_schedule_init. */
loom_status loom_schedule_naive(loom_schedule *sch, const loom_program *prog, int serial, loom_error *err);

/* Lower sch to a new LIR function (*out, free with loom_lir_func_free).
 * Errors: LOOM_ERR_SEMANTIC `discordant-traversal` (a sparse level reached
 * outside its parent level's loops), `parallel-coiteration` (a PARALLEL loop
 * that must be a merge loop), `parallel-reduction` (a PARALLEL loop over a
 * reduced index), `pos-order` (a position split's inner loop outside its
 * outer loop); LOOM_ERR_UNSUPPORTED (a layout this lowering does not
 * handle); LOOM_ERR_NOMEM. */
loom_status loom_lower(const loom_schedule *sch, lir_func **out, loom_error *err);

/* loom_lower for a target: lim (the target handle's limits,
 * runtime/target/target.h) gives the vector lanes and registers the fused
 * lowering's register tiles fit where the schedule does not annotate them
 * (lower_fusion.h); NULL: the CPU target's (runtime/machine/machine.h
 * loom_target_cpu_limits).  loom_lower is
 * loom_lower_for(sch, NULL, ...), for tests and tools that have no target;
 * everything that has one (runtime/runner/runner.h) passes it.  Errors:
 * loom_lower's. */
loom_status loom_lower_for(const loom_schedule *sch, const loom_limits *lim, lir_func **out, loom_error *err);

#endif
