/* The fuse-producers module (module.h, docs/modules.md; AutoSparse,
 * Lacouture et al. 2025, with MetaSchedule's SampleComputeLocation).
 *
 * On the program's last block (blocks are visited consumers first, so this
 * is the first call, on a fresh schedule) SampleFusionGroup draws which
 * producer -> consumer edges are fused: only the legal ones are offered
 * (dsl/schedule/fusion_group.c).  Then each block that writes a temporary read by a
 * later block samples its compute location: inlined, or at a loop of its
 * first consumer, when its edge is fused; the root when it is not; any
 * sound location in a program without a fusion group (attention chains,
 * which attention-fusion owns).  Then a fused block with a reduction samples
 * its loop order (SampleLoopOrder, Scorch's order the prior); placed at a
 * loop, its slice is reset there (runtime/lower/lower_output.c fill_slice), so its
 * reductions need not be innermost.  Each group's
 * dataflow order is the loop order of its root block, SampleLoopOrder
 * (sparse-loop-order).  The temporary's format was inferred by the parser
 * (Scorch's rule, dsl/front/parse.c). */
#include "builtin.h"

#define FUSED_ORDER_PRIOR 0.5 /* probability of Scorch's order (builtin.c's LOOP_ORDER_PRIOR) */

static int stage_of(const loom_schedule *sch, int block_rv) { return sch->rvs[block_rv].stage; }

/* Reductions innermost on a fused sparse block (a no-op when they are already;
 * an order the block's sparse operands refuse is the validator's to
 * report: discordant-traversal). */
static loom_status reductions_inside(loom_schedule *sch, int b, int s, loom_error *err)
{
    int loops[LOOM_MAX_LOOPS], n, order[LOOM_MAX_LOOPS], k = 0, sorted = 1, seen_red = 0;
    loom_status st = loom_get_loops(sch, b, loops, &n, err);
    if (st)
        return st;
    for (int q = 0; q < n; q++) {
        int red = loom_iter_reduces(sch, s, sch->rvs[loops[q]].iter);
        sorted &= !(seen_red && !red);
        seen_red |= red;
    }
    if (sorted)
        return LOOM_OK;
    for (int red = 0; red < 2; red++)
        for (int q = 0; q < n; q++)
            if (loom_iter_reduces(sch, s, sch->rvs[loops[q]].iter) == red)
                order[k++] = loops[q];
    return loom_reorder(sch, order, n, err);
}

/* A fused block with a reduction, once placed, samples its loop order among
 * the legal ones, Scorch's as the prior (a default schedule takes it):
 * where it is placed, the lowering resets its slice, so a reduction loop
 * may stay outside a free loop (SpMM's row Z(i, :) += A(i, j) T(j, :) at
 * loop i of its consumer, the free loop vectorized innermost).  A sparse
 * temporary, or one whose slices the parallel loops around do not split,
 * keeps its reductions innermost. */
static loom_status fused_order(loom_schedule *sch, int b, int s, const loom_module_ctx *ctx, loom_error *err)
{
    const loom_stage *S = &sch->stages[s];
    int red = 0;
    for (int q = 0; q < S->nloops; q++)
        red |= loom_iter_reduces(sch, s, S->loops[q].iter);
    if (!red || S->nloops < 2)
        return LOOM_OK;
    /* a sparse block has no slice to reset; where a parallel loop around
     * does not split the slices, every thread would reset the same one
     * (loom_placed_slices_split: a scalar accumulator only rewrites it) */
    if (loom_tensor_is_sparse(sch->prog, sch->prog->stmts[s].lhs) || !loom_placed_slices_split(sch, s, NULL, NULL))
        return reductions_inside(sch, b, s, err);
    if (loom_legal_loop_orders(sch, s, NULL, 2) < 2) /* nothing to choose (SpMV's row, k inside i) */
        return LOOM_OK;
    int order[LOOM_MAX_LOOPS], v;
    int64_t prior = loom_scorch_order(sch, s, order);
    return loom_sample_loop_order(sch, b, (int)prior, FUSED_ORDER_PRIOR, ctx->defaults ? &prior : NULL, NULL, &v,
                                  err);
}

loom_status loom__fuse_producers(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    int s = stage_of(sch, b);
    const loom_program *prog = sch->prog;
    if (s == sch->nstages - 1) {
        /* the first block visited: the fusion groups of the whole program
         * (unless a module before this one decided them: a plan's) */
        int prod[LOOM_MAX_STMTS], cons[LOOM_MAX_STMTS], nk, v, decided = 0;
        loom_fusion_edges(sch, prod, cons, &nk);
        for (int q = 0; q < sch->nstages; q++)
            decided |= sch->stages[q].fuse != LOOM_FUSE_FREE;
        if (nk > 0 && !decided) {
            loom_status st = loom_sample_fusion_group(sch, b, NULL, NULL, &v, err);
            if (st)
                return st;
        }
    }
    if (prog->tensors[prog->stmts[s].lhs].role != LOOM_TENSOR_TEMP || loom_first_consumer(prog, s) < 0 ||
        sch->stages[s].compute_at == LOOM_AT_INLINE || loom__fusion_claimed(sch, s))
        return LOOM_OK;
    int v;
    loom_status st = loom_sample_compute_location(sch, b, NULL, NULL, &v, err);
    if (!st && sch->stages[s].fuse == LOOM_FUSE_YES)
        st = fused_order(sch, b, s, ctx, err);
    return st;
}
