/* The reverse-compute-location module (module.h, docs/modules.md; issue 12):
 * epilogue fusion as MetaSchedule's MultiLevelTiling does it for a block
 * with an elementwise consumer ("fused consumer": ReverseComputeAt of the
 * consumer at a loop of the producer's nest, so the producer's own tiling,
 * parallel loop and balanced chunks govern the nest and the consumer reads
 * each slice while it is still in cache).
 *
 * Applied to a producer block P at the root (blocks are visited consumers
 * first and this module runs after the tiling and parallel modules, so P's
 * loops are final and its consumer's are too).  It applies when P's tensor
 * is read by exactly one block C, C is at the root, has no reduction and
 * reads P at its own free indices, each once (H1(i, f) = relu(Z1(i, f))
 * after the SpMM Z1 = A T1; U1(i, f) = n(i) T1(i, f) after T1 = X W1).
 * The candidate locations are P's loops where the placement passes the
 * validator (tried on a scratch copy): reverse-coverage asks that P's
 * reduction is complete there and that every index of P's slice is either
 * wholly bound at that loop or wholly iterated inside it.  That is why a
 * tile loop of a split index is not a candidate: the lowering (emit_placed,
 * runtime/lower/lower.c) fixes a consumer index only when all of its
 * producer loops are outside the location, otherwise the consumer iterates
 * the whole index -- the result of the wrong tile (and a race inside a
 * parallel loop).  A tile-region placement would need the consumer's loop
 * restricted to the tile's range in the lowering; it is not done, so the
 * dense space's tile loops (U2 after T2 = H1 W2) offer no candidate.
 *
 * Each candidate loop gets a SampleCategorical {0 stay, 1 place} feeding the
 * enable input of ReverseComputeAt (loom_reverse_compute_at_if), outermost
 * first, so the innermost enabled one wins and a mutated decision moves the
 * block on replay without changing the instruction list.  The consumer
 * keeps the loop kinds parallel-vectorize-unroll gave it: its fixed loops
 * are not emitted (the validator's nested-parallel skips them), its others
 * (the vectorized f loop) run inside P's iteration. */
#include <stdlib.h>
#include <string.h>

#include "../traces/validate.h"
#include "builtin.h"

/* The single elementwise consumer of stage p, or -1. */
static int elementwise_consumer(const loom_schedule *sch, int p)
{
    const loom_program *prog = sch->prog;
    int t = prog->stmts[p].lhs, readers[LOOM_MAX_STMTS], c = -1;
    if (prog->tensors[t].role != LOOM_TENSOR_TEMP || loom_stage_readers(sch, p, readers) != 1)
        return -1;
    c = readers[0];
    const loom_stmt *cs = &prog->stmts[c];
    const loom_stage *C = &sch->stages[c];
    if (C->compute_at != LOOM_AT_ROOT || C->rolling || cs->nvars > cs->nfree ||
        loom_tensor_is_sparse(prog, cs->lhs) || loom__fusion_claimed(sch, c) == 1)
        return -1;
    /* it reads p directly, once, at distinct free indices of its own */
    int e = loom_expr_find_access(prog, cs->rhs, t);
    if (e < 0)
        return -1;
    const loom_expr *E = &prog->exprs[e];
    for (int d = 0; d < E->nidx; d++) {
        int lhs = 0;
        for (int k = 0; k < prog->tensors[cs->lhs].order; k++)
            lhs |= cs->lhs_idx[k] == E->idx[d];
        for (int d2 = 0; d2 < d; d2++)
            lhs &= E->idx[d2] != E->idx[d];
        if (!lhs)
            return -1;
    }
    return c;
}

/* 1 when placing consumer block cb at P's loop q passes the consumer's
 * rules (loom_validate_stage on a scratch copy, not recorded: the blocks
 * before P are not scheduled yet, so the whole schedule may still fail on
 * them) and leaves P's as they were. */
static int candidate(const loom_schedule *sch, int cb, int p, int q, const loom_limits *lim, loom_schedule *tmp,
                     int p_ok)
{
    loom_schedule_copy(tmp, sch);
    tmp->recorder = NULL;
    int loops[LOOM_MAX_LOOPS], n, pb;
    const char *pname = sch->prog->tensors[sch->prog->stmts[p].lhs].name;
    if (loom_get_block(tmp, pname, &pb, NULL) || loom_get_loops(tmp, pb, loops, &n, NULL) || q >= n ||
        loom_reverse_compute_at(tmp, cb, loops[q], NULL))
        return 0;
    loom_violation v;
    return loom_validate_stage(tmp, sch->rvs[cb].stage, lim, &v, NULL) == LOOM_OK &&
           (!p_ok || loom_validate_stage(tmp, p, lim, &v, NULL) == LOOM_OK);
}

loom_status loom__reverse_compute_location(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    static const int64_t CHOICES[] = {0, 1};
    static const double PROBS[] = {1, 1};
    int p = sch->rvs[b].stage;
    const loom_stage *P = &sch->stages[p];
    /* a block whose fusion group puts it inside its consumer (fuse-producers
     * left it at the root only when no place was left) is not its host */
    if (P->compute_at != LOOM_AT_ROOT || P->rolling || P->nloops == 0 || P->fuse == LOOM_FUSE_YES ||
        loom__fusion_claimed(sch, p) == 1)
        return LOOM_OK;
    int c = elementwise_consumer(sch, p);
    if (c < 0)
        return LOOM_OK;
    int cb;
    loom_status rc = loom_get_block(sch, sch->prog->tensors[sch->prog->stmts[c].lhs].name, &cb, err);
    if (rc)
        return rc;
    loom_schedule *tmp = malloc(sizeof *tmp);
    if (!tmp)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_violation base;
    int p_ok = loom_validate_stage(sch, p, ctx->limits, &base, NULL) == LOOM_OK;
    int cand[LOOM_MAX_LOOPS], m = 0;
    for (int q = 0; q < P->nloops; q++)
        if (candidate(sch, cb, p, q, ctx->limits, tmp, p_ok))
            cand[m++] = q;
    free(tmp);
    if (!m)
        return LOOM_OK; /* nothing recorded */
    int loops[LOOM_MAX_LOOPS], n;
    if ((rc = loom_get_loops(sch, b, loops, &n, err)))
        return rc;
    for (int k = 0; k < m && !rc; k++) {
        int v;
        rc = loom_sample_categorical(sch, 2, CHOICES, PROBS, NULL, NULL, &v, err);
        if (!rc)
            rc = loom_reverse_compute_at_if(sch, cb, loops[cand[k]], v, err);
    }
    return rc;
}
