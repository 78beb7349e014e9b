/* The attention-fusion module (module.h; DESIGN.md "Transformation
 * modules"; Neptune, Zhao et al. 2025): for a chain of reductions -- a max=
 * reduction m and the later reductions that read it through temporaries
 * (softmax's l and O) -- a SampleCategorical chooses between the unfused
 * chain (0) and the rolling update (1): the temporaries between them are
 * inlined and every reduction of the chain is rolled into m's reduction
 * loop with RollingUpdate(block, loop, v), whose enable input is the
 * sampled v, so a mutated decision switches the fusion on replay.  The
 * module applies to the last reduction of a chain (blocks are visited
 * consumers first, so it runs before the other modules touch the chain)
 * and only when the fusion is legal on the schedule as it stands (tried on
 * a scratch copy first).  Then a second SampleCategorical draws the split-K
 * factor {1, 2, 4, 8} for SplitKUpdate (1: no split; it takes effect only
 * while the chain is rolled); when the source has fewer rows than the
 * target has cores (decoding one query), its rolled loop is made Parallel,
 * which the validator accepts only with rolled blocks and a factor > 1. */
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "../traces/validate.h"

static int reduces(const loom_stmt *st) { return st->nvars > st->nfree; }

/* Does expression e read tensor t, looking through the non-reduction
 * temporaries defined after stage `after`? */
static int reads_via(const loom_program *prog, int e, int t, int after, int depth)
{
    const loom_expr *E = &prog->exprs[e];
    if (depth > 64 || E->kind == LOOM_EXPR_CONST)
        return 0;
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (E->tensor == t)
            return 1;
        int d = prog->tensors[E->tensor].def_stmt;
        return d > after && !reduces(&prog->stmts[d]) && reads_via(prog, prog->stmts[d].rhs, t, after, depth + 1);
    }
    for (int k = 0; k < E->nargs; k++)
        if (reads_via(prog, E->args[k], t, after, depth + 1))
            return 1;
    return 0;
}

/* The source of the chain that stage s belongs to, or -1. */
static int chain_source(const loom_program *prog, int s)
{
    const loom_stmt *st = &prog->stmts[s];
    if (!reduces(st) || st->nvars - st->nfree != 1)
        return -1;
    for (int m = s - 1; m >= 0; m--) {
        const loom_stmt *ms = &prog->stmts[m];
        if (ms->op == LOOM_ASSIGN_MAX && ms->nvars - ms->nfree == 1 && reads_via(prog, st->rhs, ms->lhs, m, 0))
            return m;
    }
    return -1;
}

int loom__fusion_claimed(const loom_schedule *sch, int s)
{
    const loom_stage *S = &sch->stages[s];
    if (S->rolling)
        return 1;
    for (int q = 0; q < sch->nstages; q++) {
        const loom_stage *Q = &sch->stages[q];
        if (!Q->rolling)
            continue;
        if (Q->at_stage == s)
            return 1; /* a source */
        /* a producer the source reads: kept at the root (its loops are
         * scheduled as usual) */
        const loom_program *prog = sch->prog;
        if (s < Q->at_stage && prog->tensors[prog->stmts[s].lhs].role == LOOM_TENSOR_TEMP &&
            reads_via(prog, prog->stmts[Q->at_stage].rhs, prog->stmts[s].lhs, s, 0))
            return 2;
    }
    return 0;
}

/* Inline the temporaries of the chain and roll its reductions (enable_rv:
 * the sampled switch, -1 on the scratch copy). */
static loom_status apply_chain(loom_schedule *sch, int m, int last, int enable_rv, loom_error *err)
{
    const loom_program *prog = sch->prog;
    int mb, loops[LOOM_MAX_LOOPS], n;
    loom_status st = loom_get_block(sch, prog->tensors[prog->stmts[m].lhs].name, &mb, err);
    if (!st)
        st = loom_get_loops(sch, mb, loops, &n, err);
    for (int t = m + 1; !st && t < last; t++) {
        const loom_stmt *ts = &prog->stmts[t];
        if (reduces(ts) || prog->tensors[ts->lhs].role != LOOM_TENSOR_TEMP || sch->stages[t].compute_at == LOOM_AT_INLINE)
            continue;
        int b;
        if (!(st = loom_get_block(sch, prog->tensors[ts->lhs].name, &b, err)))
            st = loom_compute_inline(sch, b, err);
    }
    for (int r = m + 1; !st && r <= last; r++) {
        if (chain_source(prog, r) != m)
            continue;
        int b;
        if (!(st = loom_get_block(sch, prog->tensors[prog->stmts[r].lhs].name, &b, err)))
            st = loom_rolling_update(sch, b, loops[n - 1], enable_rv, err);
    }
    return st;
}

loom_status loom__attention_fusion(loom_schedule *sch, int b, void *ctx, loom_error *err)
{
    (void)ctx;
    static const int64_t CHOICES[] = {0, 1};
    static const double PROBS[] = {1, 1};
    const loom_program *prog = sch->prog;
    int s = sch->rvs[b].stage;
    int m = chain_source(prog, s);
    if (m < 0 || sch->stages[s].compute_at != LOOM_AT_ROOT || sch->stages[m].compute_at != LOOM_AT_ROOT)
        return LOOM_OK;
    for (int q = s + 1; q < prog->nstmts; q++)
        if (chain_source(prog, q) == m)
            return LOOM_OK; /* not the last reduction of the chain */
    /* legal as the schedule stands?  (a scratch copy, not recorded) */
    loom_schedule *tmp = malloc(sizeof *tmp);
    if (!tmp)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_schedule_copy(tmp, sch);
    tmp->recorder = NULL;
    int ok = apply_chain(tmp, m, s, -1, NULL) == LOOM_OK;
    free(tmp);
    if (!ok)
        return LOOM_OK;
    static const int64_t FACTORS[] = {1, 2, 4, 8};
    static const double FPROBS[] = {1, 1, 1, 1};
    int v, fv, mb, loops[LOOM_MAX_LOOPS], n;
    loom_status st = loom_sample_categorical(sch, 2, CHOICES, PROBS, NULL, NULL, &v, err);
    if (!st)
        st = apply_chain(sch, m, s, v, err);
    if (!st)
        st = loom_get_block(sch, prog->tensors[prog->stmts[m].lhs].name, &mb, err);
    if (!st)
        st = loom_get_loops(sch, mb, loops, &n, err);
    if (!st)
        st = loom_sample_categorical(sch, 4, FACTORS, FPROBS, NULL, NULL, &fv, err);
    if (!st)
        st = loom_split_k_update(sch, mb, loops[n - 1], fv, 0, err);
    int64_t rows = 1;
    for (int k = 0; k < prog->stmts[m].nfree; k++)
        rows *= loom_program_var_extent(prog, prog->stmts[m].vars[k]);
    if (!st && rows < loom_limits_host().cores)
        st = loom_parallel(sch, loops[n - 1], err);
    return st;
}
