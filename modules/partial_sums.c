/* The dot-partial-sums module (module.h, docs/modules.md; issue 13, SDDMM's
 * "tiling of the dense dot product ... several partial sums").
 *
 * SDDMM computes one dot product of length D per stored entry.  With the d
 * loop split by multi-level-tiling (d.0, d.1) and d.1 vectorized by
 * parallel-vectorize-unroll, the lowering reduces d.1 into the scalar
 * accumulator at every pass of d.0: a horizontal reduction per pass and one
 * dependent chain of vector adds.  The alternative, as BLAS dot kernels and
 * the fused attention lowering's lane accumulators do it: keep d.1's extent
 * of partial sums (a local array that the vectorized loop updates
 * elementwise: d.1 / lanes independent vector accumulators, in registers
 * when the array is short) and fold them once after the whole dot product.
 *
 * Runs after parallel-vectorize-unroll (the loop kinds are final).  On a
 * block with a sparse output (a sampled dot product) whose innermost loop
 * may carry partial sums (loom_partial_sums_ok: the innermost vectorized
 * reduction loop of constant extent <= 64 of a scalar accumulation), a
 * SampleCategorical {0 scalar accumulator, 1 partial sums} feeds the
 * "partial_sums" annotation of that loop (dsl/schedule/query.h), so a mutated
 * decision switches it on replay.  The number of partial sums is the
 * extent of d.1, which multi-level-tiling's SamplePerfectTile draws (up to
 * 64): with 8-lane vectors, 8, 16, 32 or 64 sums are 1, 2, 4 or 8 vector
 * accumulators.  Dense dot products elsewhere keep the scalar accumulator
 * (their spaces are unchanged). */
#include "builtin.h"

loom_status loom__dot_partial_sums(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    (void)ctx;
    static const int64_t CHOICES[] = {0, 1};
    static const double PROBS[] = {1, 1};
    int s = sch->rvs[b].stage;
    const loom_stage *S = &sch->stages[s];
    if (S->compute_at == LOOM_AT_INLINE || S->nloops == 0 || loom__fusion_claimed(sch, s) == 1 ||
        !loom_tensor_is_sparse(sch->prog, sch->prog->stmts[s].lhs) || !loom_partial_sums_ok(sch, s, S->nloops - 1))
        return LOOM_OK;
    int loops[LOOM_MAX_LOOPS], n, v;
    loom_status rc = loom_get_loops(sch, b, loops, &n, err);
    if (!rc)
        rc = loom_sample_categorical(sch, 2, CHOICES, PROBS, NULL, NULL, &v, err);
    return rc ? rc : loom_annotate(sch, loops[n - 1], LOOM_ANN_PARTIAL_SUMS, v, 0, err);
}
